//! Rule tests of the registry directory.

use std::sync::Arc;
use std::time::Duration;

use registry_core::Url;
use serde_json::Value;

use super::*;
use crate::keys::NEED_MOCK;
use crate::router::Router;
use crate::rpc::{Invoker, RpcErrorCode, SharedInvoker};
use crate::testutil::providers as bench_support;
use crate::testutil::RecordingFactory;

const S: &str = "com.foo.DemoService";

fn u(s: &str) -> Url {
    Url::parse(s).unwrap()
}

fn consumer(extra: &str) -> Url {
    let sep = if extra.is_empty() { "" } else { "&" };
    u(&format!(
        "consumer://10.9.9.9/{S}?interface={S}&side=consumer&application=app{sep}{extra}"
    ))
}

fn p(host_port: &str, params: &str) -> Url {
    let sep = if params.is_empty() { "" } else { "&" };
    u(&format!(
        "dubbo://{host_port}/{S}?interface={S}&side=provider&application=prov{sep}{params}"
    ))
}

fn dir_with(
    consumer: Url,
    options: DirectoryOptions,
) -> (Arc<RegistryDirectory>, Arc<RecordingFactory>) {
    let f = Arc::new(RecordingFactory::default());
    let d = RegistryDirectory::new(
        consumer,
        u("zookeeper://127.0.0.1:2181"),
        f.clone(),
        options,
    );
    (d, f)
}

fn dir() -> (Arc<RegistryDirectory>, Arc<RecordingFactory>) {
    dir_with(consumer(""), DirectoryOptions::default())
}

fn hosts(d: &RegistryDirectory, inv: &Invocation) -> Vec<String> {
    d.list(inv)
        .unwrap()
        .invokers()
        .iter()
        .map(|i| i.url().address().unwrap())
        .collect()
}

fn call() -> Invocation {
    Invocation::new("sayHello")
}

#[test]
fn lists_merged_providers_with_check_false() {
    let (d, _) = dir_with(consumer("timeout=5"), DirectoryOptions::default());
    assert_eq!(
        d.list(&call()).unwrap().len(),
        0,
        "no notification yet: empty, not an error"
    );
    assert!(!d.is_available());
    d.notify(&[p("1.1.1.1:1", "timeout=1&mock=force"), p("1.1.1.2:1", "")]);
    let set = d.list(&call()).unwrap();
    assert_eq!(set.len(), 2);
    let url = set.invokers()[0].url();
    assert_eq!(
        url.param("timeout"),
        Some("5"),
        "consumer params win (ServiceAddressURL)"
    );
    assert_eq!(url.param("check"), Some("false"));
    assert_eq!(url.param("mock"), None);
    assert_eq!(url.param("remote.application"), Some("prov"));
    assert!(d.is_available());
}

#[test]
fn reuses_unchanged_and_retires_removed_after_swap() {
    let (d, f) = dir();
    let a = p("1.1.1.1:1", "timestamp=1");
    let b = p("1.1.1.2:1", "");
    d.notify(&[a.clone(), b.clone()]);
    let held = d.list(&call()).unwrap();
    // a republished with another timestamp value and b removed.
    d.notify(&[p("1.1.1.1:1", "timestamp=2")]);
    assert_eq!(
        f.referred(),
        2,
        "a is reused (equality ignores the timestamp value)"
    );
    assert_eq!(f.destroyed(), 1);
    assert_eq!(hosts(&d, &call()), ["1.1.1.1:1"]);
    // The set held by an in-flight call still has both invokers.
    assert_eq!(held.len(), 2);
    let removed = f.made()[1].clone();
    assert!(removed.is_destroyed());
}

#[test]
fn empty_marker_forbids_and_no_url_changes_nothing() {
    let (d, f) = dir();
    d.notify(&[p("1.1.1.1:1", "")]);
    d.notify(&[]);
    assert_eq!(d.list(&call()).unwrap().len(), 1);
    d.notify(&[u(&format!("empty://10.9.9.9/{S}?category=providers"))]);
    let e = d.list(&call()).unwrap_err();
    assert_eq!(e.code, RpcErrorCode::Forbidden);
    assert!(
        e.message
            .starts_with("No provider available from registry 127.0.0.1:2181"),
        "{}",
        e.message
    );
    assert!(!d.is_available());
    assert_eq!(f.destroyed(), 1);
    // Providers come back.
    d.notify(&[p("1.1.1.3:1", "")]);
    assert_eq!(hosts(&d, &call()), ["1.1.1.3:1"]);
}

