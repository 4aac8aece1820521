//! Routers on generated provider lists and calls: the 2.x condition rule
//! (`ConditionStateRouter(url, rule, force, enabled)`), a 3.x YAML condition rule
//! (`ServiceStateRouter.process`) and the tag router (`TagStateRouter`, static tags and a YAML
//! rule). The answer is the indices of the providers left, in order.

use std::collections::BTreeMap;

use invoker::router::target::Target;
use invoker::router::RuleKey;
use invoker::rules::tag::{self, TagRule};
use invoker::rules::RouteCall;
use invoker::rules::{Chain, ChainMode, RuleSet};
use invoker::rules::{ConditionRouter, Dialect};
use proptest::prelude::*;
use proptest::sample::select;
use proptest::strategy::BoxedStrategy;
use registry_core::Url;
use serde_json::{json, Value};

use crate::compare::error;
use crate::Operation;

const HOSTS: [&str; 5] = ["10.0.0.1", "10.0.0.2", "10.0.0.3", "10.0.1.7", "10.0.0.9"];

fn provider(i: usize) -> BoxedStrategy<String> {
    (
        select(&HOSTS[..]),
        select(&[20880u16, 20881][..]),
        proptest::option::of(select(&["1.0.0", "2.0.0"][..])),
        proptest::option::of(select(&["hz", "sh", ""][..])),
        proptest::option::of(select(&["gray", "blue", "", "gray,blue"][..])),
        proptest::option::of(select(&["g1", "g2"][..])),
    )
        .prop_map(move |(host, port, version, region, tag, group)| {
            let mut q = vec![
                "interface=com.foo.Greeter".to_owned(),
                "remote.application=prov".to_owned(),
                "side=provider".to_owned(),
            ];
            q.push(format!("i={i}"));
            for (k, v) in [
                ("version", version),
                ("region", region),
                ("dubbo.tag", tag),
                ("group", group),
            ] {
                if let Some(v) = v {
                    q.push(format!("{k}={v}"));
                }
            }
            format!("dubbo://{host}:{port}/com.foo.Greeter?{}", q.join("&"))
        })
        .boxed()
}

fn providers() -> BoxedStrategy<Vec<String>> {
    (1usize..7)
        .prop_flat_map(|n| (0..n).map(provider).collect::<Vec<_>>())
        .boxed()
}

fn consumer() -> BoxedStrategy<String> {
    (
        select(&["10.0.0.9", "10.0.0.1", "10.0.1.7"][..]),
        proptest::option::of(select(&["1.0.0", "2.0.0"][..])),
        proptest::option::of(select(&["true", "false"][..])),
        proptest::option::of(select(&["gray", "blue"][..])),
    )
        .prop_map(|(host, version, force_tag, tag)| {
            let mut q = vec![
                "interface=com.foo.Greeter".to_owned(),
                "application=app".to_owned(),
                "side=consumer".to_owned(),
            ];
            if let Some(v) = version {
                q.push(format!("version={v}"));
            }
            if let Some(f) = force_tag {
                q.push(format!("dubbo.force.tag={f}"));
            }
            if let Some(t) = tag {
                q.push(format!("dubbo.tag={t}"));
            }
            format!("consumer://{host}/com.foo.Greeter?{}", q.join("&"))
        })
        .boxed()
}

/// One condition: `key op value[,value]`.
fn condition() -> BoxedStrategy<String> {
    let key = select(
        &[
            "host",
            "port",
            "method",
            "version",
            "region",
            "application",
            "arguments[0]",
            "attachments[foo]",
            "protocol",
            "address",
            "dubbo.tag",
            "group",
            "interface",
        ][..],
    );
    let op = select(&["=", "!="][..]);
    let value = prop_oneof![
        6 => select(&["10.0.0.1", "10.0.0.*", "10.0.0.1,10.0.0.2", "$host", "*", "20880", "sayHello", "other",
            "1.0.0", "2.*", "hz", "sh", "app", "prov", "gray", "a", "dubbo", "10.0.0.1:20880", "say*", "*Hello",
            "g1", "com.foo.Greeter", "10.0.0.0/24", "10.0.0.1-10.0.0.3", ""][..]).prop_map(str::to_owned),
        1 => crate::gen::nasty_string(4),
    ];
    (key, op, value)
        .prop_map(|(k, o, v)| format!("{k} {o} {v}"))
        .boxed()
}

fn side() -> BoxedStrategy<String> {
    prop_oneof![
        1 => Just(String::new()),
        4 => proptest::collection::vec(condition(), 1..3).prop_map(|c| c.join(" & ")),
    ]
    .boxed()
}

fn rule() -> BoxedStrategy<String> {
    prop_oneof![
        8 => (side(), side(), any::<bool>()).prop_map(|(w, t, arrow)| if arrow { format!("{w} => {t}") } else { t }),
        1 => crate::gen::nasty_string(12),
    ]
    .boxed()
}

