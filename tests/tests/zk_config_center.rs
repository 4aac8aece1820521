//! `ZkConfigCenter` against a real ZooKeeper: the `/<namespace>/config/<group>/<key>` layout,
//! the ordered watch (current value first, changes, deletion, creation of a missing key) and
//! watches that survive a session expiry without a spurious `None`.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use registry_core::config_center::DEFAULT_CONFIG_GROUP as G;
use registry_core::{ConfigCenter, ConfigValue, Url};
use registry_zk::ZkConfigCenter;

const T: Duration = Duration::from_secs(30);

fn url(addr: &str, ns: &str) -> Url {
    Url::parse(&format!(
        "zookeeper://{addr}?group={ns}&timeout=15000&session=10000"
    ))
    .unwrap()
}

/// Records every value a watch delivers, in order.
fn record(mut w: registry_core::ConfigWatch) -> Arc<Mutex<Vec<ConfigValue>>> {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let s = seen.clone();
    tokio::spawn(async move {
        while let Some(v) = w.next().await {
            s.lock().unwrap().push(v);
        }
    });
    seen
}

fn last(seen: &Mutex<Vec<ConfigValue>>) -> Option<ConfigValue> {
    seen.lock().unwrap().last().cloned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zk_config_layout_get_publish_remove_and_watch() {
    let Some(addr) = tests::zk_addr("zk_config_layout") else {
        return;
    };
    let ns = tests::unique("zk-cc");
    let cc = ZkConfigCenter::connect(&url(&addr, &ns)).await.unwrap();
    let key = "com.foo.Svc::.condition-router";
    assert_eq!(cc.path(key, G), format!("/{ns}/config/dubbo/{key}"));
    assert_eq!(cc.get(key, G).await.unwrap(), None);

    // A watch of a missing key: None first, then the creation.
    let seen = record(cc.watch(key, G).await.unwrap());
    tests::eventually("initial None", T, || async {
        (seen.lock().unwrap().first() == Some(&None)).then_some(())
    })
    .await;
    cc.publish(key, G, "v1").await.unwrap();
    assert_eq!(cc.get(key, G).await.unwrap().as_deref(), Some("v1"));

    // The node is really where Dubbo puts it (read with a raw client).
    let raw = registry_zk::testing::client::Client::connect(&addr)
        .await
        .unwrap();
    let (data, _) = raw
        .get_data(&format!("/{ns}/config/dubbo/{key}"))
        .await
        .unwrap();
    assert_eq!(data, b"v1");

    tests::eventually("v1 seen", T, || async {
        (last(&seen) == Some(Some("v1".into()))).then_some(())
    })
    .await;
    cc.publish(key, G, "v2").await.unwrap();
    tests::eventually("v2 seen", T, || async {
        (last(&seen) == Some(Some("v2".into()))).then_some(())
    })
    .await;
    cc.remove(key, G).await.unwrap();
    tests::eventually("deletion seen", T, || async {
        (last(&seen) == Some(None)).then_some(())
    })
    .await;
    cc.remove(key, G).await.unwrap(); // deleting a missing key is fine
    let order = seen.lock().unwrap().clone();
    let texts: Vec<Option<&str>> = order.iter().map(|v| v.as_deref()).collect();
    assert_eq!(texts, [None, Some("v1"), Some("v2"), None]);

    // Groups are separate nodes.
    cc.publish("k", "g2", "x").await.unwrap();
    assert_eq!(cc.get("k", G).await.unwrap(), None);
    assert_eq!(cc.get("k", "g2").await.unwrap().as_deref(), Some("x"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zk_config_watch_survives_session_expiry_without_spurious_none() {
    let Some(addr) = tests::zk_addr("zk_config_expiry") else {
        return;
    };
    let ns = tests::unique("zk-cc-exp");
    let watcher = ZkConfigCenter::connect(&url(&addr, &ns)).await.unwrap();
    let writer = ZkConfigCenter::connect(&url(&addr, &ns)).await.unwrap();
    let key = "app.tag-router";
    writer.publish(key, G, "r1").await.unwrap();
    let seen = record(watcher.watch(key, G).await.unwrap());
    tests::eventually("r1", T, || async {
        (last(&seen) == Some(Some("r1".into()))).then_some(())
    })
    .await;

    let epoch = watcher.connection_epoch();
    registry_zk::testing::expire_session(&addr, watcher.session_info().unwrap())
        .await
        .unwrap();
    // Changed while the watcher's session is gone: not replayed by ZooKeeper, so only the
    // re-read after the new session can see it.
    writer.publish(key, G, "r2").await.unwrap();
    tests::eventually("new session", T, || async {
        (watcher.connection_epoch() > epoch).then_some(())
    })
    .await;
    tests::eventually("r2 after expiry", T, || async {
        (last(&seen) == Some(Some("r2".into()))).then_some(())
    })
    .await;
    // The re-added watch delivers later changes too.
    writer.publish(key, G, "r3").await.unwrap();
    tests::eventually("r3 after expiry", T, || async {
        (last(&seen) == Some(Some("r3".into()))).then_some(())
    })
    .await;
    let all = seen.lock().unwrap().clone();
    assert!(
        all.iter().all(Option::is_some),
        "a spurious None was delivered: {all:?}"
    );
}
