//! URLs: `URL.valueOf` and its printed forms, `URL.encode`/`decode`, `UrlUtils.isMatch` and
//! `isServiceKeyMatch`.

use proptest::prelude::*;
use proptest::strategy::BoxedStrategy;
use registry_core::matching::{is_match, is_service_key_match};
use registry_core::{codec, Url};
use serde_json::{json, Map, Value};

use crate::compare::error;
use crate::gen;
use crate::Operation;

fn text<'a>(input: &'a Value, key: &str) -> &'a str {
    input.get(key).and_then(Value::as_str).unwrap_or_default()
}

/// The oracle's view of a URL (`UrlOps.view`).
pub fn view(u: &Url) -> Value {
    let params: Map<String, Value> = u
        .params()
        .map(|(k, v)| (k.to_owned(), Value::String(v.to_owned())))
        .collect();
    json!({
        "protocol": u.protocol(),
        "username": u.username(),
        "password": u.password(),
        "host": u.host(),
        "port": u.port(),
        "path": u.path(),
        "address": u.address(),
        "parameters": params,
        "full": u.to_full_string(),
        "service": u.to_service_string(),
        "identity": u.to_identity_string(),
        "service_key": u.service_key(),
    })
}

/// `URL.valueOf(text)` and what the URL shows.
#[derive(Debug)]
pub struct UrlParse;

impl Operation for UrlParse {
    fn name(&self) -> &'static str {
        "url"
    }

    fn strategy(&self) -> BoxedStrategy<Value> {
        gen::url_text().prop_map(|u| json!({ "url": u })).boxed()
    }

    fn seeds(&self) -> Vec<Value> {
        [
            "dubbo://admin:hello1234@10.20.130.230:20880/context/path?version=1.0.0&application=morgan",
            "dubbo://10.20.130.230:20880/context/path?version=1.0.0&application=morgan&noValue=",
            "dubbo://[::1]:20880/com.foo.Bar?group=g&version=1",
            "file:///home/user1/router.js?type=script",
            "10.20.130.230:20880/context/path",
            "dubbo://10.20.130.230",
            "",
            "://a",
            "dubbo://a?b=c=d&e",
        ]
        .iter()
        .map(|u| json!({ "url": u }))
        .collect()
    }

    fn divergence(&self, _input: &Value, java: &Value, rust: &Value) -> Option<&'static str> {
        url_divergence(java, rust)
    }

    fn answer(&self, input: &Value) -> Value {
        match Url::parse(text(input, "url")) {
            Ok(u) => view(&u),
            Err(e) => error("Url::parse", e),
        }
    }
}

/// The listed reasons a URL view differs: only `service` (Java resolves the host,
/// `url-service-string-host-literal`) and/or `address` (`url-address-null-host`) differ, each in
/// the way its rule describes. The rule named is the first that applies.
pub fn url_divergence(java: &Value, rust: &Value) -> Option<&'static str> {
    let (Value::Object(j), Value::Object(r)) = (java, rust) else {
        return None;
    };
    let mut rule = None;
    for (k, jv) in j {
        let rv = r.get(k)?;
        if crate::compare::same(jv, rv) {
            continue;
        }
        let found = match k.as_str() {
            "service" if service_host_only(jv, rv, r) => "url-service-string-host-literal",
            "address" if address_null_host(jv, rv, r.get("port")) => "url-address-null-host",
            _ => return None,
        };
        rule.get_or_insert(found);
    }
    rule
}

/// Java's `toServiceString()` equals ours with the host replaced (Java resolved it).
fn service_host_only(java: &Value, rust: &Value, view: &Map<String, Value>) -> bool {
    let (Some(j), Some(r)) = (java.as_str(), rust.as_str()) else {
        return false;
    };
    // No host: Java prints the local address where the host would be.
    let h = view.get("host").and_then(Value::as_str).unwrap_or("");
    let mut start = r.find("://").map_or(0, |i| i + 3);
    if !view.get("username").is_none_or(Value::is_null) {
        let authority = r[start..]
            .find('/')
            .map_or(&r[start..], |i| &r[start..start + i]);
        start = authority.rfind('@').map_or(start, |i| start + i + 1);
    }
    let Some(at) = r[start..].find(h).map(|i| i + start) else {
        return false;
    };
    let (pre, post) = (&r[..at], &r[at + h.len()..]);
    j.len() >= pre.len() + post.len() && j.starts_with(pre) && j.ends_with(post)
}

/// Java's `getAddress()` is `"null:" + port` for a URL with a port and no host; ours is absent.
fn address_null_host(java: &Value, rust: &Value, port: Option<&Value>) -> bool {
    rust.is_null()
        && port
            .and_then(Value::as_i64)
            .is_some_and(|p| java.as_str() == Some(&format!("null:{p}")))
}

/// `URL.encode(text)`, `URL.decode(URL.encode(text))` and `URL.decode(text)`.
#[derive(Debug)]
pub struct UrlCodec;

