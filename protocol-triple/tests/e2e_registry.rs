//! End to end through real ZooKeeper and Nacos: `tri://` provider URLs as Java 3.3 writes
//! them → RegistryDirectory → cluster (failover) → TripleInvoker → grpcio / dubbo-node peers.
//! Version/group routing, spreading, 64 concurrent calls, a 4 MB message, timeouts, failover
//! when a provider dies.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers panic on bad fixtures

use tests::triple_peers as common;

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

use invoker::cluster;
use invoker::directory::{Directory, DirectoryOptions, RegistryDirectory};
use invoker::rpc::{Invocation, InvokerFactory, SharedInvoker};
use protocol_triple::{IdlService, PayloadMode, ProtoSchema, TripleInvokerFactory};
use registry_core::{Registry, Url};
use serde_json::json;
use tests::contract::consumer_url;

const IFACE: &str = "tritest.Greeter";

fn tri_provider(port: u16, extra: &str) -> Url {
    let ts = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis())
        .unwrap_or(0);
    let s = format!(
        "tri://127.0.0.1:{port}/{IFACE}?anyhost=true&application=tri-provider&background=false\
         &deprecated=false&dubbo=2.0.2&dynamic=true&executor-management-mode=isolation\
         &file-cache=true&generic=false&interface={IFACE}&methods=Big,Echo,Fail,Headers,SayHello,Slow\
         &pid={}&prefer.serialization=hessian2,fastjson2&proxy=nativestub&release=3.3.1\
         &service-name-mapping=true&side=provider&timestamp={ts}&{extra}",
        std::process::id()
    );
    Url::parse(&s).unwrap()
}

fn idl_factory() -> Arc<dyn InvokerFactory> {
    let schema = Arc::new(ProtoSchema::load(&[common::proto_dir().join("test.proto")]).unwrap());
    Arc::new(TripleInvokerFactory::new(PayloadMode::Idl(
        IdlService::new(schema, IFACE),
    )))
}

async fn consumer(
    registry: Arc<dyn Registry>,
    extra: &str,
) -> (Arc<RegistryDirectory>, SharedInvoker) {
    let dir = RegistryDirectory::subscribe(
        registry,
        consumer_url(IFACE, "providers,configurators,routers", extra),
        idl_factory(),
        DirectoryOptions {
            register: false,
            ..DirectoryOptions::default()
        },
    )
    .await
    .unwrap();
    let inv = cluster::join(dir.clone() as Arc<dyn Directory>);
    (dir, inv)
}

fn call(m: &str, arg: serde_json::Value) -> Invocation {
    Invocation::new(m).with_arguments(vec![], vec![arg])
}

