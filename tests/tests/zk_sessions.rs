//! ZooKeeper failure handling against real servers: forced session expiry, `kill -9` of a
//! standalone server and restart (on its own port, never the shared one), and losing the
//! leader of a 3-node ensemble. The subscriber must never see an empty push caused by the
//! failure, and must converge afterwards. The killed standalone server listens on
//! `DUBBO_TEST_ZK_KILL9_PORT` (default: a free port).

use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use registry_core::{Registry, Url};
use registry_zk::ZookeeperRegistry;
use tests::contract::{consumer_url, provider_url, Watch};

const T: Duration = Duration::from_secs(30);

fn consumer(iface: &str) -> Url {
    consumer_url(iface, "providers,configurators,routers", "")
}

fn registry_url(connect: &str, root: &str, session_ms: u64) -> Url {
    let (first, rest) = connect.split_once(',').unwrap_or((connect, ""));
    let backup = if rest.is_empty() {
        String::new()
    } else {
        format!("&backup={rest}")
    };
    Url::parse(&format!(
        "zookeeper://{first}?group={root}&timeout=15000&session={session_ms}{backup}"
    ))
    .unwrap()
}

/// Asserts no providers notification so far was `empty://`.
fn assert_never_empty(w: &Watch, what: &str) {
    assert!(
        !w.is_empty_marker("providers"),
        "{what}: providers went empty"
    );
}

/// Connects a provider and a consumer registry on `url`, registers provider A (port 20001)
/// and waits until the consumer's watch of `iface` sees it.
async fn provider_a_watched(
    url: &Url,
    iface: &str,
) -> (ZookeeperRegistry, ZookeeperRegistry, Watch) {
    let p = ZookeeperRegistry::connect(url).await.unwrap();
    let c = ZookeeperRegistry::connect(url).await.unwrap();
    let a = provider_url(iface, 20001, "");
    p.register(&a).await.unwrap();
    let mut w = Watch::new(c.subscribe(&consumer(iface)).await.unwrap());
    w.until("provider A", T, |w| w.addresses("providers").len() == 1)
        .await;
    (p, c, w)
}

