//! Conformance kinds of the registry directory: `other/configurator`,
//! `other/configurator_order`, `other/merge_url`, `cluster_behaviour/registry_directory`,
//! `cluster_behaviour/registry_notify` and `cluster_behaviour/registry_retry`.
//!
//! Every vector drives the real library: `invoker::directory` (configurators, merge,
//! `RegistryDirectory` fed step by step with a recording invoker factory) and
//! `registry_core` (notify grouping, memory registry, retry policy).
//! The Dubbo generation of a vector (its `source` tag) selects the directory's
//! [`DubboCompat`] rules and per-method cache.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use invoker::directory::{Directory, DirectoryOptions, DubboCompat, RegistryDirectory};
use invoker::rpc::{Invocation, InvokerFactory, RpcError, SharedInvoker};
use invoker::rules::merge_url;
use invoker::rules::{to_configurators, Configurator};
use invoker::testutil::providers::NoopFactory;
use registry_core::Url;
use serde_json::Value;

use super::util::s;
use super::{all, expect_eq, Outcome};

/// Runs one vector of a kind this module owns.
pub fn run(kind: &str, subkind: &str, v: &Value) -> Outcome {
    match (kind, subkind) {
        ("other", "configurator") => configurator(v),
        ("other", "configurator_order") => configurator_order(v),
        ("other", "merge_url") => merge(v),
        ("cluster_behaviour", "registry_directory") => registry_directory(v),
        ("cluster_behaviour", "registry_notify") => registry_notify(v),
        ("cluster_behaviour", "registry_retry") => registry_retry(v),
        _ => Outcome::Skip(format!("{kind}/{subkind} is not a directory kind")),
    }
}

/// The Dubbo generation named by a vector's `source` (`... @ dubbo-2.6.12`), default 3.x.
fn compat_of(v: &Value) -> DubboCompat {
    s(v, "source")
        .and_then(|src| src.rsplit_once('@'))
        .and_then(|(_, tag)| DubboCompat::parse(tag))
        .unwrap_or(DubboCompat::V3)
}

fn parse(what: &str, s: &str) -> Result<Url, Outcome> {
    Url::parse(s).map_err(|e| Outcome::Fail(format!("{what} {s:?} does not parse: {e}")))
}

/// The host `NetUtils.getLocalHost()` would give (vector field `local_host`, default 127.0.0.1).
fn local_host(v: &Value) -> &str {
    s(v, "local_host").unwrap_or("127.0.0.1")
}

fn configurator(v: &Value) -> Outcome {
    let (Some(cfg), Some(target), Some(key)) =
        (s(v, "configurator_url"), s(v, "target_url"), s(v, "key"))
    else {
        return Outcome::Skip("configurator vector without configurator_url/target_url/key".into());
    };
    let mut cfg = match parse("configurator_url", cfg) {
        Ok(u) => u,
        Err(o) => return o,
    };
    if s(v, "configurator_type") == Some("absent") {
        cfg = cfg.with_protocol("absent");
    }
    let target = match parse("target_url", target) {
        Ok(u) => u,
        Err(o) => return o,
    };
    let Some(c) = Configurator::from_url(&cfg) else {
        return Outcome::Fail(format!("not a configurator: {cfg}"));
    };
    let compat = compat_of(v);
    let out = c.configure(&target, local_host(v), compat);
    let outcome = expect_eq(key, s(v, "expected"), out.param(key));
    // 3.x: a path-less configurator is ignored by us (Dubbo 3.2+ throws); when the 2.7 rules
    // (no service-key check) give the expected value, that is the documented divergence.
    if outcome != Outcome::Pass && compat == DubboCompat::V3 && cfg.path().is_none() {
        let old_rules = c.configure(&target, local_host(v), DubboCompat::V27);
        if old_rules.param(key) == s(v, "expected") {
            return Outcome::Diverge {
                rule: "configurator-without-interface",
                detail: "path-less configurator ignored on 3.x".into(),
            };
        }
    }
    outcome
}

