//! End to end: providers registered in a registry (memory, real ZooKeeper, real Nacos) →
//! `RegistryDirectory` → `invoker::cluster` (round robin) → recording invokers.
//!
//! Asserts that calls land on the registered providers as the load balancer says (exact
//! round robin over equal weights), that a configurator registered in the registry disables
//! a provider (and its removal re-enables it), and that a removed provider gets no call once
//! the directory published the snapshot without it (and its invoker is destroyed).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use invoker::directory::{Directory, RegistryDirectory};
use invoker::rpc::{Invocation, SharedInvoker};
use registry_core::{MemoryRegistry, Registry, Url};
use tests::contract::provider_url;
use tests::recording::RecordingFactory;

const T: Duration = Duration::from_secs(30);

fn ports(dir: &RegistryDirectory) -> Vec<i32> {
    let mut p: Vec<i32> = match dir.list(&Invocation::new("sayHello")) {
        Ok(set) => set.invokers().iter().map(|i| i.url().port()).collect(),
        Err(_) => Vec::new(),
    };
    p.sort();
    p
}

async fn call_n(cluster: &SharedInvoker, n: usize, expect_ports: &[i32]) {
    for _ in 0..n {
        let r = cluster
            .invoke(&Invocation::new("sayHello"))
            .await
            .expect("call");
        let addr = r.attachments.get("address").cloned().unwrap_or_default();
        let port: i32 = addr
            .rsplit(':')
            .next()
            .and_then(|p| p.parse().ok())
            .unwrap_or(0);
        assert!(
            expect_ports.contains(&port),
            "call landed on {addr}, expected one of {expect_ports:?}"
        );
    }
}

fn delta(after: &BTreeMap<i32, usize>, before: &BTreeMap<i32, usize>, port: i32) -> usize {
    after.get(&port).copied().unwrap_or(0) - before.get(&port).copied().unwrap_or(0)
}

/// The scenario, against any registry pair (provider side, consumer side). `configurators`:
/// the registry delivers the `configurators` category (not Nacos: like Dubbo 3.3, a concrete
/// interface subscribes to its providers service only).
async fn scenario(
    providers_reg: Arc<dyn Registry>,
    consumer_reg: Arc<dyn Registry>,
    iface: &str,
    configurators: bool,
) {
    // warmup=0: full weight from the start, so round robin is exact however slow the run.
    let ps: Vec<Url> = [20881u16, 20882, 20883]
        .iter()
        .map(|p| provider_url(iface, *p, "warmup=0"))
        .collect();
    for p in &ps {
        providers_reg.register(p).await.expect("register provider");
    }
    let (factory, dir) = tests::recording::subscribe(consumer_reg.clone(), iface).await;
    assert!(
        dir.wait_ready().await || dir.is_ready(),
        "directory never got a first list"
    );
    tests::eventually("three providers in the directory", T, || {
        let ok = ports(&dir) == [20881, 20882, 20883];
        async move { ok.then_some(()) }
    })
    .await;
    let cluster = invoker::cluster::join(dir.clone());

    // Round robin over three equal providers: exactly 10 calls each.
    call_n(&cluster, 30, &[20881, 20882, 20883]).await;
    let after_first = factory.calls_by_port();
    for p in [20881, 20882, 20883] {
        assert_eq!(
            after_first.get(&p),
            Some(&10),
            "round robin share of {p}: {after_first:?}"
        );
    }

    if configurators {
        configurator_disables_a_provider(&*providers_reg, &dir, &cluster, &factory, iface).await;
    }

    // Remove one provider: once the directory's snapshot drops it, it gets no more calls.
    providers_reg.unregister(&ps[1]).await.expect("unregister");
    tests::eventually("provider 20882 leaves the directory", T, || {
        let ok = ports(&dir) == [20881, 20883];
        async move { ok.then_some(()) }
    })
    .await;
    let before = factory.calls_by_port();
    call_n(&cluster, 20, &[20881, 20883]).await;
    let after = factory.calls_by_port();
    assert_eq!(
        delta(&after, &before, 20882),
        0,
        "removed provider was called: {after:?}"
    );
    assert_eq!(delta(&after, &before, 20881), 10);
    assert_eq!(delta(&after, &before, 20883), 10);
    assert!(
        factory.destroyed_at_port(20882),
        "the removed provider's invoker is destroyed"
    );

    // Every provider gone: empty:// forbids calls.
    providers_reg.unregister(&ps[0]).await.expect("unregister");
    providers_reg.unregister(&ps[2]).await.expect("unregister");
    tests::eventually(
        "directory forbidden after the last provider left",
        T,
        || {
            let forbidden =
                matches!(dir.list(&Invocation::new("sayHello")), Err(e) if e.is_forbidden());
            async move { forbidden.then_some(()) }
        },
    )
    .await;
    let err = cluster
        .invoke(&Invocation::new("sayHello"))
        .await
        .expect_err("no provider");
    assert!(err.message.contains("No provider available"), "{err}");

    dir.destroy();
    cluster.destroy();
}

