//! Conformance kind `config_parser` (routers.md R6.2): override rules → configurator URLs,
//! through the real `invoker::rules::parse_configurators`.
//!
//! `expected` is one of: `error` (the rule is refused), `count` plus `urls` (every URL: host,
//! port, path, address, parameters as a map, `match_condition`), `urls_subset` (by index:
//! `address`, `service_interface` = `interface` param else path, `parameters_subset`), and
//! `match_checks` (`ConditionMatch#isMatch(host, url)` on the first URL's condition).

use std::collections::BTreeMap;

use invoker::rules::{parse_configurators, ParsedConfigurator};
use registry_core::Url;
use serde_json::Value;

use super::util::s;
use super::{all, expect_eq, Outcome};

/// Runs one `config_parser` vector.
pub fn run(_kind: &str, subkind: &str, v: &Value) -> Outcome {
    let inputs = v.get("inputs").unwrap_or(&Value::Null);
    if s(inputs, "op") != Some("parse_configurators") {
        return Outcome::Skip(format!("config_parser/{subkind}: unknown op"));
    }
    let Some(raw) = s(inputs, "raw_config") else {
        return Outcome::Skip("config_parser vector without raw_config".into());
    };
    let expected = v.get("expected").unwrap_or(&Value::Null);
    let parsed = parse_configurators(raw);
    if expected.get("error").is_some() {
        return match parsed {
            Err(_) => Outcome::Pass,
            Ok(urls) => Outcome::Fail(format!(
                "expected the rule to be refused ({}), got {} URLs",
                expected["error"],
                urls.len()
            )),
        };
    }
    let urls = match parsed {
        Ok(u) => u,
        Err(e) => return Outcome::Fail(format!("refused: {e}")),
    };
    let mut checks = Vec::new();
    if let Some(n) = expected.get("count").and_then(Value::as_u64) {
        checks.push(expect_eq("count", n as usize, urls.len()));
    }
    if let Some(list) = expected.get("urls").and_then(Value::as_array) {
        for (i, want) in list.iter().enumerate() {
            checks.push(match urls.get(i) {
                Some(got) => full_url(i, want, got),
                None => Outcome::Fail(format!("url {i} missing")),
            });
        }
    }
    if let Some(map) = expected.get("urls_subset").and_then(Value::as_object) {
        for (idx, want) in map {
            let got = idx.parse::<usize>().ok().and_then(|i| urls.get(i));
            checks.push(match got {
                Some(got) => subset(idx, want, &got.url),
                None => Outcome::Fail(format!("url {idx} missing")),
            });
        }
    }
    if let Some(list) = expected.get("match_checks").and_then(Value::as_array) {
        let cond = urls.first().and_then(|p| p.match_condition.clone());
        for c in list {
            let (Some(host), Some(url), Some(want)) = (
                s(c, "host"),
                s(c, "url"),
                c.get("expected").and_then(Value::as_bool),
            ) else {
                continue;
            };
            let Ok(target) = Url::parse(url) else {
                checks.push(Outcome::Fail(format!(
                    "match_checks url {url:?} does not parse"
                )));
                continue;
            };
            let got = cond.as_ref().is_none_or(|m| m.is_match(host, &target));
            checks.push(expect_eq(&format!("match {host} {url}"), want, got));
        }
    }
    all(checks)
}

fn params(u: &Url) -> BTreeMap<String, String> {
    u.params()
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect()
}

fn want_params(v: &Value) -> BTreeMap<String, String> {
    v.as_object()
        .map(|m| {
            m.iter()
                .map(|(k, v)| {
                    let text = v.as_str().map_or_else(|| v.to_string(), str::to_owned);
                    (k.clone(), text)
                })
                .collect()
        })
        .unwrap_or_default()
}

fn full_url(i: usize, want: &Value, got: &ParsedConfigurator) -> Outcome {
    let u = &got.url;
    let mut checks = vec![
        expect_eq(
            &format!("url {i} protocol"),
            s(want, "protocol"),
            u.protocol(),
        ),
        expect_eq(&format!("url {i} host"), s(want, "host"), u.host()),
        expect_eq(
            &format!("url {i} path"),
            s(want, "path"),
            u.path().filter(|p| !p.is_empty()),
        ),
        expect_eq(
            &format!("url {i} address"),
            s(want, "address").map(str::to_owned),
            u.address(),
        ),
    ];
    if let Some(p) = want.get("port").and_then(Value::as_i64) {
        checks.push(expect_eq(&format!("url {i} port"), p, i64::from(u.port())));
    }
    if let Some(p) = want.get("parameters") {
        checks.push(expect_eq(
            &format!("url {i} parameters"),
            want_params(p),
            params(u),
        ));
    }
    if let Some(m) = want.get("match_condition") {
        let got_m = got
            .match_condition
            .as_ref()
            .and_then(|c| serde_json::to_value(&**c).ok())
            .unwrap_or(Value::Null);
        checks.push(expect_eq(&format!("url {i} match_condition"), m, &got_m));
    }
    all(checks)
}

fn subset(idx: &str, want: &Value, u: &Url) -> Outcome {
    let mut checks = Vec::new();
    if let Some(a) = s(want, "address") {
        checks.push(expect_eq(
            &format!("url {idx} address"),
            Some(a.to_owned()),
            u.address(),
        ));
    }
    if let Some(si) = s(want, "service_interface") {
        let got = u.param("interface").or_else(|| u.path()).map(str::to_owned);
        checks.push(expect_eq(
            &format!("url {idx} service_interface"),
            Some(si.to_owned()),
            got,
        ));
    }
    if let Some(p) = want.get("parameters_subset") {
        for (k, v) in want_params(p) {
            checks.push(expect_eq(
                &format!("url {idx} param {k}"),
                Some(v.as_str()),
                u.param(&k),
            ));
        }
    }
    all(checks)
}
