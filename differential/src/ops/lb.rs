//! Load balancing: `AbstractLoadBalance.getWeight` (registry weight, method weight, warm-up from
//! `timestamp`), `RoundRobinLoadBalance`'s selection sequence and `ConsistentHashLoadBalance`'s
//! choice per argument list (`hash.nodes`, `hash.arguments`).

use std::sync::Arc;

use async_trait::async_trait;
use invoker::invoker_set::{InvokerMeta, InvokerSet};
use invoker::loadbalance::{ConsistentHashLoadBalance, LoadBalance, RoundRobinLoadBalance};
use invoker::rpc::{Invocation, Invoker, RpcResponse, RpcResult, SharedInvoker};
use proptest::prelude::*;
use proptest::sample::select;
use proptest::strategy::BoxedStrategy;
use registry_core::Url;
use serde_json::{json, Value};

use crate::compare::error;
use crate::Operation;

/// An invoker that only has a URL (the oracle's `FixedInvoker`).
#[derive(Debug)]
struct UrlInvoker(Url);

#[async_trait]
impl Invoker for UrlInvoker {
    fn url(&self) -> &Url {
        &self.0
    }

    async fn invoke(&self, _invocation: &Invocation) -> RpcResult {
        Ok(RpcResponse::empty())
    }
}

/// `$NOW`, `$NOW+D`, `$NOW-D` → `now + D` (the oracle's `LbOps.withNow`).
fn with_now(text: &str, now: i64) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find("$NOW") {
        out.push_str(&rest[..i]);
        let after = &rest[i + 4..];
        let sign_len = usize::from(after.starts_with(['+', '-']));
        let digits = after[sign_len..]
            .bytes()
            .take_while(u8::is_ascii_digit)
            .count();
        let (delta, used) = if sign_len == 1 && digits > 0 {
            (after[..1 + digits].parse::<i64>().unwrap_or(0), 1 + digits)
        } else {
            (0, 0)
        };
        out.push_str(&(now + delta).to_string());
        rest = &after[used..];
    }
    out.push_str(rest);
    out
}

fn urls(input: &Value, now: Option<i64>) -> Result<Vec<Url>, Value> {
    input
        .get("urls")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default()
        .iter()
        .map(|u| {
            let text = u.as_str().unwrap_or_default();
            let text = now.map_or_else(|| text.to_owned(), |n| with_now(text, n));
            Url::parse(&text).map_err(|e| error("Url::parse", e))
        })
        .collect()
}

fn set_of(urls: Vec<Url>) -> InvokerSet {
    InvokerSet::new(
        urls.into_iter()
            .map(|u| Arc::new(UrlInvoker(u)) as SharedInvoker)
            .collect(),
    )
}

fn method(input: &Value) -> &str {
    input
        .get("method")
        .and_then(Value::as_str)
        .unwrap_or("sayHello")
}

/// A weight text: default, zero, negative, huge, junk.
fn weight_value() -> BoxedStrategy<String> {
    prop_oneof![
        24 => select(&["100", "0", "1", "7", "-5", "200", "", "50", "3", "1000"][..]),
        1 => select(&["abc", "2147483648", "99999999999", " 5", "1.5", "2147483647"][..]),
    ]
    .prop_map(str::to_owned)
    .boxed()
}

