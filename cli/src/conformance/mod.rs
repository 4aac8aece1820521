//! The conformance runner: reads vector files in the format of
//! `dubbo-vectors-public.json`, runs every vector through the real library functions and
//! reports `pass`, `fail`, `skip` or `diverge`.
//!
//! `diverge` is allowed only for a rule listed in `docs/divergences.json` (embedded at build
//! time, explained in `docs/compatibility.md`); a kind module that returns a divergence with an
//! unlisted rule counts as a failure.

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

const DIVERGENCES: &str = include_str!("../../../docs/divergences.json");

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

/// Runs a vector file; prints a human report or JSON. Returns the number of failures.
pub fn run_file(path: &std::path::Path, as_json: bool) -> anyhow::Result<usize> {
    let text = std::fs::read_to_string(path)?;
    let doc: Value = serde_json::from_str(&text)?;
    let vectors = doc
        .get("vectors")
        .and_then(Value::as_array)
        .or_else(|| doc.as_array())
        .ok_or_else(|| anyhow::anyhow!("no \"vectors\" array in {}", path.display()))?;
    let rules = documented_rules();
    let mut results = Vec::with_capacity(vectors.len());
    let mut per_kind: BTreeMap<String, [usize; 4]> = BTreeMap::new();
    let (mut passed, mut failed, mut skipped, mut diverged) = (0usize, 0usize, 0usize, 0usize);
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
            0 => passed += 1,
            1 => failed += 1,
            2 => skipped += 1,
            _ => diverged += 1,
        }
        let key = if subkind.is_empty() {
            kind.to_owned()
        } else {
            format!("{kind}/{subkind}")
        };
        per_kind.entry(key).or_default()[slot] += 1;
        if !as_json && status == "fail" {
            println!(
                "FAIL {id} [{kind}{}{subkind}]: {detail}",
                if subkind.is_empty() { "" } else { "/" }
            );
        }
        results.push(
            json!({"id": id, "kind": kind, "subkind": subkind, "status": status, "detail": detail}),
        );
    }
    if as_json {
        let out = json!({
            "results": results, "passed": passed, "failed": failed,
            "skipped": skipped, "diverged": diverged,
        });
        println!("{}", serde_json::to_string_pretty(&out)?);
    } else {
        println!(
            "{:<44} {:>6} {:>6} {:>6} {:>8}",
            "kind", "pass", "fail", "skip", "diverge"
        );
        for (k, [p, f, s, d]) in &per_kind {
            println!("{k:<44} {p:>6} {f:>6} {s:>6} {d:>8}");
        }
        println!("skipped: {skipped}, diverged (documented): {diverged}");
        println!("{passed} passed, {failed} failed");
    }
    Ok(failed)
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
