//! End to end through real registries: Java Dubbo2 peers registered in ZooKeeper / Nacos with
//! Dubbo-exact provider URLs, called through RegistryDirectory -> cluster (failover) -> load
//! balance -> filters -> DubboInvoker: version/group routing, 64 concurrent calls, failover
//! when a provider is killed, timeouts, biz errors, and `mock=fail:` when all are down.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use tests::dubbo2_peers as common;

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{eventually, JavaPeer, SERVICE};
use invoker::cluster;
use invoker::directory::{Directory, DirectoryOptions, RegistryDirectory};
use invoker::rpc::{Invocation, RpcErrorCode, SharedInvoker};
use protocol_dubbo::DubboInvokerFactory;
use registry_core::{Registry, Url};
use serde_json::json;

const T: Duration = Duration::from_secs(30);

fn consumer(extra: &[(&str, &str)]) -> Url {
    Url::builder("consumer")
        .host("127.0.0.1")
        .path(SERVICE)
        .param("interface", SERVICE)
        .param("side", "consumer")
        .param("category", "providers,configurators,routers")
        .param("check", "false")
        .param("application", "e2e-consumer")
        .param("timeout", "5000")
        .params(extra.iter().copied())
        .build()
}

async fn subscribe(
    registry: &Arc<dyn Registry>,
    factory: &Arc<DubboInvokerFactory>,
    url: Url,
    expect: usize,
) -> (Arc<RegistryDirectory>, SharedInvoker) {
    let dir = RegistryDirectory::subscribe(
        registry.clone(),
        url,
        factory.clone(),
        DirectoryOptions {
            register: false,
            ready_timeout: T,
            ..DirectoryOptions::default()
        },
    )
    .await
    .expect("subscribe");
    let d = dir.clone();
    eventually("providers in the directory", T, || {
        let n = d.provider_count();
        async move { (n == expect).then_some(()) }
    })
    .await;
    let cl = cluster::join(dir.clone() as Arc<dyn Directory>);
    (dir, cl)
}

async fn whoami(cl: &SharedInvoker, n: usize) -> BTreeSet<String> {
    let mut seen = BTreeSet::new();
    for _ in 0..n {
        let r = cl.invoke(&Invocation::new("whoami")).await.expect("whoami");
        seen.insert(r.value.as_str().unwrap_or_default().to_owned());
    }
    seen
}

fn set(names: &[&str]) -> BTreeSet<String> {
    names.iter().map(|s| s.to_string()).collect()
}

async fn scenario(registry: Arc<dyn Registry>, test: &str) {
    let Some(a) = JavaPeer::start(test, &["--name", "a"]).await else {
        return;
    };
    let Some(b) = JavaPeer::start(test, &["--name", "b"]).await else {
        return;
    };
    let Some(c) = JavaPeer::start(test, &["--name", "c", "--version", "2.0.0"]).await else {
        return;
    };
    let Some(d) = JavaPeer::start(test, &["--name", "d", "--group", "blue"]).await else {
        return;
    };
    for u in [
        a.url(""),
        b.url(""),
        c.url("version=2.0.0"),
        d.url("group=blue"),
    ] {
        registry.register(&u).await.expect("register");
    }
    let factory = Arc::new(DubboInvokerFactory::new());

    // Version and group routing: exactly the given group/version, absent meaning absent.
    let (dir, cl) = subscribe(
        &registry,
        &factory,
        consumer(&[
            ("version", "1.0.0"),
            ("loadbalance", "roundrobin"),
            ("mock", "fail:return fallback"),
            ("sleep.timeout", "200"),
        ]),
        2,
    )
    .await;
    assert_eq!(whoami(&cl, 10).await, set(&["a", "b"]));
    let (dir_blue, blue) = subscribe(
        &registry,
        &factory,
        consumer(&[("version", "1.0.0"), ("group", "blue")]),
        1,
    )
    .await;
    assert_eq!(whoami(&blue, 4).await, set(&["d"]));
    let (dir_v2, v2) = subscribe(&registry, &factory, consumer(&[("version", "2.0.0")]), 1).await;
    assert_eq!(whoami(&v2, 4).await, set(&["c"]));

    // 64 concurrent calls through the cluster.
    let mut tasks = Vec::new();
    for i in 0..64 {
        let cl = cl.clone();
        tasks.push(tokio::spawn(async move {
            let inv = Invocation::new("sayHello").with_arguments(
                vec!["java.lang.String".into()],
                vec![json!(format!("c{i}"))],
            );
            cl.invoke(&inv).await.map(|r| r.value)
        }));
    }
    for (i, t) in tasks.into_iter().enumerate() {
        assert_eq!(t.await.unwrap().unwrap(), json!(format!("Hello c{i}")));
    }

    // A biz exception is neither retried nor mocked.
    let e = cl
        .invoke(
            &Invocation::new("fail")
                .with_arguments(vec!["java.lang.String".into()], vec![json!("biz")]),
        )
        .await
        .unwrap_err();
    assert_eq!(e.code, RpcErrorCode::Biz);
    assert_eq!(
        e.exception_class.as_deref(),
        Some("java.lang.IllegalStateException")
    );

    // Method-level timeout (sleep.timeout=200), retried twice, then the mock answers.
    let start = Instant::now();
    let r = cl
        .invoke(&Invocation::new("sleep").with_arguments(vec!["long".into()], vec![json!(3000)]))
        .await
        .unwrap();
    assert_eq!(r.value, json!("fallback"), "timeouts end in the fail-mock");
    assert!(
        start.elapsed() < Duration::from_millis(2500),
        "{:?}",
        start.elapsed()
    );

    // Failover: a is killed (still registered), every call succeeds on b.
    a.kill().await;
    for _ in 0..10 {
        let r = cl
            .invoke(&Invocation::new("whoami"))
            .await
            .expect("failover");
        assert_eq!(r.value, json!("b"));
    }
    // Everybody down: mock=fail:return answers.
    b.kill().await;
    let r = cl.invoke(&Invocation::new("whoami")).await.unwrap();
    assert_eq!(r.value, json!("fallback"));

    for dir in [dir, dir_blue, dir_v2] {
        dir.destroy();
    }
    registry.destroy().await;
    drop((c, d));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn e2e_zookeeper_java_providers() {
    let Some(addr) = tests::zk_addr("e2e_zookeeper_java_providers") else {
        return;
    };
    let url = Url::parse(&format!(
        "zookeeper://{addr}?group=/{}&timeout=10000&session=10000",
        tests::unique("dubbo-e2e")
    ))
    .unwrap();
    let registry = registry_zk::ZookeeperRegistry::connect(&url)
        .await
        .expect("zk");
    scenario(Arc::new(registry), "e2e_zookeeper_java_providers").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn e2e_nacos_java_providers() {
    let Some(addr) = tests::nacos_addr("e2e_nacos_java_providers") else {
        return;
    };
    let url = Url::parse(&format!(
        "nacos://{addr}?group={}&nacos.poll-interval=200",
        tests::unique("dubbo-e2e")
    ))
    .unwrap();
    let registry = registry_nacos::NacosRegistry::new(&url).expect("nacos");
    scenario(Arc::new(registry), "e2e_nacos_java_providers").await;
}
