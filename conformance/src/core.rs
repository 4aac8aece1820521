//! Conformance kinds of `registry-core`: `url_parse`, `url_encode`, `is_match`,
//! `method_parameter`, `service_key` and the `other` subkinds `glob_match`, `item_match`,
//! `match_category`, `url_classification`, `url_equals`, `url_to_string`,
//! `service_key_match`, `url_param_parse_raw`, `any_method_parameter`, `append_default_port`.
//!
//! Every vector runs through the real library functions; only the fields a vector carries are
//! compared, so hidden vectors with fewer or more fields still work.

use std::collections::BTreeMap;

use registry_core::address::{
    append_default_port, parse_registry_address, parse_registry_addresses, AddressDefaults,
};
use registry_core::codec;
use registry_core::matching::{
    empty_url_for_key, is_configurator, is_consumer, is_item_match, is_match, is_match_category,
    is_match_glob_pattern, is_provider, is_registry, is_route, is_service_discovery_url,
    is_service_key_match, parse_service_key,
};
use registry_core::url::{build_key, parse_params_raw};
use registry_core::{ServiceAddressUrl, Url};
use serde_json::Value;

use super::util::{has, s};
use super::{all, expect_eq, Outcome};

/// Runs one vector of a kind this module owns.
pub fn run(kind: &str, subkind: &str, v: &Value) -> Outcome {
    match (kind, subkind) {
        ("url_parse", _) => url_parse(v),
        ("url_encode", _) => url_encode(v),
        ("is_match", _) => match_vector(v),
        ("method_parameter", _) => method_parameter(v),
        ("service_key", _) => service_key(v),
        ("other", "glob_match") => glob_match(v),
        ("other", "item_match") => expect_bool(v, is_item_match(s(v, "pattern"), s(v, "value"))),
        ("other", "match_category") => expect_bool(
            v,
            is_match_category(
                s(v, "category").unwrap_or(""),
                s(v, "categories").unwrap_or(""),
            ),
        ),
        ("other", "url_classification") => classification(v),
        ("other", "url_equals") => url_equals(v),
        ("other", "url_to_string") => url_to_string(v),
        ("other", "service_key_match") => with_urls(v, &["pattern", "value"], |u| {
            expect_bool(v, is_service_key_match(&u[0], &u[1]))
        }),
        ("other", "url_param_parse_raw") => param_parse_raw(v),
        ("other", "any_method_parameter") => any_method_parameter(v),
        ("other", "append_default_port") => {
            let (Some(input), Some(port)) = (s(v, "input"), int(v, "default_port")) else {
                return Outcome::Fail("vector needs input and default_port".into());
            };
            expect_str(
                v,
                "expected",
                Some(&append_default_port(input, port as i32)),
            )
        }
        _ => Outcome::Skip(format!("{kind}/{subkind} is not a registry-core kind")),
    }
}

// ----- helpers -----

/// An integer field, also accepting a numeric string.
fn int(v: &Value, k: &str) -> Option<i64> {
    match v.get(k)? {
        Value::Number(n) => n.as_i64(),
        Value::String(t) => t.trim().parse().ok(),
        _ => None,
    }
}

fn expect_bool(v: &Value, actual: bool) -> Outcome {
    match v.get("expected").and_then(Value::as_bool) {
        Some(e) => expect_eq("result", e, actual),
        None => Outcome::Fail("vector has no boolean \"expected\"".into()),
    }
}

/// Compares an optional string field (JSON null = absent) when the vector carries it.
fn expect_str(v: &Value, field: &str, actual: Option<&str>) -> Outcome {
    if !has(v, field) {
        return Outcome::Pass;
    }
    expect_eq(field, s(v, field), actual)
}

fn parse_url(text: &str) -> Result<Url, String> {
    Url::parse(text).map_err(|e| format!("parse {text:?}: {e}"))
}

