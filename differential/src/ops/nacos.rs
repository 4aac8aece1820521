//! Nacos service names: `NacosServiceName` (parse, `getValue`, `isConcrete`, `isCompatible`,
//! the URL constructor) and the names `NacosRegistry` registers (`getServiceName`,
//! `getCompatibleServiceName`) and subscribes in legacy mode (`getLegacySubscribedServiceName`).

use proptest::prelude::*;
use proptest::strategy::BoxedStrategy;
use registry_core::Url;
use registry_nacos::name::{compatible_register_name, legacy_subscribe_name, register_name};
use registry_nacos::NacosServiceName;
use serde_json::{json, Value};

use crate::compare::error;
use crate::gen;
use crate::Operation;

fn fields(n: &NacosServiceName) -> Value {
    json!({
        "category": n.category,
        "interface": n.interface,
        "version": n.version,
        "group": n.group,
        "value": match n.value() { Ok(v) => Value::String(v), Err(e) => error("value", e) },
        "concrete": n.is_concrete(),
    })
}

/// A name text: four segments built from generated parts, or fewer/more, or junk.
fn name_text() -> BoxedStrategy<String> {
    let category = prop_oneof![
        Just("providers".to_owned()),
        Just("consumers".to_owned()),
        Just("providers,consumers".to_owned()),
        Just(String::new()),
        Just("*".to_owned()),
    ];
    let iface = prop_oneof![
        3 => Just("com.foo.Greeter".to_owned()),
        1 => Just("*".to_owned()),
        1 => Just("a,b".to_owned()),
        1 => gen::word(),
    ];
    prop_oneof![
        8 => (category, iface, gen::group_or_version(), gen::group_or_version())
            .prop_map(|(c, i, v, g)| format!("{c}:{i}:{v}:{g}")),
        1 => proptest::collection::vec(gen::word(), 0..7).prop_map(|w| w.join(":")),
        1 => gen::nasty_string(12),
    ]
    .boxed()
}

/// `new NacosServiceName(pattern).isCompatible(new NacosServiceName(concrete))` and both parses.
#[derive(Debug)]
pub struct NacosName;

impl Operation for NacosName {
    fn name(&self) -> &'static str {
        "nacos_name"
    }

    fn strategy(&self) -> BoxedStrategy<Value> {
        (name_text(), name_text())
            .prop_map(|(p, c)| json!({ "pattern": p, "concrete": c }))
            .boxed()
    }

    fn answer(&self, input: &Value) -> Value {
        let parse =
            |k: &str| NacosServiceName::parse(input.get(k).and_then(Value::as_str).unwrap_or(""));
        let p = parse("pattern");
        let c = parse("concrete");
        let view = |r: &Result<NacosServiceName, _>| match r {
            Ok(n) => fields(n),
            Err(e) => error("NacosServiceName::parse", e),
        };
        json!({
            "pattern": view(&p),
            "concrete": view(&c),
            "compatible": match (&p, &c) {
                (Ok(p), Ok(c)) => Value::Bool(p.is_compatible(c)),
                _ => Value::Null,
            },
        })
    }
}

/// The names of one URL: `new NacosServiceName(url)`, the register name, the compatible
/// register name and the legacy subscribe name.
#[derive(Debug)]
pub struct NacosUrlName;

impl Operation for NacosUrlName {
    fn name(&self) -> &'static str {
        "nacos_url_name"
    }

    fn strategy(&self) -> BoxedStrategy<Value> {
        let built = (
            prop_oneof![Just("consumer"), Just("dubbo"), Just("tri")],
            prop_oneof![3 => Just("com.foo.Greeter".to_owned()), 1 => Just("*".to_owned()), 1 => gen::word()],
            proptest::option::of(gen::group_or_version()),
            proptest::option::of(gen::group_or_version()),
            proptest::option::of(prop_oneof![
                Just("providers".to_owned()),
                Just("consumers".to_owned()),
                Just("providers,configurators,routers".to_owned()),
                Just(String::new()),
            ]),
            any::<bool>(),
            gen::params(),
        )
            .prop_map(|(proto, iface, group, version, category, in_param, extra)| {
                let mut q = Vec::new();
                if in_param {
                    q.push(format!("interface={iface}"));
                }
                if let Some(g) = group {
                    q.push(format!("group={g}"));
                }
                if let Some(v) = version {
                    q.push(format!("version={v}"));
                }
                if let Some(c) = category {
                    q.push(format!("category={c}"));
                }
                for (k, v) in extra {
                    q.push(match v {
                        Some(v) => format!("{k}={v}"),
                        None => k,
                    });
                }
                format!("{proto}://10.0.0.1:20880/{iface}?{}", q.join("&"))
            });
        prop_oneof![6 => built, 1 => gen::url_text()]
            .prop_map(|u| json!({ "url": u }))
            .boxed()
    }

    fn answer(&self, input: &Value) -> Value {
        let url = match Url::parse(input.get("url").and_then(Value::as_str).unwrap_or("")) {
            Ok(u) => u,
            Err(e) => return error("Url::parse", e),
        };
        json!({
            "subscribe": match NacosServiceName::from_subscribe_url(&url) {
                Ok(n) => fields(&n),
                Err(e) => error("from_subscribe_url", e),
            },
            "register": register_name(&url),
            "compatible": compatible_register_name(&url),
            "legacy": legacy_subscribe_name(&url),
        })
    }
}