#[test]
fn should_fail_fast_off_returns_empty() {
    let opts = DirectoryOptions {
        should_fail_fast: false,
        ..DirectoryOptions::default()
    };
    let (d, _) = dir_with(consumer(""), opts);
    d.notify(&[u(&format!("empty://10.9.9.9/{S}?category=providers"))]);
    assert_eq!(d.list(&call()).unwrap().len(), 0);
}

#[test]
fn empty_protection_keeps_providers() {
    let opts = DirectoryOptions {
        empty_protection: true,
        ..DirectoryOptions::default()
    };
    let (d, f) = dir_with(consumer(""), opts);
    d.notify(&[p("1.1.1.1:1", "")]);
    d.notify(&[u(&format!("empty://10.9.9.9/{S}?category=providers"))]);
    assert_eq!(hosts(&d, &call()), ["1.1.1.1:1"]);
    assert_eq!(f.destroyed(), 0);
}

#[test]
fn all_invalid_list_keeps_old_invokers() {
    let (d, f) = dir_with(consumer("protocol=dubbo"), DirectoryOptions::default());
    d.notify(&[p("1.1.1.1:1", "")]);
    d.notify(&[u(&format!("rest://1.1.1.2:1/{S}"))]);
    assert_eq!(hosts(&d, &call()), ["1.1.1.1:1"]);
    assert_eq!(f.destroyed(), 0);
    // A factory failure is skipped, not fatal.
    d.notify(&[u(&format!("bad://1.1.1.5:1/{S}")), p("1.1.1.6:1", "")]);
}

#[test]
fn protocol_filter_is_exact_list() {
    let (d, _) = dir_with(
        consumer("protocol=dubbo,injvm"),
        DirectoryOptions::default(),
    );
    d.notify(&[
        u("dubbo://127.0.0.1:9098?lazy=true&methods=getXXX"),
        u("injvm://127.0.0.1:9099?lazy=true&methods=getXXX"),
        u("rest://127.0.0.1:9100?lazy=true&methods=getXXX"),
        u("dubb://127.0.0.1:9101?lazy=true&methods=getXXX"),
    ]);
    assert_eq!(hosts(&d, &call()), ["127.0.0.1:9098", "127.0.0.1:9099"]);
}

#[test]
fn disabled_wins_over_enabled() {
    let (d, _) = dir();
    d.notify(&[
        p("10.20.30.140:9091", "enabled=false"),
        p("10.20.30.141:9091", ""),
    ]);
    assert_eq!(hosts(&d, &call()), ["10.20.30.141:9091"]);
    d.notify(&[u(&format!(
        "override://10.20.30.140:9091/{S}?disabled=false"
    ))]);
    assert_eq!(hosts(&d, &call()).len(), 2);
    // A batch replaces the configurators: keep the first override, disable the other one.
    d.notify(&[
        u(&format!("override://10.20.30.140:9091/{S}?disabled=false")),
        u(&format!("override://10.20.30.141:9091/{S}?disabled=true")),
    ]);
    assert_eq!(hosts(&d, &call()), ["10.20.30.140:9091"]);
    // Disabling every provider would leave none: the current invokers are kept (as
    // `RegistryDirectory.refreshInvoker`).
    d.notify(&[u(&format!(
        "override://10.20.30.141:9091/{S}?disabled=true"
    ))]);
    assert_eq!(hosts(&d, &call()), ["10.20.30.140:9091"]);
}

#[test]
fn configurators_before_and_after_providers() {
    let (d, f) = dir();
    d.notify(&[u(&format!(
        "override://0.0.0.0/{S}?timeout=1&connections=5"
    ))]);
    assert!(!d.is_available());
    d.notify(&[
        p("1.1.1.1:1", "timeout=1000"),
        p("1.1.1.2:1", "timeout=1&connections=5"),
    ]);
    for i in d.list(&call()).unwrap().invokers() {
        assert_eq!(i.url().param("timeout"), Some("1"));
        assert_eq!(i.url().param("connections"), Some("5"));
    }
    assert_eq!(f.referred(), 2);
    // The consumer (directory) URL gets the override too.
    assert_eq!(d.consumer_url().param("timeout"), Some("1"));
    // Clearing configurators re-refers only the providers whose merged URL changes.
    d.notify(&[u(&format!("empty://10.9.9.9/{S}?category=configurators"))]);
    assert_eq!(f.referred_at("1.1.1.1:1"), 2);
    assert_eq!(f.referred_at("1.1.1.2:1"), 1);
    let set = d.list(&call()).unwrap();
    assert_eq!(set.invokers()[0].url().param("timeout"), Some("1000"));
    assert_eq!(d.consumer_url().param("timeout"), None);
}

