//! The list of deliberate divergences from Dubbo 3.3 (`docs/divergences.json`, explained in
//! `docs/compatibility.md`), shared with the conformance runner: a difference found here is an
//! expected one only when its operation names a rule of that list.

use std::collections::BTreeMap;

use serde_json::Value;

const DIVERGENCES: &str = include_str!("../../docs/divergences.json");

/// Every listed rule with its reason.
pub fn rules() -> BTreeMap<String, String> {
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

/// Whether `rule` is listed.
pub fn is_listed(rule: &str) -> bool {
    rules().contains_key(rule)
}
