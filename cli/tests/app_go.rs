//! Application-level discovery against real dubbo-go 3.3.2 providers registered with
//! `registry-type=service` only (ZooKeeper and the Nacos-compatible test server): dubbo-go
//! registers one instance per protocol, each announcing every protocol's port, and serves
//! MetadataService v1 over Dubbo2. `dubbo-registry list` shows each provider once (as Java
//! keeps one invoker per service and address), `invoke` calls it, and the Java 3.3.6 consumer
//! sees the same providers. With `metadata-type=remote` the MetadataInfo is read from the
//! report dubbo-go writes (ZooKeeper: its own layout, which the Java consumer cannot read).
//! A rolling restart of dubbo-go providers onto new revisions, followed by a long-lived
//! consumer calling in a loop, never leaves it without a provider (dubbo-go #3615) nor with a
//! stale one (dubbo-go #3468).

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use app_discovery::migration::MigrationReference;
use app_discovery::{
    AppDiscoveryOptions, InvokerMetadataClient, MetadataReport, MetadataResolver,
    MetadataServiceClients, MigrationStep, ReportLayout, ResolverOptions, ServiceDiscoveryRegistry,
};
use common::app::{java_list, ports, run, served};
use invoker::directory::Directory;
use invoker::rpc::Invocation;
use registry_core::Url;
use registry_zk::{ZkConfigCenter, ZkServiceDiscovery};
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

const ECHO: &str = "com.example.peer.EchoService";
const T: Duration = Duration::from_secs(60);

/// A dubbo-go provider of `app` at application level on the pinned `ports` (dubbo, tri,
/// metadata) serving `services` with the parameter `param`.
async fn go_provider(
    test: &str,
    reg: &str,
    app: &str,
    ports: &[String; 3],
    services: &[&str],
    param: (&str, &str),
) -> Option<GoProvider> {
    let opts = ProviderOptions {
        registry: Some(reg.to_owned()),
        app: app.to_owned(),
        register_mode: Some("service".to_owned()),
        services: services.iter().map(|s| (*s).to_owned()).collect(),
        params: vec![(param.0.to_owned(), param.1.to_owned())],
        // Later flags win: the ports stay the same across a restart.
        extra: [
            "--dubbo-port",
            &ports[0],
            "--tri-port",
            &ports[1],
            "--metadata-port",
            &ports[2],
        ]
        .iter()
        .map(|s| (*s).to_owned())
        .collect(),
        ..ProviderOptions::default()
    };
    GoProvider::start(test, &opts).await
}

/// An application-level-only reference (`FORCE_APPLICATION`) to `service` over Dubbo2.
async fn go_reference(app: &ServiceDiscoveryRegistry, service: &str) -> MigrationReference {
    common::app::dubbo_reference(
        service,
        "go-roll-consumer",
        None,
        Some(app.clone()),
        None,
        Duration::from_secs(1),
    )
    .await
}

/// The addresses a reference's application-level directory holds.
fn held(r: &MigrationReference) -> BTreeSet<String> {
    r.directory()
        .application_directory()
        .map(|d| {
            d.invoker_urls()
                .iter()
                .filter_map(|u| u.address())
                .collect()
        })
        .unwrap_or_default()
}

/// A stopped provider is dropped by both references (nothing stale), the other one stays
/// (never empty) and answers a call.
async fn gone(
    demo: &MigrationReference,
    echo: &MigrationReference,
    demo_left: BTreeSet<String>,
    echo_left: BTreeSet<String>,
) {
    tests::eventually(
        "the stopped provider dropped, the other kept",
        T,
        || async { (held(demo) == demo_left && held(echo) == echo_left).then_some(()) },
    )
    .await;
    let cluster = invoker::cluster::join(demo.directory() as Arc<dyn Directory>);
    let who = cluster
        .invoke(&Invocation::new("whoAmI"))
        .await
        .unwrap()
        .value;
    let port = demo_left
        .iter()
        .next()
        .unwrap()
        .rsplit(':')
        .next()
        .unwrap()
        .to_owned();
    assert!(
        who.as_str().unwrap().contains(&port),
        "{who} from {demo_left:?}"
    );
}

