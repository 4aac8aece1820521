//! Conformance kinds run by this module (see `super::dispatch`): `mock_value`,
//! `cluster_behaviour` (failover, failfast, failsafe, failback, forking, broadcast, available,
//! select, mock_cluster), `other/deprecated_filter` and `other/future_filter`.
//!
//! Every vector drives the real `invoker` code (`cluster::join_with`, `ClusterCore::select`,
//! `MockClusterInvoker`, the filter layers) over scripted invokers that return or fail as the
//! vector says.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use invoker::cluster::{
    self, broadcast, failback, ClusterInvoker, ClusterKind, ClusterOptions, FailbackOptions,
};
use invoker::directory::Directory;
use invoker::directory::StaticDirectory;
use invoker::filter::deprecated::DeprecatedLayer;
use invoker::filter::future::FutureLayer;
use invoker::filter::InvokerLayer;
use invoker::invoker_set::InvokerSet;
use invoker::loadbalance::{self, LoadBalance};
use invoker::mock::{normalize_mock, parse_mock_value, JavaType, MockRegistry};
use invoker::rpc::{
    Invocation, Invoker, RpcError, RpcErrorCode, RpcResponse, RpcResult, SharedInvoker,
};
use invoker::testutil::ScriptedInvoker;
use registry_core::Url;
use serde_json::Value;

use super::util::{has, s};
use super::{all, expect_eq, Outcome};

/// Runs one vector of a kind this module owns.
pub fn run(kind: &str, subkind: &str, v: &Value) -> Outcome {
    match (kind, subkind) {
        ("mock_value", _) => mock_value(v),
        ("other", "deprecated_filter") => block_on(deprecated_filter(v)),
        ("other", "future_filter") => block_on(future_filter(v)),
        ("cluster_behaviour", "select") => select(v),
        ("cluster_behaviour", "mock_cluster") => block_on(mock_cluster(v)),
        ("cluster_behaviour", sk) => match ClusterKind::from_name(sk) {
            Some(k) => block_on(strategy(k, v)),
            None => Outcome::Skip(format!("{kind}/{sk}: unknown cluster subkind")),
        },
        _ => Outcome::Skip(format!("{kind}/{subkind} not handled by cluster.rs")),
    }
}

fn block_on<F: std::future::Future<Output = Outcome>>(f: F) -> Outcome {
    match tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
    {
        Ok(rt) => rt.block_on(f),
        Err(e) => Outcome::Fail(format!("no tokio runtime: {e}")),
    }
}

// ----- scripted invokers (invoker::testutil::ScriptedInvoker) -----

/// `RpcException(TIMEOUT=2)`, `RpcException(code=0)`, `RpcException(TIMEOUT)`,
/// `RuntimeException("x")`, `RuntimeException` → the error an invoker raises.
fn parse_throw(t: &str) -> RpcError {
    let (class, arg) = match t.find('(') {
        Some(i) => (&t[..i], t[i + 1..].trim_end_matches(')')),
        None => (t, ""),
    };
    let arg_msg = arg.trim_matches('"');
    if class.ends_with("RpcException") {
        let upper = arg.to_ascii_uppercase();
        let digits: String = arg.chars().filter(char::is_ascii_digit).collect();
        let code = if let Ok(n) = digits.parse::<i32>() {
            n
        } else if upper.contains("TIMEOUT_TERMINATE") {
            8
        } else if upper.contains("TIMEOUT") {
            2
        } else if upper.contains("NETWORK") {
            1
        } else if upper.contains("BIZ") {
            3
        } else if upper.contains("FORBIDDEN") {
            4
        } else if upper.contains("SERIALIZATION") {
            5
        } else if upper.contains("LIMIT") {
            7
        } else {
            0
        };
        let code = RpcErrorCode::from_i32(code);
        if code == RpcErrorCode::Biz {
            return RpcError::biz("org.apache.dubbo.rpc.RpcException", t);
        }
        return RpcError::new(code, t);
    }
    // Any other Throwable thrown by the invoker itself: a non-biz failure (Dubbo wraps it in
    // an RpcException with code 0).
    let msg = if arg_msg.is_empty() {
        class.to_owned()
    } else {
        format!("{class}: {arg_msg}")
    };
    RpcError::new(RpcErrorCode::Unknown, msg)
}

fn scripted(i: usize, spec: &Value, default_path: &str) -> Arc<ScriptedInvoker> {
    let url = s(spec, "url")
        .and_then(|u| Url::parse(u).ok())
        .unwrap_or_else(|| {
            Url::builder("test")
                .host("127.0.0.1")
                .port(20880 + i32::try_from(i).unwrap_or(0))
                .path(default_path)
                .param("name", &format!("invoker{}", i + 1))
                .build()
        });
    let answer = match s(spec, "throws") {
        Some(t) => Err(parse_throw(t)),
        None => Ok(spec.get("returns").cloned().unwrap_or(Value::Null)),
    };
    let delay = spec
        .get("delay_ms")
        .or_else(|| spec.get("sleep_ms"))
        .and_then(Value::as_u64)
        .map(Duration::from_millis);
    let available = spec
        .get("available")
        .and_then(Value::as_bool)
        .unwrap_or(true);
    let mut inv = ScriptedInvoker::at(url, answer);
    if let Some(d) = delay {
        inv = inv.delayed(d);
    }
    if !available {
        inv = inv.unavailable();
    }
    inv
}