fn call() -> BoxedStrategy<(String, Vec<String>, BTreeMap<String, String>)> {
    (
        select(&["sayHello", "other"][..]),
        proptest::collection::vec(
            select(&["a", "b", "gray"][..]).prop_map(str::to_owned),
            0..2,
        ),
        proptest::option::of(select(&["gray", "blue", ""][..])),
        proptest::option::of(select(&["a", "b"][..])),
        proptest::option::of(select(&["true", "false"][..])),
    )
        .prop_map(|(m, args, tag, custom, force)| {
            let mut att = BTreeMap::new();
            if let Some(t) = tag {
                att.insert("dubbo.tag".to_owned(), t.to_owned());
            }
            if let Some(f) = custom {
                att.insert("foo".to_owned(), f.to_owned());
            }
            if let Some(f) = force {
                att.insert("dubbo.force.tag".to_owned(), f.to_owned());
            }
            (m.to_owned(), args, att)
        })
        .boxed()
}

/// What the routers need from an input: targets, consumer and the call's parts.
struct Parts {
    targets: Vec<Target>,
    consumer: Url,
    method: String,
    args: Vec<Value>,
    attachments: BTreeMap<String, String>,
}

impl Parts {
    fn of(input: &Value) -> Result<Parts, Value> {
        let parse = |t: &str| Url::parse(t).map_err(|e| error("Url::parse", e));
        let targets = input
            .get("providers")
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or_default()
            .iter()
            .map(|p| parse(p.as_str().unwrap_or_default()).map(Target::from_url))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Parts {
            targets,
            consumer: parse(
                input
                    .get("consumer")
                    .and_then(Value::as_str)
                    .unwrap_or_default(),
            )?,
            method: input
                .get("method")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned(),
            args: input
                .get("args")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default(),
            attachments: input
                .get("attachments")
                .and_then(Value::as_object)
                .map(|m| {
                    m.iter()
                        .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_owned()))
                        .collect()
                })
                .unwrap_or_default(),
        })
    }

    fn call(&self) -> RouteCall<'_> {
        RouteCall {
            method: Some(&self.method),
            arguments: Some(&self.args),
            attachments: Some(&self.attachments),
        }
    }

    fn all(&self) -> Vec<u32> {
        (0..u32::try_from(self.targets.len()).unwrap_or(0)).collect()
    }
}

fn input_of(
    providers: Vec<String>,
    consumer: String,
    (method, args, attachments): (String, Vec<String>, BTreeMap<String, String>),
) -> Value {
    json!({ "providers": providers, "consumer": consumer, "method": method, "args": args, "attachments": attachments })
}

/// A 2.x condition rule (`condition://` URL form) on a provider list.
#[derive(Debug)]
pub struct Condition;

impl Operation for Condition {
    fn name(&self) -> &'static str {
        "router_condition"
    }

    fn strategy(&self) -> BoxedStrategy<Value> {
        (providers(), consumer(), call(), rule(), any::<bool>())
            .prop_map(|(p, c, call, rule, force)| {
                let mut v = input_of(p, c, call);
                v["rule"] = json!(rule);
                v["force"] = json!(force);
                v
            })
            .boxed()
    }

    fn answer(&self, input: &Value) -> Value {
        let parts = match Parts::of(input) {
            Ok(p) => p,
            Err(e) => return e,
        };
        let rule = input
            .get("rule")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let force = input.get("force").and_then(Value::as_bool).unwrap_or(false);
        let router = match ConditionRouter::new(rule, force, true, Dialect::V3) {
            Ok(r) => r,
            Err(e) => return error("ConditionRouter::new", e),
        };
        let mut idx = parts.all();
        router.route(&parts.targets, &mut idx, &parts.consumer, &parts.call());
        json!(idx)
    }
}

/// A 3.x YAML condition rule (service scope) through the router chain.
#[derive(Debug)]
pub struct ConditionYaml;

fn yaml_rule() -> BoxedStrategy<String> {
    let conditions = proptest::collection::vec(
        (side(), side()).prop_map(|(w, t)| format!("{w} => {t}")),
        0..3,
    );
    (
        select(&["v3.0", "v3.0", "v2.7", ""][..]),
        proptest::option::of(select(&["true", "false"][..])),
        proptest::option::of(select(&["true", "false"][..])),
        proptest::option::of(select(&["true", "false"][..])),
        conditions,
    )
        .prop_map(|(version, enabled, force, runtime, conditions)| {
            let mut y = String::new();
            if !version.is_empty() {
                y.push_str(&format!("configVersion: {version}\n"));
            }
            y.push_str("scope: service\nkey: com.foo.Greeter\n");
            for (k, v) in [("enabled", enabled), ("force", force), ("runtime", runtime)] {
                if let Some(v) = v {
                    y.push_str(&format!("{k}: {v}\n"));
                }
            }
            y.push_str("conditions:\n");
            for c in conditions {
                y.push_str(&format!("  - '{}'\n", c.replace('\'', "''")));
            }
            y
        })
        .boxed()
}