fn with_urls(v: &Value, fields: &[&str], f: impl FnOnce(&[Url]) -> Outcome) -> Outcome {
    let mut urls = Vec::with_capacity(fields.len());
    for field in fields {
        let Some(text) = s(v, field) else {
            return Outcome::Fail(format!("vector has no {field:?} URL"));
        };
        match parse_url(text) {
            Ok(u) => urls.push(u),
            Err(e) => return Outcome::Fail(e),
        }
    }
    f(&urls)
}

fn param_map(u: &Url) -> BTreeMap<String, String> {
    u.params()
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect()
}

fn json_map(v: &Value) -> Option<BTreeMap<String, String>> {
    let o = v.as_object()?;
    Some(
        o.iter()
            .map(|(k, x)| {
                let t = match x {
                    Value::String(t) => t.clone(),
                    other => other.to_string(),
                };
                (k.clone(), t)
            })
            .collect(),
    )
}

/// `getAuthority()` as the vectors render it: `user:password@address` when there are
/// credentials, else the address.
fn authority(u: &Url) -> Option<String> {
    let addr = u.address();
    if u.username().is_none() && u.password().is_none() {
        return addr;
    }
    Some(format!(
        "{}:{}@{}",
        u.username().unwrap_or(""),
        u.password().unwrap_or(""),
        addr.unwrap_or_default()
    ))
}

/// Compares every URL field the vector carries.
fn compare_url(v: &Value, u: &Url) -> Outcome {
    let mut checks = vec![
        expect_str(v, "protocol", u.protocol()),
        expect_str(v, "username", u.username()),
        expect_str(v, "password", u.password()),
        expect_str(v, "host", u.host()),
        expect_str(v, "path", u.path()),
        expect_str(v, "address", u.address().as_deref()),
        expect_str(v, "to_string", Some(&u.to_string())),
        expect_str(v, "to_full_string", Some(&u.to_full_string())),
        expect_str(v, "to_identity_string", Some(&u.to_identity_string())),
        expect_str(v, "authority", authority(u).as_deref()),
        expect_str(v, "service_key", u.service_key().as_deref()),
        expect_str(v, "path_key", u.path_key().as_deref()),
        expect_str(v, "display_service_key", u.display_service_key().as_deref()),
        expect_str(v, "service_interface", u.service_interface()),
        expect_str(v, "to_service_string", Some(&u.to_service_string())),
        expect_str(
            v,
            "to_service_string_with_keys",
            Some(&u.to_service_string_with(&string_list(v, "service_string_keys"))),
        ),
        expect_str(v, "colon_separated_key", Some(&u.colon_separated_key())),
    ];
    if has(v, "port") {
        checks.push(expect_eq("port", int(v, "port"), Some(i64::from(u.port()))));
    }
    if let Some(p) = v.get("parameters").and_then(json_map) {
        checks.push(expect_eq("parameters", p, param_map(u)));
    }
    all(checks)
}

/// A list of strings (absent or not a list: empty).
fn string_list<'a>(v: &'a Value, k: &str) -> Vec<&'a str> {
    v.get(k)
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}

// ----- url_parse -----