/// Applies notifications until the consumer sees `n` providers, panicking after `within`,
/// and asserts after every tick that no providers push was `empty://` (`after` names the
/// failure the watch is recovering from).
async fn converge_never_empty(w: &mut Watch, n: usize, within: Duration, after: &str) {
    let deadline = Instant::now() + within;
    while w.addresses("providers").len() != n {
        assert!(
            Instant::now() < deadline,
            "no convergence after {after}: {w:?}"
        );
        let _ =
            tokio::time::timeout(Duration::from_millis(500), w.until("tick", T, |_| false)).await;
        assert_never_empty(w, &format!("after {after}"));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zk_session_expiry_restores_registrations_and_subscriptions() {
    let Some(addr) = tests::zk_addr("zk_session_expiry") else {
        return;
    };
    let root = tests::unique("zk-expiry");
    let url = registry_url(&addr, &root, 10_000);
    let iface = "org.zk.Expiry";
    let (p, c, mut w) = provider_a_watched(&url, iface).await;
    let other = ZookeeperRegistry::connect(&url).await.unwrap();

    // Expire the provider's session: its node vanishes, then comes back with the new session.
    let gen = *p.backend_generation().borrow();
    let old = p.backend().session_id();
    registry_zk::testing::expire_session(&addr, p.backend().session_info().unwrap())
        .await
        .unwrap();
    tests::eventually("provider got a new session", T, || async {
        (p.backend().session_id() != old && *p.backend_generation().borrow() > gen).then_some(())
    })
    .await;
    w.until("provider A re-registered", T, |w| {
        w.addresses("providers").contains("127.0.0.1:20001")
    })
    .await;

    // Expire the consumer's session and register B meanwhile: no update may be lost.
    let old = c.backend().session_id();
    registry_zk::testing::expire_session(&addr, c.backend().session_info().unwrap())
        .await
        .unwrap();
    let b = provider_url(iface, 20002, "");
    other.register(&b).await.unwrap();
    tests::eventually("consumer got a new session", T, || async {
        (c.backend().session_id() != old && c.backend().session_id() != 0).then_some(())
    })
    .await;
    w.until("A and B after consumer expiry", T, |w| {
        w.addresses("providers").len() == 2
    })
    .await;
    let d = provider_url(iface, 20003, "");
    other.register(&d).await.unwrap();
    w.until("D after expiry (watch re-established)", T, |w| {
        w.addresses("providers").len() == 3
    })
    .await;
}

trait Generation {
    fn backend_generation(&self) -> tokio::sync::watch::Receiver<u64>;
}
impl Generation for ZookeeperRegistry {
    fn backend_generation(&self) -> tokio::sync::watch::Receiver<u64> {
        use registry_core::RegistryBackend;
        self.backend().session_generation().unwrap()
    }
}

fn script() -> Option<PathBuf> {
    std::env::var("DUBBO_TEST_SCRIPTS")
        .ok()
        .map(|d| PathBuf::from(d).join("zk-server.sh"))
}

fn zk_script(args: &[&str]) -> String {
    let s = script().expect("DUBBO_TEST_SCRIPTS");
    let out = Command::new("bash")
        .arg(&s)
        .args(args)
        .output()
        .expect("run zk-server.sh");
    assert!(
        out.status.success(),
        "zk-server.sh {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn kill9(port: u16) {
    let dir = std::env::var("ZK_STATE_DIR").unwrap_or_else(|_| "/tmp/zk-server".into());
    let pid = std::fs::read_to_string(format!("{dir}/{port}/zk.pid")).expect("pid file");
    let st = Command::new("kill")
        .args(["-9", pid.trim()])
        .status()
        .unwrap();
    assert!(st.success());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zk_kill9_and_restart_never_pushes_empty() {
    let Some(_) = tests::zk_addr("zk_kill9") else {
        return;
    };
    if script().is_none() {
        eprintln!("*** SKIPPED zk_kill9: DUBBO_TEST_SCRIPTS is not set ***");
        return;
    }
    let port = tests::server_port("DUBBO_TEST_ZK_KILL9_PORT", &[]);
    zk_script(&["start", &port.to_string()]);
    let addr = format!("127.0.0.1:{port}");
    let root = tests::unique("zk-kill9");
    let url = registry_url(&addr, &root, 30_000);
    let iface = "org.zk.Kill9";
    let (p, c, mut w) = provider_a_watched(&url, iface).await;

    let epoch = c.backend().connection_epoch();
    kill9(port);
    tests::eventually("consumer sees the outage", T, || async {
        (!c.is_available()).then_some(())
    })
    .await;
    // While down: nothing may blank the list.
    let _ = tokio::time::timeout(Duration::from_secs(2), w.until("nothing", T, |_| false)).await;
    assert_never_empty(&w, "while down");
    zk_script(&["start", &port.to_string()]);
    tests::eventually("consumer reconnected", T, || async {
        (c.is_available() && c.backend().connection_epoch() > epoch).then_some(())
    })
    .await;
    let b = provider_url(iface, 20002, "");
    tests::eventually("register B after restart", T, || async {
        p.register(&b).await.ok()
    })
    .await;
    converge_never_empty(&mut w, 2, T, "restart").await;
    assert_never_empty(&w, "end");
    p.destroy().await;
    c.destroy().await;
    zk_script(&["stop", &port.to_string()]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zk_ensemble_survives_losing_its_leader() {
    let Some(_) = tests::zk_addr("zk_ensemble") else {
        return;
    };
    let Some(base) = tests::server_addr("DUBBO_TEST_ZK_ENSEMBLE_BASE", "zk_ensemble") else {
        return;
    };
    if script().is_none() {
        eprintln!("*** SKIPPED zk_ensemble: DUBBO_TEST_SCRIPTS is not set ***");
        return;
    }
    let out = zk_script(&["ensemble-start", "3", &base]);
    let connect = out.lines().last().unwrap().trim().to_owned();
    let root = tests::unique("zk-ensemble");
    let url = registry_url(&connect, &root, 20_000);
    let iface = "org.zk.Ensemble";
    let (p, c, mut w) = provider_a_watched(&url, iface).await;

    let leader = zk_script(&["leader", &base, "30"]).trim().to_owned();
    zk_script(&["member-kill", &leader]);
    let b = provider_url(iface, 20002, "");
    tests::eventually(
        "register B after leader loss",
        Duration::from_secs(60),
        || async { p.register(&b).await.ok() },
    )
    .await;
    converge_never_empty(&mut w, 2, Duration::from_secs(60), "leader loss").await;
    p.destroy().await;
    c.destroy().await;
    zk_script(&["member-start", &leader]);
}

/// A loopback TCP proxy that can cut every connection and refuse new ones for a while: the
/// client sees Disconnected, then reconnects to the same session.
struct Proxy {
    port: u16,
    conns: std::sync::Arc<std::sync::Mutex<Vec<std::net::TcpStream>>>,
    refuse: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

impl Proxy {
    fn start(upstream: String) -> Proxy {
        use std::sync::atomic::Ordering;
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let conns = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let refuse = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let (c, r) = (conns.clone(), refuse.clone());
        std::thread::spawn(move || {
            for down in listener.incoming() {
                let Ok(down) = down else { continue };
                if r.load(Ordering::SeqCst) {
                    drop(down);
                    continue;
                }
                let Ok(up) = std::net::TcpStream::connect(&upstream) else {
                    continue;
                };
                let mut list = c.lock().unwrap();
                list.push(down.try_clone().unwrap());
                list.push(up.try_clone().unwrap());
                for (mut from, mut to) in [
                    (down.try_clone().unwrap(), up.try_clone().unwrap()),
                    (up, down),
                ] {
                    std::thread::spawn(move || {
                        let _ = std::io::copy(&mut from, &mut to);
                        let _ = to.shutdown(std::net::Shutdown::Both);
                    });
                }
            }
        });
        Proxy {
            port,
            conns,
            refuse,
        }
    }

    /// Cuts every connection and refuses new ones until [`Proxy::restore`].
    fn cut(&self) {
        self.refuse.store(true, std::sync::atomic::Ordering::SeqCst);
        for s in self.conns.lock().unwrap().drain(..) {
            let _ = s.shutdown(std::net::Shutdown::Both);
        }
    }

    fn restore(&self) {
        self.refuse
            .store(false, std::sync::atomic::Ordering::SeqCst);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zk_reconnect_relists_missed_changes_and_rewatches() {
    let Some(addr) = tests::zk_addr("zk_reconnect") else {
        return;
    };
    let proxy = Proxy::start(addr.clone());
    let root = tests::unique("zk-reconnect");
    let iface = "org.zk.Reconnect";
    let direct = ZookeeperRegistry::connect(&registry_url(&addr, &root, 20_000))
        .await
        .unwrap();
    let via_proxy = format!("127.0.0.1:{}", proxy.port);
    let c = ZookeeperRegistry::connect(&registry_url(&via_proxy, &root, 20_000))
        .await
        .unwrap();
    let a = provider_url(iface, 20001, "");
    direct.register(&a).await.unwrap();
    let mut w = Watch::new(c.subscribe(&consumer(iface)).await.unwrap());
    w.until("provider A", T, |w| w.addresses("providers").len() == 1)
        .await;
    let session = c.backend().session_id();
    let epoch = c.backend().connection_epoch();

    proxy.cut();
    tests::eventually("consumer disconnected", T, || async {
        (!c.is_available()).then_some(())
    })
    .await;
    // Changes while disconnected are not replayed by ZooKeeper (ZOOKEEPER-4698).
    let b = provider_url(iface, 20002, "");
    direct.register(&b).await.unwrap();
    direct.unregister(&a).await.unwrap();
    let _ = tokio::time::timeout(Duration::from_secs(1), w.until("nothing", T, |_| false)).await;
    assert_eq!(
        w.addresses("providers").len(),
        1,
        "last good list kept while disconnected"
    );
    assert_never_empty(&w, "while disconnected");
    proxy.restore();
    tests::eventually("consumer reconnected", T, || async {
        (c.is_available() && c.backend().connection_epoch() > epoch).then_some(())
    })
    .await;
    assert_eq!(
        c.backend().session_id(),
        session,
        "same session (not an expiry)"
    );
    w.until("re-list shows B, not A", T, |w| {
        w.addresses("providers").len() == 1 && w.addresses("providers").contains("127.0.0.1:20002")
    })
    .await;
    // The persistent watch must work again (zookeeper-client does not re-send it).
    let d = provider_url(iface, 20003, "");
    direct.register(&d).await.unwrap();
    w.until("D after reconnect", T, |w| {
        w.addresses("providers").len() == 2
    })
    .await;
    assert_never_empty(&w, "end");
}