/// A configurator from the registry disables one provider; removing it brings it back.
async fn configurator_disables_a_provider(
    providers_reg: &dyn Registry,
    dir: &Arc<RegistryDirectory>,
    cluster: &SharedInvoker,
    factory: &RecordingFactory,
    iface: &str,
) {
    let disable = Url::parse(&format!(
        "override://127.0.0.1:20883/{iface}?category=configurators&disabled=true&dynamic=false"
    ))
    .unwrap();
    providers_reg
        .register(&disable)
        .await
        .expect("register configurator");
    tests::eventually("configurator disables 20883", T, || {
        let ok = ports(dir) == [20881, 20882];
        async move { ok.then_some(()) }
    })
    .await;
    let before = factory.calls_by_port();
    call_n(cluster, 20, &[20881, 20882]).await;
    let after = factory.calls_by_port();
    assert_eq!(
        delta(&after, &before, 20883),
        0,
        "disabled provider was called: {after:?}"
    );
    providers_reg
        .unregister(&disable)
        .await
        .expect("unregister configurator");
    tests::eventually("20883 enabled again", T, || {
        let ok = ports(dir) == [20881, 20882, 20883];
        async move { ok.then_some(()) }
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn e2e_memory_registry() {
    let store = MemoryRegistry::new();
    let consumer_side: Arc<dyn Registry> = Arc::new(store.handle());
    scenario(
        Arc::new(store),
        consumer_side,
        "org.e2e.MemoryService",
        true,
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn e2e_zookeeper() {
    let Some(addr) = tests::zk_addr("e2e_zookeeper") else {
        return;
    };
    let url = Url::parse(&format!(
        "zookeeper://{addr}?group={}&timeout=10000&session=10000",
        tests::unique("e2e-zk")
    ))
    .unwrap();
    let providers = registry_zk::ZookeeperRegistry::connect(&url)
        .await
        .expect("zk provider side");
    let consumers = registry_zk::ZookeeperRegistry::connect(&url)
        .await
        .expect("zk consumer side");
    scenario(
        Arc::new(providers),
        Arc::new(consumers),
        "org.e2e.ZkService",
        true,
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn e2e_nacos() {
    let Some(addr) = tests::nacos_addr("e2e_nacos") else {
        return;
    };
    let url = Url::parse(&format!(
        "nacos://{addr}?group={}&nacos.poll-interval=200",
        tests::unique("e2e-nacos")
    ))
    .unwrap();
    let providers = registry_nacos::NacosRegistry::new(&url).expect("nacos provider side");
    let consumers = registry_nacos::NacosRegistry::new(&url).expect("nacos consumer side");
    scenario(
        Arc::new(providers),
        Arc::new(consumers),
        "org.e2e.NacosService",
        false,
    )
    .await;
}