fn url_parse(v: &Value) -> Outcome {
    let input = s(v, "input").unwrap_or("");
    let expect_error = has(v, "error");
    match s(v, "fn") {
        None | Some("URL.valueOf") | Some("URLStrParser.parseDecodedStr") => {}
        Some("URLStrParser.parseEncodedStr") => {
            return parse_and_compare(v, Url::parse_encoded(input))
        }
        Some("UrlUtils.parseURL") => {
            let defaults = match defaults_of(v) {
                Ok(d) => d,
                Err(e) => return Outcome::Fail(e),
            };
            return parse_and_compare(v, parse_registry_address(input, &defaults.borrow()));
        }
        Some("UrlUtils.parseURLs") => {
            let defaults = match defaults_of(v) {
                Ok(d) => d,
                Err(e) => return Outcome::Fail(e),
            };
            return match parse_registry_addresses(input, &defaults.borrow()) {
                Err(e) if expect_error => {
                    let _ = e;
                    Outcome::Pass
                }
                Err(e) => Outcome::Fail(format!("unexpected error: {e}")),
                Ok(_) if expect_error => Outcome::Fail("expected an error".into()),
                Ok(urls) => {
                    let mut checks = Vec::new();
                    if let Some(want) = v.get("addresses").and_then(Value::as_array) {
                        let want: Vec<Option<&str>> = want.iter().map(Value::as_str).collect();
                        let got: Vec<Option<String>> = urls.iter().map(Url::address).collect();
                        let got: Vec<Option<&str>> = got.iter().map(Option::as_deref).collect();
                        checks.push(expect_eq("addresses", want, got));
                    }
                    if let Some(want) = v.get("to_strings").and_then(Value::as_array) {
                        let want: Vec<Option<&str>> = want.iter().map(Value::as_str).collect();
                        let got: Vec<String> = urls.iter().map(Url::to_string).collect();
                        let got: Vec<Option<&str>> = got.iter().map(|x| Some(x.as_str())).collect();
                        checks.push(expect_eq("to_strings", want, got));
                    }
                    all(checks)
                }
            };
        }
        Some(other) => return Outcome::Skip(format!("url_parse fn {other:?} not supported")),
    }
    if let Some(expr) = input.strip_prefix("(constructed)") {
        return match constructed(expr.trim()) {
            Ok(u) => compare_url(v, &u),
            Err(reason) => Outcome::Skip(reason),
        };
    }
    let encoded = v.get("encoded").and_then(Value::as_bool).unwrap_or(false);
    let parsed = if encoded {
        Url::parse_encoded(input)
    } else {
        Url::parse(input)
    };
    let first = parse_and_compare(v, parsed.clone());
    if first != Outcome::Pass {
        return first;
    }
    let mut checks = Vec::new();
    if let (Some(form), Ok(u)) = (s(v, "encoded_form"), &parsed) {
        if !encoded {
            checks.push(expect_eq(
                "URL.encode(input)",
                form.to_owned(),
                codec::encode(input),
            ));
        }
        match Url::parse_encoded(form) {
            Ok(e) => checks.push(Outcome::check(
                e == *u && param_map(&e) == param_map(u),
                || format!("parseEncodedStr(encoded_form) = {e:?} differs from {u:?}"),
            )),
            Err(err) => checks.push(Outcome::Fail(format!("parse_encoded(encoded_form): {err}"))),
        }
    }
    all(checks)
}

fn parse_and_compare(v: &Value, parsed: registry_core::Result<Url>) -> Outcome {
    match (parsed, has(v, "error")) {
        (Err(_), true) => Outcome::Pass,
        (Err(e), false) => Outcome::Fail(format!("unexpected error: {e}")),
        (Ok(u), true) => Outcome::Fail(format!("expected an error, parsed {u:?}")),
        (Ok(u), false) => compare_url(v, &u),
    }
}

/// Owned `AddressDefaults` read from a vector's `defaults` object.
struct OwnedDefaults {
    protocol: Option<String>,
    port: Option<i32>,
    username: Option<String>,
    password: Option<String>,
    path: Option<String>,
    params: Vec<(String, String)>,
}

impl OwnedDefaults {
    fn borrow(&self) -> AddressDefaults<'_> {
        AddressDefaults {
            protocol: self.protocol.as_deref(),
            port: self.port,
            username: self.username.as_deref(),
            password: self.password.as_deref(),
            path: self.path.as_deref(),
            params: self
                .params
                .iter()
                .map(|(k, v)| (k.as_str(), v.as_str()))
                .collect(),
        }
    }
}

