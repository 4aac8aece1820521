//! Conformance for `loadbalance_distribution/*` and `cluster_behaviour/active_limit`, driving
//! the real balancers ([`invoker::loadbalance`]), weights ([`invoker::invoker_set`]), counters
//! ([`invoker::status`]) and the ActiveLimit layer.
//!
//! Statistical vectors run the balancer with a fixed seed and compare the counts with the
//! distribution Dubbo's rule predicts (computed here from the vector's invokers and counters),
//! within ±10% relative or 5 standard deviations, whichever is larger.

use std::sync::Arc;

use async_trait::async_trait;
use invoker::filter::active_limit::ActiveLimitLayer;
use invoker::filter::InvokerLayer;
use invoker::invoker_set::{now_ms, warmup_weight, InvokerMeta, InvokerSet};
use invoker::loadbalance::{
    self, ceiling, java_string_value, key_hash, ring_points, Clock, ConsistentHashLoadBalance,
    LeastActiveLoadBalance, LoadBalance, RandomLoadBalance, RoundRobinLoadBalance,
    ShortestResponseLoadBalance, RECYCLE_PERIOD_MS,
};
use invoker::rpc::{
    Invocation, Invoker, RpcError, RpcErrorCode, RpcResponse, RpcResult, SharedInvoker,
};
use invoker::status::{CallGuard, ServiceStatus};
use registry_core::Url;
use serde_json::Value;

use super::util::{i, s};
use super::{all, expect_eq, Outcome};

const SEED: u64 = 0x5eed_d0bb0;

/// Runs one vector of a kind this module owns.
pub fn run(kind: &str, subkind: &str, v: &Value) -> Outcome {
    match (kind, subkind) {
        ("cluster_behaviour", "active_limit") => active_limit(v),
        ("loadbalance_distribution", "warmup_weight") => warmup(v),
        ("loadbalance_distribution", "get_weight") => get_weight(v),
        ("loadbalance_distribution", "random") => random(v),
        ("loadbalance_distribution", "roundrobin") => roundrobin(v),
        ("loadbalance_distribution", "roundrobin_cache") => roundrobin_cache(v),
        ("loadbalance_distribution", "roundrobin_sequence") => roundrobin_sequence(v),
        ("loadbalance_distribution", "leastactive") => least(v, false),
        ("loadbalance_distribution", "shortestresponse") => least(v, true),
        ("loadbalance_distribution", "consistenthash") => consistenthash(v),
        ("loadbalance_distribution", "consistenthash_select") => consistenthash_select(v),
        _ => Outcome::Skip(format!("{kind}/{subkind} is not a load-balancing kind")),
    }
}

/// An invoker that answers `Ok(null)` or fails with a fixed error.
#[derive(Debug)]
struct VecInvoker {
    url: Url,
    fail: Option<RpcError>,
    delay: std::time::Duration,
}

#[async_trait]
impl Invoker for VecInvoker {
    fn url(&self) -> &Url {
        &self.url
    }

    async fn invoke(&self, _invocation: &Invocation) -> RpcResult {
        if !self.delay.is_zero() {
            tokio::time::sleep(self.delay).await;
        }
        match &self.fail {
            Some(e) => Err(e.clone()),
            None => Ok(RpcResponse::empty()),
        }
    }
}

fn invoker(url: Url) -> SharedInvoker {
    Arc::new(VecInvoker {
        url,
        fail: None,
        delay: std::time::Duration::ZERO,
    })
}

