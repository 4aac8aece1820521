//! Configurators: override URLs (`Configurator.toConfigurators`) and YAML rules
//! (`ConfigParser.parseConfigurators`) applied in order to a generated provider or consumer
//! URL; the resulting URL text is compared.

use invoker::directory::DubboCompat;
use invoker::rules::parse_configurators;
use invoker::rules::to_configurators;
use proptest::prelude::*;
use proptest::sample::select;
use proptest::strategy::BoxedStrategy;
use registry_core::Url;
use serde_json::{json, Value};

use crate::compare::error;
use crate::Operation;

fn target() -> BoxedStrategy<String> {
    (
        select(&["10.0.0.1:20880", "10.0.0.2:20881", "10.0.0.1:20881"][..]),
        select(&["provider", "consumer"][..]),
        proptest::option::of(select(&["1000", "3000"][..])),
        proptest::option::of(select(&["prov", "other"][..])),
        proptest::option::of(select(&["1.0.0", "2.0.0"][..])),
    )
        .prop_map(|(addr, side, timeout, app, version)| {
            let mut q = vec![
                "interface=com.foo.Greeter".to_owned(),
                format!("side={side}"),
            ];
            for (k, v) in [
                ("timeout", timeout),
                ("application", app),
                ("version", version),
            ] {
                if let Some(v) = v {
                    q.push(format!("{k}={v}"));
                }
            }
            format!("dubbo://{addr}/com.foo.Greeter?{}", q.join("&"))
        })
        .boxed()
}

fn override_url() -> BoxedStrategy<String> {
    (
        select(
            &[
                "0.0.0.0",
                "10.0.0.1",
                "10.0.0.2",
                "10.0.0.1:20880",
                "10.0.0.1:20881",
                "0.0.0.0:20880",
            ][..],
        ),
        select(&["com.foo.Greeter", "com.foo.Other", "*"][..]),
        proptest::collection::vec(
            (
                select(
                    &[
                        "timeout",
                        "weight",
                        "loadbalance",
                        "enabled",
                        "side",
                        "application",
                        "configVersion",
                        "disabled",
                        "version",
                        "group",
                        "dynamic",
                        "compatible_config",
                        "category",
                        "anyhost",
                        "providerAddresses",
                        "retries",
                    ][..],
                ),
                select(
                    &[
                        "1",
                        "5000",
                        "true",
                        "false",
                        "provider",
                        "consumer",
                        "prov",
                        "v2.7",
                        "v3.0",
                        "random",
                        "2.0.0",
                        "1.0.0",
                        "configurators",
                        "10.0.0.1:20880",
                        "",
                        "g1",
                    ][..],
                ),
            ),
            0..5,
        ),
    )
        .prop_map(|(host, path, params)| {
            let q: Vec<String> = params.iter().map(|(k, v)| format!("{k}={v}")).collect();
            format!("override://{host}/{path}?{}", q.join("&"))
        })
        .boxed()
}

fn yaml() -> BoxedStrategy<String> {
    let config = (
        proptest::option::of(select(&["provider", "consumer"][..])),
        proptest::option::of(select(
            &[
                "[0.0.0.0]",
                "[10.0.0.1:20880]",
                "[10.0.0.1]",
                "[10.0.0.2:20881, 10.0.0.1:20880]",
            ][..],
        )),
        proptest::option::of(select(&["[prov]", "[other]"][..])),
        proptest::option::of(select(&["false", "true"][..])),
        proptest::collection::vec(
            (
                select(&["timeout", "weight", "loadbalance", "retries"][..]),
                select(&["1", "200", "random", "0"][..]),
            ),
            0..3,
        ),
    )
        .prop_map(|(side, addresses, apps, enabled, params)| {
            let mut c = String::from("  - ");
            let mut lines = Vec::new();
            if let Some(s) = side {
                lines.push(format!("side: {s}"));
            }
            if let Some(a) = addresses {
                lines.push(format!("addresses: {a}"));
            }
            if let Some(a) = apps {
                lines.push(format!("applications: {a}"));
            }
            if let Some(e) = enabled {
                lines.push(format!("enabled: {e}"));
            }
            lines.push("parameters:".to_owned());
            for (k, v) in params {
                lines.push(format!("  {k}: {v}"));
            }
            c.push_str(&lines.join("\n    "));
            c.push('\n');
            c
        });
    (
        select(&["v3.0", "v2.7", "v3.1"][..]),
        select(&["service", "application"][..]),
        proptest::option::of(select(&["true", "false"][..])),
        proptest::collection::vec(config, 0..3),
    )
        .prop_map(|(version, scope, enabled, configs)| {
            let key = if scope == "service" {
                "com.foo.Greeter"
            } else {
                "prov"
            };
            let mut y = format!("configVersion: {version}\nscope: {scope}\nkey: {key}\n");
            if let Some(e) = enabled {
                y.push_str(&format!("enabled: {e}\n"));
            }
            y.push_str("configs:\n");
            for c in configs {
                y.push_str(&c);
            }
            y
        })
        .boxed()
}

/// Override URLs or a YAML rule applied to a URL.
#[derive(Debug)]
pub struct Configure;

impl Operation for Configure {
    fn name(&self) -> &'static str {
        "configurator"
    }

    fn strategy(&self) -> BoxedStrategy<Value> {
        prop_oneof![
            (target(), proptest::collection::vec(override_url(), 1..4))
                .prop_map(|(url, o)| json!({ "url": url, "overrides": o })),
            (target(), yaml()).prop_map(|(url, y)| json!({ "url": url, "yaml": y })),
        ]
        .boxed()
    }

    fn answer(&self, _input: &Value) -> Value {
        Value::Null
    }

    fn answer_after(&self, input: &Value, java: &Value) -> Option<Value> {
        // Java's local address (what a consumer-side rule compares with); when Java failed
        // there is none, and ours should fail too.
        let local = java
            .get("local_host")
            .and_then(Value::as_str)
            .unwrap_or("127.0.0.1");
        let parse = |t: &str| Url::parse(t).map_err(|e| error("Url::parse", e));
        let run = || -> Result<Value, Value> {
            let urls: Vec<Url> = match input.get("yaml").and_then(Value::as_str) {
                Some(y) => parse_configurators(y)
                    .map_err(|e| error("parse_configurators", e))?
                    .into_iter()
                    .map(|p| p.url)
                    .collect(),
                None => input
                    .get("overrides")
                    .and_then(Value::as_array)
                    .map(Vec::as_slice)
                    .unwrap_or_default()
                    .iter()
                    .map(|o| parse(o.as_str().unwrap_or_default()))
                    .collect::<Result<_, _>>()?,
            };
            let mut url = parse(input.get("url").and_then(Value::as_str).unwrap_or_default())?;
            for c in to_configurators(&urls, DubboCompat::V3).unwrap_or_default() {
                url = c.configure(&url, local, DubboCompat::V3);
            }
            Ok(json!({ "url": url.to_full_string(), "local_host": java.get("local_host") }))
        };
        Some(run().unwrap_or_else(|e| e))
    }
}
