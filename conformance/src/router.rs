//! Conformance kinds of the routers: `condition_router` (url_rule, rule_parse, yaml_v30,
//! yaml_v31_multi_dest) and `tag_router` (static_tag, yaml, force).
//!
//! Every vector drives the real `invoker::router` code: condition rules through
//! [`ConditionRouter`], YAML rules through [`RuleSet::apply`] (the same stale-rule handling
//! the directory uses) and the [`Chain`], tag rules through `tag::route`. Where a vector
//! lists what Dubbo 2.7.23 does (`expected_dubbo_2_7_23`), the 2.7 dialect is checked too.
//! Random v3.1 outcomes are sampled with a fixed seed and compared with the expected
//! outcome set and probabilities (±0.02).

use std::collections::{BTreeMap, BTreeSet};

use invoker::router::rule_doc::{parse_condition_doc, ConditionBody};
use invoker::router::target::Target;
use invoker::router::{service_rule_key, RuleKey, RULE_GROUP};
use invoker::rules::tag::{self, ResolvedTags, TagRule};
use invoker::rules::KeyMatcher;
use invoker::rules::RouteCall;
use invoker::rules::{parse_condition, Side};
use invoker::rules::{Chain, ChainMode, RuleSet};
use invoker::rules::{ConditionRouter, Dialect};
use registry_core::Url;
use serde_json::{json, Value};

use super::util::s;
use super::{all, expect_eq, Outcome};

/// Runs one vector of a kind this module owns.
pub fn run(kind: &str, subkind: &str, v: &Value) -> Outcome {
    let inputs = v.get("inputs").unwrap_or(&Value::Null);
    let expected = v.get("expected").unwrap_or(&Value::Null);
    match (kind, subkind) {
        ("condition_router", "url_rule") => url_rule(v, inputs, expected),
        ("condition_router", "rule_parse") => rule_parse(inputs, expected),
        ("condition_router", "yaml_v30" | "yaml_v31_multi_dest") => yaml_rule(inputs, expected),
        ("tag_router", _) => tag_vector(v, inputs, expected),
        _ => Outcome::Skip(format!("{kind}/{subkind} is not a router kind")),
    }
}

fn url(what: &str, s: &str) -> Result<Url, Outcome> {
    Url::parse(s).map_err(|e| Outcome::Fail(format!("{what} {s:?} does not parse: {e}")))
}

fn targets(inputs: &Value, key: &str) -> Result<Vec<Target>, Outcome> {
    inputs
        .get(key)
        .and_then(Value::as_array)
        .map(|a| a.as_slice())
        .unwrap_or(&[])
        .iter()
        .map(|p| url("provider", p.as_str().unwrap_or("")).map(Target::from_url))
        .collect()
}

/// Owned parts of a vector invocation (`null` = Java null).
struct Call {
    null: bool,
    method: Option<String>,
    arguments: Option<Vec<Value>>,
    attachments: BTreeMap<String, String>,
}

impl Call {
    fn of(inputs: &Value) -> Call {
        let inv = inputs.get("invocation").unwrap_or(&Value::Null);
        if inv.is_null() {
            return Call {
                null: true,
                method: None,
                arguments: None,
                attachments: BTreeMap::new(),
            };
        }
        Call {
            null: false,
            method: s(inv, "method").map(str::to_owned),
            arguments: inv.get("arguments").and_then(Value::as_array).cloned(),
            attachments: inv
                .get("attachments")
                .and_then(Value::as_object)
                .map(|m| {
                    m.iter()
                        .map(|(k, v)| {
                            (
                                k.clone(),
                                v.as_str()
                                    .map(str::to_owned)
                                    .unwrap_or_else(|| v.to_string()),
                            )
                        })
                        .collect()
                })
                .unwrap_or_default(),
        }
    }

    fn view(&self) -> RouteCall<'_> {
        if self.null {
            return RouteCall::none();
        }
        // Java's RpcUtils#getMethodName: the real method of a generic call.
        let method = match (self.method.as_deref(), self.arguments.as_deref()) {
            (Some("$invoke" | "$invokeAsync"), Some([Value::String(m), _, _])) => Some(m.as_str()),
            (m, _) => m,
        };
        RouteCall {
            method,
            arguments: self.arguments.as_deref(),
            attachments: Some(&self.attachments),
        }
    }
}

fn indices(e: &Value) -> Option<Vec<u32>> {
    e.get("indices")?
        .as_array()?
        .iter()
        .map(|i| i.as_u64().and_then(|i| u32::try_from(i).ok()))
        .collect()
}