fn configurator_order(v: &Value) -> Outcome {
    let urls = |k: &str| -> Result<Vec<Url>, Outcome> {
        v.get(k)
            .and_then(Value::as_array)
            .ok_or_else(|| Outcome::Skip(format!("no {k}")))?
            .iter()
            .map(|x| parse(k, x.as_str().unwrap_or("")))
            .collect()
    };
    let (input, expected) = match (urls("configurators"), urls("expected_apply_order")) {
        (Ok(a), Ok(b)) => (a, b),
        (Err(o), _) | (_, Err(o)) => return o,
    };
    let got: Vec<Url> = to_configurators(&input, compat_of(v))
        .unwrap_or_default()
        .iter()
        .map(|c| c.url().clone())
        .collect();
    Outcome::check(got == expected, || {
        let show = |l: &[Url]| l.iter().map(Url::to_string).collect::<Vec<_>>();
        format!(
            "apply order: expected {:?}, got {:?}",
            show(&expected),
            show(&got)
        )
    })
}

fn merge(v: &Value) -> Outcome {
    let provider = match parse("provider_url", s(v, "provider_url").unwrap_or("")) {
        Ok(u) => u,
        Err(o) => return o,
    };
    let consumer: Vec<(&str, &str)> = v
        .get("consumer_params")
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .filter_map(|(k, x)| x.as_str().map(|x| (k.as_str(), x)))
                .collect()
        })
        .unwrap_or_default();
    let merged = merge_url(&provider, consumer.iter().copied());
    let mut checks = Vec::new();
    for k in v
        .get("expected_absent")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let k = k.as_str().unwrap_or("");
        checks.push(expect_eq(&format!("absent {k}"), None, merged.param(k)));
    }
    for (k, want) in v
        .get("expected")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
    {
        let want = want.as_str();
        let got = match k.as_str() {
            "path" => merged.path(),
            "username" => merged.username(),
            "password" => merged.password(),
            "host" => merged.host(),
            other => merged.param(other),
        };
        checks.push(expect_eq(k, want, got));
    }
    all(checks)
}

// ----- registry_directory -----

/// Records how often each provider address was referred.
#[derive(Debug, Default)]
struct RecordingFactory {
    refers: Mutex<BTreeMap<String, usize>>,
}

