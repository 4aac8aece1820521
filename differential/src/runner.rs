//! Runs one operation: seeds, then N generated cases in batches (Java answers a batch while we
//! compute ours), compares, and shrinks the first unlisted difference by asking the oracle again.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use proptest::strategy::{Strategy, ValueTree};
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};
use serde_json::Value;

use crate::compare::{first_difference, same};

/// A generated case that proptest can shrink.
type Tree = Box<dyn ValueTree<Value = Value>>;
use crate::divergences;
use crate::{Error, Operation, Oracle};

/// How to run an operation.
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// Generated cases (seeds come on top).
    pub cases: usize,
    /// Seed of the generator: the same seed asks the same cases.
    pub seed: u64,
    /// Cases per oracle request.
    pub batch: usize,
    /// Oracle questions spent shrinking one difference at most.
    pub shrink_budget: usize,
    /// Also list every kind of unlisted difference (by where the answers differ) with a count
    /// and one unshrunk example.
    pub verbose: bool,
}

impl Default for RunOptions {
    fn default() -> Self {
        RunOptions {
            cases: 10_000,
            seed: 0x0d1f_f5eed,
            batch: 250,
            shrink_budget: 2_000,
            verbose: false,
        }
    }
}

/// One difference: the (shrunk) input and both answers.
#[derive(Debug, Clone)]
pub struct Finding {
    /// The input, shrunk as far as it still differs.
    pub input: Value,
    /// Java's answer.
    pub java: Value,
    /// Ours.
    pub rust: Value,
    /// Where they differ first.
    pub detail: String,
}

/// What one operation's run found.
#[derive(Debug, Clone)]
pub struct Report {
    /// Operation name.
    pub op: &'static str,
    /// Cases asked (seeds and generated).
    pub cases: usize,
    /// Cases whose answers differ.
    pub differ: usize,
    /// Of those, how many per listed divergence rule.
    pub listed: BTreeMap<&'static str, usize>,
    /// The first unlisted difference, shrunk.
    pub first: Option<Finding>,
    /// Unlisted differences by where the answers first differ: count and first input.
    pub kinds: BTreeMap<String, (usize, Finding)>,
    /// Whether [`Report::summary`] lists [`Report::kinds`].
    pub verbose: bool,
    /// Wall time of the run (generation, both sides, comparison; not shrinking).
    pub elapsed: Duration,
}

impl Report {
    /// Differences not explained by a listed rule.
    pub fn unlisted(&self) -> usize {
        self.differ - self.listed.values().sum::<usize>()
    }

    /// Whether every difference is a listed one.
    pub fn passed(&self) -> bool {
        self.unlisted() == 0
    }

    /// Cases per second.
    pub fn rate(&self) -> f64 {
        self.cases as f64 / self.elapsed.as_secs_f64().max(1e-9)
    }

    /// The report line: `NAME: N cases, D differ` plus listed rules and the first finding.
    pub fn summary(&self) -> String {
        let mut s = format!("{}: {} cases, {} differ", self.op, self.cases, self.differ);
        if !self.listed.is_empty() {
            let rules: Vec<String> = self
                .listed
                .iter()
                .map(|(r, n)| format!("{r} x{n}"))
                .collect();
            s.push_str(&format!(" (listed: {})", rules.join(", ")));
        }
        s.push_str(&format!(" [{:.0} cases/s]", self.rate()));
        if self.verbose {
            for (at, (n, f)) in &self.kinds {
                s.push_str(&format!(
                    "\n  {n} x {at}: e.g. {}\n      {}",
                    f.input, f.detail
                ));
            }
        }
        if let Some(f) = &self.first {
            s.push_str(&format!(
                "\n  first difference (shrunk): {}\n  java: {}\n  rust: {}\n  at {}",
                f.input, f.java, f.rust, f.detail
            ));
        }
        s
    }
}

