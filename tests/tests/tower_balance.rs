//! The tower adapters (feature `tower`): tower's own balancer over the providers a
//! `RegistryDirectory` lists, following the registry, and the cluster invoker inside a tower
//! stack.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::time::Duration;

use dubbo_consumer::directory::{DirectoryOptions, RegistryDirectory};
use dubbo_consumer::tower::{DirectoryDiscover, InvokerService};
use dubbo_consumer::{cluster, Invocation, Registry, Url};
use futures::StreamExt;
use registry_core::MemoryRegistry;
use tests::recording::RecordingFactory;
use tower::balance::p2c::Balance;
use tower::discover::Change;
use tower::load::{CompleteOnResponse, PendingRequestsDiscover};
use tower::{Service, ServiceExt};

const T: Duration = Duration::from_secs(10);

fn provider(iface: &str, port: u16) -> Url {
    Url::parse(&format!(
        "dubbo://10.0.0.1:{port}/{iface}?interface={iface}&side=provider"
    ))
    .unwrap()
}

async fn directory(
    registry: &Arc<MemoryRegistry>,
    iface: &str,
) -> (Arc<RecordingFactory>, Arc<RegistryDirectory>) {
    let factory = Arc::new(RecordingFactory::default());
    let consumer = Url::parse(&format!(
        "consumer://10.0.0.9/{iface}?interface={iface}&side=consumer"
    ))
    .unwrap();
    let dir = RegistryDirectory::subscribe(
        registry.clone() as Arc<dyn Registry>,
        consumer,
        factory.clone(),
        DirectoryOptions::default(),
    )
    .await
    .unwrap();
    (factory, dir)
}

fn port_of(change: &Change<Arc<str>, InvokerService>) -> (bool, i32) {
    match change {
        Change::Insert(_, s) => (true, s.get_ref().url().port()),
        Change::Remove(k) => (false, Url::parse(k).map(|u| u.port()).unwrap_or(0)),
    }
}

#[tokio::test]
async fn the_discover_stream_follows_the_registry() {
    let registry = Arc::new(MemoryRegistry::new());
    let iface = "com.foo.TowerDiscover";
    registry.register(&provider(iface, 7001)).await.unwrap();
    registry.register(&provider(iface, 7002)).await.unwrap();
    let (_, dir) = directory(&registry, iface).await;
    let mut d = DirectoryDiscover::new(dir.clone());
    let mut first = Vec::new();
    for _ in 0..2 {
        let c = tokio::time::timeout(T, d.next())
            .await
            .unwrap()
            .unwrap()
            .unwrap();
        first.push(port_of(&c));
    }
    first.sort();
    assert_eq!(first, [(true, 7001), (true, 7002)]);

    registry.unregister(&provider(iface, 7001)).await.unwrap();
    let c = tokio::time::timeout(T, d.next())
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(port_of(&c), (false, 7001));
    registry.register(&provider(iface, 7003)).await.unwrap();
    let c = tokio::time::timeout(T, d.next())
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(port_of(&c), (true, 7003));
    assert_eq!(d.len(), 2);

    // Destroying the directory removes everything, then ends the stream.
    dir.destroy();
    let mut gone = Vec::new();
    while let Some(c) = tokio::time::timeout(T, d.next()).await.unwrap() {
        gone.push(port_of(&c.unwrap()));
    }
    gone.sort();
    assert_eq!(gone, [(false, 7002), (false, 7003)]);
}

#[tokio::test]
async fn towers_balancer_spreads_calls_over_the_providers() {
    let registry = Arc::new(MemoryRegistry::new());
    let iface = "com.foo.TowerBalance";
    for port in [7101, 7102, 7103] {
        registry.register(&provider(iface, port)).await.unwrap();
    }
    let (factory, dir) = directory(&registry, iface).await;
    let discover =
        PendingRequestsDiscover::new(DirectoryDiscover::new(dir), CompleteOnResponse::default());
    let mut balance = Balance::new(discover);
    for _ in 0..300 {
        balance
            .ready()
            .await
            .unwrap()
            .call(Invocation::new("hello"))
            .await
            .unwrap();
    }
    let calls = factory.calls_by_port();
    assert_eq!(calls.values().sum::<usize>(), 300);
    for port in [7101, 7102, 7103] {
        assert!(
            calls.get(&port).copied().unwrap_or(0) > 30,
            "p2c spreads calls: {calls:?}"
        );
    }
}

#[tokio::test]
async fn the_cluster_invoker_is_a_tower_service() {
    let registry = Arc::new(MemoryRegistry::new());
    let iface = "com.foo.TowerCluster";
    registry.register(&provider(iface, 7201)).await.unwrap();
    let (factory, dir) = directory(&registry, iface).await;
    let svc = InvokerService::new(cluster::join(dir.clone()));
    // tower's timeout layer around Dubbo's whole call path.
    let mut svc = tower::ServiceBuilder::new()
        .timeout(Duration::from_secs(5))
        .service(svc);
    let r = svc
        .ready()
        .await
        .unwrap()
        .call(Invocation::new("hello"))
        .await
        .unwrap();
    assert_eq!(r.attachments.get("port").map(String::as_str), Some("7201"));
    assert_eq!(factory.calls_by_port().get(&7201), Some(&1));
    // No provider: the cluster's error comes through the stack.
    dir.destroy();
    let e = svc
        .ready()
        .await
        .unwrap()
        .call(Invocation::new("hello"))
        .await;
    assert!(e.is_err());
}