/// A provider URL for load balancing; `clock` allows `$NOW`-relative timestamps.
fn lb_url(i: usize, clock: bool) -> BoxedStrategy<String> {
    let timestamp = if clock {
        select(
            &[
                "",
                "$NOW",
                "$NOW-1",
                "$NOW-1000",
                "$NOW-59999",
                "$NOW-300000",
                "$NOW-599999",
                "$NOW-600000",
                "$NOW-700000",
                "$NOW+5000",
                "0",
                "-1",
                "1000",
                "$NOW-30000",
                "$NOW-12345",
            ][..],
        )
        .boxed()
    } else {
        select(&["", "0", "1000", "-1", "4102444800000"][..]).boxed()
    };
    let warmup = select(
        &[
            "", "", "600000", "60000", "1", "0", "-1", "3600000", "120000",
        ][..],
    );
    let iface = prop_oneof![
        8 => Just("com.foo.Greeter"),
        1 => Just("org.apache.dubbo.registry.RegistryService"),
    ];
    (
        proptest::option::of(weight_value()),
        proptest::option::of(weight_value()),
        proptest::option::of(weight_value()),
        timestamp,
        warmup,
        iface,
        any::<bool>(),
    )
        .prop_map(move |(w, mw, other_mw, ts, warmup, iface, methods)| {
            let mut q = vec![format!("interface={iface}")];
            if let Some(w) = w {
                q.push(format!("weight={w}"));
            }
            if let Some(w) = mw {
                q.push(format!("sayHello.weight={w}"));
            }
            if let Some(w) = other_mw {
                q.push(format!("other.weight={w}"));
            }
            if !ts.is_empty() {
                q.push(format!("timestamp={ts}"));
            }
            if !warmup.is_empty() {
                q.push(format!("warmup={warmup}"));
            }
            if methods {
                q.push("methods=sayHello,other".to_owned());
            }
            format!("dubbo://10.0.0.{i}:20880/{iface}?{}", q.join("&"))
        })
        .boxed()
}

fn lb_urls(clock: bool, max: usize) -> BoxedStrategy<Vec<String>> {
    (1..=max)
        .prop_flat_map(move |n| (0..n).map(|i| lb_url(i + 1, clock)).collect::<Vec<_>>())
        .boxed()
}

fn method_name() -> BoxedStrategy<String> {
    prop_oneof![4 => Just("sayHello".to_owned()), 1 => Just("other".to_owned()), 1 => Just("none".to_owned())].boxed()
}

/// Java's `URL.getParameter(key, int)` / `getMethodParameter` parse with `Integer.parseInt` /
/// `Long.parseLong` and let a `NumberFormatException` escape, failing the whole selection; we
/// use the default for an unparsable value (`lb-bad-number-uses-default`). Whether `urls` has
/// a value Java cannot parse among the numbers load balancing reads.
fn has_unparsable_number(input: &Value) -> bool {
    let Ok(urls) = urls(input, Some(0)) else {
        return false;
    };
    let is = |k: &str, name: &str| k == name || k.ends_with(&format!(".{name}"));
    let bad_int = |v: &str| !v.is_empty() && parse_java_int(v).is_none();
    urls.iter().any(|u| {
        u.params().any(|(k, v)| {
            if k == "timestamp" || k == "warmup" {
                !v.is_empty() && v.parse::<i64>().is_err() || k == "warmup" && bad_int(v)
            } else if is(k, "hash.arguments") {
                // COMMA_SPLIT_PATTERN `\s*[,]+\s*`: spaces around commas go, not at the ends.
                let items: Vec<&str> = v.split(',').collect();
                let last = items.len() - 1;
                items.iter().enumerate().any(|(i, item)| {
                    let item = if i > 0 { item.trim_start() } else { item };
                    bad_int(if i < last { item.trim_end() } else { item })
                })
            } else {
                (is(k, "weight") || is(k, "hash.nodes")) && bad_int(v)
            }
        })
    })
}

/// `Integer.parseInt`: optional sign, ASCII digits, 32-bit range.
fn parse_java_int(v: &str) -> Option<i32> {
    let digits = v.strip_prefix(['+', '-']).unwrap_or(v);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    v.parse().ok()
}

/// Whether the first URL asks for fewer than 4 virtual nodes (`hash.nodes / 4 == 0`).
fn small_ring(input: &Value) -> bool {
    let Ok(urls) = urls(input, None) else {
        return false;
    };
    urls.first().is_some_and(|u| {
        let m = method(input);
        u.method_param(m, "hash.nodes")
            .and_then(parse_java_int)
            .is_some_and(|n| n / 4 <= 0)
    })
}

