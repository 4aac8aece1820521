//! A long-lived application-level consumer (the library: `ServiceDiscoveryRegistry` →
//! `RegistryDirectory` → `MigrationReference` → cluster → Dubbo2) following real Apache Dubbo
//! 3.3.6 Java providers on the real ZooKeeper: a rolling restart onto new revisions never
//! leaves it without a provider nor with a stale one; an instance announcing a revision its
//! MetadataService cannot answer keeps serving with what is known; migration rules published
//! in the config centre move calls between the levels live; a second application added to the
//! interface's mapping is followed live; MetadataService v1 is called over Triple.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::Arc;
use std::time::Duration;

use app_discovery::migration::{Level, MigrationReference, MIGRATION_GROUP};
use app_discovery::{
    AppDiscoveryOptions, InvokerMetadataClient, MetadataReport, MetadataResolver,
    MetadataServiceClients, MigrationStep, ReportLayout, ResolverOptions, ServiceDiscoveryRegistry,
};
use common::app::{java_provider, ports, revision, served};
use invoker::directory::Directory;
use invoker::rpc::Invocation;
use registry_core::{Registry, SharedConfigCenter, Url};
use registry_zk::{ZkConfigCenter, ZkServiceDiscovery, ZookeeperRegistry};
use tests::peers::JavaProvider;

const DEMO: &str = "com.example.peer.DemoService";
const T: Duration = Duration::from_secs(60);

/// Both levels and the config centre of one ZooKeeper root, wired as `dubbo-registry` does.
struct Levels {
    reg: Url,
    interface: Arc<dyn Registry>,
    app: ServiceDiscoveryRegistry,
    cc: SharedConfigCenter,
}

async fn levels(reg: &str) -> Levels {
    let dubbo = Arc::new(protocol_dubbo::DubboInvokerFactory::new());
    let clients = MetadataServiceClients::new()
        .with_v1("dubbo", Arc::new(InvokerMetadataClient::new(dubbo)))
        .with_v2(Arc::new(protocol_triple::MetadataServiceV2Client::new()));
    levels_with(reg, clients).await
}

/// [`levels`] with the given MetadataService clients.
async fn levels_with(reg: &str, clients: MetadataServiceClients) -> Levels {
    let url = Url::parse(reg).unwrap();
    let root = registry_zk::config_center::metadata_root(&url);
    let report_cc = ZkConfigCenter::connect_with_root(&url, &root)
        .await
        .unwrap();
    let report = MetadataReport::new(Arc::new(report_cc), ReportLayout::Tree);
    let resolver = MetadataResolver::new(
        Some(report.clone()),
        clients,
        ResolverOptions {
            timeout: Duration::from_secs(2),
            ..ResolverOptions::default()
        },
    );
    let app = ServiceDiscoveryRegistry::new(
        url.clone(),
        Arc::new(ZkServiceDiscovery::connect(&url).await.unwrap()),
        Some(report),
        resolver,
        AppDiscoveryOptions {
            app: app_discovery::AppOptions {
                retry_interval: Duration::from_secs(1),
                ..Default::default()
            },
            ..AppDiscoveryOptions::default()
        },
    );
    Levels {
        interface: Arc::new(ZookeeperRegistry::connect(&url).await.unwrap()),
        cc: Arc::new(ZkConfigCenter::connect(&url).await.unwrap()),
        app,
        reg: url,
    }
}

async fn reference(l: &Levels, app: &str) -> MigrationReference {
    common::app::dubbo_reference(
        DEMO,
        app,
        Some(l.interface.clone()),
        Some(l.app.clone()),
        Some(l.cc.clone()),
        Duration::from_secs(10),
    )
    .await
}