fn all_indices(n: usize) -> Vec<u32> {
    (0..u32::try_from(n).unwrap_or(u32::MAX)).collect()
}

fn decoded_rule(inputs: &Value, rule_url: &Url) -> String {
    if let Some(r) = s(inputs, "rule") {
        return r.to_owned();
    }
    let raw = rule_url.param("rule").unwrap_or("").replace('+', " ");
    registry_core::codec::decode(&raw).unwrap_or(raw)
}

fn url_rule(v: &Value, inputs: &Value, expected: &Value) -> Outcome {
    let rule_url = match url("rule_url", s(inputs, "rule_url").unwrap_or("")) {
        Ok(u) => u,
        Err(o) => return o,
    };
    let rule = decoded_rule(inputs, &rule_url);
    let truthy = |k: &str, d: bool| {
        rule_url
            .param(k)
            .map_or(d, |x| x.eq_ignore_ascii_case("true"))
    };
    let (force, enabled) = (truthy("force", false), truthy("enabled", true));
    let build = |d: Dialect| ConditionRouter::new(&rule, force, enabled, d);
    let op = s(inputs, "op").unwrap_or("route");
    if op == "construct" || expected.get("error").is_some() || expected.get("constructed").is_some()
    {
        let ok = build(Dialect::V3).is_ok();
        let want = expected.get("error").is_none()
            && expected.get("constructed").and_then(Value::as_bool) != Some(false);
        if op == "construct" || !ok || !want {
            return expect_eq("constructed", want, ok);
        }
    }
    let consumer = match url("consumer_url", s(inputs, "consumer_url").unwrap_or("")) {
        Ok(u) => u,
        Err(o) => return o,
    };
    let call = Call::of(inputs);
    let run_dialect = |d: Dialect, exp: &Value| -> Outcome {
        let router = match build(d) {
            Ok(r) => r,
            Err(e) => return Outcome::Fail(format!("rule refused: {e}")),
        };
        match op {
            "match_when" => {
                let want = exp
                    .get("match_when")
                    .and_then(Value::as_bool)
                    .unwrap_or(false);
                expect_eq(
                    "match_when",
                    want,
                    router.match_when(&consumer, &call.view()),
                )
            }
            _ => {
                let ts = match targets(inputs, "providers") {
                    Ok(t) => t,
                    Err(o) => return o,
                };
                let mut idx = all_indices(ts.len());
                router.route(&ts, &mut idx, &consumer, &call.view());
                match indices(exp) {
                    Some(want) => expect_eq("indices", want, idx),
                    None => Outcome::Skip("route vector without indices".into()),
                }
            }
        }
    };
    let v3 = run_dialect(Dialect::V3, expected);
    let v27 = match v.get("expected_dubbo_2_7_23") {
        Some(e27) => match run_dialect(Dialect::V27, e27) {
            Outcome::Fail(d) => Outcome::Fail(format!("2.7 dialect: {d}")),
            o => o,
        },
        None => Outcome::Pass,
    };
    all([v3, v27])
}

fn side_json(side: &Side) -> Value {
    let m: serde_json::Map<String, Value> = side
        .iter()
        .map(|(k, m): (&String, &KeyMatcher)| {
            (
                k.clone(),
                json!({
                    "matches": m.matches.iter().collect::<Vec<_>>(),
                    "mismatches": m.mismatches.iter().collect::<Vec<_>>(),
                    "matcher": m.kind.name(),
                }),
            )
        })
        .collect();
    Value::Object(m)
}

/// Sorts the match lists of an expected side (Java sets have no order).
fn normalize_side(v: &Value) -> Value {
    let Some(o) = v.as_object() else {
        return v.clone();
    };
    let m = o
        .iter()
        .map(|(k, m)| {
            let set = |f: &str| -> Vec<String> {
                let mut x: Vec<String> = m
                    .get(f)
                    .and_then(Value::as_array)
                    .map(|a| a.iter().filter_map(|s| s.as_str().map(str::to_owned)).collect())
                    .unwrap_or_default();
                x.sort();
                x.dedup();
                x
            };
            (
                k.clone(),
                json!({"matches": set("matches"), "mismatches": set("mismatches"), "matcher": m.get("matcher").cloned().unwrap_or(Value::Null)}),
            )
        })
        .collect();
    Value::Object(m)
}