/// Replaces `<now>`, `<now+N>` and `<now-N>` by epoch milliseconds.
fn with_now(text: &str, now: i64) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("<now") {
        let Some(end) = rest[start..].find('>') else {
            break;
        };
        let expr = &rest[start + 4..start + end];
        let delta = if expr.is_empty() {
            Some(0)
        } else if let Some(n) = expr.strip_prefix('+') {
            n.trim().parse::<i64>().ok()
        } else {
            expr.strip_prefix('-')
                .and_then(|n| n.trim().parse::<i64>().ok())
                .map(|n| -n)
        };
        out.push_str(&rest[..start]);
        match delta {
            Some(d) => out.push_str(&(now + d).to_string()),
            None => out.push_str(&rest[start..=start + end]),
        }
        rest = &rest[start + end + 1..];
    }
    out.push_str(rest);
    out
}

fn urls(v: &Value, key: &str, now: i64) -> Result<Vec<Url>, Outcome> {
    let list = v
        .get(key)
        .and_then(Value::as_array)
        .ok_or_else(|| Outcome::Fail(format!("vector has no {key:?} array")))?;
    list.iter()
        .map(|u| {
            let text = u.as_str().unwrap_or_default();
            Url::parse(&with_now(text, now))
                .map_err(|e| Outcome::Fail(format!("bad url {text:?}: {e}")))
        })
        .collect()
}

fn set_of(urls: &[Url]) -> InvokerSet {
    InvokerSet::new(urls.iter().cloned().map(invoker).collect())
}

fn method_of(v: &Value) -> &str {
    s(v, "method").unwrap_or("test")
}

fn runs(v: &Value) -> usize {
    usize::try_from(i(v, "runs").unwrap_or(10_000))
        .unwrap_or(10_000)
        .max(1)
}

fn count(lb: &dyn LoadBalance, set: &InvokerSet, inv: &Invocation, runs: usize) -> Vec<usize> {
    let mut counts = vec![0usize; set.len()];
    for _ in 0..runs {
        if let Some(i) = lb.select(set, inv) {
            counts[i] += 1;
        }
    }
    counts
}

/// Checks counts against expected proportions (`expected[i]` are relative weights; 0 means
/// "never").
fn check_distribution(what: &str, counts: &[usize], expected: &[f64]) -> Outcome {
    let runs: usize = counts.iter().sum();
    let total: f64 = expected.iter().sum();
    if total <= 0.0 {
        return Outcome::Fail(format!("{what}: no expected weight"));
    }
    for (i, (&c, &e)) in counts.iter().zip(expected).enumerate() {
        let p = e / total;
        let want = p * runs as f64;
        let sd = (runs as f64 * p * (1.0 - p)).sqrt();
        let tol = (0.10 * want).max(5.0 * sd);
        if e == 0.0 && c != 0 {
            return Outcome::Fail(format!(
                "{what}: invoker {i} must never be selected, got {c}"
            ));
        }
        if (c as f64 - want).abs() > tol {
            return Outcome::Fail(format!(
                "{what}: invoker {i} selected {c} times, expected {want:.0} ± {tol:.0} (counts {counts:?})"
            ));
        }
    }
    Outcome::Pass
}

fn warmup(v: &Value) -> Outcome {
    let (Some(up), Some(wu), Some(w), Some(exp)) = (
        i(v, "uptime_ms"),
        i(v, "warmup_ms"),
        i(v, "weight"),
        i(v, "expected"),
    ) else {
        return Outcome::Fail("needs uptime_ms, warmup_ms, weight, expected".into());
    };
    let to_i32 = |x: i64| i32::try_from(x).unwrap_or(i32::MAX);
    let direct = warmup_weight(to_i32(up), to_i32(wu), to_i32(w));
    // The same through an invoker URL when the warm-up branch applies (0 < uptime < warmup).
    let via_url = if up > 0 && up < wu {
        let now = 1_700_000_000_000i64;
        let url = Url::parse(&format!(
            "dubbo://h:1/S?weight={w}&warmup={wu}&timestamp={}",
            now - up
        ));
        url.map(|u| InvokerMeta::from_url(&u).weight_at("m", now))
            .ok()
    } else {
        None
    };
    all([
        expect_eq("calculateWarmupWeight", exp, i64::from(direct)),
        via_url.map_or(Outcome::Pass, |x| {
            expect_eq("getWeight via URL", exp, i64::from(x))
        }),
    ])
}