fn defaults_of(v: &Value) -> Result<OwnedDefaults, String> {
    // `parseURL` removes protocol, username, password, host, port and path from the defaults;
    // the rest fill empty parameters.
    let map = v.get("defaults").and_then(json_map).unwrap_or_default();
    let mut d = OwnedDefaults {
        protocol: None,
        port: None,
        username: None,
        password: None,
        path: None,
        params: Vec::new(),
    };
    for (k, x) in map {
        match k.as_str() {
            "protocol" => d.protocol = Some(x),
            "username" => d.username = Some(x),
            "password" => d.password = Some(x),
            "path" => d.path = Some(x),
            // `StringUtils.parseInteger`: 0 (no default) when not an integer.
            "port" => d.port = x.trim().parse().ok(),
            "host" => {}
            _ => d.params.push((k, x)),
        }
    }
    Ok(d)
}

/// `new URL(...)` constructor calls: `(protocol, host, port[, path])` and
/// `(protocol, username, password, host, port, path)`.
fn constructed(expr: &str) -> Result<Url, String> {
    let args = expr
        .strip_prefix("new URL(")
        .and_then(|r| r.strip_suffix(')'))
        .ok_or_else(|| format!("constructed input {expr:?} is not a `new URL(...)` call"))?;
    let args = java_args(args).ok_or_else(|| format!("cannot read the arguments of {expr:?}"))?;
    let text = |a: &Arg| match a {
        Arg::Str(t) => Ok(Some(t.clone())),
        Arg::Null => Ok(None),
        Arg::Int(_) => Err("expected a string argument".to_owned()),
    };
    let port = |a: &Arg| match a {
        Arg::Int(n) => Ok(*n as i32),
        _ => Err("expected an int port".to_owned()),
    };
    let (protocol, user, pass, host, p, path) = match args.as_slice() {
        [pr, h, po] => (text(pr)?, None, None, text(h)?, port(po)?, None),
        [pr, h, po, pa] => (text(pr)?, None, None, text(h)?, port(po)?, text(pa)?),
        [pr, u, pw, h, po, pa] => (
            text(pr)?,
            text(u)?,
            text(pw)?,
            text(h)?,
            port(po)?,
            text(pa)?,
        ),
        _ => {
            return Err(format!(
                "constructor with {} arguments is not supported",
                args.len()
            ))
        }
    };
    let mut b = Url::builder(protocol.as_deref().unwrap_or("")).port(p);
    if protocol.is_none() {
        b = Url::builder("").port(p);
    }
    if let Some(u) = user.as_deref() {
        b = b.credentials(u, pass.as_deref());
    }
    if let Some(h) = host.as_deref() {
        b = b.host(h);
    }
    if let Some(pa) = path.as_deref() {
        b = b.path(pa);
    }
    Ok(b.build())
}

enum Arg {
    Str(String),
    Int(i64),
    Null,
}

/// Splits Java call arguments: string literals, integers and `null`.
fn java_args(s: &str) -> Option<Vec<Arg>> {
    let mut out = Vec::new();
    let mut rest = s.trim();
    while !rest.is_empty() {
        if let Some(r) = rest.strip_prefix('"') {
            let mut val = String::new();
            let mut chars = r.char_indices();
            let end = loop {
                match chars.next()? {
                    (i, '"') => break i,
                    (_, '\\') => val.push(chars.next()?.1),
                    (_, c) => val.push(c),
                }
            };
            out.push(Arg::Str(val));
            rest = r[end + 1..].trim_start();
        } else {
            let end = rest.find(',').unwrap_or(rest.len());
            let tok = rest[..end].trim();
            out.push(if tok == "null" {
                Arg::Null
            } else {
                Arg::Int(tok.parse().ok()?)
            });
            rest = &rest[end..];
        }
        rest = rest.trim_start();
        if let Some(r) = rest.strip_prefix(',') {
            rest = r.trim_start();
        } else if !rest.is_empty() {
            return None;
        }
    }
    Some(out)
}

// ----- url_encode -----