impl RecordingFactory {
    fn refers(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, usize>> {
        self.refers.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl InvokerFactory for RecordingFactory {
    fn refer(&self, provider: &Url) -> Result<SharedInvoker, RpcError> {
        *self
            .refers()
            .entry(provider.address().unwrap_or_default())
            .or_default() += 1;
        NoopFactory.refer(provider)
    }
}

fn consumer_url(v: &Value) -> Result<Url, Outcome> {
    let refer = v.get("consumer_refer").and_then(Value::as_object);
    let iface = refer
        .and_then(|m| m.get("interface"))
        .and_then(Value::as_str)
        .ok_or_else(|| Outcome::Skip("no consumer_refer.interface".into()))?;
    let mut b = Url::builder("consumer")
        .host(local_host(v))
        .path(iface)
        .param("side", "consumer");
    for (k, x) in refer.into_iter().flatten() {
        if let Some(x) = x.as_str() {
            b = b.param(k, x);
        }
    }
    Ok(b.build())
}

/// Puts the consumer interface into path-less configurator URLs (Dubbo 3.2+ needs it).
fn with_configurator_paths(urls: &[Url], iface: &str) -> (Vec<Url>, bool) {
    let mut changed = false;
    let out = urls
        .iter()
        .map(|u| {
            let cfg = matches!(u.protocol(), Some("override") | Some("absent"));
            if cfg && u.path().is_none_or(str::is_empty) {
                changed = true;
                u.with_path(iface)
            } else {
                u.clone()
            }
        })
        .collect();
    (out, changed)
}

fn registry_directory(v: &Value) -> Outcome {
    let compat = compat_of(v);
    let consumer = match consumer_url(v) {
        Ok(c) => c,
        Err(o) => return o,
    };
    let first = run_directory_steps(v, &consumer, compat, false);
    if first == Outcome::Pass || compat != DubboCompat::V3 {
        return first;
    }
    // 3.x: a configurator without an interface path is not applied by us (Dubbo 3.2+ throws
    // a NullPointerException). When the vector passes once the path is put in, that is the
    // documented divergence.
    let (second, rewritten) = (
        run_directory_steps(v, &consumer, compat, true),
        uses_pathless(v),
    );
    if rewritten && second == Outcome::Pass {
        return Outcome::Diverge {
            rule: "configurator-without-interface",
            detail: "path-less configurator ignored; passes with the interface path".into(),
        };
    }
    first
}

fn uses_pathless(v: &Value) -> bool {
    v.get("steps")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .any(|st| {
            st.get("notify")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .any(|u| {
                    u.as_str()
                        .and_then(|s| Url::parse(s).ok())
                        .is_some_and(|u| {
                            matches!(u.protocol(), Some("override") | Some("absent"))
                                && u.path().is_none()
                        })
                })
        })
}

fn run_directory_steps(v: &Value, consumer: &Url, compat: DubboCompat, add_paths: bool) -> Outcome {
    let Some(steps) = v.get("steps").and_then(Value::as_array) else {
        return Outcome::Skip("no steps".into());
    };
    let factory = Arc::new(RecordingFactory::default());
    let dir = RegistryDirectory::new(
        consumer.clone(),
        Url::builder("zookeeper")
            .host("127.0.0.1")
            .port(2181)
            .build(),
        factory.clone(),
        DirectoryOptions::for_compat(compat),
    );
    let iface = consumer.service_interface().unwrap_or("").to_owned();
    let mut before_last_notify: BTreeMap<String, usize> = BTreeMap::new();
    for (i, st) in steps.iter().enumerate() {
        let at = |o: Outcome| match o {
            Outcome::Fail(d) => Outcome::Fail(format!("step {i}: {d}")),
            o => o,
        };
        if let Some(list) = st.get("notify").and_then(Value::as_array) {
            let mut urls = Vec::with_capacity(list.len());
            for x in list {
                match parse("notified URL", x.as_str().unwrap_or("")) {
                    Ok(u) => urls.push(u),
                    Err(o) => return at(o),
                }
            }
            if add_paths {
                urls = with_configurator_paths(&urls, &iface).0;
            }
            before_last_notify = factory.refers().clone();
            dir.notify(&urls);
            continue;
        }
        if st.get("destroy").and_then(Value::as_bool) == Some(true) {
            dir.destroy();
            continue;
        }
        if let Some(avail) = st.get("available").and_then(Value::as_bool) {
            let o = expect_eq("available", avail, dir.is_available());
            if o != Outcome::Pass {
                return at(o);
            }
            continue;
        }
        if let Some(expect) = st.get("expect_rereferenced").and_then(Value::as_object) {
            let now = factory.refers().clone();
            for (addr, want) in expect {
                let got = now.get(addr).copied().unwrap_or(0)
                    > before_last_notify.get(addr).copied().unwrap_or(0);
                let o = expect_eq(&format!("re-referred {addr}"), want.as_bool(), Some(got));
                if o != Outcome::Pass {
                    return at(o);
                }
            }
            continue;
        }
        if st.as_object().is_some_and(|o| o.contains_key("list")) {
            let o = list_step(&dir, st);
            if o != Outcome::Pass {
                return at(o);
            }
            continue;
        }
        return Outcome::Skip(format!("step {i}: unknown step shape {st}"));
    }
    Outcome::Pass
}

/// The invocation of a `list` step: the method, with the step's `arguments`/`args` (and
/// `parameter_types`/`types`) if any; `"generic": true` wraps it as
/// `$invoke(method, types, args)`.
fn step_invocation(st: &Value) -> Invocation {
    let method = st.get("list").and_then(Value::as_str).unwrap_or("");
    let args: Vec<Value> = ["arguments", "args"]
        .iter()
        .find_map(|k| st.get(*k).and_then(Value::as_array))
        .cloned()
        .unwrap_or_default();
    let types: Vec<String> = ["parameter_types", "types"]
        .iter()
        .find_map(|k| st.get(*k).and_then(Value::as_array))
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_else(|| vec!["java.lang.Object".to_owned(); args.len()]);
    if st.get("generic").and_then(Value::as_bool) == Some(true) {
        return Invocation::new("$invoke").with_arguments(
            vec![
                "java.lang.String".into(),
                "java.lang.String[]".into(),
                "java.lang.Object[]".into(),
            ],
            vec![Value::from(method), Value::from(types), Value::Array(args)],
        );
    }
    if args.is_empty() {
        Invocation::new(method)
    } else {
        Invocation::new(method).with_arguments(types, args)
    }
}

fn list_step(dir: &RegistryDirectory, st: &Value) -> Outcome {
    let result = dir.list(&step_invocation(st));
    if let Some(want) = s(st, "expect_error_message_contains") {
        return match result {
            Err(e) => Outcome::check(e.message.contains(want), || {
                format!("error {:?} lacks {want:?}", e.message)
            }),
            Ok(set) => Outcome::Fail(format!(
                "expected an error containing {want:?}, got {} invokers",
                set.len()
            )),
        };
    }
    if let Some(n) = st.get("expect_size_or_forbidden").and_then(Value::as_u64) {
        return match result {
            Err(e) if e.is_forbidden() => Outcome::Pass,
            Err(e) => Outcome::Fail(format!("unexpected error {e}")),
            Ok(set) => expect_eq("size", n as usize, set.len()),
        };
    }
    let set = match result {
        Ok(s) => s,
        Err(e) => return Outcome::Fail(format!("list failed: {e}")),
    };
    let invokers = set.invokers();
    let mut checks = Vec::new();
    if let Some(n) = st.get("expect_size").and_then(Value::as_u64) {
        checks.push(expect_eq("size", n as usize, invokers.len()));
    }
    if let Some(hosts) = st.get("expect_hosts").and_then(Value::as_array) {
        let want: Vec<&str> = hosts.iter().filter_map(Value::as_str).collect();
        let got: Vec<&str> = invokers.iter().filter_map(|i| i.url().host()).collect();
        checks.push(expect_eq("hosts", want, got));
    }
    if let Some(params) = st.get("expect_invoker_param").and_then(Value::as_object) {
        match invokers.first() {
            Some(inv) => {
                for (k, want) in params {
                    checks.push(expect_eq(
                        &format!("param {k}"),
                        want.as_str(),
                        inv.url().param(k),
                    ));
                }
            }
            None => checks.push(Outcome::Fail("no invoker to check params on".into())),
        }
    }
    if let Some(params) = st
        .get("expect_invoker_param_all")
        .and_then(Value::as_object)
    {
        for inv in invokers {
            for (k, want) in params {
                checks.push(expect_eq(
                    &format!("param {k} of {}", inv.url().address().unwrap_or_default()),
                    want.as_str(),
                    inv.url().param(k),
                ));
            }
        }
    }
    all(checks)
}

// ----- registry_notify -----

fn registry_notify(v: &Value) -> Outcome {
    let consumer = match parse("subscribe_url", s(v, "subscribe_url").unwrap_or("")) {
        Ok(u) => u,
        Err(o) => return o,
    };
    let mut urls = Vec::new();
    for x in v
        .get("notified_urls")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        match parse("notified URL", x.as_str().unwrap_or("")) {
            Ok(u) => urls.push(u),
            Err(o) => return o,
        }
    }
    // AbstractRegistry#notify: an empty list is ignored (nothing is called); otherwise one
    // listener call per category of matching URLs.
    let calls = registry_core::notify::group_by_category(&consumer, &urls);
    let got: Vec<(String, Vec<String>)> = calls
        .iter()
        .map(|(c, us)| (c.clone(), us.iter().map(Url::to_full_string).collect()))
        .collect();
    let Some(expected) = v.get("expected_listener_calls").and_then(Value::as_array) else {
        return Outcome::Skip("no expected_listener_calls".into());
    };
    let mut want: Vec<(String, Vec<String>)> = Vec::new();
    for call in expected {
        let cat = s(call, "category").unwrap_or("providers").to_owned();
        let mut us = Vec::new();
        for u in call
            .get("urls")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            match parse("expected URL", u.as_str().unwrap_or("")) {
                Ok(u) => us.push(u.to_full_string()),
                Err(o) => return o,
            }
        }
        want.push((cat, us));
    }
    // Dubbo calls the listener in HashMap order: compare as sets of calls.
    want.sort();
    let mut got = got;
    got.sort();
    all([
        expect_eq("listener calls", want, got),
        memory_registry_ignores_nothing_new(&consumer),
    ])
}

/// The memory registry follows the same rules: a subscriber gets `empty://` (never an empty
/// list) when nothing is registered.
fn memory_registry_ignores_nothing_new(consumer: &Url) -> Outcome {
    let rt = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => return Outcome::Fail(format!("runtime: {e}")),
    };
    rt.block_on(async {
        use registry_core::Registry;
        let reg = registry_core::MemoryRegistry::new();
        let mut sub = match reg.subscribe(consumer).await {
            Ok(s) => s,
            Err(e) => return Outcome::Fail(format!("memory subscribe: {e}")),
        };
        match sub.try_next() {
            Some(n) => Outcome::check(n.is_empty_marker(), || {
                format!("first notification {n:?} is not empty://")
            }),
            None => Outcome::Fail("memory registry queued no first notification".into()),
        }
    })
}

