//! Conformance kinds `nacos_service_name_parse` and `nacos_is_compatible` (Dubbo's
//! `NacosRegistry.getServiceName`, `NacosServiceName`), run through `registry_nacos::name` and
//! `registry_nacos::convert`.

use registry_core::Url;
use registry_nacos::config::{NacosConfig, DEFAULT_GROUP};
use registry_nacos::convert::instance_metadata;
use registry_nacos::name::{
    compatible_register_name, is_concrete_value, is_conform_rules, is_range, is_wildcard,
    legacy_subscribe_name, register_name, to_nacos_name,
};
use registry_nacos::NacosServiceName;
use serde_json::Value;

use super::util::{has, s};
use super::{all, expect_eq, Outcome};

/// Runs one vector of a kind this module owns.
pub fn run(kind: &str, subkind: &str, v: &Value) -> Outcome {
    match kind {
        "nacos_service_name_parse" => service_name(v),
        "nacos_is_compatible" => is_compatible(v),
        _ => Outcome::Skip(format!("{kind}/{subkind} is not a nacos kind")),
    }
}

/// A name from a vector field: a string is parsed, an object gives the four (nullable) fields.
fn name_of(v: Option<&Value>) -> Result<NacosServiceName, String> {
    match v {
        Some(Value::String(text)) => NacosServiceName::parse(text).map_err(|e| e.to_string()),
        Some(Value::Object(o)) => {
            let f = |k: &str| o.get(k).and_then(Value::as_str).map(str::to_owned);
            Ok(NacosServiceName {
                category: f("category"),
                interface: f("interface"),
                version: f("version"),
                group: f("group"),
                text: None,
            })
        }
        other => Err(format!("unsupported name value {other:?}")),
    }
}

fn concrete_check(v: &Value, name: &NacosServiceName) -> Outcome {
    match v.get("expected_concrete").and_then(Value::as_bool) {
        Some(c) => expect_eq("is_concrete", c, name.is_concrete()),
        None => Outcome::Pass,
    }
}

fn url_of(v: &Value) -> Result<Url, Outcome> {
    let text = s(v, "url").ok_or_else(|| Outcome::Fail("vector has no url".into()))?;
    Url::parse(text).map_err(|e| Outcome::Fail(format!("url does not parse: {e}")))
}

fn service_name(v: &Value) -> Outcome {
    let mode = s(v, "mode").unwrap_or("");
    let wants_error = has(v, "error");
    match mode {
        "parse" => {
            let input = s(v, "input").unwrap_or("");
            match NacosServiceName::parse(input) {
                Err(e) => Outcome::check(wants_error, || format!("parse failed: {e}")),
                Ok(_) if wants_error => Outcome::Fail(format!("{input:?} parsed but Dubbo throws")),
                Ok(n) => {
                    let exp = v.get("expected");
                    let field = |k: &str| {
                        exp.and_then(|e| e.get(k))
                            .and_then(Value::as_str)
                            .map(str::to_owned)
                    };
                    all([
                        expect_eq("category", field("category"), n.category.clone()),
                        expect_eq("interface", field("interface"), n.interface.clone()),
                        expect_eq("version", field("version"), n.version.clone()),
                        expect_eq("group", field("group"), n.group.clone()),
                        concrete_check(v, &n),
                    ])
                }
            }
        }
        "build" => {
            let n = match name_of(v.get("fields")) {
                Ok(n) => n,
                Err(e) => return Outcome::Fail(e),
            };
            match n.value() {
                Err(e) => Outcome::check(wants_error, || format!("build failed: {e}")),
                Ok(value) => all([
                    Outcome::check(!wants_error, || format!("built {value:?} but Dubbo throws")),
                    match s(v, "expected_value").or_else(|| s(v, "expected")) {
                        Some(exp) => expect_eq("value", exp, value.as_str()),
                        None => Outcome::Pass,
                    },
                    concrete_check(v, &n),
                ]),
            }
        }
        "is_conform_rules" => {
            let input = s(v, "input").unwrap_or("");
            match v.get("expected").and_then(Value::as_bool) {
                Some(exp) => expect_eq("isConformRules", exp, is_conform_rules(input)),
                None => Outcome::Skip("no boolean expected".into()),
            }
        }
        "register_name" => register_vector(v),
        "from_subscribe_url" => {
            let url = match url_of(v) {
                Ok(u) => u,
                Err(o) => return o,
            };
            match NacosServiceName::from_subscribe_url(&url) {
                Err(e) => Outcome::check(wants_error, || format!("from URL failed: {e}")),
                Ok(n) => all([
                    Outcome::check(!wants_error, || "built a name but Dubbo throws".into()),
                    match (s(v, "expected"), n.value()) {
                        (Some(exp), Ok(val)) => expect_eq("value", exp, val.as_str()),
                        (Some(_), Err(e)) => Outcome::Fail(e.to_string()),
                        (None, _) => Outcome::Pass,
                    },
                    concrete_check(v, &n),
                ]),
            }
        }
        "legacy_name" | "legacy_subscribe_name" | "legacy" => {
            url_to_string(v, legacy_subscribe_name)
        }
        "compatible_name" | "compatible_register_name" | "register_compatible" | "compatible" => {
            url_to_string(v, compatible_register_name)
        }
        "handle_inner_symbol" | "inner_symbol" | "encode" | "wrapper_name" | "nacos_name" => {
            match (s(v, "input"), s(v, "expected")) {
                (Some(i), Some(e)) => expect_eq("nacos name", e, &*to_nacos_name(i)),
                _ => Outcome::Skip("needs input and expected".into()),
            }
        }
        "is_concrete" | "is_range" | "is_wildcard" => {
            let Some(exp) = v.get("expected").and_then(Value::as_bool) else {
                return Outcome::Skip("no boolean expected".into());
            };
            let input = v
                .get("input")
                .or_else(|| v.get("value"))
                .or_else(|| v.get("fields"));
            match (mode, input) {
                ("is_concrete", Some(Value::String(_) | Value::Object(_)))
                    if s(v, "input").is_none_or(|t| t.contains(':')) =>
                {
                    match name_of(input) {
                        Ok(n) => expect_eq("isConcrete", exp, n.is_concrete()),
                        Err(e) => Outcome::Fail(e),
                    }
                }
                (m, Some(x)) => {
                    let val = x.as_str();
                    let got = match m {
                        "is_range" => is_range(val),
                        "is_wildcard" => is_wildcard(val),
                        _ => is_concrete_value(val),
                    };
                    expect_eq(m, exp, got)
                }
                (m, None) => Outcome::Skip(format!("{m}: no input")),
            }
        }
        other => Outcome::Skip(format!("nacos_service_name_parse mode {other:?} not known")),
    }
}