impl Operation for UrlCodec {
    fn name(&self) -> &'static str {
        "url_codec"
    }

    fn strategy(&self) -> BoxedStrategy<Value> {
        prop_oneof![
            3 => gen::nasty_string(16),
            1 => gen::url_text(),
            1 => proptest::collection::vec(
                prop_oneof![
                    Just("%".to_owned()),
                    Just("%2".to_owned()),
                    Just("%C3".to_owned()),
                    Just("%A9".to_owned()),
                    Just("%C3%A9".to_owned()),
                    Just("%ED%A0%80".to_owned()),
                    Just("%F0%9D%84%9E".to_owned()),
                    Just("%ED%BF".to_owned()),
                    Just("%E0%80".to_owned()),
                    Just("%F4%90%80%80".to_owned()),
                    Just("%+".to_owned()),
                    Just("%-".to_owned()),
                    Just("%-0".to_owned()),
                    Just("+".to_owned()),
                    "[a-z]{0,2}".prop_map(|s| s),
                ],
                0..6,
            )
            .prop_map(|p| p.concat()),
        ]
        .prop_map(|t| json!({ "text": t }))
        .boxed()
    }

    fn answer(&self, input: &Value) -> Value {
        let t = text(input, "text");
        let encoded = codec::encode(t);
        let round_trip = match codec::decode(&encoded) {
            Ok(s) => Value::String(s),
            Err(e) => error("codec::decode", e),
        };
        let decoded = match codec::decode(t) {
            Ok(s) => Value::String(s),
            Err(e) => error("codec::decode", e),
        };
        json!({ "encoded": encoded, "round_trip": round_trip, "decoded": decoded })
    }
}

/// `UrlUtils.isMatch(consumer, provider)` and `isServiceKeyMatch(consumer, provider)`.
#[derive(Debug)]
pub struct IsMatch;

/// A consumer or provider URL of one interface with generated group/version/category/enabled.
fn match_url(side: &'static str) -> BoxedStrategy<String> {
    let iface = prop_oneof![
        4 => Just("com.foo.Greeter".to_owned()),
        1 => Just("*".to_owned()),
        1 => Just("com.foo.Other".to_owned()),
        1 => Just(String::new()),
    ];
    let opt = |s: BoxedStrategy<String>| prop_oneof![1 => Just(None), 3 => s.prop_map(Some)];
    let category = prop_oneof![
        Just("providers".to_owned()),
        Just("consumers".to_owned()),
        Just("*".to_owned()),
        Just("providers,routers".to_owned()),
        Just("-providers".to_owned()),
        Just("routers,-providers".to_owned()),
        Just(String::new()),
    ];
    let enabled = prop_oneof![
        Just("true".to_owned()),
        Just("false".to_owned()),
        Just(String::new())
    ];
    let classifier = prop_oneof![
        Just("*".to_owned()),
        Just("c1".to_owned()),
        Just("c2".to_owned())
    ];
    (
        iface,
        prop_oneof![3 => Just(true), 1 => Just(false)],
        opt(gen::group_or_version()),
        opt(gen::group_or_version()),
        opt(category.boxed()),
        opt(enabled.boxed()),
        opt(classifier.boxed()),
        any::<bool>(),
    )
        .prop_map(
            move |(
                iface,
                in_param,
                group,
                version,
                category,
                enabled,
                classifier,
                default_prefix,
            )| {
                let path = if in_param {
                    "p.Path".to_owned()
                } else {
                    iface.clone()
                };
                let mut q: Vec<String> = Vec::new();
                if in_param {
                    q.push(format!("interface={iface}"));
                }
                let prefix = if default_prefix { "default." } else { "" };
                if let Some(g) = group {
                    q.push(format!("{prefix}group={g}"));
                }
                if let Some(v) = version {
                    q.push(format!("{prefix}version={v}"));
                }
                if let Some(c) = category {
                    q.push(format!("category={c}"));
                }
                if let Some(e) = enabled {
                    q.push(format!("enabled={e}"));
                }
                if let Some(c) = classifier {
                    q.push(format!("classifier={c}"));
                }
                let proto = if side == "consumer" {
                    "consumer"
                } else {
                    "dubbo"
                };
                format!("{proto}://10.0.0.1:20880/{path}?{}", q.join("&"))
            },
        )
        .boxed()
}

impl Operation for IsMatch {
    fn name(&self) -> &'static str {
        "is_match"
    }

    fn strategy(&self) -> BoxedStrategy<Value> {
        prop_oneof![
            8 => (match_url("consumer"), match_url("provider")),
            1 => (gen::url_text(), gen::url_text()),
        ]
        .prop_map(|(c, p)| json!({ "consumer": c, "provider": p }))
        .boxed()
    }

    fn divergence(&self, input: &Value, java: &Value, rust: &Value) -> Option<&'static str> {
        // isServiceKeyMatch dereferences the pattern's `interface` param: a consumer without
        // one makes Java throw a NullPointerException; we answer "no match".
        let consumer = Url::parse(text(input, "consumer")).ok()?;
        let npe = java
            .get("service_key_match")
            .and_then(|e| e.pointer("/error/class"))
            .and_then(Value::as_str)
            == Some("java.lang.NullPointerException");
        (npe && consumer.param("interface").is_none()
            && rust.get("service_key_match") == Some(&Value::Bool(false))
            && java
                .get("is_match")
                .is_some_and(|j| rust.get("is_match") == Some(j)))
        .then_some("service-key-match-without-interface")
    }

    fn answer(&self, input: &Value) -> Value {
        let c = Url::parse(text(input, "consumer"));
        let p = Url::parse(text(input, "provider"));
        match (c, p) {
            (Ok(c), Ok(p)) => json!({
                "is_match": is_match(&c, &p),
                "service_key_match": is_service_key_match(&c, &p),
            }),
            (Err(e), _) | (_, Err(e)) => error("Url::parse", e),
        }
    }
}