#[test]
fn configurator_only_notification_rereferences_changed_only() {
    let (d, f) = dir();
    d.notify(&[
        p("127.0.0.1:9091", "timeout=1"),
        p("127.0.0.1:9092", "timeout=1&connections=5"),
    ]);
    d.notify(&[u(&format!(
        "override://0.0.0.0/{S}?timeout=1&connections=5"
    ))]);
    assert_eq!(f.referred_at("127.0.0.1:9091"), 2);
    assert_eq!(f.referred_at("127.0.0.1:9092"), 1);
    assert_eq!(f.destroyed(), 1);
}

#[test]
fn parameterless_configurator_batch_rules() {
    let batch = || {
        vec![
            u(&format!("override://0.0.0.0/{S}?timeout=3")),
            u(&format!("override://0.0.0.0/{S}")),
        ]
    };
    let (d, _) = dir();
    d.notify(&[p("10.20.30.140:9091", "timeout=1")]);
    d.notify(&batch());
    assert_eq!(
        d.list(&call()).unwrap().invokers()[0]
            .url()
            .param("timeout"),
        Some("3")
    );
    let (d26, _) = dir_with(consumer(""), DirectoryOptions::for_compat(DubboCompat::V26));
    d26.notify(&[p("10.20.30.140:9091", "timeout=1")]);
    d26.notify(&batch());
    assert_eq!(
        d26.list(&call()).unwrap().invokers()[0]
            .url()
            .param("timeout"),
        Some("1")
    );
}

#[test]
fn routers_notification_keeps_providers() {
    let (d, f) = dir();
    d.notify(&[p("1.1.1.1:1", "")]);
    d.notify(&[u("empty://127.0.0.1/?category=routers")]);
    assert!(d.is_available());
    assert_eq!(f.referred(), 1);
    d.notify(&[u(&format!(
        "route://0.0.0.0/{S}?category=routers&router=condition&rule=x"
    ))]);
    assert_eq!(d.router_urls().len(), 1);
    assert_eq!(d.router_urls()[0].protocol(), Some("condition"));
    // A batch of only empty:// clears the dynamic routers.
    d.notify(&[u("empty://127.0.0.1/?category=routers")]);
    assert!(d.router_urls().is_empty());
    assert_eq!(d.list(&call()).unwrap().len(), 1);
}

fn three_providers() -> Vec<Url> {
    vec![
        p("127.0.0.1:9091", "methods=getXXX1"),
        p("127.0.0.1:9092", "methods=getXXX1,getXXX2"),
        p("127.0.0.1:9093", "methods=getXXX1,getXXX2,getXXX3"),
    ]
}

#[test]
fn method_cache_shared_3x() {
    let (d, _) = dir();
    d.notify(&three_providers());
    for m in ["getXXX", "getXXX1", "getXXX2", "getXXX3"] {
        assert_eq!(d.list(&Invocation::new(m)).unwrap().len(), 3, "{m}");
    }
    // One shared set: list is an Arc clone of the same set.
    let a = d.list(&Invocation::new("getXXX1")).unwrap();
    let b = d.list(&Invocation::new("getXXX3")).unwrap();
    assert!(Arc::ptr_eq(&a, &b));
}