fn url_encode(v: &Value) -> Outcome {
    let input = s(v, "input").unwrap_or("");
    match s(v, "op").unwrap_or("encode") {
        "encode" => expect_str(v, "expected", Some(&codec::encode(input))),
        "decode" => match (codec::decode(input), has(v, "error")) {
            (Err(_), true) => Outcome::Pass,
            (Err(e), false) => Outcome::Fail(format!("unexpected error: {e}")),
            (Ok(d), true) => Outcome::Fail(format!("expected an error, decoded {d:?}")),
            (Ok(d), false) => expect_str(v, "expected", Some(&d)),
        },
        "roundtrip" | "round_trip" => match codec::decode(&codec::encode(input)) {
            Ok(d) => expect_eq("decode(encode(input))", input.to_owned(), d),
            Err(e) => Outcome::Fail(format!("round trip failed: {e}")),
        },
        other => Outcome::Skip(format!("url_encode op {other:?} not supported")),
    }
}

// ----- is_match -----

fn match_vector(v: &Value) -> Outcome {
    with_urls(v, &["consumer", "provider"], |u| {
        expect_bool(v, is_match(&u[0], &u[1]))
    })
}

// ----- method_parameter -----

/// A URL from a JSON parameter object.
fn url_with_params(base: &str, params: Option<&Value>) -> Url {
    let b = Url::parse(base).unwrap_or_else(|_| Url::builder("dubbo").build());
    match params.and_then(json_map) {
        Some(m) => b.with_params(m.iter().map(|(k, v)| (k.as_str(), v.as_str()))),
        None => b,
    }
}

fn method_parameter(v: &Value) -> Outcome {
    let method = s(v, "method");
    let Some(key) = s(v, "key") else {
        return Outcome::Fail("vector has no key".into());
    };
    let func = s(v, "fn").unwrap_or("");
    let strict = v.get("strict").and_then(Value::as_bool).unwrap_or(false);
    let expected = v.get("expected").cloned().unwrap_or(Value::Null);

    if has(v, "consumer_params") || has(v, "provider_params") {
        let provider = url_with_params(
            "dubbo://10.0.0.1:20880/com.foo.Service",
            v.get("provider_params"),
        );
        let consumer = url_with_params(
            "consumer://10.0.0.9/com.foo.Service",
            v.get("consumer_params"),
        );
        let overrides = v
            .get("override_params")
            .filter(|p| !p.is_null())
            .map(|p| url_with_params("override://0.0.0.0/com.foo.Service", Some(p)));
        let sa = ServiceAddressUrl::new(provider, consumer).with_overrides(overrides);
        let raw = match method {
            Some(m) => sa.method_param(m, key),
            None => sa.param(key),
        };
        return compare_typed(v, &expected, raw, func);
    }

    let Some(text) = s(v, "url") else {
        return Outcome::Fail("vector has no url".into());
    };
    let u = match parse_url(text) {
        Ok(u) => u,
        Err(e) => return Outcome::Fail(e),
    };
    let raw = match (method, strict) {
        (Some(m), true) => u.method_param_strict(m, key),
        (Some(m), false) => u.method_param(m, key),
        (None, _) => u.param(key),
    };
    if func.contains("hasMethodParameter") {
        let m = method.unwrap_or("");
        return match expected.as_bool() {
            Some(e) => expect_eq("hasMethodParameter", e, u.has_method_param(m, key)),
            None => Outcome::Fail("hasMethodParameter needs a boolean expected".into()),
        };
    }
    compare_typed(v, &expected, raw, func)
}

