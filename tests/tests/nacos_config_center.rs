//! `NacosConfigCenter` (Nacos config over gRPC) against real rnacos (`DUBBO_TEST_NACOS`):
//! get / watch (current value first, then every change, in order) / publish / remove, the
//! default group, namespaces, and a watch that survives a connection cut without a spurious
//! `None`. Each test uses its own namespace.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers outside #[test] functions

use std::time::Duration;

use registry_core::config_center::{ConfigCenter, ConfigWatch};
use registry_core::Url;
use registry_nacos::NacosConfigCenter;
use tests::nacos::grpc_port;
use tests::proxy::Proxy;

const T: Duration = Duration::from_secs(15);

async fn center(url: &str) -> NacosConfigCenter {
    NacosConfigCenter::connect(&Url::parse(url).unwrap())
        .await
        .unwrap()
}

async fn next(w: &mut ConfigWatch) -> Option<String> {
    tokio::time::timeout(T, w.next())
        .await
        .expect("a config event in time")
        .expect("watch open")
        .map(|v| v.to_string())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn get_watch_publish_remove() {
    let Some(addr) = tests::nacos_addr("get_watch_publish_remove") else {
        return;
    };
    let ns = tests::unique("cfg");
    let url = format!("nacos://{addr}?namespace={ns}");
    let a = center(&url).await;
    let b = center(&url).await;
    let key = "org.demo.Svc.condition-router";
    assert_eq!(a.get(key, "dubbo").await.unwrap(), None);
    let mut w = a.watch(key, "dubbo").await.unwrap();
    assert_eq!(next(&mut w).await, None, "current value first");
    b.publish(key, "dubbo", "scope: service\nconditions: [a]")
        .await
        .unwrap();
    assert_eq!(
        next(&mut w).await.as_deref(),
        Some("scope: service\nconditions: [a]")
    );
    b.publish(key, "dubbo", "v2").await.unwrap();
    assert_eq!(next(&mut w).await.as_deref(), Some("v2"));
    assert_eq!(a.get(key, "dubbo").await.unwrap().as_deref(), Some("v2"));
    // A second watcher of the same key starts from the current value.
    let mut w2 = a.watch(key, "dubbo").await.unwrap();
    assert_eq!(next(&mut w2).await.as_deref(), Some("v2"));
    b.remove(key, "dubbo").await.unwrap();
    assert_eq!(next(&mut w).await, None);
    assert_eq!(next(&mut w2).await, None);
    // Empty group = Dubbo's default group `dubbo`.
    b.publish(key, "", "dflt").await.unwrap();
    assert_eq!(a.get(key, "dubbo").await.unwrap().as_deref(), Some("dflt"));
    assert_eq!(next(&mut w).await.as_deref(), Some("dflt"));
    // Another namespace sees nothing of it.
    let other = center(&format!(
        "nacos://{addr}?namespace={}",
        tests::unique("cfg-other")
    ))
    .await;
    assert_eq!(other.get(key, "dubbo").await.unwrap(), None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_watch_survives_a_connection_cut_without_a_spurious_none() {
    let Some(addr) = tests::nacos_addr("a_watch_survives_a_connection_cut_without_a_spurious_none")
    else {
        return;
    };
    let ns = tests::unique("cfg-cut");
    let proxy = Proxy::start(format!("127.0.0.1:{}", grpc_port(&addr))).await;
    let writer = center(&format!("nacos://{addr}?namespace={ns}")).await;
    writer
        .publish("k.tag-router", "dubbo", "one")
        .await
        .unwrap();
    let reader = center(&format!(
        "nacos://127.0.0.1:{}?namespace={ns}&nacos.grpc-port-offset=0&nacos.request-timeout=1000",
        proxy.port
    ))
    .await;
    let mut w = reader.watch("k.tag-router", "dubbo").await.unwrap();
    assert_eq!(next(&mut w).await.as_deref(), Some("one"));
    proxy.cut();
    // Changed while the reader reconnects: it re-reads and re-listens, never reporting None.
    writer
        .publish("k.tag-router", "dubbo", "two")
        .await
        .unwrap();
    assert_eq!(next(&mut w).await.as_deref(), Some("two"));
    writer
        .publish("k.tag-router", "dubbo", "three")
        .await
        .unwrap();
    assert_eq!(next(&mut w).await.as_deref(), Some("three"));
}