#[test]
fn method_cache_26() {
    let (d, _) = dir_with(consumer(""), DirectoryOptions::for_compat(DubboCompat::V26));
    d.notify(&three_providers());
    assert_eq!(d.list(&Invocation::new("getXXX")).unwrap().len(), 3);
    assert_eq!(d.list(&Invocation::new("getXXX1")).unwrap().len(), 3);
    assert_eq!(
        hosts(&d, &Invocation::new("getXXX2")),
        ["127.0.0.1:9092", "127.0.0.1:9093"]
    );
    assert_eq!(hosts(&d, &Invocation::new("getXXX3")), ["127.0.0.1:9093"]);
    // Selected by the consumer parameter too.
    let (d2, _) = dir_with(
        consumer("method-invoker-cache=2.6"),
        DirectoryOptions::default(),
    );
    d2.notify(&three_providers());
    assert_eq!(d2.list(&Invocation::new("getXXX3")).unwrap().len(), 1);
}

#[test]
fn method_cache_26_parameter_routing_and_sorting() {
    let (d, _) = dir_with(consumer(""), DirectoryOptions::for_compat(DubboCompat::V26));
    d.notify(&[
        p("127.0.0.1:9093", "methods=get,get.vip"),
        p("127.0.0.1:9091", "methods=get"),
        p("127.0.0.1:9092", "methods=get.vip"),
    ]);
    let plain = Invocation::new("get");
    assert_eq!(
        hosts(&d, &plain),
        ["127.0.0.1:9091", "127.0.0.1:9093"],
        "sorted by url string"
    );
    let vip = Invocation::new("get")
        .with_arguments(vec!["String".into()], vec![Value::String("vip".into())]);
    assert_eq!(hosts(&d, &vip), ["127.0.0.1:9092", "127.0.0.1:9093"]);
    let other = Invocation::new("get")
        .with_arguments(vec!["String".into()], vec![Value::String("x".into())]);
    assert_eq!(hosts(&d, &other).len(), 2);
    assert_eq!(hosts(&d, &Invocation::new("unknown")).len(), 3, "* entry");
}

#[test]
fn method_cache_26_consumer_methods_fall_back_to_star() {
    let (d, _) = dir_with(
        consumer("methods=getA,getZ"),
        DirectoryOptions::for_compat(DubboCompat::V26),
    );
    d.notify(&[
        p("127.0.0.1:9091", "methods=getA"),
        p("127.0.0.1:9092", "methods=getB"),
    ]);
    assert_eq!(hosts(&d, &Invocation::new("getA")), ["127.0.0.1:9091"]);
    assert_eq!(hosts(&d, &Invocation::new("getZ")).len(), 2);
}

#[test]
fn mock_providers_are_kept_apart() {
    let (d, f) = dir();
    d.notify(&[
        p("1.1.1.1:1", ""),
        u(&format!("mock://1.1.1.9/{S}?mock=return+null")),
    ]);
    assert_eq!(hosts(&d, &call()), ["1.1.1.1:1"]);
    let m = d.list(&call().with_attachment(NEED_MOCK, "true")).unwrap();
    assert_eq!(m.len(), 1);
    assert_eq!(m.invokers()[0].url().protocol(), Some("mock"));
    assert_eq!(
        f.referred(),
        1,
        "mock providers are not referred through the factory"
    );
}

#[derive(Debug)]
struct OddPortsOnly;

impl Router for OddPortsOnly {
    fn route(
        &self,
        invokers: Vec<SharedInvoker>,
        _c: &Url,
        _m: Option<&str>,
    ) -> Vec<SharedInvoker> {
        invokers
            .into_iter()
            .filter(|i| i.url().port() % 2 == 1)
            .collect()
    }
}

#[test]
fn routers_apply_at_snapshot_build() {
    let opts = DirectoryOptions {
        routers: vec![Arc::new(OddPortsOnly)],
        ..DirectoryOptions::default()
    };
    let (d, _) = dir_with(consumer(""), opts);
    d.notify(&[p("1.1.1.1:1", ""), p("1.1.1.1:2", ""), p("1.1.1.1:3", "")]);
    assert_eq!(hosts(&d, &call()), ["1.1.1.1:1", "1.1.1.1:3"]);
}

#[derive(Debug)]
struct CountingJoiner;

impl GroupJoiner for CountingJoiner {
    fn join(&self, group: &str, invokers: Vec<SharedInvoker>) -> SharedInvoker {
        // Stand-in for a cluster: the first invoker with the group recorded in its URL.
        let f = RecordingFactory::default();
        let url = invokers[0]
            .url()
            .with_param("joined", &invokers.len().to_string())
            .with_param("group", group);
        crate::rpc::InvokerFactory::refer(&f, &url).unwrap()
    }
}

