//! Connection-bound life over gRPC on real rnacos servers: auth with good and bad
//! credentials (`DUBBO_TEST_NACOS_AUTH`), a killed registering process, a connection cut
//! through a proxy, a server restart with wiped state (a private server on a free port, or
//! `DUBBO_TEST_NACOS_GRPC_RESTART_PORT`, via `$DUBBO_TEST_SCRIPTS/nacos-server.sh`), an idle
//! connection that sends only keepalives, and a server whose HTTP port is not reachable.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers outside #[test] functions

use std::time::Duration;

use registry_core::{Registry, Url};
use registry_nacos::Naming;
use tests::contract::{consumer_url, provider_url, Watch};
use tests::nacos::{grpc_port, registry, PrivateServer};
use tests::proxy::Proxy;
use tests::set;

const T: Duration = Duration::from_secs(20);

fn iface(tag: &str) -> String {
    tests::nacos::iface(&format!("grpc.{tag}"))
}

/// The child side of `a_killed_process_loses_its_instances_within_seconds`: registers and
/// waits to be killed. Run only by that test (`--ignored --exact`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "child process of a_killed_process_loses_its_instances_within_seconds"]
async fn child_registers_and_waits_to_be_killed() {
    let (Ok(url), Ok(s)) = (
        std::env::var("NACOS_CHILD_REGISTRY"),
        std::env::var("NACOS_CHILD_IFACE"),
    ) else {
        panic!("run only as a child process");
    };
    let r = registry(&url);
    r.register(&provider_url(&s, 20401, "")).await.unwrap();
    println!("child registered");
    tokio::time::sleep(Duration::from_secs(120)).await;
}

/// Kills the child on drop.
struct Child(std::process::Child);

