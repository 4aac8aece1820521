//! Application-level discovery against real dubbo-go 3.3.2 providers registered with
//! `registry-type=service` only (ZooKeeper and the Nacos-compatible test server): dubbo-go
//! registers one instance per protocol, each announcing every protocol's port, and serves
//! MetadataService v1 over Dubbo2. `dubbo-registry list` shows each provider once (as Java
//! keeps one invoker per service and address), `invoke` calls it, and the Java 3.3.6 consumer
//! sees the same providers. With `metadata-type=remote` the MetadataInfo is read from the
//! report dubbo-go writes (ZooKeeper: its own layout, which the Java consumer cannot read).

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::collections::BTreeSet;
use std::time::Duration;

use common::app::{java_list, run};
use tests::peers::{GoProvider, ProviderOptions};

const DEMO: &str = "com.example.peer.DemoService";

async fn found_and_called(tag: &str, reg: &str, metadata_type: Option<&str>) {
    let app = tests::unique("goshop").replace('-', "_");
    let opts = ProviderOptions {
        registry: Some(reg.to_owned()),
        app: app.clone(),
        register_mode: Some("service".to_owned()),
        metadata_type: metadata_type.map(str::to_owned),
        ..ProviderOptions::default()
    };
    let Some(p) = GoProvider::start(tag, &opts).await else {
        return;
    };
    let want: BTreeSet<(String, String)> = [
        ("dubbo".to_owned(), format!("127.0.0.1:{}", p.dubbo_port)),
        ("tri".to_owned(), format!("127.0.0.1:{}", p.tri_port)),
    ]
    .into();
    // Registration and mapping may reach the server a moment after READY.
    let rows = tests::eventually("both providers listed", Duration::from_secs(30), || async {
        let listed = run(&["list", reg, DEMO, "--json", "--level", "application"]).await;
        let rows = listed.json().as_array().cloned().unwrap_or_default();
        (rows.len() >= 2).then_some(rows)
    })
    .await;
    let seen: Vec<(String, String)> = rows
        .iter()
        .map(|r| {
            assert_eq!(r["application"], app.as_str(), "{r}");
            let url = r["url"].as_str().unwrap();
            (
                url.split("://").next().unwrap().to_owned(),
                r["address"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(seen.len(), 2, "each provider once: {rows:?}");
    assert_eq!(seen.into_iter().collect::<BTreeSet<_>>(), want);

    // Where the MetadataInfo came from: the instances say which storage they use.
    let described = run(&["apps", reg, &app, "--json"]).await.json();
    let storage: BTreeSet<&str> = described["instances"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["storage_type"].as_str().unwrap())
        .collect();
    assert_eq!(
        storage,
        [metadata_type.unwrap_or("local")].into(),
        "{described}"
    );
    assert_eq!(
        described["unresolved"],
        serde_json::json!([]),
        "{described}"
    );

    let called = run(&["invoke", reg, DEMO, "whoAmI", "--json"]).await;
    assert_eq!(called.code, 0, "{} {}", called.stdout, called.stderr);
    let v = called.json();
    assert!(v["result"].as_str().unwrap().starts_with(&app), "{v}");
    assert_eq!(v["level"], "application");
    assert_eq!(v["application"], app.as_str());

    if metadata_type == Some("remote") && reg.starts_with("zookeeper:") {
        // Java reads `<root>/metadata/<app>/<rev>` only, and its Curator discovery fails on the
        // revision node dubbo-go writes among the instance nodes (docs/compatibility.md).
        let (java, java_seen) = java_list(&format!("{tag}-java"), reg, DEMO, None)
            .await
            .expect("the Java consumer");
        assert!(java_seen.is_empty(), "the Java consumer saw {java}");
        return;
    }
    let (java, java_seen) = java_list(&format!("{tag}-java"), reg, DEMO, Some(2))
        .await
        .expect("the Java consumer");
    assert_eq!(java_seen, want, "the Java consumer saw {java}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dubbo_go_service_registry_on_zookeeper() {
    let Some(addr) = tests::zk_addr("dubbo_go_zk") else {
        return;
    };
    let reg = format!("zookeeper://{addr}?group={}", tests::unique("appgo"));
    found_and_called("appgo-zk", &reg, None).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dubbo_go_service_registry_on_nacos() {
    let Some(addr) = tests::nacos_addr("dubbo_go_nacos") else {
        return;
    };
    let reg = format!("nacos://{addr}?namespace={}", tests::unique("appgo"));
    found_and_called("appgo-nacos", &reg, None).await;
}

/// `metadata-type=remote`: the MetadataInfo comes from the metadata report dubbo-go writes in
/// ZooKeeper (`<root>/<app>/<rev>`, not Java's `<root>/metadata/<app>/<rev>`), not from its
/// MetadataService; the Java 3.3.6 consumer finds none of it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dubbo_go_remote_metadata_on_zookeeper() {
    let Some(addr) = tests::zk_addr("dubbo_go_zk_remote") else {
        return;
    };
    let reg = format!("zookeeper://{addr}?group={}", tests::unique("appgo-remote"));
    found_and_called("appgo-zk-remote", &reg, Some("remote")).await;
}

/// `metadata-type=remote` on Nacos: dubbo-go writes Java's layout (data id `<app>`, group
/// `<rev>`), and both consumers read it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dubbo_go_remote_metadata_on_nacos() {
    let Some(addr) = tests::nacos_addr("dubbo_go_nacos_remote") else {
        return;
    };
    let reg = format!("nacos://{addr}?namespace={}", tests::unique("appgo-remote"));
    found_and_called("appgo-nacos-remote", &reg, Some("remote")).await;
}