#[test]
fn multi_group_joins_per_group() {
    let groups = [
        p("1.1.1.1:1", "group=a"),
        p("1.1.1.2:1", "group=b"),
        p("1.1.1.3:1", "group=a"),
    ];
    let grouped = group_invokers(
        groups
            .iter()
            .map(|g| crate::rpc::InvokerFactory::refer(&RecordingFactory::default(), g).unwrap())
            .collect(),
    );
    assert_eq!(
        grouped
            .iter()
            .map(|(g, v)| (g.as_str(), v.len()))
            .collect::<Vec<_>>(),
        [("a", 2), ("b", 1)]
    );
    let opts = DirectoryOptions {
        group_joiner: Some(Arc::new(CountingJoiner)),
        ..DirectoryOptions::default()
    };
    let (d, _) = dir_with(consumer("group=a,b"), opts);
    d.notify(&groups);
    let set = d.list(&call()).unwrap();
    let joined: Vec<(Option<&str>, Option<&str>)> = set
        .invokers()
        .iter()
        .map(|i| (i.url().group(), i.url().param("joined")))
        .collect();
    assert_eq!(joined, [(Some("a"), Some("2")), (Some("b"), Some("1"))]);
    // A single-group consumer is not joined.
    assert!(!is_multi_group(&consumer("group=a")));
    assert!(is_multi_group(&consumer("group=*")));
}

#[test]
fn destroy_is_idempotent_and_fails_list() {
    let (d, f) = dir();
    d.notify(&three_providers());
    d.destroy();
    d.destroy();
    assert!(!d.is_available());
    let e = d.list(&call()).unwrap_err();
    assert!(e.message.contains("already destroyed"), "{}", e.message);
    assert_eq!(f.destroyed(), 3);
    d.notify(&three_providers());
    assert_eq!(f.referred(), 3, "notifications after destroy are ignored");
}

