//! # conformance
//!
//! The conformance runner: reads vector files in the format of `dubbo-vectors-public.json`
//! (kinds `url_parse`, `is_match`, `zk_path`, `condition_router`, `tag_router`,
//! `loadbalance_distribution`, `cluster_behaviour`, `result_merger`, ...), runs every vector
//! through the real library functions and reports `pass`, `fail`, `skip` or `diverge`.
//!
//! `diverge` is allowed only for a rule listed in `docs/divergences.json` (embedded at build
//! time, explained in `docs/compatibility.md`); a kind module that returns a divergence with an
//! unlisted rule counts as a failure. A vector that panics is a failure, never a crash.
//!
//! Tooling, not part of the product: the binary `dubbo-conformance FILE... [--json]` prints the
//! report and exits 1 when a vector failed.
//!
//! ```
//! let doc = serde_json::json!({"vectors": [
//!     {"id": "k1", "kind": "service_key", "fn": "URL.buildKey",
//!      "args": ["com.foo.Bar", "g", "1.0"], "expected": "g/com.foo.Bar:1.0"},
//!     {"id": "x1", "kind": "no_such_kind"},
//! ]});
//! let report = conformance::run_document(&doc).unwrap();
//! assert_eq!((report.passed, report.failed, report.skipped), (1, 0, 1));
//! ```

mod cluster;
mod config_parser;
mod core;
mod directory;
mod loadbalance;
mod mergeable;
mod nacos;
mod router;
mod zk;

use std::collections::BTreeMap;

use serde_json::{json, Value};

/// The result of one vector.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// The library agrees with Dubbo.
    Pass,
    /// It does not; the detail says how.
    Fail(String),
    /// The kind (or this shape of vector) is not run (yet); the detail says why.
    Skip(String),
    /// A documented, deliberate divergence (`rule` must be listed in `docs/divergences.json`).
    Diverge {
        /// Rule name in `docs/divergences.json`.
        rule: &'static str,
        /// What differs.
        detail: String,
    },
}

impl Outcome {
    /// `Pass` if `ok`, else `Fail(detail())`.
    pub fn check(ok: bool, detail: impl FnOnce() -> String) -> Outcome {
        if ok {
            Outcome::Pass
        } else {
            Outcome::Fail(detail())
        }
    }
}

/// Compares expected and actual; `Fail` shows both.
pub fn expect_eq<T: PartialEq + std::fmt::Debug>(what: &str, expected: T, actual: T) -> Outcome {
    Outcome::check(expected == actual, || {
        format!("{what}: expected {expected:?}, got {actual:?}")
    })
}

/// Runs all checks in order and returns the first non-pass outcome.
pub fn all(outcomes: impl IntoIterator<Item = Outcome>) -> Outcome {
    outcomes
        .into_iter()
        .find(|o| *o != Outcome::Pass)
        .unwrap_or(Outcome::Pass)
}

const DIVERGENCES: &str = include_str!("../../docs/divergences.json");

fn documented_rules() -> BTreeMap<String, String> {
    let v: Value = serde_json::from_str(DIVERGENCES).unwrap_or(Value::Null);
    v.get("rules")
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .map(|(k, r)| {
                    let reason = r.get("reason").and_then(Value::as_str).unwrap_or("");
                    (k.clone(), reason.to_owned())
                })
                .collect()
        })
        .unwrap_or_default()
}

/// Runs one vector, never panicking (a panic is reported as a failure).
pub fn run_vector(v: &Value) -> Outcome {
    let kind = v.get("kind").and_then(Value::as_str).unwrap_or("");
    let subkind = v.get("subkind").and_then(Value::as_str).unwrap_or("");
    let r = std::panic::catch_unwind(|| dispatch(kind, subkind, v));
    match r {
        Ok(o) => o,
        Err(p) => {
            let msg = p
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| p.downcast_ref::<&str>().map(|s| (*s).to_owned()))
                .unwrap_or_default();
            Outcome::Fail(format!("panicked: {msg}"))
        }
    }
}

