//! `ZkServiceDiscovery` against a real ZooKeeper: Curator JSON nodes under `<root>/<app>`, the
//! watch that sees creations, revision changes (`setData` on the same node), deletions and
//! garbage, and survives a session expiry without a spurious list.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use registry_core::instance::REVISION_KEY;
use registry_core::{InstanceDiscovery, InstanceList, InstanceWatch, ServiceInstance, Url};
use registry_zk::testing::client::{Client, CreateMode};
use registry_zk::ZkServiceDiscovery;

const T: Duration = Duration::from_secs(30);

fn url(addr: &str, root: &str) -> Url {
    Url::parse(&format!(
        "zookeeper://{addr}?rootPath=/{root}&timeout=15000&session=10000"
    ))
    .unwrap()
}

fn inst(app: &str, port: i32, rev: &str) -> ServiceInstance {
    let mut m = BTreeMap::new();
    m.insert(REVISION_KEY.to_owned(), rev.to_owned());
    m.insert("dubbo.metadata.storage-type".to_owned(), "local".to_owned());
    ServiceInstance::new(app, "10.9.0.1", port, m)
}

/// Records every list a watch delivers.
fn record(mut w: InstanceWatch) -> Arc<Mutex<Vec<InstanceList>>> {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let s = seen.clone();
    tokio::spawn(async move {
        while let Some(v) = w.next().await {
            s.lock().unwrap().push(v);
        }
    });
    seen
}

fn last(seen: &Mutex<Vec<InstanceList>>) -> Vec<(i32, Option<String>)> {
    seen.lock()
        .unwrap()
        .last()
        .map(|l| {
            l.iter()
                .map(|i| (i.port(), i.revision().map(str::to_owned)))
                .collect()
        })
        .unwrap_or_default()
}

async fn until(seen: &Mutex<Vec<InstanceList>>, what: &str, want: &[(i32, Option<&str>)]) {
    let want: Vec<(i32, Option<String>)> = want
        .iter()
        .map(|(p, r)| (*p, r.map(str::to_owned)))
        .collect();
    tests::eventually(what, T, || async { (last(seen) == want).then_some(()) }).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zk_instances_follow_creation_revision_change_deletion_and_garbage() {
    let Some(addr) = tests::zk_addr("zk_instances_follow") else {
        return;
    };
    let root = tests::unique("zk-inst");
    let d = ZkServiceDiscovery::connect(&url(&addr, &root))
        .await
        .unwrap();
    assert_eq!(d.root(), format!("/{root}"));
    let seen = record(d.watch("shop").await.unwrap());
    until(&seen, "initial empty list", &[]).await;

    // Registered the Java way: one ephemeral node per process, Curator JSON.
    d.register(&inst("shop", 20880, "r1")).await.unwrap();
    until(&seen, "first instance", &[(20880, Some("r1"))]).await;
    let raw = Client::connect(&addr).await.unwrap();
    let (data, stat) = raw
        .get_data(&format!("/{root}/shop/10.9.0.1:20880"))
        .await
        .unwrap();
    assert!(stat.ephemeral_owner != 0, "instance nodes are ephemeral");
    let v: serde_json::Value = serde_json::from_slice(&data).unwrap();
    assert_eq!(v["name"], "shop");
    assert_eq!(v["id"], "10.9.0.1:20880");
    assert_eq!(v["payload"]["@class"], registry_zk::curator::PAYLOAD_CLASS);
    assert_eq!(v["payload"]["metadata"][REVISION_KEY], "r1");

    // A revision change is a setData on the same node (what Java's doUpdate does).
    d.register(&inst("shop", 20880, "r2")).await.unwrap();
    until(&seen, "revision change", &[(20880, Some("r2"))]).await;
    let (_, stat2) = raw
        .get_data(&format!("/{root}/shop/10.9.0.1:20880"))
        .await
        .unwrap();
    assert_eq!(stat2.czxid, stat.czxid, "same node, new data");

    // A node written by someone else (a dubbo-go style subset) and a garbage node.
    let go = r#"{"name":"shop","id":"10.9.0.2:20000","address":"10.9.0.2","port":20000,"payload":{"metadata":{"dubbo.metadata.revision":"g1"}}}"#;
    raw.create(
        &format!("/{root}/shop/10.9.0.2:20000"),
        go.as_bytes(),
        &CreateMode::Ephemeral.with_acls(registry_zk::testing::client::Acls::anyone_all()),
    )
    .await
    .unwrap();
    raw.create(
        &format!("/{root}/shop/garbage"),
        b"{not json",
        &CreateMode::Ephemeral.with_acls(registry_zk::testing::client::Acls::anyone_all()),
    )
    .await
    .unwrap();
    until(
        &seen,
        "foreign node seen, garbage skipped",
        &[(20880, Some("r2")), (20000, Some("g1"))],
    )
    .await;

    // Deletion.
    d.unregister(&inst("shop", 20880, "r2")).await.unwrap();
    until(&seen, "deletion", &[(20000, Some("g1"))]).await;
    assert_eq!(d.applications().await.unwrap(), vec!["shop".to_owned()]);
    // No list in the history ever lost the dubbo-go instance once seen, or contained the
    // garbage node.
    for l in seen.lock().unwrap().iter() {
        assert!(l.iter().all(|i| i.host() != "garbage"));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zk_instances_survive_session_expiry_without_a_spurious_list() {
    let Some(addr) = tests::zk_addr("zk_instances_expiry") else {
        return;
    };
    let root = tests::unique("zk-inst-exp");
    let provider = ZkServiceDiscovery::connect(&url(&addr, &root))
        .await
        .unwrap();
    let consumer = ZkServiceDiscovery::connect(&url(&addr, &root))
        .await
        .unwrap();
    provider.register(&inst("app", 1, "a")).await.unwrap();
    let seen = record(consumer.watch("app").await.unwrap());
    until(&seen, "instance", &[(1, Some("a"))]).await;

    // Expire the consumer's session: its watch must re-sync, and no empty list may appear.
    let info = consumer.session_info().unwrap();
    registry_zk::testing::expire_session(&addr, info)
        .await
        .unwrap();
    let epoch = consumer.connection_epoch();
    provider.register(&inst("app", 1, "b")).await.unwrap();
    until(&seen, "change after expiry", &[(1, Some("b"))]).await;
    assert!(consumer.connection_epoch() >= epoch);
    assert!(
        seen.lock().unwrap().iter().skip(1).all(|l| !l.is_empty()),
        "a list was blanked by the expiry"
    );

    // Expire the provider's session: its instance node is re-created by the new session.
    let info = provider.session_info().unwrap();
    registry_zk::testing::expire_session(&addr, info)
        .await
        .unwrap();
    tests::eventually("re-created instance", T, || async {
        let raw = Client::connect(&addr).await.ok()?;
        let (data, _) = raw
            .get_data(&format!("/{root}/app/10.9.0.1:1"))
            .await
            .ok()?;
        let v: serde_json::Value = serde_json::from_slice(&data).ok()?;
        (v["payload"]["metadata"][REVISION_KEY] == "b").then_some(())
    })
    .await;
}