fn consumer_url(v: &Value) -> Url {
    let base = s(v, "consumer_url")
        .and_then(|u| Url::parse(u).ok())
        .unwrap_or_else(|| {
            Url::builder("consumer")
                .host("127.0.0.1")
                .path("org.apache.dubbo.demo.DemoService")
                .build()
        });
    match v.get("consumer_params").and_then(Value::as_object) {
        Some(p) => {
            let pairs: Vec<(String, String)> = p
                .iter()
                .map(|(k, v)| {
                    (
                        k.clone(),
                        v.as_str().map_or_else(|| v.to_string(), str::to_owned),
                    )
                })
                .collect();
            base.with_params(pairs.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        }
        None => base,
    }
}

fn total_calls(invokers: &[Arc<ScriptedInvoker>]) -> usize {
    invokers.iter().map(|i| i.calls()).sum()
}

fn values_equal(expected: &Value, actual: &Value) -> bool {
    match (expected, actual) {
        (Value::Number(a), Value::Number(b)) => a.as_f64() == b.as_f64(),
        (Value::Array(a), Value::Array(b)) => {
            a.len() == b.len() && a.iter().zip(b).all(|(x, y)| values_equal(x, y))
        }
        (Value::Object(a), Value::Object(b)) => {
            a.len() == b.len()
                && a.iter()
                    .all(|(k, x)| b.get(k).is_some_and(|y| values_equal(x, y)))
        }
        _ => expected == actual,
    }
}

// ----- mock_value -----

fn mock_value(v: &Value) -> Outcome {
    match s(v, "op").unwrap_or("parseMockValue") {
        "normalizeMock" => {
            let expected = v.get("expected").and_then(Value::as_str).map(str::to_owned);
            expect_eq("normalizeMock", expected, normalize_mock(s(v, "mock")))
        }
        "parseMockValue" => {
            let Some(mock) = s(v, "mock") else {
                return Outcome::Skip("parseMockValue without a mock string".into());
            };
            let rt = s(v, "return_type").map(JavaType::parse);
            let got = parse_mock_value(mock, rt.as_ref());
            if has(v, "expected_error") || has(v, "throws") {
                return Outcome::check(got.is_err(), || format!("expected an error, got {got:?}"));
            }
            let expected = v.get("expected_json").cloned().unwrap_or(Value::Null);
            match got {
                Ok(val) => Outcome::check(values_equal(&expected, &val), || {
                    format!("parseMockValue({mock:?}): expected {expected}, got {val}")
                }),
                Err(e) => Outcome::Fail(format!("parseMockValue({mock:?}) failed: {e}")),
            }
        }
        "invoke" | "mockInvoke" | "MockInvoker.invoke" => mock_invoke(v),
        // `ReflectUtils.getEmptyObject(returnType)`: what `return empty` gives.
        op if op.contains("EmptyObject") => {
            let rt = s(v, "return_type").map(JavaType::parse);
            let got = invoker::mock::empty_value(rt.as_ref());
            let expected = v
                .get("expected_json")
                .or_else(|| v.get("expected"))
                .cloned()
                .unwrap_or(Value::Null);
            Outcome::check(values_equal(&expected, &got), || {
                format!("getEmptyObject({rt:?}): expected {expected}, got {got}")
            })
        }
        op => Outcome::Skip(format!("mock_value op {op:?}")),
    }
}

/// `MockInvoker.invoke` with `mock=<mock>` on the URL (for the vector's `method`).
fn mock_invoke(v: &Value) -> Outcome {
    let Some(mock) = s(v, "mock") else {
        return Outcome::Skip("mock invoke without a mock string".into());
    };
    let method = s(v, "method").unwrap_or("sayHello");
    let url = Url::builder("consumer")
        .host("127.0.0.1")
        .path("IHelloService")
        .param("mock", mock)
        .build();
    let registry = Arc::new(MockRegistry::new());
    registry.register_impl("IHelloServiceMock", Arc::new(hello_mock));
    let invoker = invoker::mock::MockInvoker::new(url, "IHelloService", registry);
    let mut inv = Invocation::new(method.to_owned());
    if let Some(rt) = s(v, "return_type").or_else(|| hello_return_type(method)) {
        inv = inv.with_return_type(rt);
    }
    let got = invoker.answer(&inv);
    let error = ["expected_error", "throws", "expected_exception"]
        .iter()
        .find_map(|k| v.get(*k));
    if let Some(err) = error {
        return match &got {
            Ok(r) => Outcome::Fail(format!("expected an error, got {}", r.value)),
            Err(e) => match err.as_str() {
                Some(text) => error_matches(method, text, e),
                None => Outcome::Pass,
            },
        };
    }
    let expected = v
        .get("expected_json")
        .or_else(|| v.get("expected"))
        .cloned()
        .unwrap_or(Value::Null);
    match got {
        Ok(r) => Outcome::check(values_equal(&expected, &r.value), || {
            format!("mock {mock:?}: expected {expected}, got {}", r.value)
        }),
        Err(e) => Outcome::Fail(format!("mock {mock:?}: expected {expected}, got error {e}")),
    }
}

// ----- strategies -----

async fn strategy(kind: ClusterKind, v: &Value) -> Outcome {
    let exp = v.get("expected").cloned().unwrap_or(Value::Null);
    let url = consumer_url(v);
    if let Some(p) = exp.get("effective_percent").and_then(Value::as_i64) {
        return expect_eq(
            "effective broadcast.fail.percent",
            p,
            broadcast::effective_fail_percent(&url),
        );
    }
    if let Some(max) = exp.get("attempts_max").and_then(Value::as_u64) {
        // Five always-failing providers: count how many the strategy tries.
        let specs: Vec<Value> = (0..5)
            .map(|_| serde_json::json!({"throws": "RpcException(NETWORK)"}))
            .collect();
        let (invokers, cluster) = build(kind, &url, &specs, FailbackOptions::default());
        let _ = cluster.invoke(&Invocation::new("sayHello")).await;
        return expect_eq("attempts", max, total_calls(&invokers) as u64);
    }
    let specs: Vec<Value> = v
        .get("invokers")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    if has(&exp, "background_retry_attempts") {
        return failback_timing(&url, &specs, &exp).await;
    }
    let mut inv = Invocation::new(s(v, "method").unwrap_or("sayHello"));
    for key in ["rpc_context_attachment", "client_attachments_before"] {
        if let Some(m) = v.get(key).and_then(Value::as_object) {
            for (k, val) in m {
                inv = inv.with_attachment(
                    k.clone(),
                    val.as_str().map_or_else(|| val.to_string(), str::to_owned),
                );
            }
        }
    }
    let later = later_invokers(v);
    let (invokers, cluster, fresh) = match &later {
        Some((later_specs, after)) => build_relisting(kind, &url, &specs, later_specs, *after),
        None => {
            let (i, c) = build(kind, &url, &specs, FailbackOptions::default());
            (i, c, 0)
        }
    };
    let result = cluster.invoke(&inv).await;
    let mut checks = vec![check_outcome(&exp, &result)];
    if later.is_some() {
        for key in [
            "new_invoker_called",
            "used_new_invoker",
            "new_provider_used",
        ] {
            if let Some(want) = exp.get(key).and_then(Value::as_bool) {
                let called = invokers[invokers.len() - fresh..]
                    .iter()
                    .any(|i| i.calls() > 0);
                checks.push(expect_eq(key, want, called));
            }
        }
    }
    if let Some(n) = exp.get("attempts").and_then(Value::as_u64) {
        checks.push(expect_eq("attempts", n, total_calls(&invokers) as u64));
    }
    if let Some(code) = exp.get("code").and_then(Value::as_i64) {
        let got = result.as_ref().err().map(|e| i64::from(e.code.as_i32()));
        checks.push(expect_eq("error code", Some(code), got));
    }
    if let Some(m) = exp.get("message_contains").and_then(Value::as_str) {
        let msg = result
            .as_ref()
            .err()
            .map(|e| e.message.clone())
            .unwrap_or_default();
        checks.push(Outcome::check(msg.contains(m), || {
            format!("message {msg:?} lacks {m:?}")
        }));
    }
    if let Some(b) = exp.get("is_biz").and_then(Value::as_bool) {
        let got = result.as_ref().err().map(RpcError::is_biz);
        checks.push(expect_eq("is_biz", Some(b), got));
    }
    if let Some(c) = exp.get("exception_class").and_then(Value::as_str) {
        let got = result
            .as_ref()
            .err()
            .and_then(|e| e.exception_class.clone());
        checks.push(expect_eq("exception class", Some(c.to_owned()), got));
    }
    for key in ["calls_per_invoker", "invoked"] {
        if let Some(per) = exp.get(key).and_then(Value::as_array) {
            for (i, want) in per.iter().enumerate() {
                let got = invokers.get(i).map_or(0, |x| x.calls());
                let ok = match want {
                    Value::Bool(b) => (got > 0) == *b,
                    w => w.as_u64() == Some(got as u64),
                };
                checks.push(Outcome::check(ok, || {
                    format!("invoker {i}: expected {want}, called {got} times")
                }));
            }
        }
    }
    if s(&exp, "forked_to") == Some("all invokers") {
        let missed = invokers.iter().filter(|i| i.calls() == 0).count();
        checks.push(expect_eq("invokers not forked to", 0, missed));
    }
    // `client_attachments_after`: the library keeps no ambient client context that a cluster
    // could leave dirty; attachments live on the (borrowed, unchanged) invocation.
    let outcome = all(checks);
    if kind == ClusterKind::Forking && outcome != Outcome::Pass {
        if let Err(e) = &result {
            if e.code == RpcErrorCode::Timeout && expects_null(&exp) {
                return Outcome::Diverge {
                    rule: "forking-timeout-is-error",
                    detail: "no fork answered within timeout: an RpcException(TIMEOUT), not null"
                        .into(),
                };
            }
        }
    }
    outcome
}

/// The invoker list a vector says the directory holds after some attempts (a provider that
/// appears, or a list that changes, while the call is failing): a field such as
/// `invokers_after_first_failure: [...]`, `relist: [...]`, or
/// `directory_after: {"after_attempt": 1, "invokers": [...]}`. Returns the specs and after
/// how many `list` calls (the first is the call's own) the directory changes.
fn later_invokers(v: &Value) -> Option<(Vec<Value>, usize)> {
    const WORDS: [&str; 9] = [
        "after", "relist", "re_list", "later", "changed", "appear", "notify", "second", "new_",
    ];
    let obj = v.as_object()?;
    obj.iter().find_map(|(k, val)| {
        let kl = k.to_ascii_lowercase();
        if k == "invokers" || !WORDS.iter().any(|w| kl.contains(w)) {
            return None;
        }
        match val {
            Value::Array(a) if !a.is_empty() && a.iter().all(Value::is_object) => {
                Some((a.clone(), 1))
            }
            Value::Object(o) => {
                let list = o
                    .get("invokers")
                    .or_else(|| o.get("providers"))
                    .and_then(Value::as_array)?;
                let after = ["after_attempt", "after_attempts", "after", "after_calls"]
                    .iter()
                    .find_map(|k| o.get(*k).and_then(Value::as_u64))
                    .unwrap_or(1);
                Some((list.clone(), usize::try_from(after.max(1)).unwrap_or(1)))
            }
            _ => None,
        }
    })
}

/// A directory serving one list for the first `after` `list` calls and another one after
/// them (a registry notification between failover attempts).
#[derive(Debug)]
struct Relisting {
    url: Url,
    first: Arc<InvokerSet>,
    later: Arc<InvokerSet>,
    after: usize,
    lists: AtomicUsize,
}

impl Directory for Relisting {
    fn consumer_url(&self) -> Url {
        self.url.clone()
    }

    fn registry_url(&self) -> Url {
        self.url.clone()
    }

    fn list(&self, _invocation: &Invocation) -> Result<Arc<InvokerSet>, RpcError> {
        let n = self.lists.fetch_add(1, Ordering::SeqCst);
        Ok(if n < self.after {
            self.first.clone()
        } else {
            self.later.clone()
        })
    }

    fn is_available(&self) -> bool {
        true
    }
}

/// Like [`build`] over a [`Relisting`] directory. A later spec with the `url` (or `name`, or
/// `same_as` index) of a first-list invoker is that same invoker; the others are new. Returns
/// every invoker (first list, then the new ones), the cluster and how many are new.
fn build_relisting(
    kind: ClusterKind,
    url: &Url,
    specs: &[Value],
    later_specs: &[Value],
    after: usize,
) -> (Vec<Arc<ScriptedInvoker>>, ClusterInvoker, usize) {
    let path = url.path().unwrap_or("test").to_owned();
    let mut all: Vec<Arc<ScriptedInvoker>> = specs
        .iter()
        .enumerate()
        .map(|(i, sp)| scripted(i, sp, &path))
        .collect();
    let first_len = all.len();
    let mut later: Vec<SharedInvoker> = Vec::with_capacity(later_specs.len());
    for (j, sp) in later_specs.iter().enumerate() {
        let same = sp
            .get("same_as")
            .and_then(Value::as_u64)
            .and_then(|k| all.get(usize::try_from(k).ok()?).cloned())
            .or_else(|| {
                let u = s(sp, "url").and_then(|u| Url::parse(u).ok());
                let name = s(sp, "name");
                all[..first_len]
                    .iter()
                    .find(|x| {
                        u.as_ref().is_some_and(|u| *u == *x.url())
                            || name.is_some_and(|n| x.url().param("name") == Some(n))
                    })
                    .cloned()
            });
        let inv = match same {
            Some(x) => x,
            None => {
                let x = scripted(first_len + j, sp, &path);
                all.push(x.clone());
                x
            }
        };
        later.push(inv as SharedInvoker);
    }
    let first: Vec<SharedInvoker> = all[..first_len]
        .iter()
        .map(|i| i.clone() as SharedInvoker)
        .collect();
    let dir: Arc<dyn Directory> = Arc::new(Relisting {
        url: url.clone(),
        first: Arc::new(InvokerSet::new(first)),
        later: Arc::new(InvokerSet::new(later)),
        after,
        lists: AtomicUsize::new(0),
    });
    let opts = ClusterOptions {
        kind: Some(kind),
        ..ClusterOptions::default()
    };
    let fresh = all.len() - first_len;
    (all, ClusterInvoker::new(dir, opts), fresh)
}

fn expects_null(exp: &Value) -> bool {
    match exp.get("outcome") {
        Some(Value::Null) => true,
        Some(Value::String(o)) => o.contains("null"),
        _ => false,
    }
}

fn build(
    kind: ClusterKind,
    url: &Url,
    specs: &[Value],
    failback: FailbackOptions,
) -> (Vec<Arc<ScriptedInvoker>>, ClusterInvoker) {
    let path = url.path().unwrap_or("test").to_owned();
    let invokers: Vec<Arc<ScriptedInvoker>> = specs
        .iter()
        .enumerate()
        .map(|(i, sp)| scripted(i, sp, &path))
        .collect();
    let shared: Vec<SharedInvoker> = invokers
        .iter()
        .map(|i| i.clone() as SharedInvoker)
        .collect();
    let dir: Arc<dyn Directory> = Arc::new(StaticDirectory::new(url.clone(), shared));
    let opts = ClusterOptions {
        kind: Some(kind),
        failback,
        ..ClusterOptions::default()
    };
    (invokers, ClusterInvoker::new(dir, opts))
}

fn check_outcome(exp: &Value, result: &RpcResult) -> Outcome {
    match exp.get("outcome") {
        None => Outcome::Pass,
        Some(Value::String(o)) if o == "RpcException" => Outcome::check(result.is_err(), || {
            format!("expected an RpcException, got {result:?}")
        }),
        Some(Value::String(o)) if o.starts_with("empty result") => match result {
            Ok(r) => expect_eq("value", Value::Null, r.value.clone()),
            Err(e) => Outcome::Fail(format!("expected an empty result, got error {e}")),
        },
        Some(expected) => match result {
            Ok(r) => Outcome::check(values_equal(expected, &r.value), || {
                format!("expected {expected}, got {}", r.value)
            }),
            Err(e) => Outcome::Fail(format!("expected {expected}, got error {e}")),
        },
    }
}

/// Failback: background attempts are counted on a scaled-down clock (the real schedule with
/// 1 ms instead of 5 s); the delays themselves are read from the real default schedule.
async fn failback_timing(url: &Url, specs: &[Value], exp: &Value) -> Outcome {
    let scaled = FailbackOptions {
        first_delay: Duration::from_millis(1),
        max_delay: Duration::from_millis(12),
        jitter: 0.0,
        ..FailbackOptions::default()
    };
    let (invokers, cluster) = build(ClusterKind::Failback, url, specs, scaled);
    let first = cluster.invoke(&Invocation::new("sayHello")).await;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    while cluster.pending_retries() > 0 && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    let background = total_calls(&invokers).saturating_sub(1) as u64;
    let mut checks = vec![
        Outcome::check(matches!(&first, Ok(r) if r.value.is_null()), || {
            format!("first call: {first:?}")
        }),
        expect_eq(
            "pending retry tasks after the retries",
            0,
            cluster.pending_retries(),
        ),
    ];
    if let Some(n) = exp.get("background_retry_attempts").and_then(Value::as_u64) {
        checks.push(expect_eq("background retry attempts", n, background));
        checks.push(expect_eq(
            "retries read from the URL",
            n,
            u64::from(failback::failback_retries(url)),
        ));
    }
    let defaults = FailbackOptions::default();
    if let Some(s0) = exp.get("first_retry_delay_s").and_then(Value::as_u64) {
        checks.push(expect_eq(
            "first retry delay",
            Duration::from_secs(s0),
            defaults.base_delay(1),
        ));
    }
    let outcome = all(checks);
    if outcome != Outcome::Pass {
        return outcome;
    }
    if let Some(p) = exp.get("retry_period_s").and_then(Value::as_u64) {
        let later: Vec<u64> = (2..=3).map(|a| defaults.base_delay(a).as_secs()).collect();
        if later.iter().any(|d| *d != p) {
            return Outcome::Diverge {
                rule: "failback-exponential-backoff",
                detail: format!("retry delays after the first are {later:?} s (+ up to 10% jitter), Dubbo's fixed period is {p} s"),
            };
        }
    }
    Outcome::Pass
}

// ----- select -----

/// Cycles through the list: makes "does select return the same invoker again" observable.
#[derive(Debug, Default)]
struct Cycle(AtomicUsize);

impl LoadBalance for Cycle {
    fn select(&self, set: &InvokerSet, _invocation: &Invocation) -> Option<usize> {
        (!set.is_empty()).then(|| self.0.fetch_add(1, Ordering::SeqCst) % set.len())
    }
}

fn select(v: &Value) -> Outcome {
    let url = consumer_url(v);
    let mut registry_url = url.clone();
    if let Some(b) = v.get("cluster_availablecheck").and_then(Value::as_bool) {
        registry_url =
            registry_url.with_param("cluster.availablecheck", if b { "true" } else { "false" });
    }
    let exp = v.get("expected").cloned().unwrap_or(Value::Null);
    if let Some(prop) = s(&exp, "property") {
        if prop.contains("sticky") {
            return sticky_property(&url);
        }
        return Outcome::Skip(format!("select property {prop:?}"));
    }
    let specs: Vec<Value> = v
        .get("invokers")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let invokers: Vec<Arc<ScriptedInvoker>> = specs
        .iter()
        .enumerate()
        .map(|(i, sp)| scripted(i, sp, "test"))
        .collect();
    let shared: Vec<SharedInvoker> = invokers
        .iter()
        .map(|i| i.clone() as SharedInvoker)
        .collect();
    let name_of = |i: &SharedInvoker| i.url().param("name").unwrap_or("").to_owned();
    let selected: Vec<SharedInvoker> = v
        .get("selected")
        .and_then(Value::as_array)
        .map(|names| {
            names
                .iter()
                .filter_map(Value::as_str)
                .filter_map(|n| shared.iter().find(|i| name_of(i) == n).cloned())
                .collect()
        })
        .unwrap_or_default();
    let dir = StaticDirectory::new(url.clone(), shared.clone()).with_registry_url(registry_url);
    let core =
        cluster::ClusterCore::new(Arc::new(dir), None, cluster::core::DEFAULT_RESELECT_COUNT);
    // A vector may pin the balancer's answer (Dubbo's tests mock the LoadBalance), e.g.
    // `"lb_select": "invoker1"`.
    let lb: Arc<dyn LoadBalance> = match pinned_pick(v, &shared) {
        Some(name) => Arc::new(Named(name)),
        None => loadbalance::by_name(s(v, "loadbalance").unwrap_or("random")),
    };
    let set = InvokerSet::new(shared);
    let inv = Invocation::new("sayHello");
    let names = |k: &str| -> Option<Vec<String>> {
        exp.get(k).and_then(Value::as_array).map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
    };
    let exact = s(&exp, "selected").map(str::to_owned);
    let one_of = names("selected_one_of").or_else(|| names("one_of"));
    let never = names("not_selected").or_else(|| names("never"));
    // `"available": true` (or `selected_available`, `is_available`): what the selected
    // invoker's isAvailable() must be.
    let availability = [
        "available",
        "selected_available",
        "is_available",
        "selected_is_available",
    ]
    .iter()
    .find_map(|k| exp.get(*k).and_then(Value::as_bool));
    let runs = v
        .get("runs")
        .and_then(Value::as_u64)
        .map_or(50, |n| n.clamp(1, 10_000) as usize);
    if exact.is_none() && one_of.is_none() && never.is_none() && availability.is_none() {
        if has(&exp, "selected") {
            // `"selected": null`: nothing to choose from.
            let got = core
                .select(&*lb, &inv, &set, &selected)
                .map(|i| name_of(&i));
            return expect_eq("select", None, got);
        }
        return Outcome::Skip("select vector without an expected invoker".into());
    }
    // The rule must hold whatever the balancer picks: check it many times.
    for _ in 0..runs {
        let picked = core.select(&*lb, &inv, &set, &selected);
        if let Some(want) = availability {
            let got = picked.as_ref().map(|i| i.is_available());
            if got != Some(want) {
                return Outcome::Fail(format!(
                    "select: expected an invoker with isAvailable()={want}, got {:?}",
                    picked.as_ref().map(&name_of)
                ));
            }
        }
        let got = picked.map(|i| name_of(&i)).unwrap_or_default();
        if let Some(e) = &exact {
            if &got != e {
                return Outcome::Fail(format!("select: expected {e}, got {got:?}"));
            }
        }
        if let Some(ok) = &one_of {
            if !ok.contains(&got) {
                return Outcome::Fail(format!("select: expected one of {ok:?}, got {got:?}"));
            }
        }
        if let Some(bad) = &never {
            if bad.contains(&got) {
                return Outcome::Fail(format!("select: {got:?} must not be selected"));
            }
        }
    }
    Outcome::Pass
}

/// The invoker name a vector pins the balancer's pick to: a string field whose name mentions
/// the balancer (`lb_select`, `lb_returns`, `loadbalance_pick`, ...) and whose value names one
/// of the invokers.
fn pinned_pick(v: &Value, invokers: &[SharedInvoker]) -> Option<String> {
    let obj = v.as_object()?;
    obj.iter().find_map(|(k, val)| {
        let k = k.to_ascii_lowercase();
        let about_lb = (k.contains("lb") || k.contains("loadbalance") || k.contains("balancer"))
            && k != "loadbalance";
        let name = val.as_str()?;
        (about_lb && invokers.iter().any(|i| i.url().param("name") == Some(name)))
            .then(|| name.to_owned())
    })
}

/// A balancer that always answers the invoker with this `name` when the list holds it (else
/// the first), like a mocked `LoadBalance`.
#[derive(Debug)]
struct Named(String);

impl LoadBalance for Named {
    fn select(&self, set: &InvokerSet, _invocation: &Invocation) -> Option<usize> {
        if set.is_empty() {
            return None;
        }
        Some(
            set.invokers()
                .iter()
                .position(|i| i.url().param("name") == Some(self.0.as_str()))
                .unwrap_or(0),
        )
    }
}

/// Sticky with `cluster.availablecheck=false` never sticks: a cycling balancer keeps moving.
/// With availablecheck on, the same setup does stick (shows the check can fail).
fn sticky_property(url: &Url) -> Outcome {
    let run = |availablecheck: &str| -> Vec<String> {
        let invokers: Vec<SharedInvoker> = (0..3)
            .map(|i| scripted(i, &serde_json::json!({"url": format!("test://127.0.0.1:{}/test?name=invoker{}&sticky=true", 20880 + i, i + 1)}), "test") as SharedInvoker)
            .collect();
        let reg = url.with_param("cluster.availablecheck", availablecheck);
        let dir = StaticDirectory::new(url.clone(), invokers.clone()).with_registry_url(reg);
        let core =
            cluster::ClusterCore::new(Arc::new(dir), None, cluster::core::DEFAULT_RESELECT_COUNT);
        let lb = Cycle::default();
        let set = InvokerSet::new(invokers);
        let inv = Invocation::new("sayHello");
        (0..6)
            .filter_map(|_| core.select(&lb, &inv, &set, &[]))
            .map(|i| i.url().param("name").unwrap_or("").to_owned())
            .collect()
    };
    let off = run("false");
    let on = run("true");
    let distinct = |v: &[String]| {
        let mut d = v.to_vec();
        d.sort();
        d.dedup();
        d.len()
    };
    all([
        Outcome::check(distinct(&off) > 1, || {
            format!("availablecheck=false still sticky: {off:?}")
        }),
        Outcome::check(distinct(&on) == 1, || {
            format!("availablecheck=true not sticky: {on:?}")
        }),
    ])
}

// ----- mock_cluster -----

const HELLO: &str = "IHelloService";

/// Return types of Dubbo's `MockClusterInvokerTest.IHelloService`.
fn hello_return_type(method: &str) -> Option<&'static str> {
    Some(match method {
        "getSomething" | "getSomething2" | "getSomething3" | "getSomething4" => "java.lang.String",
        "getInt1" => "int",
        "getBoolean1" => "boolean",
        "getBoolean2" => "java.lang.Boolean",
        "getListString" => "java.util.List<java.lang.String>",
        "getUsers" => "java.util.List<User>",
        "sayHello" => "void",
        _ => return None,
    })
}

