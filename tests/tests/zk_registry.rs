//! ZooKeeper-specific behaviour against a real server (`DUBBO_TEST_ZK`): Dubbo's znode layout,
//! ephemeral/persistent nodes, replacing a stale node, the provider `timestamp` kept, garbage
//! znodes, 1,000 providers, `$` in interface names and empty protection.

use std::time::Duration;

use registry_core::codec::encode;
use registry_core::{Registry, Url};
use registry_zk::testing::client::{Acls, Client, CreateMode};
use registry_zk::ZookeeperRegistry;
use tests::contract::{consumer_url, provider_url, Watch};

const T: Duration = Duration::from_secs(20);

struct Env {
    addr: String,
    root: String,
}

impl Env {
    fn new(test: &str) -> Option<Env> {
        let addr = tests::zk_addr(test)?;
        Some(Env {
            addr,
            root: tests::unique("zk-reg"),
        })
    }

    fn url(&self, extra: &str) -> Url {
        Url::parse(&format!(
            "zookeeper://{}?group={}&timeout=10000&session=10000{extra}",
            self.addr, self.root
        ))
        .unwrap()
    }

    async fn registry(&self) -> ZookeeperRegistry {
        ZookeeperRegistry::connect(&self.url(""))
            .await
            .expect("connect")
    }

    async fn raw(&self) -> Client {
        Client::connect(&self.addr).await.expect("raw client")
    }

    fn providers_path(&self, iface: &str) -> String {
        format!("/{}/{}/providers", self.root, encode(iface))
    }
}