/// Compares a raw (string) parameter value against `expected`, applying the typed getter the
/// vector asks for (`default` present or a non-string `expected`).
fn compare_typed(v: &Value, expected: &Value, raw: Option<&str>, func: &str) -> Outcome {
    let non_empty = raw.filter(|r| !r.is_empty());
    let positive = func.contains("Positive");
    match expected {
        Value::Number(n) if n.is_i64() => {
            let def = int(v, "default").unwrap_or(0);
            let mut got = non_empty
                .and_then(|r| r.trim().parse::<i64>().ok())
                .unwrap_or(def);
            if positive && got <= 0 {
                got = def;
            }
            expect_eq("value", n.as_i64(), Some(got))
        }
        Value::Number(n) => {
            let def = v.get("default").and_then(Value::as_f64).unwrap_or(0.0);
            let got = non_empty
                .and_then(|r| r.trim().parse::<f64>().ok())
                .unwrap_or(def);
            expect_eq("value", n.as_f64(), Some(got))
        }
        Value::Bool(b) => {
            let def = v.get("default").and_then(Value::as_bool).unwrap_or(false);
            let got = non_empty.map_or(def, |r| r.eq_ignore_ascii_case("true"));
            expect_eq("value", *b, got)
        }
        Value::String(e) => {
            let got = match s(v, "default") {
                Some(d) if non_empty.is_none() => Some(d),
                _ => raw,
            };
            expect_eq("value", Some(e.as_str()), got)
        }
        Value::Null => expect_eq("value", None, raw),
        other => Outcome::Fail(format!("unsupported expected value {other}")),
    }
}

// ----- service_key -----

fn service_key(v: &Value) -> Outcome {
    let func = s(v, "fn").unwrap_or("getServiceKey");
    let args: Vec<Option<&str>> = v
        .get("args")
        .and_then(Value::as_array)
        .map(|a| a.iter().map(Value::as_str).collect())
        .unwrap_or_default();
    let arg = |i: usize| args.get(i).copied().flatten();
    match func {
        "UrlUtils.getEmptyUrl" => {
            let u = empty_url_for_key(arg(0).unwrap_or(""), arg(1).unwrap_or(""));
            return expect_str(v, "expected", Some(&u.to_full_string()));
        }
        "UrlUtils.parseServiceKey" => {
            let (g, i, ver) = parse_service_key(arg(0).unwrap_or(""));
            let want: Vec<Option<&str>> = v
                .get("expected")
                .and_then(Value::as_array)
                .map(|a| a.iter().map(Value::as_str).collect())
                .unwrap_or_default();
            return expect_eq("parseServiceKey", want, vec![g, Some(i), ver]);
        }
        "URL.buildKey" | "BaseServiceMetadata.buildServiceKey" => {
            return expect_str(
                v,
                "expected",
                Some(&build_key(arg(0).unwrap_or(""), arg(1), arg(2))),
            );
        }
        _ => {}
    }
    let Some(text) = s(v, "url") else {
        return Outcome::Fail(format!("service_key fn {func:?} needs a url"));
    };
    let u = match parse_url(text) {
        Ok(u) => u,
        Err(e) => return Outcome::Fail(e),
    };
    let got: Option<String> = match func {
        "getServiceKey" => u.service_key(),
        "getPathKey" => u.path_key(),
        "getDisplayServiceKey" => u.display_service_key(),
        "getColonSeparatedKey" => Some(u.colon_separated_key()),
        "getCompatibleColonSeparatedKey" => Some(u.compatible_colon_separated_key()),
        // No DNS resolution: both forms use the host as given.
        // `toServiceString(String... keys)`: those keys as a query.
        "toServiceString" if !args.is_empty() => {
            let keys: Vec<&str> = args.iter().flatten().copied().collect();
            Some(u.to_service_string_with(&keys))
        }
        "toServiceString" | "toServiceStringWithoutResolving" => Some(u.to_service_string()),
        "getProtocolServiceKey" => u.service_key().map(|k| match u.protocol() {
            Some(p) if !p.is_empty() => format!("{k}:{p}"),
            _ => k,
        }),
        "getServiceInterface" => u.service_interface().map(str::to_owned),
        "toFullString" => Some(u.to_full_string()),
        "toString" => Some(u.to_string()),
        "toIdentityString" => Some(u.to_identity_string()),
        "getAddress" => u.address(),
        other => return Outcome::Skip(format!("service_key fn {other:?} not supported")),
    };
    expect_str(v, "expected", got.as_deref())
}