fn is_number_format_error(v: &Value) -> bool {
    v.pointer("/error/class").and_then(Value::as_str) == Some("java.lang.NumberFormatException")
}

/// `getWeight(invoker, invocation)` of each invoker, `$NOW` being the oracle's clock.
#[derive(Debug)]
pub struct Weight;

impl Operation for Weight {
    fn name(&self) -> &'static str {
        "lb_weight"
    }

    fn strategy(&self) -> BoxedStrategy<Value> {
        (lb_urls(true, 4), method_name())
            .prop_map(|(urls, m)| json!({ "urls": urls, "method": m }))
            .boxed()
    }

    fn divergence(&self, input: &Value, java: &Value, _rust: &Value) -> Option<&'static str> {
        (is_number_format_error(java) && has_unparsable_number(input))
            .then_some("lb-bad-number-uses-default")
    }

    fn answer(&self, _input: &Value) -> Value {
        // Only meaningful with the oracle's clock: see answer_after.
        Value::Null
    }

    fn answer_after(&self, input: &Value, java: &Value) -> Option<Value> {
        let from = java.get("now_from").and_then(Value::as_i64)?;
        let to = java
            .get("now_to")
            .and_then(Value::as_i64)?
            .clamp(from, from + 1000);
        let urls = match urls(input, Some(from)) {
            Ok(u) => u,
            Err(e) => return Some(e),
        };
        let javas = java.get("weights").and_then(Value::as_array);
        let m = method(input);
        let weights: Vec<i32> = urls
            .iter()
            .enumerate()
            .map(|(i, u)| {
                let meta = InvokerMeta::from_url(u);
                let want = javas.and_then(|w| w.get(i)).and_then(Value::as_i64);
                // Java read the clock once per invoker, somewhere in [from, to].
                (from..=to)
                    .map(|now| meta.weight_at(m, now))
                    .find(|w| Some(i64::from(*w)) == want)
                    .unwrap_or_else(|| meta.weight_at(m, from))
            })
            .collect();
        Some(json!({ "weights": weights, "now_from": from, "now_to": java.get("now_to") }))
    }
}

/// The invoker indices `RoundRobinLoadBalance` picks for `calls` calls in a row.
#[derive(Debug)]
pub struct RoundRobin;

impl Operation for RoundRobin {
    fn name(&self) -> &'static str {
        "lb_roundrobin"
    }

    fn strategy(&self) -> BoxedStrategy<Value> {
        (lb_urls(false, 6), method_name(), 1usize..40)
            .prop_map(|(urls, m, calls)| json!({ "urls": urls, "method": m, "calls": calls }))
            .boxed()
    }

    fn divergence(&self, input: &Value, java: &Value, rust: &Value) -> Option<&'static str> {
        if rust.get("total_weight_over_int").is_some() {
            return Some("roundrobin-int-total-weight");
        }
        (is_number_format_error(java) && has_unparsable_number(input))
            .then_some("lb-bad-number-uses-default")
    }

    fn answer(&self, input: &Value) -> Value {
        let set = match urls(input, None) {
            Ok(u) => set_of(u),
            Err(e) => return e,
        };
        let lb = RoundRobinLoadBalance::new();
        // `doSelect` sums the weights in an `int`: past i32::MAX Java's sequence wraps.
        let m = method(input);
        let total: i64 = set
            .meta()
            .iter()
            .map(|w| i64::from(w.weight_at(m, i64::MAX / 2)))
            .sum();
        if total > i64::from(i32::MAX) {
            return json!({ "total_weight_over_int": total });
        }
        let inv = Invocation::new(method(input));
        let calls = input.get("calls").and_then(Value::as_u64).unwrap_or(0);
        let picks: Vec<i64> = (0..calls)
            .map(|_| lb.select(&set, &inv).map_or(-1, |i| i as i64))
            .collect();
        json!(picks)
    }
}

