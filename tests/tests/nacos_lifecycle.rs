//! Lifecycle of the Nacos backend on real servers: open-API auth (`DUBBO_TEST_NACOS_AUTH`),
//! heartbeats and expiry on the short-timeout server (`DUBBO_TEST_NACOS_SHORT`, where a
//! persistent instance is shown to need none), and a server
//! restart on a private server this test starts and stops itself (a free port, or
//! `DUBBO_TEST_NACOS_RESTART_PORT`, via `$DUBBO_TEST_SCRIPTS/nacos-server.sh`; the shared
//! servers are never stopped).
#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers outside #[test] functions

use std::time::{Duration, Instant};

use registry_core::{Registry, RegistryBackend, Url};
use registry_nacos::{NacosBackend, NacosRegistry};
use tests::contract::{consumer_url, provider_url, Watch};
use tests::nacos::{ephemeral_flags, iface, raw_list_status, PrivateServer};
use tests::set;

const T: Duration = Duration::from_secs(20);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn auth_on_needs_and_uses_credentials() {
    let Some(addr) = tests::server_addr(
        "DUBBO_TEST_NACOS_AUTH",
        "auth_on_needs_and_uses_credentials",
    ) else {
        return;
    };
    let ns = tests::unique("nacos-auth");
    let s = iface("Auth");
    // The server really wants a token.
    let (status, _) = raw_list_status(&addr, &ns, &format!("providers:{s}::")).await;
    assert_eq!(status, 403);

    for creds in ["nacos:nacos@", ""] {
        let params = if creds.is_empty() {
            "&username=nacos&password=nacos"
        } else {
            ""
        };
        let url = Url::parse(&format!(
            "nacos://{creds}{addr}?namespace={ns}&nacos.poll-interval=200&file-cache=false&nacos.transport=http{params}"
        ))
        .unwrap();
        let r = NacosRegistry::new(&url).unwrap();
        assert!(!r.url().to_string().contains("nacos@"), "{}", r.url());
        assert!(!r.url().to_string().contains("password"), "{}", r.url());
        assert!(!format!("{r:?}").contains("password=nacos"));
        let port = if creds.is_empty() { 20101 } else { 20102 };
        r.register(&provider_url(&s, port, "")).await.unwrap();
        let mut w = Watch::subscribe(&r, &consumer_url(&s, "providers", "")).await;
        w.until("own provider with auth", T, |w| {
            w.addresses("providers")
                .contains(&format!("127.0.0.1:{port}"))
        })
        .await;
        drop(w);
        r.destroy().await;
    }

    // Wrong password: a clear, non-retryable refusal without the password in it.
    let bad = Url::parse(&format!(
        "nacos://nacos:wrong-pw-77@{addr}?namespace={ns}&file-cache=false&nacos.transport=http"
    ))
    .unwrap();
    let b = NacosBackend::new(&bad).unwrap();
    let e = b
        .do_register(&provider_url(&s, 20103, ""))
        .await
        .unwrap_err();
    assert!(!e.is_retryable(), "{e}");
    assert!(e.to_string().contains("refused"), "{e}");
    assert!(!e.to_string().contains("wrong-pw-77"), "{e}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn beats_keep_an_instance_alive_and_it_expires_when_they_stop() {
    let Some(addr) = tests::server_addr(
        "DUBBO_TEST_NACOS_SHORT",
        "beats_keep_an_instance_alive_and_it_expires_when_they_stop",
    ) else {
        return;
    };
    let ns = tests::unique("nacos-beats");
    let s = iface("Beats");
    let base = format!("nacos://{addr}?namespace={ns}&nacos.poll-interval=200&file-cache=false&nacos.transport=http");
    // The server drops an instance ~5-7 s after its last beat; beat every 500 ms.
    let provider =
        NacosBackend::new(&Url::parse(&format!("{base}&nacos.beat-interval=500")).unwrap())
            .unwrap();
    provider
        .do_register(&provider_url(&s, 20201, ""))
        .await
        .unwrap();
    let consumer = NacosRegistry::new(&Url::parse(&base).unwrap()).unwrap();
    let mut sub = consumer
        .subscribe(&consumer_url(&s, "providers", ""))
        .await
        .unwrap();
    let first = sub.next().await.unwrap();
    assert_eq!(first.urls.len(), 1, "{first:?}");
    // Alive for well past the expiry time: no notification at all (nothing changed).
    let alive_until = Instant::now() + Duration::from_secs(9);
    while Instant::now() < alive_until {
        if let Ok(n) = tokio::time::timeout(Duration::from_millis(500), sub.next()).await {
            panic!("the beating instance changed: {n:?}");
        }
    }
    // Beats stop (the provider process "dies" without deregistering).
    drop(provider);
    let n = tokio::time::timeout(Duration::from_secs(30), sub.next())
        .await
        .unwrap()
        .unwrap();
    assert!(n.is_empty_marker(), "{n:?}");
    consumer.destroy().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_persistent_instance_needs_no_beats_over_http() {
    let Some(addr) = tests::server_addr(
        "DUBBO_TEST_NACOS_SHORT",
        "a_persistent_instance_needs_no_beats_over_http",
    ) else {
        return;
    };
    let ns = tests::unique("nacos-persist");
    let s = iface("Persist");
    let base = format!("nacos://{addr}?namespace={ns}&nacos.poll-interval=200&file-cache=false&nacos.transport=http");
    let provider = NacosBackend::new(&Url::parse(&base).unwrap()).unwrap();
    let persistent = provider_url(&s, 20211, "ephemeral=false");
    provider.do_register(&persistent).await.unwrap();
    provider
        .do_register(&provider_url(&s, 20212, ""))
        .await
        .unwrap();
    let (_, body) = raw_list_status(&addr, &ns, &format!("providers:{s}::")).await;
    let flags = ephemeral_flags(&body);
    assert_eq!(flags, [(20211, false), (20212, true)], "{body}");
    let consumer = NacosRegistry::new(&Url::parse(&base).unwrap()).unwrap();
    let mut w = Watch::subscribe(&consumer, &consumer_url(&s, "providers", "")).await;
    w.until_providers("both", T, &["127.0.0.1:20211", "127.0.0.1:20212"])
        .await;
    // The provider "dies" without deregistering: the beaten (ephemeral) instance expires on
    // this short-timeout server; the persistent one was never beaten and stays.
    drop(provider);
    let only_persistent = ["127.0.0.1:20211"];
    w.until_providers(
        "only the persistent instance",
        Duration::from_secs(30),
        &only_persistent,
    )
    .await;
    let cleaner = NacosBackend::new(&Url::parse(&base).unwrap()).unwrap();
    cleaner.do_unregister(&persistent).await.unwrap();
    w.until_no_providers("gone after the deregistration", T)
        .await;
    consumer.destroy().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_restart_providers_come_back_and_consumers_converge() {
    let Some(scripts) = tests::server_addr(
        "DUBBO_TEST_SCRIPTS",
        "server_restart_providers_come_back_and_consumers_converge",
    ) else {
        return;
    };
    let server = PrivateServer::new(scripts, "DUBBO_TEST_NACOS_RESTART_PORT");
    tokio::task::block_in_place(|| server.run("start", true));
    let addr = server.addr();
    let ns = tests::unique("nacos-restart");
    let s = iface("Restart");
    let base = format!(
        "nacos://{addr}?namespace={ns}&nacos.poll-interval=200&file-cache=false&nacos.request-timeout=1000&nacos.transport=http"
    );
    // check=false: a registration that fails during the outage is retried in the background.
    let provider = NacosRegistry::new(
        &Url::parse(&format!("{base}&nacos.beat-interval=500&check=false")).unwrap(),
    )
    .unwrap();
    let p1 = provider_url(&s, 20301, "version=1");
    provider.register(&p1).await.unwrap();
    let consumer = NacosRegistry::new(&Url::parse(&base).unwrap()).unwrap();
    let mut w = Watch::subscribe(&consumer, &consumer_url(&s, "providers", "version=1")).await;
    w.until_providers("provider before restart", T, &["127.0.0.1:20301"])
        .await;

    tokio::task::block_in_place(|| server.run("stop", false));
    tests::eventually("the consumer notices the outage", T, || async {
        (!consumer.is_available()).then_some(())
    })
    .await;
    // During the outage: the last good list stays, and a registration is retried later.
    let p2 = provider_url(&s, 20302, "version=1");
    provider.register(&p2).await.unwrap();
    assert_eq!(w.addresses("providers"), set(&["127.0.0.1:20301"]));

    tokio::task::block_in_place(|| server.run("start", false));
    // The beats re-create 20301 with its metadata, failback registers 20302.
    let both = ["127.0.0.1:20301", "127.0.0.1:20302"];
    w.until_providers(
        "both providers after restart",
        Duration::from_secs(60),
        &both,
    )
    .await;
    let (status, body) = raw_list_status(&addr, &ns, &format!("providers:{s}:1:")).await;
    assert_eq!(status, 200);
    let v: serde_json::Value = serde_json::from_str(&body).unwrap();
    for h in v["hosts"].as_array().unwrap() {
        assert_eq!(h["metadata"]["protocol"], "dubbo", "metadata survived: {h}");
        assert_eq!(h["metadata"]["application"], "contract-provider", "{h}");
    }
    provider.destroy().await;
    w.until_no_providers("empty after the provider leaves", T)
        .await;
    consumer.destroy().await;
}
