//! With routing rules on, `RegistryDirectory::list` allocates nothing in steady state (own
//! test binary: the counting allocator sees the whole process).

#![allow(clippy::expect_used, clippy::unwrap_used)] // test fixtures

use std::alloc::System;
use std::sync::Arc;

use invoker::directory::{Directory, DirectoryOptions, RegistryDirectory};
use invoker::router::RuleKey;
use invoker::rpc::Invocation;
use invoker::testutil::providers::NoopFactory;
use registry_core::Url;
use stats_alloc::{Region, StatsAlloc, INSTRUMENTED_SYSTEM};

#[global_allocator]
static GLOBAL: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

/// The counter is process-wide: the tests of this binary run one at a time.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn directory(n: usize) -> Arc<RegistryDirectory> {
    directory_with(n, "")
}

/// `extra`: more consumer params (`&k=v`).
fn directory_with(n: usize, extra: &str) -> Arc<RegistryDirectory> {
    let consumer = Url::parse(&format!(
        "consumer://10.0.0.9/demo.Service?interface=demo.Service&application=shop&region=hz{extra}"
    ))
    .unwrap();
    let d = RegistryDirectory::new(
        consumer,
        Url::parse("zookeeper://127.0.0.1:2181").unwrap(),
        Arc::new(NoopFactory),
        DirectoryOptions::default(),
    );
    let providers: Vec<Url> = (0..n)
        .map(|i| {
            let region = if i % 3 == 0 { "bj" } else { "hz" };
            let tag = if i % 10 == 0 { "&dubbo.tag=gray" } else { "" };
            Url::parse(&format!(
                "dubbo://10.1.{}.{}:20880/demo.Service?interface=demo.Service&application=prov&region={region}{tag}",
                i / 256,
                i % 256
            ))
            .unwrap()
        })
        .collect();
    d.notify(&providers);
    d
}

fn steady_allocations(d: &RegistryDirectory, calls: &[Invocation]) -> usize {
    for c in calls {
        for _ in 0..10 {
            let _ = d.list(c).expect("list");
        }
    }
    const N: usize = 10_000;
    let region = Region::new(GLOBAL);
    for i in 0..N {
        let set = d.list(&calls[i % calls.len()]).expect("list");
        assert!(!set.is_empty());
    }
    region.change().allocations
}

#[test]
fn list_with_rules_allocates_nothing_in_steady_state() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    // No declared method: answers are routed on the first call per key and remembered.
    with_rules(directory(1000));
    // Declared methods: answers precomputed when the rule is set (the table path).
    with_rules(directory_with(1000, "&methods=sayHello,sayBye"));
}

fn with_rules(d: Arc<RegistryDirectory>) {
    d.set_router_rule(
        RuleKey::ServiceCondition,
        Some("configVersion: v3.0\nconditions:\n  - method = sayHello => region = $region\n"),
    )
    .expect("rule");
    d.set_router_rule(
        RuleKey::AppTag("prov".into()),
        Some("tags:\n  - name: blue\n    addresses: [\"10.1.0.5:20880\"]\n"),
    )
    .expect("tag rule");
    let calls = vec![
        Invocation::new("sayHello"),
        Invocation::new("sayBye"),
        Invocation::new("sayHello").with_attachment("dubbo.tag", "gray"),
        Invocation::new("sayHello").with_attachment("dubbo.tag", "blue"),
    ];
    // The rules really route.
    assert!(d.list(&calls[0]).unwrap().len() < d.list(&calls[1]).unwrap().len());
    assert_eq!(d.list(&calls[3]).unwrap().len(), 1);
    let allocs = steady_allocations(&d, &calls);
    assert!(allocs <= 2, "{allocs} allocations in 10000 routed lists");
}

#[test]
fn list_without_rules_allocates_nothing() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let d = directory(1000);
    let calls = vec![
        Invocation::new("sayHello"),
        Invocation::new("sayHello").with_attachment("dubbo.tag", "gray"),
    ];
    let allocs = steady_allocations(&d, &calls);
    assert!(allocs <= 2, "{allocs} allocations in 10000 lists");
}
