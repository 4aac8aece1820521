//! Conformance kinds `cluster_behaviour/mergeable` (ops `refer`, `directory_grouping`,
//! `invoke`) and `result_merger` (ops `merge`, `get_merger`, `method_merge`,
//! `extension_names`).
//!
//! Every vector drives the real `invoker` code: `ClusterKind::for_reference`,
//! `is_multi_group`, `group_invokers`, the mergeable `ClusterInvoker` over scripted group
//! invokers, and the `MergerRegistry`. The test class `Menu` of Dubbo's
//! `MergeableClusterInvokerTest` (`merge(Menu)` appends items per key) is registered as a user
//! method merger, as the Java test has it on its class path.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use async_trait::async_trait;
use invoker::cluster::mergeable::{is_mergeable, merge_values};
use invoker::cluster::{ClusterInvoker, ClusterKind, ClusterOptions};
use invoker::directory::StaticDirectory;
use invoker::directory::{group_invokers, is_multi_group};
use invoker::merger::{Merger, MergerRegistry, MethodMerger};
use invoker::rpc::{
    Invocation, Invoker, RpcError, RpcErrorCode, RpcResponse, RpcResult, SharedInvoker,
};
use registry_core::Url;
use serde_json::{Map, Value};

use super::util::{has, s};
use super::{all, expect_eq, Outcome};