/// A rolling restart of two dubbo-go 3.3.2 providers (registry-type=service, local metadata,
/// MetadataService v1 over Dubbo2), each restarted on its own ports serving a smaller
/// interface set (DemoService only, no more EchoService) with a changed parameter, so its
/// instances announce a new revision: a consumer calling DemoService every 10 ms never has
/// zero providers (sampled every millisecond) and never fails for lack of one (#3615); after
/// each restart nothing of the old revision stays: the EchoService reference drops the
/// restarted provider, and DemoService holds exactly the live providers (#3468).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dubbo_go_rolling_restart_never_empty_never_stale() {
    let Some(addr) = tests::zk_addr("dubbo_go_rolling") else {
        return;
    };
    let reg = format!("zookeeper://{addr}?group={}", tests::unique("appgo-roll"));
    let app = tests::unique("goroll").replace('-', "_");
    let (pa, pb) = (ports(), ports());
    let Some(a) = go_provider("goroll-a", &reg, &app, &pa, &["demo", "echo"], ("v", "1")).await
    else {
        return;
    };
    let Some(b) = go_provider("goroll-b", &reg, &app, &pb, &["demo", "echo"], ("v", "1")).await
    else {
        return;
    };
    let url = Url::parse(&reg).unwrap();
    let dubbo = Arc::new(protocol_dubbo::DubboInvokerFactory::new());
    let clients = MetadataServiceClients::new()
        .with_v1("dubbo", Arc::new(InvokerMetadataClient::new(dubbo)))
        .with_v2(Arc::new(protocol_triple::MetadataServiceV2Client::new()));
    let root = registry_zk::config_center::metadata_root(&url);
    let report = MetadataReport::new(
        Arc::new(
            ZkConfigCenter::connect_with_root(&url, &root)
                .await
                .unwrap(),
        ),
        ReportLayout::Tree,
    );
    let l = ServiceDiscoveryRegistry::new(
        url.clone(),
        Arc::new(ZkServiceDiscovery::connect(&url).await.unwrap()),
        Some(report.clone()),
        MetadataResolver::new(Some(report), clients, ResolverOptions::default()),
        AppDiscoveryOptions::default(),
    );
    let demo = go_reference(&l, DEMO).await;
    let echo = go_reference(&l, ECHO).await;
    assert_eq!(demo.directory().step(), MigrationStep::ForceApplication);
    let addr_of = |p: &[String; 3]| format!("127.0.0.1:{}", p[0]);
    let both: BTreeSet<String> = [addr_of(&pa), addr_of(&pb)].into();
    tests::eventually("both providers held", T, || async {
        (held(&demo) == both && held(&echo) == both).then_some(())
    })
    .await;
    let before = served(&l, &app, true).await;
    eprintln!("rolling restart: both held, revisions {before:?}");

    // Calls every 10 ms, and the provider count sampled every millisecond, throughout.
    let stop = Arc::new(AtomicBool::new(false));
    let empty_seen = Arc::new(AtomicUsize::new(0));
    let caller = common::app::Caller::start(invoker::cluster::join(
        demo.directory() as Arc<dyn Directory>
    ));
    let sampler = {
        let (stop, empty_seen) = (stop.clone(), empty_seen.clone());
        let dir = demo.directory().application_directory().unwrap();
        tokio::spawn(async move {
            while !stop.load(Ordering::Relaxed) {
                if dir.invoker_count() == 0 {
                    empty_seen.fetch_add(1, Ordering::Relaxed);
                }
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
        })
    };

    // Restart A: DemoService only, another parameter: a new revision on the same ports.
    let mut a = a;
    a.process.terminate(Duration::from_secs(30)).await;
    gone(&demo, &echo, [addr_of(&pb)].into(), [addr_of(&pb)].into()).await;
    eprintln!("rolling restart: A stopped, B alone");
    let Some(a2) = go_provider("goroll-a2", &reg, &app, &pa, &["demo"], ("v", "2")).await else {
        return;
    };
    tests::eventually(
        "A on its new revision, EchoService no longer at A",
        T,
        || async {
            let now = served(&l, &app, true).await;
            let a_now: BTreeSet<&String> = now
                .iter()
                .filter(|(ad, _)| ad.ends_with(&format!(":{}", pa[0])))
                .map(|(_, r)| r)
                .collect();
            let a_before: BTreeSet<&String> = before
                .iter()
                .filter(|(ad, _)| ad.ends_with(&format!(":{}", pa[0])))
                .map(|(_, r)| r)
                .collect();
            (!a_now.is_empty()
                && a_now.is_disjoint(&a_before)
                && held(&echo) == [addr_of(&pb)].into()
                && held(&demo) == both)
                .then_some(())
        },
    )
    .await;

    // Then B, the same way.
    let mut b = b;
    b.process.terminate(Duration::from_secs(30)).await;
    gone(&demo, &echo, [addr_of(&pa)].into(), BTreeSet::new()).await;
    eprintln!("rolling restart: B stopped, A alone");
    let Some(b2) = go_provider("goroll-b2", &reg, &app, &pb, &["demo"], ("v", "2")).await else {
        return;
    };
    tests::eventually(
        "B on its new revision, EchoService served by nobody",
        T,
        || async {
            let now = served(&l, &app, true).await;
            let old: BTreeSet<&String> = before.iter().map(|(_, r)| r).collect();
            (now.len() >= 2
                && now.iter().all(|(_, r)| !old.contains(r))
                && held(&echo).is_empty()
                && held(&demo) == both)
                .then_some(())
        },
    )
    .await;
    // Calls keep being served after the restart.
    caller.answers_again(T).await;
    stop.store(true, Ordering::Relaxed);
    let (ok, f) = caller.finish().await;
    sampler.await.unwrap();
    eprintln!(
        "rolling restart: done, revisions {:?}, {ok} calls served",
        served(&l, &app, true).await,
    );
    assert_eq!(
        empty_seen.load(Ordering::Relaxed),
        0,
        "the DemoService directory was seen empty during the restart"
    );
    assert!(
        f.iter().all(|e| !e.contains("No provider")),
        "the consumer was left without a provider: {f:?}"
    );
    assert!(ok > 0, "calls kept being served");
    // The restarted providers answer the calls: nothing is stuck on a gone connection.
    let whoami = invoker::cluster::join(demo.directory() as Arc<dyn Directory>);
    let mut answered = BTreeSet::new();
    for _ in 0..50 {
        if let Ok(r) = whoami.invoke(&Invocation::new("whoAmI")).await {
            answered.insert(r.value.as_str().unwrap_or("").to_owned());
        }
    }
    assert!(answered.iter().all(|w| w.starts_with(&app)), "{answered:?}");
    drop((a, b, a2, b2));
}
