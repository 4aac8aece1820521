//! Conformance kind `zk_path` (Dubbo's `ZookeeperRegistry`): the ZooKeeper layout,
//! `stripOffVariableKeys`, the `empty://` URL and the registry constructor, driven through
//! `registry_zk`'s real functions.

use registry_core::matching::empty_url;
use registry_core::Url;
use registry_zk::children::{convert_child, PathKind};
use registry_zk::{paths, ZkConfig};
use serde_json::Value;

use super::util::s;
use super::{all, expect_eq, Outcome};

/// Runs one vector of a kind this module owns.
pub fn run(kind: &str, subkind: &str, v: &Value) -> Outcome {
    match subkind {
        "" | "layout" => layout(v),
        "strip_variable_keys" => strip(v),
        "empty_url" => empty(v),
        "registry_ctor" => ctor(v),
        _ => Outcome::Skip(format!("{kind}/{subkind}: unknown subkind")),
    }
}

fn url(v: &Value, k: &str) -> Result<Url, Outcome> {
    let text = s(v, k).ok_or_else(|| Outcome::Skip(format!("no {k:?}")))?;
    Url::parse(text).map_err(|e| Outcome::Fail(format!("{k} does not parse: {e}")))
}

fn strings(v: &Value, k: &str) -> Option<Vec<String>> {
    v.get(k)?.as_array().map(|a| {
        a.iter()
            .filter_map(|x| x.as_str().map(str::to_owned))
            .collect()
    })
}

fn layout(v: &Value) -> Outcome {
    let (reg, u) = match (url(v, "registry_url"), url(v, "url")) {
        (Ok(r), Ok(u)) => (r, u),
        (Err(o), _) | (_, Err(o)) => return o,
    };
    let root = match ZkConfig::from_url(&reg) {
        Ok(c) => c.root,
        Err(e) => return Outcome::Fail(format!("registry URL rejected: {e}")),
    };
    let mut checks = Vec::new();
    if let Some(r) = s(v, "root") {
        checks.push(expect_eq("root", r.to_owned(), root.clone()));
    }
    if let Some(p) = s(v, "service_path") {
        checks.push(expect_eq(
            "service_path",
            p.to_owned(),
            paths::service_path(&root, &u),
        ));
    }
    if let Some(p) = strings(v, "categories_paths") {
        checks.push(expect_eq(
            "categories_paths",
            p,
            paths::categories_paths(&root, &u),
        ));
    }
    if let Some(p) = s(v, "category_path") {
        checks.push(expect_eq(
            "category_path",
            p.to_owned(),
            paths::category_path(&root, &u),
        ));
    }
    if let Some(p) = s(v, "url_path") {
        checks.push(expect_eq(
            "url_path",
            p.to_owned(),
            paths::url_path(&root, &u),
        ));
    }
    if let Some(p) = strings(v, "subscribe_watch_paths") {
        checks.push(expect_eq(
            "subscribe_watch_paths",
            p,
            paths::subscribe_watch_paths(&root, &u),
        ));
    }
    all(checks)
}

fn strip(v: &Value) -> Outcome {
    let Some(raw) = s(v, "raw_child") else {
        return Outcome::Skip("no raw_child".into());
    };
    let got = paths::strip_variable_keys(raw);
    let mut checks = Vec::new();
    if let Some(e) = s(v, "expected") {
        checks.push(expect_eq("stripped", e, &got));
    }
    if let Some(d) = s(v, "decoded_expected") {
        let decoded = registry_core::codec::decode(&got).unwrap_or_default();
        checks.push(expect_eq("decoded", d.to_owned(), decoded));
    }
    all(checks)
}

fn empty(v: &Value) -> Outcome {
    let consumer = match url(v, "consumer") {
        Ok(c) => c,
        Err(o) => return o,
    };
    let path = s(v, "zk_path").unwrap_or("/dubbo/x/providers");
    let children = strings(v, "children").unwrap_or_default();
    let kind = PathKind::of(path);
    let visible: Vec<Url> = children
        .iter()
        .filter_map(|c| convert_child(kind, &consumer, c))
        .collect();
    let protection = v
        .get("registry_url")
        .and_then(Value::as_str)
        .and_then(|r| Url::parse(r).ok())
        .is_some_and(|r| r.param_bool("enable-empty-protection", false));
    let category = paths::last_segment(path);
    let got: Option<Vec<String>> =
        registry_core::notify::with_empty_marker(&consumer, category, visible, protection)
            .map(|l| l.iter().map(Url::to_full_string).collect());
    let expected: Option<Vec<String>> = match v.get("expected") {
        Some(Value::String(e)) => Some(vec![e.clone()]),
        Some(Value::Array(_)) => strings(v, "expected"),
        _ => None,
    };
    let Some(got) = got else {
        return match expected {
            None => Outcome::Pass,
            Some(e) if e.is_empty() => Outcome::Pass,
            Some(e) => Outcome::Fail(format!(
                "expected {e:?}, got nothing (direct empty url: {})",
                empty_url(&consumer, category).to_full_string()
            )),
        };
    };
    let Some(expected) = expected else {
        return Outcome::Fail(format!("expected nothing, got {got:?}"));
    };
    if sorted(&expected) == sorted(&got) {
        return Outcome::Pass;
    }
    // Dubbo strips timestamp/pid from provider children; we keep them (zk-keep-timestamp).
    let stripped: Vec<String> = got
        .iter()
        .map(|u| {
            Url::parse(u)
                .map(|x| x.without_params(&["timestamp", "pid"]).to_full_string())
                .unwrap_or_else(|_| u.clone())
        })
        .collect();
    if kind == PathKind::Providers && sorted(&expected) == sorted(&stripped) {
        return Outcome::Diverge {
            rule: "zk-keep-timestamp",
            detail: format!("provider timestamp/pid kept: {got:?}"),
        };
    }
    Outcome::Fail(format!("expected {expected:?}, got {got:?}"))
}

fn sorted(v: &[String]) -> Vec<&str> {
    let mut x: Vec<&str> = v.iter().map(String::as_str).collect();
    x.sort_unstable();
    x
}

fn ctor(v: &Value) -> Outcome {
    let reg = match url(v, "registry_url") {
        Ok(r) => r,
        Err(o) => return o,
    };
    let result = ZkConfig::from_url(&reg);
    match (s(v, "error"), result) {
        (Some(e), Err(err)) => {
            let want = e.split_once(": ").map_or(e, |(_, m)| m);
            Outcome::check(err.to_string().contains(want), || {
                format!("expected error {e:?}, got {err}")
            })
        }
        (Some(e), Ok(c)) => Outcome::Fail(format!("expected error {e:?}, got config {c:?}")),
        (None, Err(err)) => Outcome::Fail(format!("unexpected error: {err}")),
        (None, Ok(c)) => {
            let mut checks = Vec::new();
            if let Some(r) = s(v, "root") {
                checks.push(expect_eq("root", r.to_owned(), c.root.clone()));
            }
            if let Some(cs) = s(v, "connect_string") {
                checks.push(expect_eq(
                    "connect_string",
                    cs.to_owned(),
                    c.connect_string.clone(),
                ));
            }
            all(checks)
        }
    }
}