/// Runs one vector of a kind this module owns.
pub fn run(kind: &str, _subkind: &str, v: &Value) -> Outcome {
    let op = s(v, "op").unwrap_or("");
    match (kind, op) {
        ("cluster_behaviour", "refer") => refer(v),
        ("cluster_behaviour", "directory_grouping") => grouping(v),
        ("cluster_behaviour", "invoke") => block_on(invoke(v)),
        ("result_merger", "merge") => merge(v),
        ("result_merger", "get_merger") => get_merger(v),
        ("result_merger", "method_merge") => method_merge(v),
        ("result_merger", "extension_names") => extension_names(v),
        _ => Outcome::Skip(format!("{kind} op {op:?} not handled by mergeable.rs")),
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

fn consumer(v: &Value) -> Result<Url, Outcome> {
    let raw = s(v, "consumer_url").unwrap_or("consumer://127.0.0.1/org.example.DemoService");
    Url::parse(raw).map_err(|e| Outcome::Fail(format!("bad consumer_url {raw:?}: {e}")))
}

// ----- refer / directory_grouping -----

fn refer(v: &Value) -> Outcome {
    let url = match consumer(v) {
        Ok(u) => u,
        Err(o) => return o,
    };
    let exp = &v["expected"];
    let top = ClusterKind::for_reference(&url);
    // Inside each group: the cluster of a static directory over one provider of that group,
    // whose merged URL carries the consumer's `cluster` (consumer params win).
    let per_group = is_mergeable(&url).then(|| {
        let mut b = Url::builder("dubbo")
            .host("10.0.0.11")
            .port(20880)
            .path(url.service_interface().unwrap_or("org.example.DemoService"))
            .param("group", "a");
        if let Some(c) = url.param("cluster") {
            b = b.param("cluster", c);
        }
        let provider = b.build();
        let dir = Arc::new(StaticDirectory::new(provider, Vec::new()));
        ClusterInvoker::new(dir, ClusterOptions::default())
            .kind()
            .name()
    });
    all([
        expect_eq(
            "top_level_cluster",
            s(exp, "top_level_cluster"),
            Some(top.name()),
        ),
        expect_eq(
            "directory_multi_group",
            exp.get("directory_multi_group").and_then(Value::as_bool),
            Some(is_multi_group(&url)),
        ),
        expect_eq("per_group_cluster", s(exp, "per_group_cluster"), per_group),
    ])
}

#[derive(Debug)]
struct Fixed {
    url: Url,
    idx: usize,
}

#[async_trait]
impl Invoker for Fixed {
    fn url(&self) -> &Url {
        &self.url
    }
    async fn invoke(&self, _invocation: &Invocation) -> RpcResult {
        Ok(RpcResponse::empty())
    }
}

fn grouping(v: &Value) -> Outcome {
    let url = match consumer(v) {
        Ok(u) => u,
        Err(o) => return o,
    };
    let mut invokers: Vec<SharedInvoker> = Vec::new();
    let mut fixed: Vec<Arc<Fixed>> = Vec::new();
    for (idx, p) in v["providers"].as_array().into_iter().flatten().enumerate() {
        let Some(p) = p.as_str() else { continue };
        match Url::parse(p) {
            Ok(u) => {
                let f = Arc::new(Fixed { url: u, idx });
                fixed.push(f.clone());
                invokers.push(f);
            }
            Err(e) => return Outcome::Fail(format!("bad provider {p:?}: {e}")),
        }
    }
    let index_of = |inv: &SharedInvoker| -> usize {
        fixed
            .iter()
            .find(|f| std::ptr::eq(Arc::as_ptr(f) as *const (), Arc::as_ptr(inv) as *const ()))
            .map_or(usize::MAX, |f| f.idx)
    };
    let exp = &v["expected"];
    let groups = group_invokers(invokers);
    let routing = expect_eq(
        "top_level_routing",
        exp.get("top_level_routing").and_then(Value::as_bool),
        Some(!is_multi_group(&url)),
    );
    match s(exp, "shape") {
        Some("flat") => {
            let mut got: Vec<usize> = groups
                .iter()
                .flat_map(|(_, v)| v.iter().map(index_of))
                .collect();
            got.sort_unstable();
            let mut want: Vec<usize> = idx_list(&exp["invokers"]);
            want.sort_unstable();
            all([
                expect_eq("group count", 1, groups.len()),
                expect_eq("members", want, got),
                routing,
            ])
        }
        Some("per_group") => {
            let got: BTreeMap<String, Vec<usize>> = groups
                .iter()
                .map(|(g, v)| {
                    let mut ix: Vec<usize> = v.iter().map(index_of).collect();
                    ix.sort_unstable();
                    (g.clone(), ix)
                })
                .collect();
            let want: BTreeMap<String, Vec<usize>> = exp["groups"]
                .as_object()
                .into_iter()
                .flatten()
                .map(|(g, v)| {
                    let mut ix = idx_list(v);
                    ix.sort_unstable();
                    (g.clone(), ix)
                })
                .collect();
            all([expect_eq("groups", want, got), routing])
        }
        other => Outcome::Skip(format!("directory_grouping shape {other:?}")),
    }
}

fn idx_list(v: &Value) -> Vec<usize> {
    v.as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_u64)
        .filter_map(|i| usize::try_from(i).ok())
        .collect()
}

// ----- invoke -----

/// How a scripted group answers.
#[derive(Debug, Clone)]
enum Answer {
    Value(Value),
    /// `invoke()` throws: the future fails on its first poll.
    Thrown(RpcError),
    /// The error arrives later (business exception in the result, or a failed future).
    Later(RpcError),
}

#[derive(Debug)]
struct Group {
    url: Url,
    available: bool,
    answer: Answer,
    calls: AtomicUsize,
}

#[async_trait]
impl Invoker for Group {
    fn url(&self) -> &Url {
        &self.url
    }
    fn is_available(&self) -> bool {
        self.available
    }
    async fn invoke(&self, _invocation: &Invocation) -> RpcResult {
        self.calls.fetch_add(1, Ordering::SeqCst);
        match &self.answer {
            Answer::Thrown(e) => Err(e.clone()),
            Answer::Later(e) => {
                tokio::task::yield_now().await;
                Err(e.clone())
            }
            Answer::Value(v) => {
                tokio::task::yield_now().await;
                Ok(RpcResponse::new(v.clone()))
            }
        }
    }
}

fn group_url(spec: &Value, idx: usize) -> Result<Url, Outcome> {
    if let Some(p) = s(spec, "provider") {
        return Url::parse(p).map_err(|e| Outcome::Fail(format!("bad provider {p:?}: {e}")));
    }
    let key = s(spec, "service_key").unwrap_or("org.example.DemoService");
    let (group, rest) = match key.find('/') {
        Some(i) if i > 0 => (Some(&key[..i]), &key[i + 1..]),
        _ => (s(spec, "group"), key),
    };
    let (iface, version) = match rest.find(':') {
        Some(i) => (&rest[..i], Some(&rest[i + 1..])),
        None => (rest, None),
    };
    let port = i32::try_from(20880 + idx).unwrap_or(20880);
    let mut b = Url::builder("dubbo")
        .host("127.0.0.1")
        .port(port)
        .path(iface)
        .param("interface", iface);
    if let Some(g) = group {
        b = b.param("group", g);
    }
    if let Some(ver) = version {
        b = b.param("version", ver);
    }
    Ok(b.build())
}

fn group_answer(spec: &Value) -> Answer {
    let Some(t) = spec.get("throws") else {
        return Answer::Value(spec.get("returns").cloned().unwrap_or(Value::Null));
    };
    let class = s(t, "class").unwrap_or("java.lang.RuntimeException");
    let msg = s(t, "message").unwrap_or(class);
    let code = t
        .get("code")
        .and_then(Value::as_i64)
        .and_then(|c| i32::try_from(c).ok())
        .unwrap_or(0);
    match (
        s(t, "category").unwrap_or(""),
        s(t, "delivery").unwrap_or(""),
    ) {
        ("business_exception", _) | (_, "in_result") => Answer::Later(RpcError::biz(class, msg)),
        ("async_failure", _) | (_, "future") => {
            let detail = s(t, "detail").unwrap_or("");
            Answer::Later(RpcError::new(
                RpcErrorCode::Unknown,
                format!("{class}: {detail}"),
            ))
        }
        _ => Answer::Thrown(RpcError::new(RpcErrorCode::from_i32(code), msg)),
    }
}

/// The declared type without the vector's explanation: `Menu (test class: ...)` → `Menu`.
fn clean_type(t: &str) -> &str {
    t.split(" (").next().unwrap_or(t).trim()
}

const MENU: &str = "org.apache.dubbo.rpc.cluster.support.Menu";

/// `Menu.merge(Menu)` of Dubbo's test: appends the other menu's items per key (void).
struct MenuMerge;

impl MethodMerger for MenuMerge {
    fn chains(&self) -> bool {
        false
    }
    fn call(&self, receiver: &mut Value, argument: &Value) -> Result<Value, RpcError> {
        let other = argument
            .get("menus")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        let Some(obj) = receiver.as_object_mut() else {
            return Err(RpcError::new(
                RpcErrorCode::Unknown,
                "Can not merge result: null",
            ));
        };
        let menus = obj
            .entry("menus")
            .or_insert_with(|| Value::Object(Map::new()));
        let Some(menus) = menus.as_object_mut() else {
            return Err(RpcError::new(RpcErrorCode::Unknown, "menus is not a map"));
        };
        for (k, items) in other {
            let slot = menus.entry(k).or_insert_with(|| Value::Array(Vec::new()));
            if let (Some(dst), Some(src)) = (slot.as_array_mut(), items.as_array()) {
                dst.extend(src.iter().cloned());
            }
        }
        Ok(Value::Null)
    }
}

#[derive(Debug)]
struct Dummy;

impl Merger for Dummy {
    fn merge(&self, items: &[Value]) -> Result<Value, RpcError> {
        Ok(items.first().cloned().unwrap_or(Value::Null))
    }
}

fn registry(v: &Value) -> Arc<MergerRegistry> {
    let r = MergerRegistry::new();
    r.register_method_merger(MENU, "merge", Arc::new(MenuMerge));
    for (name, ty) in v["registered_mergers"].as_object().into_iter().flatten() {
        let ty = ty.as_str().unwrap_or("");
        let arg = ty
            .strip_prefix("Merger<")
            .and_then(|t| t.strip_suffix('>'))
            .unwrap_or(ty);
        r.register_merger(name, arg, Arc::new(Dummy));
    }
    Arc::new(r)
}

async fn invoke(v: &Value) -> Outcome {
    let url = match consumer(v) {
        Ok(u) => u,
        Err(o) => return o,
    };
    let mut groups: Vec<Arc<Group>> = Vec::new();
    for (i, spec) in v["invokers"].as_array().into_iter().flatten().enumerate() {
        let gurl = match group_url(spec, i) {
            Ok(u) => u,
            Err(o) => return o,
        };
        groups.push(Arc::new(Group {
            url: gurl,
            available: spec
                .get("available")
                .and_then(Value::as_bool)
                .unwrap_or(true),
            answer: group_answer(spec),
            calls: AtomicUsize::new(0),
        }));
    }
    let call = &v["call"];
    let method = s(call, "method").unwrap_or("sayHello");
    let types: Vec<String> = call["parameter_types"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .map(str::to_owned)
        .collect();
    let args = vec![Value::Null; types.len()];
    let mut inv = Invocation::new(method).with_arguments(types, args);
    if let Some(rt) = s(call, "return_java_type") {
        inv = inv.with_return_type(clean_type(rt));
    }
    let shared: Vec<SharedInvoker> = groups.iter().map(|g| g.clone() as SharedInvoker).collect();
    let dir = Arc::new(StaticDirectory::new(url, shared));
    // Test-derived vectors build MergeableClusterInvoker directly (no group param).
    let cluster = ClusterInvoker::new(
        dir,
        ClusterOptions {
            kind: Some(ClusterKind::Mergeable),
            merger_registry: Some(registry(v)),
            ..ClusterOptions::default()
        },
    );
    let result = cluster.invoke(&inv).await;
    let exp = &v["expected"];
    let mut checks = vec![check_result(exp, &result)];
    if let Some(want) = exp.get("invoked").and_then(Value::as_array) {
        let want: Vec<bool> = want.iter().map(|b| b.as_bool().unwrap_or(false)).collect();
        let got: Vec<bool> = groups
            .iter()
            .map(|g| g.calls.load(Ordering::SeqCst) > 0)
            .collect();
        checks.push(expect_eq("invoked", want, got));
    }
    if let Some(want) = exp.get("invoke_counts").and_then(Value::as_array) {
        let want: Vec<u64> = want.iter().map(|b| b.as_u64().unwrap_or(0)).collect();
        let got: Vec<u64> = groups
            .iter()
            .map(|g| g.calls.load(Ordering::SeqCst) as u64)
            .collect();
        checks.push(expect_eq("invoke_counts", want, got));
    }
    all(checks)
}

fn check_result(exp: &Value, result: &RpcResult) -> Outcome {
    let outcome = s(exp, "outcome").unwrap_or("value");
    match (outcome, result) {
        ("value", Ok(r)) => compare(exp, &r.value),
        ("value", Err(e)) => Outcome::Fail(format!("expected a value, got error {e}")),
        (o, Ok(r)) if o.starts_with("empty") => {
            expect_eq("empty result value", &Value::Null, &r.value)
        }
        ("RpcException", Err(e)) => check_error(exp, e, None),
        ("exception", Err(e)) => check_error(exp, e, s(exp, "exception_class")),
        (o, Ok(r)) => Outcome::Fail(format!("expected {o}, got value {}", r.value)),
        (o, Err(e)) => Outcome::Fail(format!("expected {o}, got error {e}")),
    }
}

fn check_error(exp: &Value, e: &RpcError, class: Option<&str>) -> Outcome {
    let mut checks = Vec::new();
    if let Some(code) = exp.get("code").and_then(Value::as_i64) {
        checks.push(expect_eq("code", code, i64::from(e.code.as_i32())));
    }
    for k in ["message_contains", "message"] {
        if let Some(m) = s(exp, k) {
            checks.push(Outcome::check(e.message.contains(m), || {
                format!("message {:?} does not contain {m:?}", e.message)
            }));
        }
    }
    match class {
        Some(c) => checks.push(expect_eq(
            "exception class",
            Some(c),
            e.exception_class.as_deref(),
        )),
        None => checks.push(Outcome::check(
            e.exception_class
                .as_deref()
                .is_none_or(|c| c.ends_with("RpcException")),
            || format!("expected an RpcException, got {e}"),
        )),
    }
    all(checks)
}

// ----- value comparison -----

fn num_eq(a: &Value, b: &Value) -> bool {
    match (a.as_f64(), b.as_f64()) {
        // float[] values are float32.
        (Some(x), Some(y)) => x == y || (x as f32) == (y as f32),
        _ => false,
    }
}

fn json_eq(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(_), Value::Number(_)) => num_eq(a, b),
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| json_eq(p, q))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, p)| y.get(k).is_some_and(|q| json_eq(p, q)))
        }
        _ => a == b,
    }
}

