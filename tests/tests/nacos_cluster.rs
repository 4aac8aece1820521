//! A three-node Nacos cluster (rnacos in raft cluster mode, `nacos-server.sh cluster-start`,
//! private to this test at `DUBBO_TEST_NACOS_CLUSTER_BASE`, default 23400: HTTP ports
//! base..base+2, gRPC +1000) loses the node our consumer's gRPC session is on (kill -9), and
//! later gets it back: the session moves to another node within seconds (the health view
//! shows the new server and one more reconnect), the provider stays registered, the
//! subscription keeps working (a change made after the move arrives), and no notification on
//! the way is an empty list or lists a provider twice. The same holds for an application's
//! instances (application-level discovery, `NacosServiceDiscovery`): the empty list a cluster
//! shows while the instances re-register after the move is held, as for interface level.

#![allow(clippy::expect_used, clippy::unwrap_used)]

use std::process::Command;
use std::time::{Duration, Instant};

use registry_core::{InstanceDiscovery, Registry, RegistryBackend, ServiceInstance, Url};
use tests::contract::{consumer_url, provider_url, Watch};

const T: Duration = Duration::from_secs(30);

fn script(args: &[&str], fresh: bool) {
    let dir = std::env::var("DUBBO_TEST_SCRIPTS").unwrap();
    let out = Command::new("bash")
        .arg(format!("{dir}/nacos-server.sh"))
        .args(args)
        .env("NACOS_FRESH", if fresh { "1" } else { "0" })
        .output()
        .expect("run nacos-server.sh");
    assert!(
        out.status.success(),
        "nacos-server.sh {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Stops the cluster on drop (also when the test fails).
struct Cluster {
    base: u16,
}

impl Drop for Cluster {
    fn drop(&mut self) {
        if let Ok(dir) = std::env::var("DUBBO_TEST_SCRIPTS") {
            let _ = Command::new("bash")
                .arg(format!("{dir}/nacos-server.sh"))
                .args(["cluster-stop", "3", &self.base.to_string()])
                .output();
        }
    }
}

fn kill9(http_port: u16) {
    let dir = std::env::var("NACOS_STATE_DIR").unwrap_or_else(|_| "/tmp/nacos-server".into());
    let pid = std::fs::read_to_string(format!("{dir}/{http_port}/rnacos.pid")).expect("pid file");
    let st = Command::new("kill")
        .args(["-9", pid.trim()])
        .status()
        .unwrap();
    assert!(st.success());
}

/// Every notification seen so far: never the empty marker, never a provider twice.
fn sound(w: &Watch) {
    assert!(
        !w.is_empty_marker("providers"),
        "providers went empty: {w:?}"
    );
    let listed = w.latest("providers").map(<[Url]>::len).unwrap_or(0);
    assert_eq!(
        listed,
        w.addresses("providers").len(),
        "a provider listed twice: {w:?}"
    );
}

/// The node (its HTTP port) a registry's session is on, from its health.
fn node_of(r: &dyn Registry, base: u16) -> Option<u16> {
    node_of_health(&r.health().borrow().clone(), base)
}

/// The node (its HTTP port) of a session's health.
fn node_of_health(h: &registry_core::RegistryHealth, base: u16) -> Option<u16> {
    let h = h.clone();
    if !h.state.is_connected() {
        return None;
    }
    let port: u16 = h.server?.rsplit_once(':')?.1.parse().ok()?;
    let http = if port >= base + 1000 {
        port - 1000
    } else {
        port
    };
    (base..base + 3).contains(&http).then_some(http)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn losing_the_connected_node_moves_the_session_and_loses_nothing() {
    let test = "nacos_cluster";
    let Some(_) = tests::nacos_addr(test) else {
        return;
    };
    if std::env::var("DUBBO_TEST_SCRIPTS").is_err() {
        assert!(!tests::servers_required(), "DUBBO_TEST_SCRIPTS is not set");
        eprintln!("\n*** SKIPPED {test}: DUBBO_TEST_SCRIPTS is not set ***\n");
        return;
    }
    let base: u16 = std::env::var("DUBBO_TEST_NACOS_CLUSTER_BASE")
        .ok()
        .and_then(|p| p.parse().ok())
        .unwrap_or(23400);
    let cluster = Cluster { base };
    tokio::task::block_in_place(|| script(&["cluster-start", "3", &base.to_string()], true));

    let ns = tests::unique("nacos-cluster");
    let url = Url::parse(&format!(
        "nacos://127.0.0.1:{base}?backup=127.0.0.1:{},127.0.0.1:{}&namespace={ns}",
        base + 1,
        base + 2
    ))
    .unwrap();
    let iface = "org.cluster.Service";
    let provider = registry_nacos::NacosRegistry::new(&url).unwrap();
    let consumer = registry_nacos::NacosRegistry::new(&url).unwrap();
    let a = provider_url(iface, 20001, "");
    tests::eventually("register A", T, || async {
        provider.register(&a).await.ok()
    })
    .await;
    let mut w = Watch::subscribe(&consumer, &consumer_url(iface, "providers", "")).await;
    w.until("provider A", T, |w| {
        sound(w);
        w.addresses("providers").len() == 1
    })
    .await;

    let node = tests::eventually("the consumer's node", T, || async {
        node_of(&consumer, base)
    })
    .await;
    let reconnects = consumer.health().borrow().reconnects;
    let killed = Instant::now();
    kill9(node);

    // The session moves to another node within seconds.
    let moved_to = tests::eventually("the consumer on another node", T, || async {
        let h = consumer.health().borrow().clone();
        (h.reconnects > reconnects)
            .then(|| node_of(&consumer, base))
            .flatten()
            .filter(|n| *n != node)
    })
    .await;
    let took = killed.elapsed();
    eprintln!("{test}: session moved from node {node} to node {moved_to} in {took:?}");
    assert!(took < Duration::from_secs(15), "moving took {took:?}");

    // Nothing lost: A is still listed (never empty, never twice), and a change made after
    // the move arrives.
    let b = provider_url(iface, 20002, "");
    tests::eventually("register B", T, || async {
        provider.register(&b).await.ok()
    })
    .await;
    w.until("A and B after the move", T, |w| {
        sound(w);
        w.addresses("providers").len() == 2
    })
    .await;

    // The node comes back; the consumer stays connected and still follows changes.
    let i = (node - base + 1).to_string();
    tokio::task::block_in_place(|| script(&["cluster-node-start", &base.to_string(), &i], false));
    provider.unregister(&b).await.unwrap();
    w.until("A only after the restart", T, |w| {
        sound(w);
        w.addresses("providers").len() == 1
    })
    .await;
    assert!(consumer.health().borrow().state.is_connected());

    provider.destroy().await;
    consumer.destroy().await;
    drop(cluster);
}

/// Starts a private cluster at `base`; `None` (a loud skip) without the servers or scripts.
fn start_cluster(test: &str, base: u16) -> Option<Cluster> {
    tests::nacos_addr(test)?;
    if std::env::var("DUBBO_TEST_SCRIPTS").is_err() {
        assert!(!tests::servers_required(), "DUBBO_TEST_SCRIPTS is not set");
        eprintln!("\n*** SKIPPED {test}: DUBBO_TEST_SCRIPTS is not set ***\n");
        return None;
    }
    let cluster = Cluster { base };
    tokio::task::block_in_place(|| script(&["cluster-start", "3", &base.to_string()], true));
    Some(cluster)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn application_instances_are_never_empty_when_the_connected_node_is_lost() {
    let test = "nacos_cluster_instances";
    // A cluster of its own (the other test's runs at the same time).
    let base: u16 = std::env::var("DUBBO_TEST_NACOS_CLUSTER_BASE")
        .ok()
        .and_then(|p| p.parse().ok())
        .unwrap_or(23400)
        + 10;
    let Some(cluster) = start_cluster(test, base) else {
        return;
    };
    let ns = tests::unique("nacos-cluster-apps");
    let url = Url::parse(&format!(
        "nacos://127.0.0.1:{base}?backup=127.0.0.1:{},127.0.0.1:{}&namespace={ns}",
        base + 1,
        base + 2
    ))
    .unwrap();
    let app = "cluster-shop";
    let instance = |port: i32| {
        let meta = [("dubbo.metadata.revision", "r1")]
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        ServiceInstance::new(app, "127.0.0.1", port, meta)
    };
    let provider = tests::eventually("the provider's discovery", T, || async {
        registry_nacos::NacosServiceDiscovery::connect(&url)
            .await
            .ok()
    })
    .await;
    let consumer = tests::eventually("the consumer's discovery", T, || async {
        registry_nacos::NacosServiceDiscovery::connect(&url)
            .await
            .ok()
    })
    .await;
    tests::eventually("register A", T, || async {
        provider.register(&instance(20001)).await.ok()
    })
    .await;
    let mut watch = tests::eventually("watch the application", T, || async {
        consumer.watch(app).await.ok()
    })
    .await;
    // Every list the watch delivers, in order.
    let seen: std::sync::Arc<std::sync::Mutex<Vec<usize>>> = Default::default();
    let recorder = {
        let seen = seen.clone();
        tokio::spawn(async move {
            while let Some(list) = watch.next().await {
                seen.lock().unwrap().push(list.len());
            }
        })
    };
    let last = || seen.lock().unwrap().last().copied().unwrap_or(0);
    let never_empty_after_first = || {
        let s = seen.lock().unwrap().clone();
        let first = s.iter().position(|n| *n > 0);
        if let Some(i) = first {
            assert!(s[i..].iter().all(|n| *n > 0), "instances went empty: {s:?}");
        }
    };
    tests::eventually("instance A", T, || async { (last() == 1).then_some(()) }).await;

    let health = consumer.backend().health().expect("gRPC health");
    let node = tests::eventually("the consumer's node", T, || async {
        node_of_health(&health.borrow().clone(), base)
    })
    .await;
    let reconnects = health.borrow().reconnects;
    kill9(node);
    let moved_to = tests::eventually("the consumer on another node", T, || async {
        let h = health.borrow().clone();
        (h.reconnects > reconnects)
            .then(|| node_of_health(&h, base))
            .flatten()
            .filter(|n| *n != node)
    })
    .await;
    eprintln!("{test}: session moved from node {node} to node {moved_to}");
    never_empty_after_first();

    // A change after the move arrives, and nothing was ever empty on the way.
    tests::eventually("register B", T, || async {
        provider.register(&instance(20002)).await.ok()
    })
    .await;
    tests::eventually("A and B after the move", T, || async {
        never_empty_after_first();
        (last() == 2).then_some(())
    })
    .await;
    never_empty_after_first();
    recorder.abort();
    drop(cluster);
}