fn get_weight(v: &Value) -> Outcome {
    let now = now_ms();
    let Some(text) = s(v, "invoker_url") else {
        return Outcome::Fail("no invoker_url".into());
    };
    let url = match Url::parse(&with_now(text, now)) {
        Ok(u) => u,
        Err(e) => return Outcome::Fail(format!("bad url: {e}")),
    };
    let method = method_of(v);
    // A cluster invoker (multi-registry; Dubbo's testGetRegistryWeight) is weighed by its
    // registry URL.
    if let Some(reg) = s(v, "registry_url") {
        let reg = match Url::parse(&with_now(reg, now)) {
            Ok(u) => u,
            Err(e) => return Outcome::Fail(format!("bad registry_url: {e}")),
        };
        let dir = invoker::directory::StaticDirectory::new(url, Vec::new()).with_registry_url(reg);
        let set = InvokerSet::new(vec![invoker::cluster::join(Arc::new(dir))]);
        return expect_eq(
            "getWeight",
            i(v, "expected").unwrap_or(-1),
            i64::from(set.weight(0, method, now)),
        );
    }
    let got = InvokerMeta::from_url(&url).weight_at(method, now);
    expect_eq("getWeight", i(v, "expected").unwrap_or(-1), i64::from(got))
}

/// Dubbo's expected relative selection weights for random.
fn random_expectation(set: &InvokerSet, method: &str, now: i64, first_rule: bool) -> Vec<f64> {
    let needs = !first_rule
        || set
            .meta()
            .first()
            .is_some_and(|m| m.has_weight(method) || m.has_timestamp());
    let w: Vec<f64> = set
        .meta()
        .iter()
        .map(|m| f64::from(m.weight_at(method, now)))
        .collect();
    let total: f64 = w.iter().sum();
    let same = w.windows(2).all(|p| p[0] == p[1]);
    if !needs || total <= 0.0 || same {
        vec![1.0; w.len()]
    } else {
        w
    }
}

fn random(v: &Value) -> Outcome {
    let now = now_ms();
    let list = match urls(v, "invokers", now) {
        Ok(l) => l,
        Err(o) => return o,
    };
    let set = set_of(&list);
    let method = method_of(v);
    let inv = Invocation::new(method);
    let n = runs(v);
    let dubbo = random_expectation(&set, method, now, true);
    let ours = random_expectation(&set, method, now, false);
    let compat = RandomLoadBalance::seeded(SEED).dubbo_first_invoker_rule();
    let compat_check = check_distribution(
        "dubbo-compatible random",
        &count(&compat, &set, &inv, n),
        &dubbo,
    );
    if compat_check != Outcome::Pass {
        return compat_check;
    }
    let default = RandomLoadBalance::seeded(SEED);
    let counts = count(&default, &set, &inv, n);
    match check_distribution("random", &counts, &ours) {
        Outcome::Pass if dubbo == ours => Outcome::Pass,
        Outcome::Pass => Outcome::Diverge {
            rule: "random-weights-any-invoker",
            detail: format!(
                "Dubbo picks uniformly (first invoker has no weight/timestamp); we honour every \
                 invoker's weight: counts {counts:?} (RandomLoadBalance::dubbo_first_invoker_rule \
                 reproduces Dubbo)"
            ),
        },
        other => other,
    }
}

