//! `differential`: runs the differential operations against the Java oracle and prints one line
//! per operation, `NAME: N cases, D differ`, then `P passed, F failed`.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;
use differential::{ops, run_operation, Oracle, RunOptions};

/// Differential tests against Apache Dubbo 3.3.6's own classes.
#[derive(Debug, Parser)]
struct Args {
    /// Generated cases per operation (seeds come on top).
    #[arg(long, default_value_t = 10_000)]
    cases: usize,
    /// Run only this operation (repeatable).
    #[arg(long)]
    op: Vec<String>,
    /// Generator seed (the same seed asks the same cases).
    #[arg(long, default_value_t = RunOptions::default().seed)]
    seed: u64,
    /// Cases per oracle request.
    #[arg(long, default_value_t = RunOptions::default().batch)]
    batch: usize,
    /// List every kind of difference with a count and an example.
    #[arg(long)]
    verbose: bool,
    /// Ask one input (JSON) of the one --op given and print both answers.
    #[arg(long)]
    ask: Option<String>,
    /// List the operations and exit.
    #[arg(long)]
    list: bool,
}

fn main() -> ExitCode {
    let args = Args::parse();
    let all = ops::all();
    if args.list {
        for op in &all {
            println!("{}", op.name());
        }
        return ExitCode::SUCCESS;
    }
    let unknown: Vec<&String> = args
        .op
        .iter()
        .filter(|n| all.iter().all(|o| o.name() != n.as_str()))
        .collect();
    if !unknown.is_empty() {
        eprintln!("differential: unknown operation(s) {unknown:?}; --list shows them");
        return ExitCode::from(2);
    }
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut oracle = match Oracle::start(&root) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("differential: {e}");
            return ExitCode::from(2);
        }
    };
    if let Some(input) = &args.ask {
        return ask_one(&mut oracle, &all, &args.op, input);
    }
    let opts = RunOptions {
        cases: args.cases,
        seed: args.seed,
        batch: args.batch,
        verbose: args.verbose,
        ..RunOptions::default()
    };
    let (mut passed, mut failed) = (0, 0);
    for op in all
        .iter()
        .filter(|o| args.op.is_empty() || args.op.iter().any(|n| n == o.name()))
    {
        if !oracle.ops().iter().any(|n| n == op.name()) {
            println!("{}: the oracle does not know this operation", op.name());
            failed += 1;
            continue;
        }
        match run_operation(&mut oracle, op.as_ref(), &opts) {
            Ok(report) => {
                println!("{}", report.summary());
                if report.passed() {
                    passed += 1;
                } else {
                    failed += 1;
                }
            }
            Err(e) => {
                println!("{}: error: {e}", op.name());
                failed += 1;
                if e.is_retryable() {
                    match Oracle::start(&root) {
                        Ok(o) => oracle = o,
                        Err(e) => {
                            eprintln!("differential: {e}");
                            break;
                        }
                    }
                }
            }
        }
    }
    println!("{passed} passed, {failed} failed");
    if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

fn ask_one(
    oracle: &mut Oracle,
    all: &[Box<dyn differential::Operation>],
    names: &[String],
    input: &str,
) -> ExitCode {
    let (Some(op), [_]) = (
        names
            .first()
            .and_then(|n| all.iter().find(|o| o.name() == n.as_str())),
        names,
    ) else {
        eprintln!("differential: --ask needs exactly one --op");
        return ExitCode::from(2);
    };
    let input: serde_json::Value = match serde_json::from_str(input) {
        Ok(v) => v,
        Err(e) => {
            eprintln!("differential: --ask is not JSON: {e}");
            return ExitCode::from(2);
        }
    };
    match oracle.ask(op.name(), std::slice::from_ref(&input)) {
        Ok(mut answers) => {
            let java = answers.pop().unwrap_or_default();
            let rust = op
                .answer_after(&input, &java)
                .unwrap_or_else(|| op.answer(&input));
            println!("java: {java}\nrust: {rust}");
            let same = differential::compare::same(&java, &rust);
            println!(
                "{}",
                if same {
                    "same".to_owned()
                } else {
                    differential::compare::first_difference(&java, &rust)
                }
            );
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("differential: {e}");
            ExitCode::from(2)
        }
    }
}