fn dispatch(kind: &str, subkind: &str, v: &Value) -> Outcome {
    match kind {
        "url_parse" | "url_encode" | "service_key" | "is_match" | "method_parameter" => {
            core::run(kind, subkind, v)
        }
        "other" => match subkind {
            "configurator" | "configurator_order" | "merge_url" => directory::run(kind, subkind, v),
            "deprecated_filter" | "future_filter" => cluster::run(kind, subkind, v),
            _ => core::run(kind, subkind, v),
        },
        "zk_path" => zk::run(kind, subkind, v),
        "config_parser" => config_parser::run(kind, subkind, v),
        "condition_router" | "tag_router" => router::run(kind, subkind, v),
        "nacos_service_name_parse" | "nacos_is_compatible" => nacos::run(kind, subkind, v),
        "mock_value" => cluster::run(kind, subkind, v),
        "result_merger" => mergeable::run(kind, subkind, v),
        "loadbalance_distribution" => loadbalance::run(kind, subkind, v),
        "cluster_behaviour" => match subkind {
            "registry_directory" | "registry_notify" | "registry_retry" => {
                directory::run(kind, subkind, v)
            }
            "active_limit" => loadbalance::run(kind, subkind, v),
            "mergeable" => mergeable::run(kind, subkind, v),
            _ => cluster::run(kind, subkind, v),
        },
        _ => Outcome::Skip(format!("unknown kind {kind:?}")),
    }
}

/// What can keep a vector file from being run.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The file cannot be read.
    #[error("cannot read {path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// Why.
        source: std::io::Error,
    },
    /// The file is not JSON.
    #[error("{path} is not JSON: {source}")]
    Json {
        /// The file.
        path: String,
        /// Why.
        source: serde_json::Error,
    },
    /// The document has no `vectors` array (and is not an array itself).
    #[error("no \"vectors\" array in {0}")]
    NoVectors(String),
}

impl Error {
    /// True for an I/O error (the file may be readable later); a document that is not JSON
    /// or has no vectors stays so.
    pub fn is_retryable(&self) -> bool {
        matches!(self, Error::Io { .. })
    }
}

/// The outcome of one vector in a [`Report`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VectorResult {
    /// The vector's `id`.
    pub id: String,
    /// Its `kind`.
    pub kind: String,
    /// Its `subkind` (empty when none).
    pub subkind: String,
    /// `pass`, `fail`, `skip` or `diverge`.
    pub status: &'static str,
    /// Why it failed, was skipped or diverges (`rule: detail`).
    pub detail: String,
}

/// The results of a vector document.
#[derive(Debug, Clone, Default)]
pub struct Report {
    /// Every vector, in file order.
    pub results: Vec<VectorResult>,
    /// Per `kind[/subkind]`: pass, fail, skip, diverge counts.
    pub per_kind: BTreeMap<String, [usize; 4]>,
    /// Vectors that passed.
    pub passed: usize,
    /// Vectors that failed (including undocumented divergences and panics).
    pub failed: usize,
    /// Vectors not run.
    pub skipped: usize,
    /// Documented divergences.
    pub diverged: usize,
}

impl Report {
    /// The report as one JSON document (`results`, and the four counts).
    pub fn to_json(&self) -> Value {
        let results: Vec<Value> = self
            .results
            .iter()
            .map(|r| {
                json!({"id": r.id, "kind": r.kind, "subkind": r.subkind, "status": r.status, "detail": r.detail})
            })
            .collect();
        json!({
            "results": results, "passed": self.passed, "failed": self.failed,
            "skipped": self.skipped, "diverged": self.diverged,
        })
    }