fn rule_parse(inputs: &Value, expected: &Value) -> Outcome {
    match s(inputs, "op").unwrap_or("") {
        "parse_condition" => {
            let rule = s(inputs, "rule").unwrap_or("");
            match (parse_condition(rule, Dialect::V3), expected.get("error")) {
                (Err(_), Some(_)) => Outcome::Pass,
                (Err(e), None) => Outcome::Fail(format!("refused: {e}")),
                (Ok(p), Some(err)) => Outcome::Fail(format!("expected {err}, parsed {p:?}")),
                (Ok(p), None) => {
                    let mut checks = vec![];
                    if let Some(r) = s(expected, "rewritten_rule") {
                        checks.push(expect_eq("rewritten_rule", r, p.rewritten.as_str()));
                    }
                    if let Some(w) = expected.get("when") {
                        checks.push(expect_eq("when", normalize_side(w), side_json(&p.when)));
                    }
                    if let Some(t) = expected.get("then") {
                        let got = p.then.as_ref().map_or(Value::Null, side_json);
                        checks.push(expect_eq("then", normalize_side(t), got));
                    }
                    all(checks)
                }
            }
        }
        "parse_yaml" => {
            let raw = s(inputs, "rule_yaml").unwrap_or("");
            let parsed = parse_condition_doc(raw);
            let want_null = expected.get("rule").is_some_and(Value::is_null);
            match parsed {
                Ok(None) => expect_eq("rule is null", want_null, true),
                Err(e) => {
                    if expected.get("error").is_some() || want_null {
                        Outcome::Pass
                    } else {
                        Outcome::Fail(format!("refused: {e}"))
                    }
                }
                Ok(Some(doc)) => {
                    if want_null {
                        return Outcome::Fail(format!("expected a null rule, got {doc:?}"));
                    }
                    let c = &doc.common;
                    let (ty, conds) = match &doc.body {
                        ConditionBody::V30(c) => ("ConditionRouterRule", json!(c)),
                        ConditionBody::V31(c) => ("MultiDestConditionRouterRule", json!(c.len())),
                    };
                    let got = json!({
                        "type": ty, "valid": c.valid, "force": c.force, "runtime": c.runtime,
                        "enabled": c.enabled, "priority": c.priority, "scope": c.scope,
                        "key": c.key, "configVersion": c.config_version, "conditions": conds,
                    });
                    let checks = expected
                        .as_object()
                        .map(|o| {
                            o.iter()
                                .filter(|(k, _)| {
                                    ty == "ConditionRouterRule" || k.as_str() != "conditions"
                                })
                                .map(|(k, want)| {
                                    expect_eq(k, want, got.get(k).unwrap_or(&Value::Null))
                                })
                                .collect::<Vec<_>>()
                        })
                        .unwrap_or_default();
                    all(checks)
                }
            }
        }
        "rule_key" => {
            let consumer = match url("consumer_url", s(inputs, "consumer_url").unwrap_or("")) {
                Ok(u) => u,
                Err(o) => return o,
            };
            let key = match s(inputs, "router").unwrap_or("") {
                "ServiceStateRouter" => Some(RuleKey::ServiceCondition),
                "AppStateRouter" => consumer
                    .param("application")
                    .filter(|a| !a.is_empty())
                    .map(|a| RuleKey::AppCondition(a.to_owned())),
                other => return Outcome::Skip(format!("rule_key for {other}")),
            };
            let Some(key) = key else {
                return expect_eq(
                    "config_key",
                    expected.get("config_key").cloned().unwrap_or(Value::Null),
                    Value::Null,
                );
            };
            let k = key.config_key(&consumer);
            let _ = service_rule_key(&consumer);
            let got = json!({
                "config_key": k,
                "config_group": RULE_GROUP,
                "zk_path": format!("/dubbo/config/{RULE_GROUP}/{k}"),
                "nacos": {"dataId": k, "group": RULE_GROUP},
            });
            let checks = expected
                .as_object()
                .map(|o| {
                    o.iter()
                        .map(|(f, want)| expect_eq(f, want, got.get(f).unwrap_or(&Value::Null)))
                        .collect::<Vec<_>>()
                })
                .unwrap_or_default();
            all(checks)
        }
        other => Outcome::Skip(format!("rule_parse op {other:?}")),
    }
}

/// The rule key of a YAML vector for its router.
fn rule_key_for(inputs: &Value, consumer: &Url, ts: &[Target]) -> Option<RuleKey> {
    match s(inputs, "router").unwrap_or("ServiceStateRouter") {
        "ServiceStateRouter" => Some(RuleKey::ServiceCondition),
        "AppStateRouter" => consumer
            .param("application")
            .map(|a| RuleKey::AppCondition(a.to_owned())),
        "ProviderAppStateRouter" => ts
            .first()
            .map(|t| invoker::rules::provider_application(&t.raw).to_owned())
            .filter(|a| !a.is_empty())
            .map(RuleKey::AppCondition),
        _ => None,
    }
}