/// `IHelloServiceMock` of Dubbo's test, as an impl mock.
fn hello_mock(inv: &Invocation) -> RpcResult {
    let v = match inv.real_method() {
        "getSomething" => Value::from("somethingmock"),
        "getSomething2" => Value::from("something2mock"),
        "getSomething3" => Value::from("something3mock"),
        "getSomething4" => Value::from("something4mock"),
        "getListString" => serde_json::json!(["Tommock", "Jerrymock"]),
        "getUsers" => {
            serde_json::json!([{"id": 1, "name": "Tommock"}, {"id": 2, "name": "Jerrymock"}])
        }
        "getInt1" => Value::from(1),
        "getBoolean1" | "getBoolean2" => Value::Bool(false),
        _ => Value::Null,
    };
    Ok(RpcResponse::new(v))
}

async fn mock_cluster(v: &Value) -> Outcome {
    let url = Url::builder("remote").host("1.2.3.4").path(HELLO).build();
    let url = match v.get("consumer_params").and_then(Value::as_object) {
        Some(p) => {
            let pairs: Vec<(String, String)> = p
                .iter()
                .map(|(k, v)| {
                    (
                        k.clone(),
                        v.as_str().map_or_else(|| v.to_string(), str::to_owned),
                    )
                })
                .collect();
            url.with_params(pairs.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        }
        None => url,
    };
    let mut specs = vec![match s(v, "normal_invocation_throws") {
        Some(t) => serde_json::json!({"throws": t}),
        None => {
            let ret = v
                .get("normal_invocation_returns")
                .cloned()
                .unwrap_or(Value::from("something"));
            serde_json::json!({ "returns": ret })
        }
    }];
    if let Some(p) = v
        .get("mock_protocol_provider_params")
        .and_then(Value::as_object)
    {
        let q: Vec<String> = p
            .iter()
            .map(|(k, v)| {
                format!(
                    "{k}={}",
                    v.as_str().map_or_else(|| v.to_string(), str::to_owned)
                )
            })
            .collect();
        specs.push(serde_json::json!({"url": format!("mock://localhost/{HELLO}?{}", q.join("&"))}));
    }
    let scripted_list: Vec<Arc<ScriptedInvoker>> = specs
        .iter()
        .enumerate()
        .map(|(i, sp)| scripted(i, sp, HELLO))
        .collect();
    let provider = scripted_list[0].clone();
    let invokers: Vec<SharedInvoker> = scripted_list
        .into_iter()
        .map(|i| i as SharedInvoker)
        .collect();
    let dir: Arc<dyn Directory> = Arc::new(StaticDirectory::new(url, invokers));
    let registry = Arc::new(MockRegistry::new());
    registry.register_impl(format!("{HELLO}Mock"), Arc::new(hello_mock));
    // The custom exception of Dubbo's MockClusterInvokerTest.
    registry.register_exception("org.apache.dubbo.rpc.cluster.support.wrapper.MyMockException");
    let cluster = cluster::join_with(
        dir,
        ClusterOptions {
            mock_registry: Some(registry),
            ..ClusterOptions::default()
        },
    );
    let calls = v
        .get("calls")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let mut checks = Vec::new();
    for call in &calls {
        let method = s(call, "method").unwrap_or("sayHello");
        let mut inv = Invocation::new(method.to_owned());
        if let Some(rt) = s(call, "return_type").or_else(|| hello_return_type(method)) {
            inv = inv.with_return_type(rt);
        }
        let before = provider.calls();
        let result = cluster.invoke(&inv).await;
        // Whether this call reached the (normal) provider: force-mocks never do, methods
        // without a mock setting always do.
        for key in [
            "provider_called",
            "expect_provider_called",
            "invokes_provider",
            "reaches_provider",
            "called_provider",
        ] {
            if let Some(want) = call.get(key).and_then(Value::as_bool) {
                let called = provider.calls() > before;
                checks.push(expect_eq(&format!("{method}: {key}"), want, called));
            }
        }
        if let Some(err) = s(call, "expect_error") {
            checks.push(match &result {
                Ok(r) => {
                    Outcome::Fail(format!("{method}: expected error {err:?}, got {}", r.value))
                }
                Err(e) => error_matches(method, err, e),
            });
        } else if let Some(expected) = call.get("expect") {
            checks.push(match &result {
                Ok(r) => Outcome::check(values_equal(expected, &r.value), || {
                    format!("{method}: expected {expected}, got {}", r.value)
                }),
                Err(e) => Outcome::Fail(format!("{method}: expected {expected}, got error {e}")),
            });
        }
    }
    all(checks)
}

/// Checks an error against a prose expectation such as "RpcException isTimeout",
/// "RpcException with cause IllegalStateException (class not found)", "biz MyMockException",
/// "not biz: mocked exception for service degradation.".
fn error_matches(method: &str, expected: &str, e: &RpcError) -> Outcome {
    let lower = expected.to_ascii_lowercase();
    let mut checks = Vec::new();
    if expected.contains("isTimeout") || lower.contains("timeout") {
        checks.push(Outcome::check(e.is_timeout(), || {
            format!("{method}: expected a timeout, got {e}")
        }));
    }
    let not_biz =
        lower.contains("not biz") || lower.contains("non-biz") || lower.contains("isbiz false");
    if expected.contains("IllegalStateException") && lower.contains("cause") || not_biz {
        checks.push(Outcome::check(!e.is_biz(), || {
            format!("{method}: expected a non-biz error, got {e}")
        }));
    } else if lower.contains("biz") {
        checks.push(Outcome::check(e.is_biz(), || {
            format!("{method}: expected a biz error, got {e}")
        }));
    }
    if expected.contains("IllegalStateException") {
        checks.push(Outcome::check(
            e.message.contains("IllegalStateException"),
            || format!("{method}: expected IllegalStateException as the cause, got {e}"),
        ));
    }
    if lower.contains("mocked exception") {
        checks.push(Outcome::check(
            e.message
                .contains("mocked exception for service degradation."),
            || format!("{method}: expected the mocked-exception message, got {e}"),
        ));
    }
    // A named exception class (a dotted word ending in Exception) other than the wrappers.
    for word in expected.split(|c: char| !(c.is_alphanumeric() || c == '.' || c == '$' || c == '_'))
    {
        if word.ends_with("Exception")
            && !matches!(word, "RpcException" | "IllegalStateException")
            && word.contains('.')
        {
            let found = e.exception_class.as_deref() == Some(word) || e.message.contains(word);
            checks.push(Outcome::check(found, || {
                format!("{method}: expected {word}, got {e}")
            }));
        }
    }
    all(checks)
}

// ----- filters -----

/// Runs the Deprecated filter: the vector's call three times (or its `calls` sequence, each
/// with an optional own `invoker_url`), through one layer with its own "logged" set.
async fn deprecated_filter(v: &Value) -> Outcome {
    // Dubbo's test invoker serves DemoService; the URL's path is only "test".
    let iface = s(v, "interface").unwrap_or("org.apache.dubbo.rpc.support.DemoService");
    let logged = Arc::new(parking_lot_free::Log::default());
    let sink = logged.clone();
    let layer = DeprecatedLayer::isolated().with_observer(Arc::new(move |m: &str| sink.push(m)));
    let calls: Vec<Value> = match v.get("calls").and_then(Value::as_array) {
        Some(c) => c.clone(),
        None => vec![Value::Null; 3],
    };
    let mut saw_plain_before_deprecated = false;
    let mut saw_plain = false;
    for call in &calls {
        let url_text = s(call, "invoker_url").or_else(|| s(v, "invoker_url"));
        let Some(url) = url_text.and_then(|u| Url::parse(u).ok()) else {
            return Outcome::Fail("bad invoker_url".into());
        };
        let url = url.with_param("interface", iface);
        let method = s(call, "method")
            .or_else(|| s(v, "method"))
            .unwrap_or("echo");
        if url.method_param_bool(method, "deprecated", false) {
            saw_plain_before_deprecated |= saw_plain;
        } else {
            saw_plain = true;
        }
        let spec = serde_json::json!({"url": url.to_full_string(), "returns": "ok"});
        let invoker = layer.layer(scripted(0, &spec, "test"));
        let types: Vec<String> = call
            .get("parameter_types")
            .or_else(|| v.get("parameter_types"))
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default();
        let args = vec![Value::Null; types.len()];
        let inv = Invocation::new(method.to_owned()).with_arguments(types, args);
        if let Err(e) = invoker.invoke(&inv).await {
            return Outcome::Fail(format!("call failed: {e}"));
        }
    }
    let exp = v.get("expected").cloned().unwrap_or(Value::Null);
    let msgs = logged.all();
    let mut checks = Vec::new();
    if let Some(n) = exp.get("error_log_count").and_then(Value::as_u64) {
        checks.push(expect_eq("error logs", n, msgs.len() as u64));
    }
    if let Some(m) = exp.get("message_contains").and_then(Value::as_str) {
        checks.push(Outcome::check(msgs.iter().any(|x| x.contains(m)), || {
            format!("no log contains {m:?}: {msgs:?}")
        }));
    }
    let outcome = all(checks);
    if outcome != Outcome::Pass && saw_plain_before_deprecated {
        return Outcome::Diverge {
            rule: "deprecated-filter-marks-only-deprecated",
            detail: format!("a call before the deprecation did not mark the key; logged {msgs:?}"),
        };
    }
    outcome
}

async fn future_filter(v: &Value) -> Outcome {
    let Some(url) = s(v, "invoker_url").and_then(|u| Url::parse(u).ok()) else {
        return Outcome::Fail("bad invoker_url".into());
    };
    let method = s(v, "method")
        .or_else(|| url.param("onthrow.method"))
        .unwrap_or("echo")
        .to_owned();
    let inner: SharedInvoker = match s(v, "result_exception") {
        // A provider-side exception carried by the result: a biz error.
        Some(ex) => Arc::new(Throwing {
            url: url.clone(),
            class: ex.to_owned(),
        }),
        None => {
            let ret = v.get("result").cloned().unwrap_or(Value::from("ok"));
            scripted(
                0,
                &serde_json::json!({"url": url.to_full_string(), "returns": ret}),
                "test",
            )
        }
    };
    let thrown = Arc::new(AtomicUsize::new(0));
    let returned = Arc::new(AtomicUsize::new(0));
    let (t, r) = (thrown.clone(), returned.clone());
    let layer = FutureLayer::new()
        .on_throw(
            &method,
            Arc::new(move |_e: &RpcError, _i: &Invocation| {
                t.fetch_add(1, Ordering::SeqCst);
            }),
        )
        .on_return(
            &method,
            Arc::new(move |_r: &RpcResponse, _i: &Invocation| {
                r.fetch_add(1, Ordering::SeqCst);
                Ok(())
            }),
        );
    let invoker = layer.layer(inner);
    let result = invoker.invoke(&Invocation::new(method.clone())).await;
    let exp = v.get("expected").cloned().unwrap_or(Value::Null);
    let mut checks = Vec::new();
    if let Some(ex) = exp.get("recreate_throws").and_then(Value::as_str) {
        checks.push(match &result {
            Err(e) => Outcome::check(
                e.exception_class
                    .as_deref()
                    .is_some_and(|c| c.ends_with(ex)),
                || format!("expected {ex} to be rethrown, got {e}"),
            ),
            Ok(r) => Outcome::Fail(format!("expected {ex}, got {}", r.value)),
        });
        checks.push(expect_eq("onthrow calls", 1, thrown.load(Ordering::SeqCst)));
    } else {
        checks.push(Outcome::check(result.is_ok(), || {
            format!("call failed: {result:?}")
        }));
        checks.push(expect_eq(
            "onreturn calls",
            1,
            returned.load(Ordering::SeqCst),
        ));
    }
    all(checks)
}

/// A provider whose result carries a business exception.
#[derive(Debug)]
struct Throwing {
    url: Url,
    class: String,
}

#[async_trait]
impl Invoker for Throwing {
    fn url(&self) -> &Url {
        &self.url
    }

    async fn invoke(&self, _invocation: &Invocation) -> RpcResult {
        Err(RpcError::biz(self.class.clone(), "thrown by the provider"))
    }
}

/// A tiny message sink for the Deprecated observer.
mod parking_lot_free {
    use std::sync::Mutex;

    #[derive(Debug, Default)]
    pub struct Log(Mutex<Vec<String>>);

    impl Log {
        pub fn push(&self, m: &str) {
            if let Ok(mut g) = self.0.lock() {
                g.push(m.to_owned());
            }
        }

        pub fn all(&self) -> Vec<String> {
            self.0.lock().map(|g| g.clone()).unwrap_or_default()
        }
    }
}