/// An argument as the oracle passes it (no `-0.0`: the oracle's JSON reader drops its sign) (JSON → Integer/Long/BigInteger/Double/String/...).
fn argument() -> BoxedStrategy<Value> {
    prop_oneof![
        4 => crate::gen::word().prop_map(Value::String),
        2 => any::<i32>().prop_map(|n| json!(n)),
        1 => any::<i64>().prop_map(|n| json!(n)),
        1 => select(&[0.5f64, -1.25, 1e10, 1e-7, 3.0, 123456789.125, 1e21, 0.0][..]).prop_map(|f| json!(f)),
        1 => any::<bool>().prop_map(Value::Bool),
        1 => Just(Value::Null),
        1 => proptest::collection::vec(crate::gen::word().prop_map(Value::String), 0..3).prop_map(Value::Array),
    ]
    .boxed()
}

/// `ConsistentHashLoadBalance`'s pick for each argument list (one balancer per case).
#[derive(Debug)]
pub struct ConsistentHash;

impl Operation for ConsistentHash {
    fn name(&self) -> &'static str {
        "lb_consistenthash"
    }

    fn strategy(&self) -> BoxedStrategy<Value> {
        let nodes = proptest::option::of(prop_oneof![
            8 => select(&["160", "4", "7", "40", "1000", "8", "12", "5", "20", "100"][..]),
            1 => select(&["1", "0", "-4", "abc", "", "3"][..]),
        ]);
        let arguments = proptest::option::of(select(
            &[
                "0", "1", "0,1", "1,0", "2", "0,0", "", "x", "-1", " 1", "0,,1", "5", "0 , 1", "+1",
            ][..],
        ));
        (
            lb_urls(false, 5),
            nodes,
            arguments,
            any::<bool>(),
            proptest::collection::vec(proptest::collection::vec(argument(), 0..3), 1..6),
        )
            .prop_map(|(mut urls, nodes, arguments, per_method, calls)| {
                // The ring reads its parameters from the first invoker's URL.
                let prefix = if per_method { "sayHello." } else { "" };
                if let Some(first) = urls.first_mut() {
                    if let Some(n) = nodes {
                        first.push_str(&format!("&{prefix}hash.nodes={n}"));
                    }
                    if let Some(a) = arguments {
                        first.push_str(&format!("&{prefix}hash.arguments={a}"));
                    }
                }
                json!({ "urls": urls, "method": "sayHello", "calls": calls })
            })
            .boxed()
    }

    fn divergence(&self, input: &Value, java: &Value, rust: &Value) -> Option<&'static str> {
        // Per call: every differing pick must be Java's NumberFormatException.
        let (Value::Array(j), Value::Array(r)) = (java, rust) else {
            return None;
        };
        let all = |f: &dyn Fn(&Value) -> bool| {
            j.iter()
                .zip(r)
                .all(|(j, r)| crate::compare::same(j, r) || f(j))
        };
        if all(&is_number_format_error) && has_unparsable_number(input) {
            return Some("lb-bad-number-uses-default");
        }
        // Fewer than 4 hash.nodes: Java's ring is empty and selectForKey dereferences null.
        let npe = |v: &Value| {
            v.pointer("/error/class").and_then(Value::as_str)
                == Some("java.lang.NullPointerException")
        };
        (all(&npe) && small_ring(input)).then_some("consistenthash-empty-ring")
    }

    fn answer(&self, input: &Value) -> Value {
        let set = match urls(input, None) {
            Ok(u) => set_of(u),
            Err(e) => return e,
        };
        let lb = ConsistentHashLoadBalance::new();
        let calls = input
            .get("calls")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        let picks: Vec<Value> = calls
            .into_iter()
            .map(|args| {
                let args = match args {
                    Value::Array(a) => a,
                    other => vec![other],
                };
                let types = args.iter().map(|_| "java.lang.Object".to_owned()).collect();
                let inv = Invocation::new(method(input)).with_arguments(types, args);
                json!(lb.select(&set, &inv).map_or(-1, |i| i as i64))
            })
            .collect();
        Value::Array(picks)
    }
}