fn consumer(iface: &str) -> Url {
    consumer_url(iface, "providers,configurators,routers", "")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zk_layout_ephemeral_persistent_and_unregister() {
    let Some(env) = Env::new("zk_layout") else {
        return;
    };
    let r = env.registry().await;
    let raw = env.raw().await;
    let iface = "org.zk.Layout$Inner";
    let p = provider_url(iface, 20880, "");
    r.register(&p).await.unwrap();
    let node = format!(
        "{}/{}",
        env.providers_path(iface),
        encode(&p.to_full_string())
    );
    assert!(node.contains("org.zk.Layout%24Inner/providers/dubbo%3A%2F%2F127.0.0.1%3A20880"));
    let stat = raw
        .check_stat(&node)
        .await
        .unwrap()
        .expect("provider znode exists");
    assert_eq!(
        stat.ephemeral_owner,
        r.backend().session_id(),
        "dynamic provider is ephemeral"
    );
    let persistent = provider_url(iface, 20881, "dynamic=false");
    r.register(&persistent).await.unwrap();
    let pnode = format!(
        "{}/{}",
        env.providers_path(iface),
        encode(&persistent.to_full_string())
    );
    let stat = raw
        .check_stat(&pnode)
        .await
        .unwrap()
        .expect("persistent znode exists");
    assert_eq!(stat.ephemeral_owner, 0, "dynamic=false is persistent");
    let parent = raw
        .check_stat(&env.providers_path(iface))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(parent.ephemeral_owner, 0, "parents are persistent");
    r.unregister(&p).await.unwrap();
    r.unregister(&persistent).await.unwrap();
    assert!(raw.check_stat(&node).await.unwrap().is_none());
    assert!(raw.check_stat(&pnode).await.unwrap().is_none());
    r.unregister(&p)
        .await
        .expect("unregistering an absent node is ok");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zk_register_replaces_a_node_left_by_another_session() {
    let Some(env) = Env::new("zk_replace") else {
        return;
    };
    let iface = "org.zk.Replace";
    let p = provider_url(iface, 20880, "");
    let node = format!(
        "{}/{}",
        env.providers_path(iface),
        encode(&p.to_full_string())
    );
    let other = env.raw().await;
    other
        .mkdir(
            &env.providers_path(iface),
            &CreateMode::Persistent.with_acls(Acls::anyone_all()),
        )
        .await
        .unwrap();
    other
        .create(
            &node,
            &[],
            &CreateMode::Ephemeral.with_acls(Acls::anyone_all()),
        )
        .await
        .unwrap();
    let r = env.registry().await;
    r.register(&p).await.unwrap();
    let stat = other.check_stat(&node).await.unwrap().expect("node exists");
    assert_eq!(
        stat.ephemeral_owner,
        r.backend().session_id(),
        "our session owns the node now"
    );
    r.register(&p).await.unwrap();
    let again = other.check_stat(&node).await.unwrap().unwrap();
    assert_eq!(
        again.czxid, stat.czxid,
        "re-registering an owned node keeps it"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zk_keeps_provider_timestamp_and_skips_garbage() {
    let Some(env) = Env::new("zk_garbage") else {
        return;
    };
    let iface = "org.zk.Garbage";
    let raw = env.raw().await;
    let dir = env.providers_path(iface);
    raw.mkdir(&dir, &CreateMode::Persistent.with_acls(Acls::anyone_all()))
        .await
        .unwrap();
    for g in ["garbage%zz", "not-a-url", "%3A%2F%2Fnohost"] {
        raw.create(
            &format!("{dir}/{g}"),
            &[],
            &CreateMode::Persistent.with_acls(Acls::anyone_all()),
        )
        .await
        .unwrap();
    }
    let p = env.registry().await;
    let c = env.registry().await;
    let a = provider_url(iface, 20001, "");
    p.register(&a).await.unwrap();
    let mut w = Watch::new(c.subscribe(&consumer(iface)).await.unwrap());
    w.until("provider A despite garbage", T, |w| {
        w.addresses("providers").len() == 1
    })
    .await;
    let got = &w.latest("providers").unwrap()[0];
    assert_eq!(
        got.param("timestamp"),
        a.param("timestamp"),
        "timestamp kept (zk-keep-timestamp)"
    );
    assert_eq!(got.param("pid"), a.param("pid"));
    raw.create(
        &format!("{dir}/more%garbage"),
        &[],
        &CreateMode::Persistent.with_acls(Acls::anyone_all()),
    )
    .await
    .unwrap();
    let b = provider_url(iface, 20002, "");
    p.register(&b).await.unwrap();
    w.until("provider B after more garbage", T, |w| {
        w.addresses("providers").len() == 2
    })
    .await;
    assert!(w
        .latest("routers")
        .is_some_and(|l| l[0].protocol() == Some("empty")));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zk_thousand_providers_in_one_service() {
    let Some(env) = Env::new("zk_thousand") else {
        return;
    };
    let iface = "org.zk.Thousand";
    let c = env.registry().await;
    let mut w = Watch::new(c.subscribe(&consumer(iface)).await.unwrap());
    w.until("initial empty", T, |w| w.latest("providers").is_some())
        .await;
    let raw = env.raw().await;
    let dir = env.providers_path(iface);
    let nodes: Vec<String> = (0..1000)
        .map(|i| {
            let u = provider_url(iface, 10000 + i, "");
            format!("{dir}/{}", encode(&u.to_full_string()))
        })
        .collect();
    let opts = CreateMode::Persistent.with_acls(Acls::anyone_all());
    // Requests are pipelined: send all, then await.
    let futs: Vec<_> = nodes.iter().map(|n| raw.create(n, &[], &opts)).collect();
    for f in futs {
        f.await.unwrap();
    }
    w.until("1000 providers", Duration::from_secs(60), |w| {
        w.addresses("providers").len() == 1000
    })
    .await;
    let futs: Vec<_> = nodes[..500].iter().map(|n| raw.delete(n, None)).collect();
    for f in futs {
        f.await.unwrap();
    }
    w.until("500 providers left", Duration::from_secs(60), |w| {
        w.addresses("providers").len() == 500
    })
    .await;
    let looked = c.lookup(&consumer(iface)).await.unwrap();
    assert_eq!(looked.len(), 500);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zk_empty_protection_keeps_the_last_providers() {
    let Some(env) = Env::new("zk_protect") else {
        return;
    };
    let iface = "org.zk.Protect";
    let p = env.registry().await;
    let c = ZookeeperRegistry::connect(&env.url("&enable-empty-protection=true"))
        .await
        .unwrap();
    let a = provider_url(iface, 20001, "");
    p.register(&a).await.unwrap();
    let mut w = Watch::new(c.subscribe(&consumer(iface)).await.unwrap());
    w.until("provider A", T, |w| w.addresses("providers").len() == 1)
        .await;
    p.unregister(&a).await.unwrap();
    // A routers change after the unregister proves the providers removal was processed.
    let raw = env.raw().await;
    let routers = format!("/{}/{}/routers", env.root, iface);
    let rule = Url::parse(&format!("route://0.0.0.0/{iface}?category=routers&rule=x")).unwrap();
    raw.create(
        &format!("{routers}/{}", encode(&rule.to_full_string())),
        &[],
        &CreateMode::Persistent.with_acls(Acls::anyone_all()),
    )
    .await
    .unwrap();
    w.until("router", T, |w| {
        w.latest("routers")
            .is_some_and(|l| l[0].protocol() == Some("route"))
    })
    .await;
    assert_eq!(
        w.addresses("providers").len(),
        1,
        "empty providers list held back"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zk_unreachable_is_a_clear_error_within_the_timeout() {
    let url = Url::parse("zookeeper://127.0.0.1:1?timeout=1500").unwrap();
    let start = std::time::Instant::now();
    let e = ZookeeperRegistry::connect(&url).await.unwrap_err();
    assert!(start.elapsed() < Duration::from_secs(5));
    assert!(e.to_string().contains("not connected"), "{e}");
    let any = Url::parse("zookeeper://0.0.0.0:2181").unwrap();
    let e = ZookeeperRegistry::connect(&any).await.unwrap_err();
    assert!(e.to_string().contains("registry address == null"), "{e}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zk_digest_auth_creates_creator_only_nodes() {
    let Some(env) = Env::new("zk_digest") else {
        return;
    };
    let url = Url::parse(&format!(
        "zookeeper://bob:s3cret@{}?group={}&timeout=10000&session=10000",
        env.addr, env.root
    ))
    .unwrap();
    assert!(!url.to_string().contains("s3cret"));
    let r = ZookeeperRegistry::connect(&url).await.unwrap();
    let iface = "org.zk.Digest";
    let p = provider_url(iface, 20001, "");
    r.register(&p).await.unwrap();
    let raw = env.raw().await;
    let owner = Client::connector()
        .with_auth("digest", b"bob:s3cret")
        .connect(&env.addr)
        .await
        .unwrap();
    let (acls, _) = owner.get_acl(&env.providers_path(iface)).await.unwrap();
    assert!(
        acls.iter()
            .all(|a| a.scheme() == "digest" && a.id().starts_with("bob:")),
        "creator-only ACL: {acls:?}"
    );
    // An unauthenticated client cannot add providers, but the owner's subscriber sees them.
    let intruder = format!(
        "{}/{}",
        env.providers_path(iface),
        encode("dubbo://6.6.6.6:1/x")
    );
    let e = raw
        .create(
            &intruder,
            &[],
            &CreateMode::Ephemeral.with_acls(Acls::anyone_all()),
        )
        .await;
    assert!(e.is_err(), "unauthenticated create must fail");
    let mut w = Watch::new(r.subscribe(&consumer(iface)).await.unwrap());
    w.until("own provider", T, |w| w.addresses("providers").len() == 1)
        .await;
}

/// The server's persistent watches by path (`wchp` four-letter word).
async fn server_watches(addr: &str) -> String {
    let addr = addr.to_owned();
    tokio::task::spawn_blocking(move || {
        use std::io::{Read, Write};
        let mut s = std::net::TcpStream::connect(&addr).expect("4lw connect");
        s.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
        s.write_all(b"wchp").unwrap();
        let mut out = String::new();
        let _ = s.read_to_string(&mut out);
        out
    })
    .await
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zk_dropping_subscription_or_registry_stops_its_watches() {
    let Some(env) = Env::new("zk_drop_watches") else {
        return;
    };
    let iface = "org.zk.DropWatches";
    let path = env.providers_path(iface);
    let r = env.registry().await;
    let sub = r.subscribe(&consumer(iface)).await.unwrap();
    tests::eventually("server watch on the providers path", T, || async {
        server_watches(&env.addr)
            .await
            .contains(&path)
            .then_some(())
    })
    .await;
    drop(sub);
    tests::eventually(
        "watch removed after the subscription is dropped",
        T,
        || async { (!server_watches(&env.addr).await.contains(&path)).then_some(()) },
    )
    .await;
    let _sub = r.subscribe(&consumer(iface)).await.unwrap();
    tests::eventually("watch again", T, || async {
        server_watches(&env.addr)
            .await
            .contains(&path)
            .then_some(())
    })
    .await;
    drop(r);
    tests::eventually("watch removed after the registry is dropped", T, || async {
        (!server_watches(&env.addr).await.contains(&path)).then_some(())
    })
    .await;
}