#[tokio::test]
async fn follows_a_subscription_and_waits_ready() {
    let c = consumer("category=providers,configurators,routers");
    let (publisher, sub) = registry_core::subscription::channel(c);
    let f = Arc::new(RecordingFactory::default());
    let d = RegistryDirectory::from_subscription(
        sub,
        u("memory://127.0.0.1"),
        f.clone(),
        DirectoryOptions::default(),
    )
    .unwrap();
    assert!(
        !d.wait_ready_for(Duration::from_millis(20)).await,
        "bounded wait times out"
    );
    publisher.publish("providers", vec![p("1.1.1.1:1", "")].into());
    assert!(d.wait_ready().await);
    assert_eq!(hosts(&d, &call()), ["1.1.1.1:1"]);
    publisher.publish("providers", vec![p("1.1.1.2:1", "")].into());
    for _ in 0..200 {
        if hosts(&d, &call()) == ["1.1.1.2:1"] {
            break;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert_eq!(hosts(&d, &call()), ["1.1.1.2:1"]);
    // Dropping the directory ends the task, which drops the subscription.
    drop(d);
    tokio::time::timeout(Duration::from_secs(5), publisher.closed())
        .await
        .unwrap();
}

#[test]
fn incremental_apply_touches_only_the_change() {
    let list = bench_support::provider_list(2000);
    let (d, f) = dir();
    d.notify(&list);
    assert_eq!(f.referred(), 2000);
    let mut changed = list.clone();
    changed[1000] = bench_support::provider(5000, 9);
    changed.remove(10);
    changed.push(bench_support::provider(6000, 9));
    d.notify(&changed);
    assert_eq!(f.referred(), 2002);
    assert_eq!(f.destroyed(), 2);
    assert_eq!(d.list(&call()).unwrap().len(), 2000);
}

#[tokio::test]
async fn multi_group_default_joiner_is_a_cluster_per_group() {
    let (d, f) = dir_with(consumer("group=*"), DirectoryOptions::default());
    d.notify(&[
        p("1.1.1.1:1", "group=a"),
        p("1.1.1.2:1", "group=b"),
        p("1.1.1.3:1", "group=a"),
    ]);
    let set = d.list(&call()).unwrap();
    assert_eq!(set.len(), 2);
    for (i, group) in ["a", "b"].iter().enumerate() {
        let joined = &set.invokers()[i];
        assert_eq!(joined.url().group(), Some(*group));
        let r = joined.invoke(&call()).await.unwrap();
        let addr = r.value.as_str().unwrap().to_owned();
        let made = f.made();
        let target = made
            .iter()
            .find(|m| m.url().address().as_deref() == Some(addr.as_str()))
            .unwrap();
        assert_eq!(
            target.url().group(),
            Some(*group),
            "a call through group {group} landed on {addr}"
        );
    }
}

mod property {
    use super::*;
    use proptest::prelude::*;

    /// Provider `k` in variant `v`: 0 and 1 differ only by the timestamp value (equal URLs),
    /// 2 has another weight (a different URL).
    fn provider(k: u8, v: u8) -> Url {
        let extra = match v {
            0 => "timestamp=1&weight=100",
            1 => "timestamp=2&weight=100",
            _ => "timestamp=1&weight=200",
        };
        p(&format!("10.0.0.{k}:20880"), extra)
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        /// Applying lists one after another gives the same invokers as a from-scratch apply of
        /// the last list, never holds a destroyed invoker, and destroys every invoker it drops.
        #[test]
        fn incremental_apply_equals_rebuild(
            steps in prop::collection::vec(
                prop::collection::vec((0u8..10, 0u8..3, any::<bool>()), 0..12),
                1..8,
            )
        ) {
            let pool: Vec<Vec<Url>> = (0..10).map(|k| (0..3).map(|v| provider(k, v)).collect()).collect();
            let (d, f) = dir();
            for list in steps {
                let urls: Vec<Url> = list
                    .iter()
                    .map(|&(k, v, fresh)| if fresh { provider(k, v) } else { pool[k as usize][v as usize].clone() })
                    .collect();
                d.notify_category("providers", &urls);
                if urls.is_empty() {
                    continue;
                }
                let (fresh_dir, _) = dir();
                fresh_dir.notify_category("providers", &urls);
                let got: Vec<String> = d.invoker_urls().iter().map(Url::to_full_string).collect();
                let want: Vec<String> = fresh_dir.invoker_urls().iter().map(Url::to_full_string).collect();
                // Equal URLs may differ in the timestamp value: compare without it.
                let strip = |v: Vec<String>| -> Vec<String> {
                    v.into_iter().map(|s| s.replace("timestamp=2", "timestamp=1")).collect()
                };
                prop_assert_eq!(strip(got), strip(want));
                let listed = d.list(&call()).unwrap();
                prop_assert!(listed.invokers().iter().all(|i| i.is_available()), "a listed invoker was destroyed");
                let live = f.made().iter().filter(|i| !i.is_destroyed()).count();
                prop_assert_eq!(live, listed.len(), "live invokers == listed invokers");
            }
        }
    }
}

#[tokio::test]
async fn subscribe_registers_the_consumer_and_returns_ready() {
    use registry_core::{MemoryRegistry, Registry};
    let store = MemoryRegistry::new();
    let provider_side = store.handle();
    provider_side.register(&p("1.1.1.1:1", "")).await.unwrap();
    let f = Arc::new(RecordingFactory::default());
    let reg: Arc<dyn Registry> = Arc::new(store.handle());
    let d = RegistryDirectory::subscribe(reg, consumer(""), f, DirectoryOptions::default())
        .await
        .unwrap();
    assert!(d.is_ready(), "subscribe returns after the first list");
    assert_eq!(hosts(&d, &call()), ["1.1.1.1:1"]);
    let registered = d.registered_consumer_url().unwrap();
    assert_eq!(registered.param("category"), Some("consumers"));
    assert_eq!(registered.param("check"), Some("false"));
    let seen = provider_side
        .lookup(&consumer("category=consumers"))
        .await
        .unwrap();
    assert!(
        seen.iter()
            .any(|u| u.param("category") == Some("consumers")),
        "{seen:?}"
    );
    // Destroy unregisters it (in the background).
    d.destroy();
    let mut gone = false;
    for _ in 0..200 {
        let seen = provider_side
            .lookup(&consumer("category=consumers"))
            .await
            .unwrap();
        if !seen
            .iter()
            .any(|u| u.param("category") == Some("consumers"))
        {
            gone = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(gone, "consumer URL still registered after destroy");
    // Interface `*` is never registered.
    let any = u("consumer://10.9.9.9/*?interface=*&side=consumer");
    let d2 = RegistryDirectory::subscribe(
        Arc::new(store.handle()),
        any,
        Arc::new(RecordingFactory::default()),
        DirectoryOptions::default(),
    )
    .await
    .unwrap();
    assert!(d2.registered_consumer_url().is_none());
}

#[derive(Debug)]
struct OddPortsFactory;

impl crate::router::RouterFactory for OddPortsFactory {
    fn router(&self, url: &Url) -> Option<Arc<dyn Router>> {
        (url.param("rule") == Some("odd")).then(|| Arc::new(OddPortsOnly) as Arc<dyn Router>)
    }
}

#[test]
fn dynamic_routers_from_router_urls_rebuild_the_snapshot() {
    let opts = DirectoryOptions {
        router_factory: Some(Arc::new(OddPortsFactory)),
        ..DirectoryOptions::default()
    };
    let (d, f) = dir_with(consumer(""), opts);
    d.notify(&[p("1.1.1.1:1", ""), p("1.1.1.1:2", "")]);
    assert_eq!(hosts(&d, &call()).len(), 2);
    d.notify(&[u(&format!("route://0.0.0.0/{S}?category=routers&rule=odd"))]);
    assert_eq!(hosts(&d, &call()), ["1.1.1.1:1"]);
    d.notify(&[u(&format!("empty://0.0.0.0/{S}?category=routers"))]);
    assert_eq!(hosts(&d, &call()).len(), 2);
    assert_eq!(f.referred(), 2, "routing never re-refers");
}

#[test]
fn dropping_the_directory_destroys_its_invokers() {
    let (d, f) = dir();
    d.notify(&three_providers());
    drop(d);
    assert_eq!(f.destroyed(), 3);
}

#[test]
fn preconnect_lists_open_connections_ahead_and_let_the_previous_ones_go() {
    let (d, f) = dir_with(consumer("protocol=dubbo,tri"), DirectoryOptions::default());
    d.notify_category(
        "preconnect",
        &[
            u("dubbo://10.0.0.1:20880"),
            u("tri://10.0.0.1:50051"),
            u("rest://10.0.0.1:8080"),
            u("bad://10.0.0.1:1"),
        ],
    );
    // Only the protocols the consumer calls; nothing referred, no provider listed.
    assert_eq!(
        f.held_ahead(),
        ["dubbo://10.0.0.1:20880", "tri://10.0.0.1:50051"]
    );
    assert_eq!(f.referred(), 0);
    assert_eq!(d.list(&call()).unwrap().len(), 0);
    // The next list replaces the held ones (an address in both is asked again first).
    d.notify_category(
        "preconnect",
        &[u("dubbo://10.0.0.1:20880"), u("dubbo://10.0.0.2:20880")],
    );
    assert_eq!(
        f.held_ahead(),
        ["dubbo://10.0.0.1:20880", "dubbo://10.0.0.2:20880"]
    );
    assert_eq!(f.preconnects(), 4);
    // `empty://` lets every one go; so does destroying the directory.
    d.notify_category(
        "preconnect",
        &[u(&format!("empty://10.9.9.9/{S}?category=preconnect"))],
    );
    assert!(f.held_ahead().is_empty());
    d.notify_category("preconnect", &[u("dubbo://10.0.0.3:20880")]);
    assert_eq!(f.held_ahead(), ["dubbo://10.0.0.3:20880"]);
    d.destroy();
    assert!(f.held_ahead().is_empty());
    d.notify_category("preconnect", &[u("dubbo://10.0.0.4:20880")]);
    assert!(
        f.held_ahead().is_empty(),
        "a destroyed directory opens nothing"
    );
}

#[test]
fn preconnect_without_a_protocol_filter_asks_for_every_endpoint() {
    let (d, f) = dir();
    d.notify_category(
        "preconnect",
        &[u("dubbo://10.0.0.1:20880"), u("tri://10.0.0.1:50051")],
    );
    assert_eq!(
        f.held_ahead(),
        ["dubbo://10.0.0.1:20880", "tri://10.0.0.1:50051"]
    );
    d.notify(&[p("10.0.0.1:20880", "")]);
    assert_eq!(hosts(&d, &call()), ["10.0.0.1:20880"]);
    assert_eq!(
        f.held_ahead().len(),
        2,
        "held until the registry's next list"
    );
}