// ----- registry_retry -----

fn registry_retry(v: &Value) -> Outcome {
    let Some(exp) = v.get("expected") else {
        return Outcome::Skip("no expected".into());
    };
    let policy = registry_core::retry::RetryPolicy::default();
    let registry = Url::builder("zookeeper")
        .host("127.0.0.1")
        .port(2181)
        .build();
    let from_url = registry_core::retry::RetryPolicy::from_url(&registry);
    let mut checks = vec![expect_eq(
        "policy from a bare registry URL",
        policy,
        from_url,
    )];
    if let Some(t) = exp.get("retry.times_default").and_then(Value::as_i64) {
        let ours = policy.times.map_or(-1, i64::from);
        checks.push(expect_eq("retry.times default", t, ours));
    }
    if let Some(c) = exp.get("check_default").and_then(Value::as_bool) {
        checks.push(expect_eq(
            "check default",
            c,
            registry.param_bool("check", true),
        ));
    }
    // With retry.period set, the first retry waits at most that period.
    if let Some(p) = exp.get("retry.period_ms_default").and_then(Value::as_u64) {
        let set = registry.with_param("retry.period", &p.to_string());
        let pol = registry_core::retry::RetryPolicy::from_url(&set);
        checks.push(expect_eq(
            "first delay with retry.period",
            std::time::Duration::from_millis(p),
            pol.nominal_delay(0),
        ));
        let o = all(checks);
        if o != Outcome::Pass {
            return o;
        }
        if policy.base.as_millis() as u64 != p {
            return Outcome::Diverge {
                rule: "failback-retry-backoff",
                detail: format!(
                    "default first retry after {} ms with exponential backoff (Dubbo: fixed {p} ms period); retry.period is honoured when set",
                    policy.base.as_millis()
                ),
            };
        }
        return Outcome::Pass;
    }
    all(checks)
}