fn roundrobin(v: &Value) -> Outcome {
    let list = match urls(v, "invokers", now_ms()) {
        Ok(l) => l,
        Err(o) => return o,
    };
    let set = set_of(&list);
    let inv = Invocation::new(method_of(v));
    let counts = count(&RoundRobinLoadBalance::new(), &set, &inv, runs(v));
    match v.get("expected_counts").and_then(Value::as_array) {
        Some(exp) => {
            let exp: Vec<usize> = exp
                .iter()
                .map(|x| usize::try_from(x.as_u64().unwrap_or(0)).unwrap_or(0))
                .collect();
            expect_eq("roundrobin counts", exp, counts)
        }
        None => {
            let w: Vec<f64> = set
                .meta()
                .iter()
                .map(|m| f64::from(m.weight_at(method_of(v), now_ms())))
                .collect();
            check_distribution("roundrobin", &counts, &w)
        }
    }
}

fn roundrobin_cache(v: &Value) -> Outcome {
    let list = match urls(v, "invokers", now_ms()) {
        Ok(l) => l,
        Err(o) => return o,
    };
    if list.len() < 2 {
        return Outcome::Fail("needs at least 2 invokers".into());
    }
    let clock = Clock::manual(1_700_000_000_000);
    let lb = RoundRobinLoadBalance::new().with_clock(clock.clone());
    let method = method_of(v);
    let inv = Invocation::new(method);
    let full = set_of(&list);
    let key = full.service_key().clone();
    let _ = lb.select(&full, &inv);
    let n = list.len();
    let before = lb.cached_entries(&key, method);
    // Remove the last invoker (reusing the others' invokers, as a directory does).
    let fewer = InvokerSet::new_reusing(full.invokers()[..n - 1].to_vec(), &full);
    let _ = lb.select(&fewer, &inv);
    let kept = lb.cached_entries(&key, method);
    clock.advance(RECYCLE_PERIOD_MS);
    let _ = lb.select(&fewer, &inv);
    let at_period = lb.cached_entries(&key, method);
    clock.advance(1);
    let _ = lb.select(&fewer, &inv);
    let after = lb.cached_entries(&key, method);
    all([
        expect_eq("entries after the first select", Some(n), before),
        expect_eq("entries right after removing one (kept)", Some(n), kept),
        expect_eq(
            "entries at exactly RECYCLE_PERIOD (kept)",
            Some(n),
            at_period,
        ),
        expect_eq(
            "entries after RECYCLE_PERIOD (recycled)",
            Some(n - 1),
            after,
        ),
    ])
}

fn roundrobin_sequence(v: &Value) -> Outcome {
    let Some(weights) = v.get("weights").and_then(Value::as_array) else {
        return Outcome::Fail("no weights".into());
    };
    let list: Result<Vec<Url>, _> = weights
        .iter()
        .enumerate()
        .map(|(k, w)| {
            Url::parse(&format!(
                "test://127.0.0.1:{}/DemoService?weight={}",
                k + 1,
                w.as_i64().unwrap_or(100)
            ))
        })
        .collect();
    let Ok(list) = list else {
        return Outcome::Fail("bad weights".into());
    };
    let set = set_of(&list);
    let inv = Invocation::new(method_of(v));
    let lb = RoundRobinLoadBalance::new();
    let picks = usize::try_from(i(v, "picks").unwrap_or(0)).unwrap_or(0);
    let got: Vec<i64> = (0..picks)
        .map(|_| {
            lb.select(&set, &inv)
                .map_or(-1, |x| i64::try_from(x).unwrap_or(-1))
        })
        .collect();
    let exp: Vec<i64> = v
        .get("expected_indices")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_i64).collect())
        .unwrap_or_default();
    expect_eq("roundrobin sequence", exp, got)
}