    /// The human report: one `FAIL` line per failure, then a table per kind and the totals.
    pub fn to_text(&self) -> String {
        use std::fmt::Write as _;
        let mut out = String::new();
        for r in self.results.iter().filter(|r| r.status == "fail") {
            let sep = if r.subkind.is_empty() { "" } else { "/" };
            let _ = writeln!(
                out,
                "FAIL {} [{}{sep}{}]: {}",
                r.id, r.kind, r.subkind, r.detail
            );
        }
        let _ = writeln!(
            out,
            "{:<44} {:>6} {:>6} {:>6} {:>8}",
            "kind", "pass", "fail", "skip", "diverge"
        );
        for (k, [p, f, s, d]) in &self.per_kind {
            let _ = writeln!(out, "{k:<44} {p:>6} {f:>6} {s:>6} {d:>8}");
        }
        let _ = writeln!(
            out,
            "skipped: {}, diverged (documented): {}",
            self.skipped, self.diverged
        );
        let _ = writeln!(out, "{} passed, {} failed", self.passed, self.failed);
        out
    }
}

/// Runs every vector of a document (`{"vectors": [...]}` or a bare array).
///
/// Errors: the document has no vectors array.
pub fn run_document(doc: &Value) -> Result<Report, Error> {
    let vectors = doc
        .get("vectors")
        .and_then(Value::as_array)
        .or_else(|| doc.as_array())
        .ok_or_else(|| Error::NoVectors("the document".into()))?;
    let rules = documented_rules();
    let mut report = Report::default();
    for v in vectors {
        let id = v.get("id").and_then(Value::as_str).unwrap_or("?");
        let kind = v.get("kind").and_then(Value::as_str).unwrap_or("");
        let subkind = v.get("subkind").and_then(Value::as_str).unwrap_or("");
        let mut outcome = run_vector(v);
        if let Outcome::Diverge { rule, detail } = &outcome {
            if !rules.contains_key(*rule) {
                outcome = Outcome::Fail(format!("undocumented divergence {rule}: {detail}"));
            }
        }
        let (status, detail, slot) = match &outcome {
            Outcome::Pass => ("pass", String::new(), 0),
            Outcome::Fail(d) => ("fail", d.clone(), 1),
            Outcome::Skip(d) => ("skip", d.clone(), 2),
            Outcome::Diverge { rule, detail } => ("diverge", format!("{rule}: {detail}"), 3),
        };
        match slot {
            0 => report.passed += 1,
            1 => report.failed += 1,
            2 => report.skipped += 1,
            _ => report.diverged += 1,
        }
        let key = if subkind.is_empty() {
            kind.to_owned()
        } else {
            format!("{kind}/{subkind}")
        };
        report.per_kind.entry(key).or_default()[slot] += 1;
        report.results.push(VectorResult {
            id: id.to_owned(),
            kind: kind.to_owned(),
            subkind: subkind.to_owned(),
            status,
            detail,
        });
    }
    Ok(report)
}

/// Reads and runs a vector file.
///
/// Errors: the file cannot be read, is not JSON, or has no vectors.
pub fn run_file(path: &std::path::Path) -> Result<Report, Error> {
    let shown = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|source| Error::Io {
        path: shown.clone(),
        source,
    })?;
    let doc: Value = serde_json::from_str(&text).map_err(|source| Error::Json {
        path: shown.clone(),
        source,
    })?;
    run_document(&doc).map_err(|_| Error::NoVectors(shown))
}

/// Helpers shared by the kind modules.
pub mod util {
    use serde_json::Value;

    /// A string field, `None` for absent or JSON null.
    pub fn s<'a>(v: &'a Value, k: &str) -> Option<&'a str> {
        v.get(k).and_then(Value::as_str)
    }

    /// An integer field.
    pub fn i(v: &Value, k: &str) -> Option<i64> {
        v.get(k).and_then(Value::as_i64)
    }

    /// True when the field exists (even if null).
    pub fn has(v: &Value, k: &str) -> bool {
        v.as_object().is_some_and(|o| o.contains_key(k))
    }
}