fn yaml_rule(inputs: &Value, expected: &Value) -> Outcome {
    let consumer = match url("consumer_url", s(inputs, "consumer_url").unwrap_or("")) {
        Ok(u) => u,
        Err(o) => return o,
    };
    let router_url = match s(inputs, "router_url") {
        Some(r) => match url("router_url", r) {
            Ok(u) => u,
            Err(o) => return o,
        },
        None => consumer.clone(),
    };
    let ts = match targets(inputs, "providers") {
        Ok(t) => t,
        Err(o) => return o,
    };
    let Some(key) = rule_key_for(inputs, &router_url, &ts) else {
        return Outcome::Skip("YAML vector for an unknown router".into());
    };
    let updates: Vec<Option<String>> = match inputs.get("rule_updates").and_then(Value::as_array) {
        Some(u) => u.iter().map(|x| x.as_str().map(str::to_owned)).collect(),
        None => vec![s(inputs, "rule_yaml").map(str::to_owned)],
    };
    let mut rules = RuleSet::default();
    for u in &updates {
        // A refused update keeps the previous rule, as in the directory.
        let _ = rules.apply(&key, u.as_deref(), Dialect::V3);
    }
    let consumer_app = router_url.param("application").unwrap_or("");
    let chain = Chain::build(&rules, &ts, consumer_app, ChainMode::V3, true);
    let call = Call::of(inputs);
    if let Some(outcomes) = expected.get("outcomes").and_then(Value::as_array) {
        return random_outcomes(&chain, &ts, &consumer, &call, outcomes);
    }
    let mut idx = all_indices(ts.len());
    let mut rng = SplitMix(7);
    chain.route(&ts, &mut idx, &consumer, &call.view(), &mut |sum| {
        rng.below(sum)
    });
    match indices(expected) {
        Some(want) => expect_eq("indices", want, idx),
        None => Outcome::Skip("YAML vector without indices".into()),
    }
}

/// A small seeded generator (SplitMix64) so sampled outcomes are reproducible.
struct SplitMix(u64);

impl SplitMix {
    fn below(&mut self, n: i64) -> i64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        let n = u64::try_from(n.max(1)).unwrap_or(1);
        i64::try_from(z % n).unwrap_or(0)
    }
}

fn random_outcomes(
    chain: &Chain,
    ts: &[Target],
    consumer: &Url,
    call: &Call,
    outcomes: &[Value],
) -> Outcome {
    const RUNS: usize = 20_000;
    let mut rng = SplitMix(42);
    let mut seen: BTreeMap<Vec<u32>, usize> = BTreeMap::new();
    for _ in 0..RUNS {
        let mut idx = all_indices(ts.len());
        chain.route(ts, &mut idx, consumer, &call.view(), &mut |sum| {
            rng.below(sum)
        });
        *seen.entry(idx).or_default() += 1;
    }
    let want: BTreeMap<Vec<u32>, f64> = outcomes
        .iter()
        .filter_map(|o| {
            Some((
                indices(o)?,
                o.get("probability").and_then(Value::as_f64).unwrap_or(-1.0),
            ))
        })
        .collect();
    let got_set: BTreeSet<&Vec<u32>> = seen.keys().collect();
    let want_set: BTreeSet<&Vec<u32>> = want.keys().collect();
    if got_set != want_set {
        return Outcome::Fail(format!("outcomes: expected {want_set:?}, got {got_set:?}"));
    }
    for (k, p) in &want {
        #[allow(clippy::cast_precision_loss)]
        let got = seen.get(k).copied().unwrap_or(0) as f64 / RUNS as f64;
        if *p >= 0.0 && (got - p).abs() > 0.02 {
            return Outcome::Fail(format!("outcome {k:?}: probability {p}, sampled {got:.4}"));
        }
    }
    Outcome::Pass
}