/// leastactive / shortestresponse: sets the counters the vector gives, runs the balancer and
/// compares with the rule's expectation.
fn least(v: &Value, shortest: bool) -> Outcome {
    let now = now_ms();
    let list = match urls(v, "invokers", now) {
        Ok(l) => l,
        Err(o) => return o,
    };
    let set = set_of(&list);
    let method = method_of(v);
    let inv = Invocation::new(method);
    let statuses: Vec<Arc<ServiceStatus>> = set.meta().iter().map(|m| m.status().clone()).collect();
    let mut guards: Vec<CallGuard> = Vec::new();
    // (active, succeeded, succeeded elapsed ms) per invoker.
    let mut stats = vec![(0i64, 0i64, 0i64); list.len()];
    // An invoker named by index, protocol, address or any part of its URL.
    let find = |name: &str| -> Option<usize> {
        name.parse::<usize>()
            .ok()
            .filter(|&k| k < list.len())
            .or_else(|| {
                list.iter()
                    .position(|u| u.protocol() == Some(name) || u.to_string().contains(name))
            })
    };
    match v.get("actives") {
        Some(Value::Array(a)) => {
            for (k, x) in a.iter().enumerate().take(list.len()) {
                stats[k].0 = x.as_i64().unwrap_or(0);
            }
        }
        Some(Value::Object(m)) => {
            for (name, x) in m {
                let Some(k) = find(name) else {
                    return Outcome::Fail(format!("actives names unknown invoker {name:?}"));
                };
                stats[k].0 = x.as_i64().unwrap_or(0);
            }
        }
        _ => {}
    }
    if let Some(map) = v.get("rpc_status").and_then(Value::as_object) {
        for (name, st) in map {
            let Some(k) = find(name) else {
                return Outcome::Fail(format!("rpc_status names unknown invoker {name:?}"));
            };
            stats[k].0 = i(st, "active").unwrap_or(stats[k].0);
            stats[k].1 = i(st, "succeeded").unwrap_or(0);
            stats[k].2 = i(st, "succeeded_elapsed_ms").unwrap_or(0);
        }
    }
    for (k, &(active, succeeded, elapsed_ms)) in stats.iter().enumerate() {
        let ms = statuses[k].method(method);
        if succeeded > 0 {
            let each = u64::try_from(elapsed_ms * 1000 / succeeded).unwrap_or(0);
            for _ in 0..succeeded {
                ms.record(each, true);
            }
        }
        for _ in 0..active {
            guards.push(statuses[k].begin(method));
        }
    }
    // Dubbo's expectation: the minimum key, then weights among the ties.
    let key: Vec<i64> = stats
        .iter()
        .map(|&(a, s, e)| {
            if shortest {
                // Counters are kept in µs (each call recorded with the vector's average).
                if s == 0 {
                    0
                } else {
                    e * 1000 / s * (a + 1)
                }
            } else {
                a
            }
        })
        .collect();
    let min = key.iter().copied().min().unwrap_or(0);
    let w: Vec<f64> = set
        .meta()
        .iter()
        .map(|m| f64::from(m.weight_at(method, now)))
        .collect();
    let tied: Vec<bool> = key.iter().map(|&k| k == min).collect();
    let tied_w: Vec<f64> = w
        .iter()
        .zip(&tied)
        .filter(|(_, t)| **t)
        .map(|(w, _)| *w)
        .collect();
    let uniform = tied_w.iter().sum::<f64>() <= 0.0 || tied_w.windows(2).all(|p| p[0] == p[1]);
    let expected: Vec<f64> = w
        .iter()
        .zip(&tied)
        .map(|(w, t)| {
            if !*t {
                0.0
            } else if uniform {
                1.0
            } else {
                *w
            }
        })
        .collect();
    let lb: Box<dyn LoadBalance> = if shortest {
        Box::new(ShortestResponseLoadBalance::seeded(SEED))
    } else {
        Box::new(LeastActiveLoadBalance::seeded(SEED))
    };
    let counts = count(lb.as_ref(), &set, &inv, runs(v));
    let out = all([
        expect_eq("total selections", runs(v), counts.iter().sum()),
        check_distribution(lb.name(), &counts, &expected),
    ]);
    drop(guards);
    out
}

