//! Conformance kinds run by this module (see `super::dispatch`).

use serde_json::Value;

use super::Outcome;

/// Runs one vector of a kind this module owns.
pub fn run(kind: &str, subkind: &str, _v: &Value) -> Outcome {
    Outcome::Skip(format!("{kind}/{subkind} not implemented yet"))
}