// ----- other -----

fn glob_match(v: &Value) -> Outcome {
    let param_url = match s(v, "param_url").map(parse_url).transpose() {
        Ok(u) => u,
        Err(e) => return Outcome::Fail(e),
    };
    let pattern = s(v, "pattern").unwrap_or("");
    expect_bool(
        v,
        is_match_glob_pattern(pattern, s(v, "value"), param_url.as_ref()),
    )
}

fn classification(v: &Value) -> Outcome {
    let input = s(v, "input").unwrap_or("");
    let parsed = if s(v, "parsed_with").is_some_and(|p| p.contains("parseURL")) {
        parse_registry_address(input, &AddressDefaults::default())
    } else {
        Url::parse(input)
    };
    let u = match parsed {
        Ok(u) => u,
        Err(e) => return Outcome::Fail(format!("parse {input:?}: {e}")),
    };
    let f = s(v, "fn").unwrap_or("");
    let name = f.rsplit('.').next().unwrap_or(f);
    let got = match name {
        "isConfigurator" => is_configurator(&u),
        "isRoute" => is_route(&u),
        "isProvider" => is_provider(&u),
        "isRegistry" => is_registry(&u),
        "isServiceDiscoveryURL" => is_service_discovery_url(&u),
        "hasServiceDiscoveryRegistryProtocol" => u
            .protocol_str()
            .eq_ignore_ascii_case("service-discovery-registry"),
        "hasServiceDiscoveryRegistryTypeKey" => u.param("registry-type") == Some("service"),
        "isConsumer" => is_consumer(&u),
        other => return Outcome::Skip(format!("classification fn {other:?} not supported")),
    };
    expect_bool(v, got)
}

fn url_equals(v: &Value) -> Outcome {
    with_urls(v, &["a", "b"], |u| {
        let eq = u[0] == u[1];
        let hash_ok = !eq || {
            use std::hash::{BuildHasher, RandomState};
            let h = RandomState::new();
            h.hash_one(&u[0]) == h.hash_one(&u[1])
        };
        all([
            expect_bool(v, eq),
            Outcome::check(hash_ok, || "equal URLs with different hashes".into()),
        ])
    })
}

fn url_to_string(v: &Value) -> Outcome {
    let input = s(v, "input").unwrap_or("");
    match parse_url(input) {
        Ok(u) => compare_url(v, &u),
        Err(e) => Outcome::Fail(e),
    }
}

fn param_parse_raw(v: &Value) -> Outcome {
    let input = s(v, "input").unwrap_or("");
    let params: BTreeMap<&str, &str> = parse_params_raw(input).into_iter().collect();
    let mut checks = Vec::new();
    if let Some(want) = v.get("expected_get").and_then(Value::as_object) {
        for (k, e) in want {
            checks.push(expect_eq(
                &format!("get({k})"),
                e.as_str(),
                params.get(k.as_str()).copied(),
            ));
        }
    }
    if let Some(absent) = v.get("expected_absent").and_then(Value::as_array) {
        for k in absent.iter().filter_map(Value::as_str) {
            checks.push(expect_eq(
                &format!("get({k})"),
                None,
                params.get(k).copied(),
            ));
        }
    }
    if let Some(want) = v.get("expected").and_then(json_map) {
        let got: BTreeMap<String, String> = params
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        checks.push(expect_eq("parameters", want, got));
    }
    all(checks)
}

fn any_method_parameter(v: &Value) -> Outcome {
    let input = s(v, "input").unwrap_or("");
    let Some(key) = s(v, "key") else {
        return Outcome::Fail("vector has no key".into());
    };
    let u = Url::builder("dubbo")
        .host("127.0.0.1")
        .build()
        .with_replaced_params(parse_params_raw(input));
    expect_str(v, "expected", u.any_method_param(key))
}