async fn scenario(providers: Arc<dyn Registry>, consumers: Arc<dyn Registry>, test: &str) {
    let Some(mut a) = common::grpc_peer(test, 0).await else {
        return;
    };
    let b = common::grpc_peer(test, 0).await.unwrap();
    let c = common::grpc_peer(test, 0).await.unwrap();
    for (p, extra) in [
        (&a, "version=1.0.0&group=g1"),
        (&b, "version=1.0.0&group=g1"),
        (&c, "version=2.0.0"),
    ] {
        providers
            .register(&tri_provider(p.port, extra))
            .await
            .unwrap();
    }
    let (dir, inv) = consumer(consumers.clone(), "version=1.0.0&group=g1&timeout=5000").await;
    tests::eventually("two 1.0.0/g1 providers", Duration::from_secs(30), || {
        let n = dir
            .list(&Invocation::new("Headers"))
            .map(|s| s.len())
            .unwrap_or(0);
        async move { (n == 2).then_some(()) }
    })
    .await;
    // Version/group routing and spreading: only A and B answer, and both do.
    let mut seen = BTreeSet::new();
    for _ in 0..40 {
        let v = inv.invoke(&call("Headers", json!({}))).await.unwrap().value;
        assert_eq!(v["headers"]["tri-service-version"], "1.0.0");
        assert_eq!(v["headers"]["tri-service-group"], "g1");
        seen.insert(
            v["headers"]["x-peer-port"]
                .as_str()
                .unwrap()
                .parse::<u16>()
                .unwrap(),
        );
    }
    assert_eq!(seen, BTreeSet::from([a.port, b.port]));
    // 64 concurrent calls.
    let calls = (0..64).map(|i| {
        let inv = inv.clone();
        async move {
            inv.invoke(&call("SayHello", json!({"name": format!("c{i}")})))
                .await
        }
    });
    for (i, r) in futures::future::join_all(calls)
        .await
        .into_iter()
        .enumerate()
    {
        assert_eq!(r.unwrap().value, json!({"message": format!("Hello c{i}")}));
    }
    // A 4 MB message each way.
    let v = inv
        .invoke(&call("Big", json!({"size": 4_000_000})))
        .await
        .unwrap()
        .value;
    assert_eq!(v["payload"].as_str().unwrap().len(), 5_333_336);
    // Timeouts: each attempt is cut at the consumer's method timeout.
    let (_d2, slow) = consumer(
        consumers.clone(),
        "version=1.0.0&group=g1&timeout=5000&Slow.timeout=300&retries=0",
    )
    .await;
    let start = Instant::now();
    let e = slow
        .invoke(&call("Slow", json!({"millis": 3000})))
        .await
        .unwrap_err();
    assert!(e.is_timeout(), "{e}");
    assert!(
        start.elapsed() < Duration::from_millis(2000),
        "{:?}",
        start.elapsed()
    );
    // Failover: kill A; every call still succeeds (on B).
    a.kill().await;
    for i in 0..20 {
        let v = inv
            .invoke(&call("Headers", json!({})))
            .await
            .unwrap_or_else(|e| panic!("call {i} after killing A: {e}"))
            .value;
        assert_eq!(v["headers"]["x-peer-port"], b.port.to_string());
    }
    dir.destroy();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tri_through_zookeeper() {
    let Some(addr) = tests::zk_addr("tri_through_zookeeper") else {
        return;
    };
    let url = Url::parse(&format!(
        "zookeeper://{addr}?group={}&timeout=10000&session=10000",
        tests::unique("tri-zk")
    ))
    .unwrap();
    let p = Arc::new(registry_zk::ZookeeperRegistry::connect(&url).await.unwrap());
    let c = Arc::new(registry_zk::ZookeeperRegistry::connect(&url).await.unwrap());
    scenario(p, c, "tri_through_zookeeper").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tri_through_nacos() {
    let Some(addr) = tests::nacos_addr("tri_through_nacos") else {
        return;
    };
    let url = Url::parse(&format!(
        "nacos://{addr}?group={}&nacos.poll-interval=200",
        tests::unique("tri-nacos")
    ))
    .unwrap();
    let p = Arc::new(registry_nacos::NacosRegistry::new(&url).unwrap());
    let c = Arc::new(registry_nacos::NacosRegistry::new(&url).unwrap());
    scenario(p, c, "tri_through_nacos").await;
}

/// The Node peer answers only exact version/group headers: through the registry, the
/// consumer's version and group reach it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn node_peer_routing_through_zookeeper() {
    let Some(addr) = tests::zk_addr("node_peer_routing_through_zookeeper") else {
        return;
    };
    let Some(node) = common::node_peer("node_peer_routing_through_zookeeper").await else {
        return;
    };
    let url = Url::parse(&format!(
        "zookeeper://{addr}?group={}&timeout=10000&session=10000",
        tests::unique("tri-zk-node")
    ))
    .unwrap();
    let reg = Arc::new(registry_zk::ZookeeperRegistry::connect(&url).await.unwrap());
    reg.register(&tri_provider(node.port, "version=1.0.0&group=g1"))
        .await
        .unwrap();
    let (dir, inv) = consumer(reg.clone(), "version=1.0.0&group=g1").await;
    let v = tests::eventually("node answers", Duration::from_secs(30), || {
        let inv = inv.clone();
        async move {
            inv.invoke(&call("sayHello", json!({"name": "zk"})))
                .await
                .ok()
        }
    })
    .await;
    assert_eq!(v.value, json!({"message": "Hello zk from 1.0.0/g1"}));
    dir.destroy();
}