fn tag_vector(v: &Value, inputs: &Value, expected: &Value) -> Outcome {
    match s(inputs, "op").unwrap_or("route") {
        "select_address_by_tag_level" => {
            let by_name = inputs
                .get("tagname_to_addresses")
                .and_then(Value::as_object)
                .map(|m| {
                    m.iter()
                        .map(|(k, a)| {
                            let list: Vec<String> = a
                                .as_array()
                                .map(|a| {
                                    a.iter()
                                        .filter_map(|x| x.as_str().map(str::to_owned))
                                        .collect()
                                })
                                .unwrap_or_default();
                            (k.clone(), list)
                        })
                        .collect()
                })
                .unwrap_or_default();
            let rt = ResolvedTags {
                by_name,
                enabled: true,
                ..ResolvedTags::default()
            };
            let tag = s(inputs, "tag").unwrap_or("");
            let force = inputs
                .get("force_use_tag")
                .and_then(Value::as_bool)
                .unwrap_or(false);
            let got = rt.select_by_level(tag, force).map(<[String]>::to_vec);
            expect_eq(
                "addresses",
                expected.get("addresses").cloned().unwrap_or(Value::Null),
                json!(got),
            )
        }
        "parse" => {
            let raw = s(inputs, "rule_yaml").unwrap_or("");
            let rule = match TagRule::parse(raw) {
                Ok(r) => r,
                Err(e) => {
                    return expect_eq(
                        "valid",
                        expected.get("valid").cloned().unwrap_or(json!(true)),
                        json!(format!("refused: {e}")),
                    )
                }
            };
            let ts = match targets(inputs, "init_providers") {
                Ok(t) => t,
                Err(o) => return o,
            };
            let r = rule.resolve(&ts);
            let c = &rule.doc().common;
            let mut by_name: BTreeMap<&String, &Vec<String>> = BTreeMap::new();
            for (k, a) in &r.by_name {
                by_name.insert(k, a);
            }
            let mut addrs = r.all.clone();
            addrs.sort();
            let got = json!({
                "valid": c.valid, "enabled": c.enabled, "force": c.force, "priority": c.priority,
                "key": c.key, "tag_names": r.names, "tagname_to_addresses": by_name,
                "addresses": addrs,
            });
            let checks = expected
                .as_object()
                .map(|o| {
                    o.iter()
                        .map(|(k, want)| {
                            let mut want = want.clone();
                            if k == "addresses" {
                                if let Some(a) = want.as_array_mut() {
                                    a.sort_by(|x, y| x.as_str().cmp(&y.as_str()));
                                }
                            }
                            expect_eq(k, &want, got.get(k).unwrap_or(&Value::Null))
                        })
                        .collect::<Vec<_>>()
                })
                .unwrap_or_default();
            all(checks)
        }
        _ => tag_route(v, inputs, expected),
    }
}

fn tag_route(v: &Value, inputs: &Value, expected: &Value) -> Outcome {
    let consumer = match url("consumer_url", s(inputs, "consumer_url").unwrap_or("")) {
        Ok(u) => u,
        Err(o) => return o,
    };
    let router_url = match s(inputs, "router_url") {
        Some(r) => match url("router_url", r) {
            Ok(u) => u,
            Err(o) => return o,
        },
        None => consumer.clone(),
    };
    let ts = match targets(inputs, "providers") {
        Ok(t) => t,
        Err(o) => return o,
    };
    let rule = match s(inputs, "rule_yaml") {
        Some(raw) => match TagRule::parse(raw) {
            Ok(r) => Some(r),
            Err(e) => return Outcome::Fail(format!("tag rule refused: {e}")),
        },
        None => None,
    };
    let call = Call::of(inputs);
    let view = call.view();
    // Request tag from the call or the consumer URL; force default from the router URL.
    let tag = view
        .attachment(invoker::keys::TAG_KEY)
        .filter(|t| !t.is_empty())
        .or_else(|| consumer.param(invoker::keys::TAG_KEY))
        .filter(|t| !t.is_empty());
    let (_, force) = tag::request_tag(
        &router_url,
        &RouteCall {
            attachments: view.attachments,
            ..RouteCall::none()
        },
    );
    let run = |d: Dialect| -> Vec<u32> {
        let resolved = rule.as_ref().map(|r| r.resolve(&ts));
        let mut idx = all_indices(ts.len());
        tag::route(resolved.as_ref(), &ts, &mut idx, tag, force, d);
        idx
    };
    let v3 = match indices(expected) {
        Some(want) => expect_eq("indices", want, run(Dialect::V3)),
        None => Outcome::Skip("tag vector without indices".into()),
    };
    let v27 = match v.get("expected_dubbo_2_7_23").and_then(indices) {
        Some(want) => match expect_eq("indices", want, run(Dialect::V27)) {
            Outcome::Fail(d) => Outcome::Fail(format!("2.7 dialect: {d}")),
            o => o,
        },
        None => Outcome::Pass,
    };
    all([v3, v27])
}