fn consistenthash(v: &Value) -> Outcome {
    let list = match urls(v, "invokers", now_ms()) {
        Ok(l) => l,
        Err(o) => return o,
    };
    let set = set_of(&list);
    let method = method_of(v);
    let args: Vec<Value> = v
        .get("args")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let types: Vec<String> = args.iter().map(|_| "java.lang.Object".to_owned()).collect();
    let inv = Invocation::new(method).with_arguments(types, args);
    let lb = ConsistentHashLoadBalance::new();
    let Some(picked) = lb.select(&set, &inv) else {
        return Outcome::Fail("nothing selected".into());
    };
    let got = list[picked].address().unwrap_or_default();
    let mut checks = vec![];
    if let Some(exp) = s(v, "expected_address") {
        checks.push(expect_eq("address", exp.to_owned(), got.clone()));
    }
    if inv.is_generic() {
        let real = inv.real_arguments().to_vec();
        let direct = Invocation::new(inv.real_method()).with_arguments(
            real.iter().map(|_| "java.lang.String".to_owned()).collect(),
            real,
        );
        let d = lb
            .select(&set, &direct)
            .and_then(|x| list[x].address())
            .unwrap_or_default();
        checks.push(expect_eq("generic call = direct call", d, got));
    }
    all(checks)
}

fn consistenthash_select(v: &Value) -> Outcome {
    let Some(addresses) = v.get("addresses").and_then(Value::as_array) else {
        return Outcome::Fail("no addresses".into());
    };
    let addresses: Vec<&str> = addresses.iter().filter_map(Value::as_str).collect();
    let replicas = i(v, "replicas").unwrap_or(160);
    let key = s(v, "hash_key").unwrap_or("");
    let exp = s(v, "expected_address").unwrap_or("");
    let hash_args = s(v, "hash_arguments");
    let args: Vec<Value> = v
        .get("args")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_else(|| vec![Value::String(key.to_owned())]);
    let mut checks = vec![];
    // 1. The ring rule itself.
    let points = ring_points(addresses.iter().copied(), replicas);
    let direct = ceiling(&points, key_hash(key)).and_then(|x| addresses.get(x as usize).copied());
    checks.push(expect_eq("ring pick for the key", Some(exp), direct));
    // 2. The key the balancer would build from the arguments.
    let idx: Vec<usize> = hash_args
        .map(|h| {
            registry_core::url::comma_split(h)
                .into_iter()
                .filter_map(|x| x.parse().ok())
                .collect()
        })
        .unwrap_or_else(|| vec![0]);
    let built: String = idx
        .iter()
        .filter_map(|&k| args.get(k))
        .map(java_string_value)
        .collect();
    checks.push(expect_eq("key from arguments", key.to_owned(), built));
    // 3. End to end through the balancer with invokers carrying hash.nodes/hash.arguments.
    let mut q = format!("hash.nodes={replicas}");
    if let Some(h) = hash_args {
        q.push_str("&hash.arguments=");
        q.push_str(h);
    }
    let list: Result<Vec<Url>, _> = addresses
        .iter()
        .map(|a| Url::parse(&format!("dubbo://{a}/DemoService?{q}")))
        .collect();
    let Ok(list) = list else {
        return Outcome::Fail("bad addresses".into());
    };
    let set = set_of(&list);
    let types = args.iter().map(|_| "java.lang.String".to_owned()).collect();
    let inv = Invocation::new("sayHello").with_arguments(types, args);
    let got = loadbalance::ConsistentHashLoadBalance::new()
        .select(&set, &inv)
        .and_then(|x| list[x].address());
    checks.push(expect_eq("balancer pick", Some(exp.to_owned()), got));
    all(checks)
}

/// The first integer field among `keys`.
fn int_field(v: &Value, keys: &[&str]) -> Option<i64> {
    keys.iter().find_map(|k| i(v, k))
}