impl Drop for Child {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_process_loses_its_instances_within_seconds() {
    let Some(addr) = tests::nacos_addr("a_killed_process_loses_its_instances_within_seconds")
    else {
        return;
    };
    let ns = tests::unique("grpc-kill");
    let s = iface("Kill");
    let url = format!("nacos://{addr}?namespace={ns}&file-cache=false");
    let child = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--ignored",
            "--exact",
            "child_registers_and_waits_to_be_killed",
            "--nocapture",
        ])
        .env("NACOS_CHILD_REGISTRY", &url)
        .env("NACOS_CHILD_IFACE", &s)
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut child = Child(child);
    let consumer = registry(&url);
    let mut w = Watch::subscribe(&consumer, &consumer_url(&s, "providers", "")).await;
    w.until_providers("the child's provider", T, &["127.0.0.1:20401"])
        .await;
    child.0.kill().unwrap(); // SIGKILL: no deregistration, the TCP connection just dies
    let killed = std::time::Instant::now();
    w.until_no_providers("the instance is gone", T).await;
    let gone = killed.elapsed();
    assert!(gone < Duration::from_secs(5), "took {gone:?}");
    consumer.destroy().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connection_cut_through_a_proxy_reconnects_and_redoes() {
    let Some(addr) = tests::nacos_addr("a_connection_cut_through_a_proxy_reconnects_and_redoes")
    else {
        return;
    };
    let ns = tests::unique("grpc-proxy");
    let s = iface("Proxy");
    let proxy = Proxy::start(format!("127.0.0.1:{}", grpc_port(&addr))).await;
    // Through the proxy: gRPC on the proxy's port (offset 0; the HTTP port is never used).
    let via = format!(
        "nacos://127.0.0.1:{}?namespace={ns}&file-cache=false&nacos.grpc-port-offset=0&nacos.request-timeout=1000",
        proxy.port
    );
    let direct = format!("nacos://{addr}?namespace={ns}&file-cache=false");
    let provider = registry(&via);
    provider
        .register(&provider_url(&s, 20411, ""))
        .await
        .unwrap();
    let watcher = registry(&via);
    let mut w = Watch::subscribe(&watcher, &consumer_url(&s, "providers", "")).await;
    w.until_providers("provider through the proxy", T, &["127.0.0.1:20411"])
        .await;
    let other = registry(&direct);
    proxy.cut();
    // Both proxied registries reconnect: the registration is redone (the server dropped it
    // with the connection) and the subscription is redone (a change after the cut arrives).
    other.register(&provider_url(&s, 20412, "")).await.unwrap();
    w.until_providers(
        "both providers after the cut",
        T,
        &["127.0.0.1:20411", "127.0.0.1:20412"],
    )
    .await;
    let Naming::Grpc(g) = &**provider.backend().naming() else {
        panic!("grpc expected");
    };
    assert!(
        g.stats()
            .connections
            .load(std::sync::atomic::Ordering::Relaxed)
            >= 2
    );
    provider.destroy().await;
    w.until_providers("empty after the provider leaves", T, &["127.0.0.1:20412"])
        .await;
    other.destroy().await;
    watcher.destroy().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_keepalives_while_idle_and_the_http_port_is_not_needed() {
    let Some(addr) =
        tests::nacos_addr("only_keepalives_while_idle_and_the_http_port_is_not_needed")
    else {
        return;
    };
    let ns = tests::unique("grpc-idle");
    let s = iface("Idle");
    // A closed HTTP port (1) with the offset that points at the real gRPC port.
    let offset = i32::from(grpc_port(&addr)) - 1;
    let url = format!(
        "nacos://127.0.0.1:1?namespace={ns}&file-cache=false&nacos.grpc-port-offset={offset}"
    );
    let r = registry(&url);
    r.backend().probe().await.unwrap();
    r.register(&provider_url(&s, 20421, "")).await.unwrap();
    let mut w = Watch::subscribe(&r, &consumer_url(&s, "providers", "")).await;
    w.until_providers("own provider", T, &["127.0.0.1:20421"])
        .await;
    assert_eq!(
        r.lookup(&consumer_url(&s, "providers", ""))
            .await
            .unwrap()
            .len(),
        1
    );
    let Naming::Grpc(g) = &**r.backend().naming() else {
        panic!("grpc expected");
    };
    let stats = g.stats();
    let before = stats
        .instance_requests
        .load(std::sync::atomic::Ordering::Relaxed);
    let hc = stats
        .health_checks
        .load(std::sync::atomic::Ordering::Relaxed);
    tests::eventually("a keepalive after 5 s idle", T, || async {
        (stats
            .health_checks
            .load(std::sync::atomic::Ordering::Relaxed)
            > hc)
            .then_some(())
    })
    .await;
    assert_eq!(
        stats
            .instance_requests
            .load(std::sync::atomic::Ordering::Relaxed),
        before,
        "no instance-list request while idle"
    );
    r.destroy().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn auth_over_grpc_with_good_and_bad_credentials() {
    let Some(addr) = tests::server_addr(
        "DUBBO_TEST_NACOS_AUTH",
        "auth_over_grpc_with_good_and_bad_credentials",
    ) else {
        return;
    };
    let ns = tests::unique("grpc-auth");
    let s = iface("Auth");
    let good = registry(&format!(
        "nacos://nacos:nacos@{addr}?namespace={ns}&file-cache=false"
    ));
    good.backend().probe().await.unwrap();
    good.register(&provider_url(&s, 20431, "")).await.unwrap();
    let mut w = Watch::subscribe(&good, &consumer_url(&s, "providers", "")).await;
    w.until_providers("provider with a token", T, &["127.0.0.1:20431"])
        .await;
    let bad = registry(&format!(
        "nacos://nacos:wrong-pw-4411@{addr}?namespace={ns}&file-cache=false"
    ));
    let e = bad.backend().probe().await.unwrap_err().to_string();
    assert!(e.contains("403") || e.contains("refused"), "{e}");
    assert!(!e.contains("wrong-pw-4411"), "{e}");
    assert!(!format!("{bad:?}").contains("wrong-pw-4411"));
    let none = registry(&format!("nacos://{addr}?namespace={ns}&file-cache=false"));
    let e = none.backend().probe().await.unwrap_err().to_string();
    assert!(e.contains("403"), "{e}");
    good.destroy().await;
    bad.destroy().await;
    none.destroy().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restart_with_wiped_state_redoes_registrations_and_subscriptions() {
    let Some(scripts) = tests::server_addr(
        "DUBBO_TEST_SCRIPTS",
        "a_restart_with_wiped_state_redoes_registrations_and_subscriptions",
    ) else {
        return;
    };
    let server = PrivateServer::new(scripts, "DUBBO_TEST_NACOS_GRPC_RESTART_PORT");
    tokio::task::block_in_place(|| server.run("start", true));
    let ns = tests::unique("grpc-restart");
    let s = iface("Restart");
    let url = format!(
        "nacos://{}?namespace={ns}&file-cache=false&nacos.request-timeout=1000&check=false",
        server.addr()
    );
    let provider = registry(&url);
    provider
        .register(&provider_url(&s, 20441, ""))
        .await
        .unwrap();
    provider
        .register(&provider_url(&s, 20442, ""))
        .await
        .unwrap();
    let consumer = registry(&url);
    let mut w = Watch::subscribe(&consumer, &consumer_url(&s, "providers", "")).await;
    let both = set(&["127.0.0.1:20441", "127.0.0.1:20442"]);
    w.until("two providers (one batch)", T, |w| {
        w.addresses("providers") == both
    })
    .await;
    tokio::task::block_in_place(|| server.run("stop", false));
    tests::eventually("the outage is noticed", T, || async {
        (!consumer.is_available()).then_some(())
    })
    .await;
    assert_eq!(
        w.addresses("providers"),
        both,
        "never blanked during the outage"
    );
    tokio::task::block_in_place(|| server.run("start", true)); // wiped state
    tests::eventually("reconnected", Duration::from_secs(60), || async {
        consumer.is_available().then_some(())
    })
    .await;
    // Redone registration and subscription: a new provider after the restart is seen too.
    provider
        .register(&provider_url(&s, 20443, ""))
        .await
        .unwrap();
    w.until_providers(
        "three providers after the restart",
        T,
        &["127.0.0.1:20441", "127.0.0.1:20442", "127.0.0.1:20443"],
    )
    .await;
    provider.destroy().await;
    w.until_no_providers("empty after the provider leaves", T)
        .await;
    consumer.destroy().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_widened_watch_sees_a_brand_new_service_quickly() {
    let Some(addr) = tests::nacos_addr("a_widened_watch_sees_a_brand_new_service_quickly") else {
        return;
    };
    let ns = tests::unique("grpc-widen");
    let s = iface("Widen");
    // What the CLI does for a bare interface name: version/group `*`, re-scan every second.
    let url = format!("nacos://{addr}?namespace={ns}&file-cache=false&nacos.scan-interval=1000");
    let watcher = registry(&url);
    let mut w = Watch::subscribe(
        &watcher,
        &consumer_url(&s, "providers", "version=*&group=*"),
    )
    .await;
    w.until_no_providers("empty at first", T).await;
    let provider = registry(&url);
    let t0 = std::time::Instant::now();
    provider
        .register(&provider_url(&s, 20451, "version=7.0&group=late"))
        .await
        .unwrap();
    w.until_providers(
        "the new service",
        Duration::from_secs(5),
        &["127.0.0.1:20451"],
    )
    .await;
    eprintln!("new service seen after {:?}", t0.elapsed());
    provider.destroy().await;
    watcher.destroy().await;
}

/// The `ephemeral` flag of every instance of `service` (v1 `instance/list`, all instances).
async fn ephemeral_flags(url: &str, service: &str) -> Vec<(i64, bool)> {
    let cfg = registry_nacos::NacosConfig::from_url(&Url::parse(url).unwrap()).unwrap();
    let client = registry_nacos::NacosClient::new(&cfg).unwrap();
    let (_, body) = client.list_instances_raw(service).await.unwrap();
    tests::nacos::ephemeral_flags(&body)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_persistent_instance_goes_over_v1_http_on_rnacos_and_outlives_the_connection() {
    let Some(addr) = tests::nacos_addr(
        "a_persistent_instance_goes_over_v1_http_on_rnacos_and_outlives_the_connection",
    ) else {
        return;
    };
    let ns = tests::unique("grpc-persist");
    let s = iface("Persist");
    let service = format!("providers:{s}::");
    let url = format!("nacos://{addr}?namespace={ns}&file-cache=false");
    let consumer = registry(&url);
    let mut w = Watch::subscribe(&consumer, &consumer_url(&s, "providers", "")).await;
    w.until_no_providers("empty at first", T).await;
    // rnacos advertises no `supportPersistentInstanceByGrpc`: the persistent instance goes
    // through the v1 HTTP API (as nacos-client does), the ephemeral one over gRPC.
    let provider = registry(&url);
    let persistent = provider_url(&s, 20461, "ephemeral=false");
    provider.register(&persistent).await.unwrap();
    provider
        .register(&provider_url(&s, 20462, ""))
        .await
        .unwrap();
    w.until_providers("both instances", T, &["127.0.0.1:20461", "127.0.0.1:20462"])
        .await;
    assert_eq!(
        ephemeral_flags(&url, &service).await,
        [(20461, false), (20462, true)]
    );
    // Closing the provider's connection without deregistering: the ephemeral instance goes
    // at once, the persistent one stays.
    drop(provider);
    w.until_providers("only the persistent instance", T, &["127.0.0.1:20461"])
        .await;
    // Another registry removes it (v1 HTTP deregister with ephemeral=false).
    let cleaner = registry(&url);
    cleaner.unregister(&persistent).await.unwrap();
    w.until_no_providers("empty again", T).await;
    assert!(ephemeral_flags(&url, &service).await.is_empty());
    cleaner.destroy().await;
    consumer.destroy().await;
}