/// Runs `op` against the oracle.
pub fn run_operation(
    oracle: &mut Oracle,
    op: &dyn Operation,
    opts: &RunOptions,
) -> Result<Report, Error> {
    let started = Instant::now();
    let mut report = Report {
        op: op.name(),
        cases: 0,
        differ: 0,
        listed: BTreeMap::new(),
        first: None,
        kinds: BTreeMap::new(),
        verbose: opts.verbose,
        elapsed: Duration::ZERO,
    };
    let mut first_tree = None;

    // Seeds first: no tree, no shrinking (they are small already).
    for chunk in op.seeds().chunks(opts.batch.max(1)) {
        let trees: Vec<Option<Tree>> = chunk.iter().map(|_| None).collect();
        check_batch(oracle, op, chunk, trees, &mut report, &mut first_tree)?;
    }

    let strategy = op.strategy();
    let mut seed = [0u8; 32];
    seed[..8].copy_from_slice(&opts.seed.to_le_bytes());
    seed[8..16].copy_from_slice(&fnv(op.name()).to_le_bytes());
    let mut runner = TestRunner::new_with_rng(
        Config::default(),
        TestRng::from_seed(RngAlgorithm::ChaCha, &seed),
    );
    let mut left = opts.cases;
    while left > 0 {
        let n = left.min(opts.batch.max(1));
        left -= n;
        let mut trees = Vec::with_capacity(n);
        let mut inputs = Vec::with_capacity(n);
        for _ in 0..n {
            let tree = strategy
                .new_tree(&mut runner)
                .map_err(|e| Error::Oracle(format!("generator of {}: {e}", op.name())))?;
            inputs.push(tree.current());
            trees.push(Some(tree));
        }
        check_batch(oracle, op, &inputs, trees, &mut report, &mut first_tree)?;
    }
    report.elapsed = started.elapsed();

    if let Some((tree, finding)) = first_tree {
        report.first = Some(match tree {
            Some(t) => shrink(oracle, op, t, finding, opts.shrink_budget)?,
            None => finding,
        });
    }
    Ok(report)
}

type Found = Option<(Option<Tree>, Finding)>;

fn check_batch(
    oracle: &mut Oracle,
    op: &dyn Operation,
    inputs: &[Value],
    trees: Vec<Option<Tree>>,
    report: &mut Report,
    first: &mut Found,
) -> Result<(), Error> {
    oracle.send(op.name(), inputs)?;
    // Ours while Java works on the same batch.
    let ours: Vec<Value> = inputs.iter().map(|i| op.answer(i)).collect();
    let theirs = oracle.receive(inputs.len())?;
    report.cases += inputs.len();
    for (((input, rust), java), tree) in inputs.iter().zip(ours).zip(theirs).zip(trees) {
        let rust = op.answer_after(input, &java).unwrap_or(rust);
        if same(&java, &rust) {
            continue;
        }
        report.differ += 1;
        if let Some(rule) = op.divergence(input, &java, &rust) {
            if !divergences::is_listed(rule) {
                return Err(Error::UnlistedRule {
                    op: op.name().to_owned(),
                    rule: rule.to_owned(),
                });
            }
            *report.listed.entry(rule).or_default() += 1;
            continue;
        }
        let detail = first_difference(&java, &rust);
        let at = detail.split(": java").next().unwrap_or_default().to_owned();
        report
            .kinds
            .entry(at)
            .or_insert_with(|| {
                (
                    0,
                    Finding {
                        input: input.clone(),
                        java: java.clone(),
                        rust: rust.clone(),
                        detail: detail.clone(),
                    },
                )
            })
            .0 += 1;
        if first.is_none() {
            *first = Some((
                tree,
                Finding {
                    input: input.clone(),
                    java,
                    rust,
                    detail,
                },
            ));
        }
    }
    Ok(())
}

/// Whether `input` is still an unlisted difference; its finding if so.
fn still_differs(
    oracle: &mut Oracle,
    op: &dyn Operation,
    input: Value,
) -> Result<Option<Finding>, Error> {
    let java = oracle
        .ask(op.name(), std::slice::from_ref(&input))?
        .pop()
        .unwrap_or(Value::Null);
    let rust = op
        .answer_after(&input, &java)
        .unwrap_or_else(|| op.answer(&input));
    if same(&java, &rust) || op.divergence(&input, &java, &rust).is_some() {
        return Ok(None);
    }
    let detail = first_difference(&java, &rust);
    Ok(Some(Finding {
        input,
        java,
        rust,
        detail,
    }))
}

/// proptest's shrinking, with the oracle as the test: simplify while it still differs.
fn shrink(
    oracle: &mut Oracle,
    op: &dyn Operation,
    mut tree: Tree,
    mut best: Finding,
    budget: usize,
) -> Result<Finding, Error> {
    let mut asked = 0;
    if !tree.simplify() {
        return Ok(best);
    }
    loop {
        if asked >= budget {
            break;
        }
        asked += 1;
        let moved = match still_differs(oracle, op, tree.current())? {
            Some(f) => {
                best = f;
                tree.simplify()
            }
            None => tree.complicate(),
        };
        if !moved {
            break;
        }
    }
    Ok(best)
}

/// FNV-1a of the operation name: each operation gets its own stream for one seed.
fn fnv(s: &str) -> u64 {
    s.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}