fn url_to_string(v: &Value, f: fn(&Url) -> String) -> Outcome {
    let url = match url_of(v) {
        Ok(u) => u,
        Err(o) => return o,
    };
    match s(v, "expected") {
        Some(exp) => expect_eq("name", exp.to_owned(), f(&url)),
        None => Outcome::Skip("no expected name".into()),
    }
}

fn register_vector(v: &Value) -> Outcome {
    let url = match url_of(v) {
        Ok(u) => u,
        Err(o) => return o,
    };
    let mut checks = Vec::new();
    if let Some(exp) = s(v, "expected") {
        checks.push(expect_eq(
            "register name",
            exp.to_owned(),
            register_name(&url),
        ));
    }
    if let Some(exp) = v.get("expected_names").and_then(Value::as_array) {
        let compat = v
            .get("register_compatible")
            .and_then(Value::as_bool)
            .unwrap_or(false)
            || s(v, "registry_url").is_some_and(|r| r.contains("nacos.register-compatible=true"));
        let mut names = vec![register_name(&url)];
        let c = compatible_register_name(&url);
        if compat && !names.contains(&c) {
            names.push(c);
        }
        let mut want: Vec<String> = exp
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_owned)
            .collect();
        want.sort();
        names.sort();
        checks.push(expect_eq("register names", want, names));
    }
    if let Some(exp) = s(v, "expected_compatible") {
        checks.push(expect_eq(
            "compatible name",
            exp.to_owned(),
            compatible_register_name(&url),
        ));
    }
    if let Some(exp) = s(v, "nacos_group") {
        let group = match s(v, "registry_url").map(Url::parse) {
            Some(Ok(r)) => match NacosConfig::from_url(&r) {
                Ok(c) => c.group,
                Err(e) => return Outcome::Fail(e.to_string()),
            },
            Some(Err(e)) => return Outcome::Fail(format!("registry_url: {e}")),
            None => DEFAULT_GROUP.to_owned(),
        };
        checks.push(expect_eq("nacos group", exp.to_owned(), group));
    }
    if let Some(inst) = v.get("expected_instance") {
        if let Some(ip) = inst.get("ip").and_then(Value::as_str) {
            checks.push(expect_eq("ip", Some(ip), url.host()));
        }
        if let Some(port) = inst.get("port").and_then(Value::as_i64) {
            checks.push(expect_eq("port", port, i64::from(url.port())));
        }
        let md = instance_metadata(&url);
        if let Some(added) = inst.get("metadata_added").and_then(Value::as_object) {
            for (k, want) in added {
                checks.push(expect_eq(
                    &format!("metadata.{k}"),
                    want.as_str(),
                    md.get(k).map(String::as_str),
                ));
            }
        }
        for (k, val) in url.params() {
            if k != "category" {
                checks.push(expect_eq(
                    &format!("metadata.{k}"),
                    Some(val),
                    md.get(k).map(String::as_str),
                ));
            }
        }
    }
    all(checks)
}

fn is_compatible(v: &Value) -> Outcome {
    let pattern = match s(v, "pattern_url").map(Url::parse) {
        Some(Ok(u)) => NacosServiceName::from_subscribe_url(&u).map_err(|e| e.to_string()),
        Some(Err(e)) => Err(e.to_string()),
        None => name_of(v.get("pattern")),
    };
    let names = pattern.and_then(|p| Ok((p, name_of(v.get("concrete"))?)));
    let (pattern, concrete) = match names {
        Ok(n) => n,
        // A name with fewer than four segments throws in Dubbo too.
        Err(e) => return Outcome::check(has(v, "error"), || format!("name: {e}")),
    };
    match v.get("expected").and_then(Value::as_bool) {
        Some(exp) => expect_eq("isCompatible", exp, pattern.is_compatible(&concrete)),
        None => Outcome::Skip("no boolean expected".into()),
    }
}