fn multiset_eq(a: &[Value], b: &[Value]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let mut used = vec![false; b.len()];
    a.iter().all(
        |x| match (0..b.len()).find(|&i| !used[i] && json_eq(x, &b[i])) {
            Some(i) => {
                used[i] = true;
                true
            }
            None => false,
        },
    )
}

fn set_eq(a: &[Value], b: &[Value]) -> bool {
    a.iter().all(|x| b.iter().any(|y| json_eq(x, y)))
        && b.iter().all(|y| a.iter().any(|x| json_eq(x, y)))
        && {
            // A set has no duplicates.
            b.iter()
                .enumerate()
                .all(|(i, y)| !b[..i].iter().any(|x| json_eq(x, y)))
        }
}

/// Map whose list values compare ignoring order, at any depth.
fn map_of_multisets_eq(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, p)| y.get(k).is_some_and(|q| map_of_multisets_eq(p, q)))
        }
        (Value::Array(x), Value::Array(y)) => multiset_eq(x, y),
        _ => json_eq(a, b),
    }
}

fn compare(exp: &Value, got: &Value) -> Outcome {
    let mode = s(exp, "compare").unwrap_or("exact");
    let want = exp.get("value").unwrap_or(&Value::Null);
    let ok = match mode {
        "one_of" => exp["value_one_of"]
            .as_array()
            .is_some_and(|vs| vs.iter().any(|w| json_eq(w, got))),
        "multiset" => match (want.as_array(), got.as_array()) {
            (Some(w), Some(g)) => multiset_eq(w, g),
            _ => json_eq(want, got),
        },
        "set" => match (want.as_array(), got.as_array()) {
            (Some(w), Some(g)) => set_eq(w, g),
            _ => json_eq(want, got),
        },
        "map_of_multisets" => map_of_multisets_eq(want, got),
        _ => json_eq(want, got),
    };
    Outcome::check(ok, || format!("value ({mode}): expected {want}, got {got}"))
}