fn active_limit(v: &Value) -> Outcome {
    let Some(text) = s(v, "invoker_url") else {
        return Outcome::Fail("no invoker_url".into());
    };
    let mut url = match Url::parse(text) {
        Ok(u) => u,
        Err(e) => return Outcome::Fail(format!("bad url: {e}")),
    };
    if let Some(a) = int_field(v, &["actives", "max_actives"]) {
        url = url.with_param("actives", &a.to_string());
    }
    if let Some(t) = int_field(v, &["timeout_ms", "timeout"]) {
        url = url.with_param("timeout", &t.to_string());
    }
    let fail = s(v, "invoker_throws").map(|t| {
        if t.to_ascii_lowercase().contains("limit") {
            RpcError::new(RpcErrorCode::LimitExceeded, t)
        } else {
            RpcError::new(RpcErrorCode::Unknown, t)
        }
    });
    let delay_ms = int_field(v, &["call_ms", "sleep_ms", "invoke_ms", "duration_ms"]).unwrap_or(0);
    let method = s(v, "method").unwrap_or("test");
    let inner: SharedInvoker = Arc::new(VecInvoker {
        url: url.clone(),
        fail,
        delay: std::time::Duration::from_millis(delay_ms.max(0).unsigned_abs()),
    });
    let wrapped = ActiveLimitLayer.layer(inner);
    let status = ServiceStatus::for_url(&url).method(method);
    let rt = match tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => return Outcome::Fail(format!("runtime: {e}")),
    };
    let Some(expected) = v.get("expected").and_then(Value::as_object) else {
        return Outcome::Skip("no expected object".into());
    };
    let mut checks = vec![];
    for (key, exp) in expected {
        if let Some(when) = key.strip_prefix("active_before_equals_active_after") {
            let before = status.active();
            let failed_before = status.failed();
            let r = rt.block_on(wrapped.invoke(&Invocation::new(method)));
            let after = status.active();
            checks.push(expect_eq(
                "active before == after",
                exp.as_bool(),
                Some(before == after),
            ));
            let expect_error = when.to_ascii_lowercase().contains("error");
            checks.push(expect_eq("the call failed", expect_error, r.is_err()));
            if expect_error {
                checks.push(expect_eq(
                    "counted as failed",
                    failed_before + 1,
                    status.failed(),
                ));
            }
        } else if key.to_ascii_lowercase().contains("reject") {
            // N concurrent calls against the limit; count LIMIT_EXCEEDED rejections.
            let n = int_field(v, &["threads", "tasks", "concurrency", "calls"]).unwrap_or(100);
            let w = wrapped.clone();
            let m = method.to_owned();
            let rejected = rt.block_on(async move {
                let mut tasks = Vec::new();
                for _ in 0..n {
                    let w = w.clone();
                    let m = m.clone();
                    tasks.push(tokio::spawn(
                        async move { w.invoke(&Invocation::new(m)).await },
                    ));
                }
                let mut rejected = 0i64;
                for t in tasks {
                    if let Ok(Err(e)) = t.await {
                        if e.is_limit_exceeded() {
                            rejected += 1;
                        }
                    }
                }
                rejected
            });
            // A number is exact; `[lo, hi]` or `{"min": lo, "max": hi}` is a range (for
            // vectors written against a loaded machine's clock).
            let range = match exp {
                Value::Array(a) if a.len() == 2 => a[0].as_i64().zip(a[1].as_i64()),
                Value::Object(o) => o
                    .get("min")
                    .and_then(Value::as_i64)
                    .zip(o.get("max").and_then(Value::as_i64)),
                _ => None,
            };
            match range {
                Some((lo, hi)) => checks
                    .push(Outcome::check((lo..=hi).contains(&rejected), || {
                        format!("rejections: expected {lo}..={hi}, got {rejected}")
                    })),
                None => checks.push(expect_eq("rejections", exp.as_i64(), Some(rejected))),
            }
            checks.push(expect_eq("active after all calls", 0, status.active()));
        }
    }
    if checks.is_empty() {
        return Outcome::Skip("no expectation this module understands".into());
    }
    all(checks)
}