impl Operation for ConditionYaml {
    fn name(&self) -> &'static str {
        "router_condition_yaml"
    }

    fn strategy(&self) -> BoxedStrategy<Value> {
        (providers(), consumer(), call(), yaml_rule())
            .prop_map(|(p, c, call, yaml)| {
                let mut v = input_of(p, c, call);
                v["yaml"] = json!(yaml);
                v
            })
            .boxed()
    }

    fn answer(&self, input: &Value) -> Value {
        let parts = match Parts::of(input) {
            Ok(p) => p,
            Err(e) => return e,
        };
        let yaml = input.get("yaml").and_then(Value::as_str);
        let mut rules = RuleSet::default();
        // A refused rule keeps the previous one (none here), as in the directory.
        let _ = rules.apply(&RuleKey::ServiceCondition, yaml, Dialect::V3);
        let app = parts.consumer.param("application").unwrap_or("");
        let chain = Chain::build(&rules, &parts.targets, app, ChainMode::V3, true);
        let mut idx = parts.all();
        chain.route(
            &parts.targets,
            &mut idx,
            &parts.consumer,
            &parts.call(),
            &mut |_| 0,
        );
        json!(idx)
    }
}

/// The tag router: static tags (`dubbo.tag` on providers and in the call) and a YAML rule.
#[derive(Debug)]
pub struct Tag;

fn tag_rule() -> BoxedStrategy<String> {
    let tag = (
        select(&["gray", "blue", "red"][..]),
        prop_oneof![
            proptest::collection::vec(
                select(
                    &[
                        "10.0.0.1:20880",
                        "10.0.0.2:20881",
                        "10.0.0.3:20880",
                        "10.0.0.*:20880",
                        "10.0.0.1",
                        "10.0.0.9:*"
                    ][..]
                ),
                0..3
            )
            .prop_map(|a| format!("    addresses: [{}]\n", a.join(", "))),
            select(&["hz", "sh"][..]).prop_map(|r| format!(
                "    match:\n      - key: region\n        value:\n          exact: {r}\n"
            )),
        ],
    )
        .prop_map(|(name, body)| format!("  - name: {name}\n{body}"));
    (
        proptest::option::of(select(&["true", "false"][..])),
        proptest::option::of(select(&["true", "false"][..])),
        select(&["v3.0", "v3.0", ""][..]),
        proptest::collection::vec(tag, 0..3),
    )
        .prop_map(|(force, enabled, version, tags)| {
            let mut y = String::new();
            if !version.is_empty() {
                y.push_str(&format!("configVersion: {version}\n"));
            }
            y.push_str("key: prov\nscope: application\n");
            for (k, v) in [("force", force), ("enabled", enabled)] {
                if let Some(v) = v {
                    y.push_str(&format!("{k}: {v}\n"));
                }
            }
            y.push_str("tags:\n");
            for t in tags {
                y.push_str(&t);
            }
            y
        })
        .boxed()
}

impl Operation for Tag {
    fn name(&self) -> &'static str {
        "router_tag"
    }

    fn strategy(&self) -> BoxedStrategy<Value> {
        (
            providers(),
            consumer(),
            call(),
            proptest::option::weighted(0.6, tag_rule()),
        )
            .prop_map(|(p, c, call, yaml)| {
                let mut v = input_of(p, c, call);
                if let Some(y) = yaml {
                    v["yaml"] = json!(y);
                }
                v
            })
            .boxed()
    }

    fn divergence(&self, input: &Value, java: &Value, _rust: &Value) -> Option<&'static str> {
        // A v3.0 tag with neither addresses nor match makes TagRouterRule.init throw (a null
        // match list): Java drops the whole rule and routes by static tags only.
        let yaml = input.get("yaml").and_then(Value::as_str)?;
        let empty_tag = yaml.contains("configVersion: v3.0") && yaml.contains("addresses: []\n");
        let mut without = input.clone();
        if let Some(o) = without.as_object_mut() {
            o.remove("yaml");
        }
        (empty_tag && crate::compare::same(java, &self.answer(&without)))
            .then_some("tag-rule-empty-tag-kept")
    }

    fn answer(&self, input: &Value) -> Value {
        let parts = match Parts::of(input) {
            Ok(p) => p,
            Err(e) => return e,
        };
        let rule = match input
            .get("yaml")
            .and_then(Value::as_str)
            .map(TagRule::parse)
        {
            Some(Ok(r)) => Some(r),
            // A refused rule leaves static tags only, as no rule does.
            Some(Err(_)) | None => None,
        };
        let call = parts.call();
        let (tag, force) = tag::request_tag(&parts.consumer, &call);
        let resolved = rule.as_ref().map(|r| r.resolve(&parts.targets));
        let mut idx = parts.all();
        tag::route(
            resolved.as_ref(),
            &parts.targets,
            &mut idx,
            tag,
            force,
            Dialect::V3,
        );
        json!(idx)
    }
}