// ----- result_merger -----

/// `{"$entries": [[k, v], ...]}` → an object (keys as strings; a null key is "null").
fn decode_input(v: &Value) -> Value {
    match v {
        Value::Object(o) if o.len() == 1 && o.contains_key("$entries") => {
            let mut m = Map::new();
            for e in o["$entries"].as_array().into_iter().flatten() {
                let k = match &e[0] {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                };
                m.insert(k, decode_input(&e[1]));
            }
            Value::Object(m)
        }
        other => other.clone(),
    }
}

fn inputs(v: &Value) -> Vec<Value> {
    v["inputs"]
        .as_array()
        .map(|a| a.iter().map(decode_input).collect())
        .unwrap_or_default()
}

fn check_merge(exp: &Value, r: Result<Value, RpcError>) -> Outcome {
    match (s(exp, "exception_class"), r) {
        (Some(class), Err(e)) => {
            let mut checks = Vec::new();
            if !class.ends_with("RpcException") {
                checks.push(expect_eq(
                    "exception class",
                    Some(class),
                    e.exception_class.as_deref(),
                ));
            }
            if let Some(m) = s(exp, "message") {
                checks.push(expect_eq("message", m, e.message.as_str()));
            }
            if let Some(m) = s(exp, "message_contains") {
                checks.push(Outcome::check(e.message.contains(m), || {
                    format!("message {:?} does not contain {m:?}", e.message)
                }));
            }
            all(checks)
        }
        (Some(class), Ok(got)) => Outcome::Fail(format!("expected {class}, got {got}")),
        (None, Ok(got)) => compare(exp, &got),
        (None, Err(e)) => Outcome::Fail(format!("expected a value, got {e}")),
    }
}