/// A Java provider of `app` with `mode`, on the pinned `ports` (dubbo, tri, metadata), with a
/// service parameter `param` (another value: another revision).
async fn provider(
    test: &str,
    reg: &str,
    app: &str,
    mode: &str,
    ports: &[String; 3],
    param: &str,
) -> Option<JavaProvider> {
    java_provider(
        test,
        reg,
        app,
        mode,
        &["demo"],
        &[
            "--dubbo-port",
            &ports[0],
            "--tri-port",
            &ports[1],
            "--metadata-port",
            &ports[2],
            "--param",
            param,
        ],
    )
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rolling_restart_onto_new_revisions_never_leaves_the_consumer_without_a_provider() {
    let Some(addr) = tests::zk_addr("rolling_restart") else {
        return;
    };
    let reg = format!("zookeeper://{addr}?group={}", tests::unique("appjava-roll"));
    let app = tests::unique("roll");
    let (pa, pb) = (ports(), ports());
    let Some(a) = provider("roll-a", &reg, &app, "instance", &pa, "v=1").await else {
        return;
    };
    let Some(b) = provider("roll-b", &reg, &app, "instance", &pb, "v=1").await else {
        return;
    };
    let l = levels(&reg).await;
    let r = reference(&l, "roll-consumer").await;
    let cluster = invoker::cluster::join(r.directory() as Arc<dyn Directory>);
    assert_eq!(
        cluster
            .invoke(
                &Invocation::new("sayHello")
                    .with_arguments(vec!["java.lang.String".into()], vec!["x".into()])
            )
            .await
            .unwrap()
            .value,
        "Hello x"
    );

    // Calls every 10 ms through the whole restart; record every failure.
    let caller = common::app::Caller::start(cluster.clone());
    let (rev_a, rev_b) = (revision(&a), revision(&b));
    // Restart A, then B, each on its own ports with a changed parameter: a new revision.
    common::app::stop(a).await;
    let Some(a2) = provider("roll-a2", &reg, &app, "instance", &pa, "v=2").await else {
        return;
    };
    assert_ne!(revision(&a2), rev_a);
    tests::eventually("A on its new revision", T, || async {
        served(&l.app, &app, false)
            .await
            .iter()
            .any(|(ad, rv)| ad.ends_with(&pa[0]) && *rv == revision(&a2))
            .then_some(())
    })
    .await;
    // As an operator restarts the next one only once the last is back: the reference itself
    // lists A again (its MetadataInfo fetched, its URLs in the directory).
    let a2_addr = format!("127.0.0.1:{}", pa[0]);
    tests::eventually("the reference lists A again", T, || async {
        let dir = r.directory().application_directory()?;
        dir.invoker_urls()
            .iter()
            .any(|u| u.address().as_deref() == Some(a2_addr.as_str()))
            .then_some(())
    })
    .await;
    common::app::stop(b).await;
    let Some(b2) = provider("roll-b2", &reg, &app, "instance", &pb, "v=2").await else {
        return;
    };
    assert_ne!(revision(&b2), rev_b);
    let want = {
        let mut w = vec![
            (format!("127.0.0.1:{}", pa[0]), revision(&a2)),
            (format!("127.0.0.1:{}", pb[0]), revision(&b2)),
        ];
        w.sort();
        w
    };
    tests::eventually("both on their new revisions, nothing stale", T, || async {
        (served(&l.app, &app, false).await == want).then_some(())
    })
    .await;
    // Calls after the restart reach both providers.
    caller.answers_again(T).await;
    let (ok, f) = caller.finish().await;
    assert!(
        f.iter().all(|e| !e.contains("No provider")),
        "the consumer was left without a provider: {f:?}"
    );
    assert!(ok > 20, "calls kept being served");
    // The directory holds exactly the two live providers.
    let dir = r.directory().application_directory().unwrap();
    let mut addrs: Vec<String> = dir
        .invoker_urls()
        .iter()
        .filter_map(|u| u.address())
        .collect();
    addrs.sort();
    assert_eq!(
        addrs,
        want.iter().map(|(a, _)| a.clone()).collect::<Vec<_>>()
    );
    drop((a2, b2));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unanswerable_revision_keeps_the_known_addresses() {
    let Some(addr) = tests::zk_addr("unanswerable_revision") else {
        return;
    };
    let root = tests::unique("appjava-bogus");
    let reg = format!("zookeeper://{addr}?group={root}");
    let app = tests::unique("bogus");
    let pp = ports();
    let Some(p) = provider("bogus", &reg, &app, "instance", &pp, "v=1").await else {
        return;
    };
    let l = levels(&reg).await;
    let r = reference(&l, "bogus-consumer").await;
    let cluster = invoker::cluster::join(r.directory() as Arc<dyn Directory>);
    let call = || async {
        cluster
            .invoke(
                &Invocation::new("sayHello")
                    .with_arguments(vec!["java.lang.String".into()], vec!["y".into()]),
            )
            .await
    };
    assert_eq!(call().await.unwrap().value, "Hello y");

    // The instance node now announces a revision its MetadataService does not know.
    let zk = registry_zk::testing::client::Client::connect(&addr)
        .await
        .unwrap();
    let node = format!("/{root}/{app}/127.0.0.1:{}", pp[0]);
    let (data, _) = zk.get_data(&node).await.unwrap();
    let mut v: serde_json::Value = serde_json::from_slice(&data).unwrap();
    v["payload"]["metadata"]["dubbo.metadata.revision"] = "no-such-revision".into();
    zk.set_data(&node, v.to_string().as_bytes(), None)
        .await
        .unwrap();
    tests::eventually("the revision is unresolved", T, || async {
        let s = l.app.describe_app(&app, Duration::from_secs(1)).await;
        s.unresolved
            .iter()
            .any(|u| &*u.revision == "no-such-revision" && u.error.is_some())
            .then_some(())
    })
    .await;
    // Still served, with the addresses known from the last good revision.
    assert_eq!(call().await.unwrap().value, "Hello y");
    let s = l.app.describe_app(&app, Duration::from_secs(1)).await;
    assert_eq!(s.revisions.len(), 1);
    assert_eq!(&*s.revisions[0].revision, revision(&p).as_str());
    assert_eq!(s.revisions[0].stale, vec![format!("127.0.0.1:{}", pp[0])]);

    // The real revision back: resolved again, nothing stale.
    zk.set_data(&node, &data, None).await.unwrap();
    tests::eventually("resolved again", T, || async {
        let s = l.app.describe_app(&app, Duration::from_secs(1)).await;
        (s.unresolved.is_empty() && s.revisions.iter().all(|r| r.stale.is_empty())).then_some(())
    })
    .await;
    assert_eq!(call().await.unwrap().value, "Hello y");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn migration_rules_move_calls_between_levels_live() {
    let Some(addr) = tests::zk_addr("migration_live") else {
        return;
    };
    let reg = format!("zookeeper://{addr}?group={}", tests::unique("appjava-mig"));
    let app = tests::unique("mig");
    // register-mode=all: the provider is at both levels (Java 3.3's default).
    let Some(p) = provider("mig", &reg, &app, "all", &ports(), "v=1").await else {
        return;
    };
    let l = levels(&reg).await;
    let r = reference(&l, "mig-consumer").await;
    let d = r.directory();
    let level = || d.list_level(&Invocation::new("whoAmI")).unwrap().0;
    assert_eq!(d.step(), MigrationStep::ApplicationFirst);
    tests::eventually("application level preferred", T, || async {
        (level() == Level::Application).then_some(())
    })
    .await;
    let cluster = invoker::cluster::join(d.clone() as Arc<dyn Directory>);
    let who = cluster
        .invoke(&Invocation::new("whoAmI"))
        .await
        .unwrap()
        .value;
    assert!(who.as_str().unwrap().contains(&app), "{who}");

    let key = "mig-consumer.migration";
    l.cc.publish(key, MIGRATION_GROUP, "step: FORCE_INTERFACE")
        .await
        .unwrap();
    tests::eventually("FORCE_INTERFACE", T, || async {
        (d.step() == MigrationStep::ForceInterface && level() == Level::Interface).then_some(())
    })
    .await;
    assert!(d.application_directory().is_none());
    assert_eq!(
        cluster
            .invoke(&Invocation::new("whoAmI"))
            .await
            .unwrap()
            .value,
        who
    );

    l.cc.publish(key, MIGRATION_GROUP, "step: FORCE_APPLICATION")
        .await
        .unwrap();
    tests::eventually("FORCE_APPLICATION", T, || async {
        (d.step() == MigrationStep::ForceApplication && level() == Level::Application).then_some(())
    })
    .await;
    assert!(d.interface_directory().is_none());
    assert_eq!(
        cluster
            .invoke(&Invocation::new("whoAmI"))
            .await
            .unwrap()
            .value,
        who
    );

    l.cc.remove(key, MIGRATION_GROUP).await.unwrap();
    tests::eventually("back to APPLICATION_FIRST", T, || async {
        (d.step() == MigrationStep::ApplicationFirst && d.interface_directory().is_some())
            .then_some(())
    })
    .await;
    drop(p);
    let _ = &l.reg;
}

/// A consumer without a MetadataService v2 client calls v1 (`getMetadataInfo(String)`, Hessian2
/// in Triple's wrapper mode) on the Java provider's `tri` metadata port, where Java 3.3.6
/// exports v1 beside v2.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metadata_service_v1_over_triple() {
    let Some(addr) = tests::zk_addr("v1_over_triple") else {
        return;
    };
    let reg = format!(
        "zookeeper://{addr}?group={}",
        tests::unique("appjava-v1tri")
    );
    let app = tests::unique("v1tri");
    let Some(p) = provider("v1tri", &reg, &app, "instance", &ports(), "v=1").await else {
        return;
    };
    assert_eq!(common::app::instance_metadata(&p)["meta-v"], "2.0.0");
    let tri = Arc::new(protocol_triple::TripleInvokerFactory::new(
        protocol_triple::PayloadMode::Wrapper,
    ));
    let clients =
        MetadataServiceClients::new().with_v1("tri", Arc::new(InvokerMetadataClient::new(tri)));
    let l = levels_with(&reg, clients).await;
    let snap = l.app.describe_app(&app, T).await;
    assert!(snap.unresolved.is_empty(), "{:?}", snap.unresolved);
    assert_eq!(snap.revisions.len(), 1);
    assert_eq!(&*snap.revisions[0].revision, revision(&p).as_str());
    assert!(snap.revisions[0]
        .metadata
        .services
        .values()
        .any(|s| s.name == DEMO));
    let r = reference(&l, "v1tri-consumer").await;
    let cluster = invoker::cluster::join(r.directory() as Arc<dyn Directory>);
    let v = cluster
        .invoke(
            &Invocation::new("sayHello")
                .with_arguments(vec!["java.lang.String".into()], vec!["v1".into()]),
        )
        .await
        .unwrap()
        .value;
    assert_eq!(v, "Hello v1");
}

/// The mapping followed live: a consumer subscribed while only application A provides the
/// interface starts calling application B's provider as soon as B registers (Java's provider
/// adds itself to `<root>/mapping/<interface>`), then keeps only B once A stops.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_application_in_the_mapping_is_followed_live() {
    let Some(addr) = tests::zk_addr("mapping_live") else {
        return;
    };
    let reg = format!("zookeeper://{addr}?group={}", tests::unique("appjava-map"));
    let (app_a, app_b) = (tests::unique("mapa"), tests::unique("mapb"));
    let Some(a) = provider("map-a", &reg, &app_a, "instance", &ports(), "v=1").await else {
        return;
    };
    let l = levels(&reg).await;
    let r = reference(&l, "map-consumer").await;
    let cluster = invoker::cluster::join(r.directory() as Arc<dyn Directory>);
    let who = || {
        let cluster = cluster.clone();
        async move {
            cluster
                .invoke(&Invocation::new("whoAmI"))
                .await
                .map(|v| v.value.as_str().unwrap_or("").to_owned())
                .unwrap_or_default()
        }
    };
    assert!(who().await.starts_with(&app_a));
    let Some(b) = provider("map-b", &reg, &app_b, "instance", &ports(), "v=1").await else {
        return;
    };
    let dir = r.directory().application_directory().unwrap();
    tests::eventually("B's provider joins the directory", T, || async {
        (dir.invoker_count() == 2).then_some(())
    })
    .await;
    assert_eq!(r.directory().step(), MigrationStep::ApplicationFirst);
    common::app::stop(a).await;
    tests::eventually("only B's provider answers", T, || async {
        (dir.invoker_count() == 1 && who().await.starts_with(&app_b)).then_some(())
    })
    .await;
    drop(b);
}