fn merge(v: &Value) -> Outcome {
    let reg = registry(v);
    let class = s(v, "merger").unwrap_or("");
    let entry = if class == "ArrayMerger" {
        reg.merger_for_type(Some("java.lang.Object[]"))
            .ok()
            .flatten()
    } else {
        reg.extension_names()
            .into_iter()
            .filter_map(|n| reg.by_name(&n).ok())
            .find(|e| e.class == class)
    };
    let Some(entry) = entry else {
        return Outcome::Fail(format!("no merger class {class}"));
    };
    check_merge(&v["expected"], entry.merger.merge(&inputs(v)))
}

fn get_merger(v: &Value) -> Outcome {
    let reg = registry(v);
    let rt = s(v, "return_type").map(clean_type);
    let exp = &v["expected"];
    match reg.merger_for_type(rt) {
        Err(e) => check_merge(exp, Err(e)),
        Ok(_) if has(exp, "exception_class") => {
            Outcome::Fail("expected an exception, got a lookup result".to_owned())
        }
        Ok(m) => expect_eq(
            "merger",
            s(exp, "merger").map(str::to_owned),
            m.map(|e| e.class),
        ),
    }
}

fn method_merge(v: &Value) -> Outcome {
    let reg = registry(v);
    let merger = s(v, "merger").unwrap_or("");
    let rt = s(v, "return_java_type").map(clean_type);
    check_merge(&v["expected"], merge_values(&reg, merger, rt, inputs(v)))
}

fn extension_names(v: &Value) -> Outcome {
    let reg = registry(v);
    let exp = &v["expected"];
    let want = ["value", "names", "extension_names"]
        .iter()
        .find_map(|k| exp.get(*k).and_then(Value::as_array));
    let Some(want) = want else {
        return Outcome::Skip("extension_names: no expected list".to_owned());
    };
    let mut want: Vec<String> = want
        .iter()
        .filter_map(Value::as_str)
        .map(str::to_owned)
        .collect();
    want.sort();
    expect_eq("extension names", want, reg.extension_names())
}
