//! The application-level pipeline end to end on the in-process backends (`memory://`
//! instances and metadata report, `remote` storage): mapping followed live, instances and
//! revisions, the URLs a `RegistryDirectory` gets and the invokers it keeps.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use app_discovery::{
    AppDiscoveryOptions, AppOptions, MetadataInfo, MetadataReport, MetadataResolver,
    MetadataServiceClients, ReportLayout, ResolverOptions, ServiceDiscoveryRegistry, ServiceInfo,
};
use invoker::directory::Directory;
use invoker::rpc::Invocation;
use registry_core::instance::{REVISION_KEY, STORAGE_TYPE_KEY};
use registry_core::{
    InstanceDiscovery, MemoryConfigCenter, MemoryInstanceDiscovery, Registry, ServiceInstance, Url,
};
use tests::contract::Watch;

const T: Duration = Duration::from_secs(10);
const IFACE: &str = "com.foo.Greeter";

struct World {
    instances: Arc<MemoryInstanceDiscovery>,
    report: MetadataReport,
    registry: ServiceDiscoveryRegistry,
}

fn fast_options() -> (ResolverOptions, AppDiscoveryOptions) {
    let r = ResolverOptions {
        attempts: 2,
        attempt_interval: Duration::from_millis(20),
        timeout: Duration::from_millis(500),
        ..ResolverOptions::default()
    };
    let a = AppDiscoveryOptions {
        app: AppOptions {
            retry_interval: Duration::from_millis(200),
            ..AppOptions::default()
        },
        subscribe_wait: Duration::from_secs(3),
        ..AppDiscoveryOptions::default()
    };
    (r, a)
}

fn world(registry_params: &str) -> World {
    let instances = Arc::new(MemoryInstanceDiscovery::new());
    let report = MetadataReport::new(Arc::new(MemoryConfigCenter::new()), ReportLayout::Tree);
    let (ro, ao) = fast_options();
    let resolver = MetadataResolver::new(Some(report.clone()), MetadataServiceClients::new(), ro);
    let url = Url::parse(&format!("memory://app-pipeline?{registry_params}")).unwrap();
    let registry =
        ServiceDiscoveryRegistry::new(url, instances.clone(), Some(report.clone()), resolver, ao);
    World {
        instances,
        report,
        registry,
    }
}

fn service(iface: &str, version: Option<&str>, extra: &[(&str, &str)]) -> ServiceInfo {
    let mut s = ServiceInfo::new(iface, "dubbo");
    s.version = version.map(str::to_owned);
    s.params.insert("side".into(), "provider".into());
    s.params.insert("interface".into(), iface.into());
    for (k, v) in extra {
        s.params.insert((*k).into(), (*v).into());
    }
    s
}

fn instance(app: &str, port: i32, rev: &str) -> ServiceInstance {
    let mut m = BTreeMap::new();
    m.insert(REVISION_KEY.to_owned(), rev.to_owned());
    m.insert(STORAGE_TYPE_KEY.to_owned(), "remote".to_owned());
    ServiceInstance::new(app, "127.0.0.1", port, m)
}

fn consumer(extra: &str) -> Url {
    Url::parse(&format!(
        "consumer://127.0.0.1/{IFACE}?interface={IFACE}&category=providers,configurators,routers&check=false{extra}"
    ))
    .unwrap()
}

impl World {
    async fn publish(&self, app: &str, rev: &str, services: Vec<ServiceInfo>) {
        self.report
            .publish_app_metadata(&MetadataInfo::new(app, rev, services))
            .await
            .unwrap();
    }
}

fn ports(w: &Watch) -> Vec<i32> {
    let mut v: Vec<i32> = w
        .latest("providers")
        .unwrap_or(&[])
        .iter()
        .filter(|u| u.protocol() != Some("empty"))
        .map(|u| u.port())
        .collect();
    v.sort_unstable();
    v
}

async fn until_ports(w: &mut Watch, what: &str, want: &[i32]) {
    let want = want.to_vec();
    w.until(what, T, move |w| ports(w) == want).await;
}

#[tokio::test]
async fn mapping_waits_then_follows_additions_and_removals() {
    let w = world("");
    w.publish("a1", "r1", vec![service(IFACE, None, &[])]).await;
    w.publish("a2", "r1", vec![service(IFACE, None, &[])]).await;
    w.instances
        .register(&instance("a1", 1001, "r1"))
        .await
        .unwrap();
    w.instances
        .register(&instance("a2", 2001, "r1"))
        .await
        .unwrap();

    // No mapping yet: subscribing is fine and publishes nothing (not even empty://). The
    // subscription's first evaluation happens before `subscribe` returns.
    let mut watch = Watch::subscribe(&w.registry, &consumer("")).await;
    watch.drain();
    assert!(
        watch.latest("providers").is_none(),
        "an empty mapping waits"
    );

    w.report.add_mapping(IFACE, "a1").await.unwrap();
    until_ports(&mut watch, "a1 subscribed", &[1001]).await;
    w.report.add_mapping(IFACE, "a2").await.unwrap();
    until_ports(&mut watch, "a2 added live", &[1001, 2001]).await;

    // An operator removes a1 from the mapping: it is unsubscribed (Java never acts on this).
    w.report.set_mapping(IFACE, &["a2"]).await.unwrap();
    until_ports(&mut watch, "a1 removed", &[2001]).await;
    // A deleted mapping keeps what is followed (no information is not "no provider").
    w.report.set_mapping(IFACE, &[]).await.unwrap();
    w.instances
        .register(&instance("a2", 2002, "r1"))
        .await
        .unwrap();
    until_ports(&mut watch, "a2 still followed", &[2001, 2002]).await;
}

#[tokio::test]
async fn matching_follows_version_group_and_protocol() {
    let w = world("");
    let mut tri = service(IFACE, Some("1.0.0"), &[]);
    tri.protocol = Some("tri".into());
    let mut grouped = service(IFACE, Some("1.0.0"), &[]);
    grouped.group = Some("g".into());
    w.publish(
        "shop",
        "r1",
        vec![
            service(IFACE, Some("1.0.0"), &[]),
            tri,
            grouped,
            service(IFACE, Some("2.0.0"), &[]),
            service("com.foo.Other", None, &[]),
        ],
    )
    .await;
    w.report.add_mapping(IFACE, "shop").await.unwrap();
    w.instances
        .register(&instance("shop", 7001, "r1"))
        .await
        .unwrap();

    let mut v1 = Watch::subscribe(&w.registry, &consumer("&version=1.0.0")).await;
    v1.until("v1 urls", T, |w| w.latest("providers").is_some())
        .await;
    let urls = v1.latest("providers").unwrap().to_vec();
    let protos: Vec<_> = urls.iter().map(|u| u.protocol_str().to_owned()).collect();
    assert_eq!(
        protos,
        vec!["dubbo", "tri"],
        "no group, version 1.0.0, any protocol: {urls:?}"
    );
    assert!(urls
        .iter()
        .all(|u| u.param("interface") == Some(IFACE) && u.version() == Some("1.0.0")));

    let mut any =
        Watch::subscribe(&w.registry, &consumer("&version=*&group=*&protocol=dubbo")).await;
    any.until("any urls", T, |w| {
        w.latest("providers").is_some_and(|l| l.len() == 3)
    })
    .await;
    let mut none = Watch::subscribe(&w.registry, &consumer("&version=3.0.0")).await;
    none.drain();
    assert!(
        none.latest("providers").is_none(),
        "nothing matched and nothing changed: no list"
    );
    // A later change of the application gives that subscription an explicit empty://.
    w.instances
        .register(&instance("shop", 7002, "r1"))
        .await
        .unwrap();
    none.until("empty:// after a change", T, |w| {
        w.is_empty_marker("providers")
    })
    .await;
}

#[tokio::test]
async fn provided_by_and_subscribed_services() {
    let w = world("subscribed-services=fallback");
    for app in ["pinned", "fallback", "mapped"] {
        w.publish(app, "r", vec![service(IFACE, None, &[])]).await;
    }
    w.instances
        .register(&instance("pinned", 1, "r"))
        .await
        .unwrap();
    w.instances
        .register(&instance("fallback", 2, "r"))
        .await
        .unwrap();
    w.instances
        .register(&instance("mapped", 3, "r"))
        .await
        .unwrap();

    let mut fb = Watch::subscribe(&w.registry, &consumer("")).await;
    until_ports(&mut fb, "subscribed-services while unmapped", &[2]).await;
    let mut pinned = Watch::subscribe(&w.registry, &consumer("&provided-by=pinned")).await;
    until_ports(&mut pinned, "provided-by", &[1]).await;
    w.report.add_mapping(IFACE, "mapped").await.unwrap();
    until_ports(&mut fb, "the mapping replaces the fallback", &[3]).await;
    pinned.drain();
    assert_eq!(ports(&pinned), vec![1], "provided-by ignores the mapping");
}

#[tokio::test]
async fn a_revision_change_keeps_urls_and_invokers_when_nothing_they_use_changed() {
    let w = world("");
    w.report.add_mapping(IFACE, "shop").await.unwrap();
    let s = vec![service(IFACE, None, &[("timeout", "3000")])];
    w.publish("shop", "r1", s.clone()).await;
    w.publish("shop", "r2", s.clone()).await;
    w.instances
        .register(&instance("shop", 1, "r1"))
        .await
        .unwrap();
    w.instances
        .register(&instance("shop", 2, "r1"))
        .await
        .unwrap();
    let registry: Arc<dyn Registry> = Arc::new(w.registry.clone());
    let (factory, dir) = tests::recording::subscribe(registry, IFACE).await;
    assert!(dir.wait_ready_for(T).await);
    assert_eq!(dir.invoker_urls().len(), 2);
    let sorted = |mut v: Vec<Url>| {
        v.sort_by_key(|u| u.port());
        v
    };
    let before: Vec<Url> = sorted(dir.invoker_urls());

    // Rolling restart of instance 1 onto r2 with the same services: same URL, same invoker.
    w.instances
        .register(&instance("shop", 1, "r2"))
        .await
        .unwrap();
    tests::eventually("revision r2 applied", T, || async {
        let s = w.registry.describe_app("shop", T).await;
        s.revisions
            .iter()
            .any(|r| &*r.revision == "r2")
            .then_some(())
    })
    .await;
    assert_eq!(sorted(dir.invoker_urls()), before);
    assert_eq!(
        factory.referred_at_port(1),
        (1, 0),
        "the invoker of the unchanged provider is kept"
    );

    // r3 changes a parameter: that provider's invoker is replaced.
    w.publish(
        "shop",
        "r3",
        vec![service(IFACE, None, &[("timeout", "5000")])],
    )
    .await;
    w.instances
        .register(&instance("shop", 1, "r3"))
        .await
        .unwrap();
    tests::eventually("r3 applied", T, || async {
        dir.invoker_urls()
            .iter()
            .any(|u| u.param("timeout") == Some("5000"))
            .then_some(())
    })
    .await;
    assert_eq!(factory.referred_at_port(1), (2, 1), "replaced");
    assert_eq!(factory.referred_at_port(2), (1, 0), "untouched");
    let r = dir.list(&Invocation::new("greet")).unwrap();
    assert_eq!(r.len(), 2);
}

#[tokio::test]
async fn an_unresolved_revision_keeps_known_addresses_and_is_retried() {
    let w = world("");
    w.report.add_mapping(IFACE, "shop").await.unwrap();
    w.publish("shop", "r1", vec![service(IFACE, None, &[])])
        .await;
    w.instances
        .register(&instance("shop", 1, "r1"))
        .await
        .unwrap();
    w.instances
        .register(&instance("shop", 2, "r1"))
        .await
        .unwrap();
    let mut watch = Watch::subscribe(&w.registry, &consumer("")).await;
    until_ports(&mut watch, "both", &[1, 2]).await;

    // Instance 2 restarts with revision r2 whose metadata is not stored yet, and a new
    // instance 3 appears with r2: 2 keeps its r1 URLs, 3 waits.
    w.instances
        .register(&instance("shop", 2, "r2"))
        .await
        .unwrap();
    w.instances
        .register(&instance("shop", 3, "r2"))
        .await
        .unwrap();
    tests::eventually("r2 failed once", T, || async {
        let s = w.registry.describe_app("shop", T).await;
        s.unresolved
            .iter()
            .any(|u| &*u.revision == "r2" && u.error.is_some())
            .then_some(())
    })
    .await;
    watch.drain();
    assert_eq!(
        ports(&watch),
        vec![1, 2],
        "known addresses kept, the new one waits"
    );
    let snap = w.registry.describe_app("shop", T).await;
    let r1 = snap
        .revisions
        .iter()
        .find(|r| &*r.revision == "r1")
        .unwrap();
    assert_eq!(r1.stale, vec!["127.0.0.1:2".to_owned()]);

    // The provider writes r2 late: the background retry picks it up.
    w.publish("shop", "r2", vec![service(IFACE, None, &[("new", "yes")])])
        .await;
    until_ports(&mut watch, "r2 resolved", &[1, 2, 3]).await;
    let urls = watch.latest("providers").unwrap();
    assert!(urls
        .iter()
        .filter(|u| u.port() != 1)
        .all(|u| u.param("new") == Some("yes")));
}

#[tokio::test]
async fn a_full_restart_onto_a_new_revision_never_publishes_an_empty_list() {
    let w = world("");
    w.report.add_mapping(IFACE, "shop").await.unwrap();
    w.publish("shop", "r1", vec![service(IFACE, None, &[])])
        .await;
    w.instances
        .register(&instance("shop", 1, "r1"))
        .await
        .unwrap();
    let mut watch = Watch::subscribe(&w.registry, &consumer("")).await;
    until_ports(&mut watch, "r1", &[1]).await;

    // The only provider dies and comes back on another port with an unresolvable revision:
    // the consumer keeps the last list (dead address) rather than an empty one, as Java does
    // when every revision fails, until the metadata resolves.
    w.instances
        .unregister(&instance("shop", 1, "r1"))
        .await
        .unwrap();
    w.instances
        .register(&instance("shop", 5, "r9"))
        .await
        .unwrap();
    tests::eventually("r9 failed once", T, || async {
        let s = w.registry.describe_app("shop", T).await;
        s.unresolved
            .iter()
            .any(|u| &*u.revision == "r9" && u.error.is_some())
            .then_some(())
    })
    .await;
    watch.drain();
    assert_eq!(ports(&watch), vec![1]);
    w.publish("shop", "r9", vec![service(IFACE, None, &[])])
        .await;
    until_ports(&mut watch, "new revision resolved", &[5]).await;
    assert!(
        !watch.history().iter().any(|n| n.is_empty_marker()),
        "no empty:// was ever published"
    );

    // Gone for good: empty://.
    w.instances
        .unregister(&instance("shop", 5, "r9"))
        .await
        .unwrap();
    watch
        .until("empty", T, |w| w.is_empty_marker("providers"))
        .await;
}

#[tokio::test]
async fn subscriptions_share_one_application_and_one_fetch_per_revision() {
    let w = world("");
    for i in 0..20 {
        let iface = format!("com.foo.S{i}");
        w.report.add_mapping(&iface, "big").await.unwrap();
    }
    let services: Vec<ServiceInfo> = (0..20)
        .map(|i| service(&format!("com.foo.S{i}"), None, &[]))
        .collect();
    w.publish("big", "r1", services).await;
    for p in 0..10 {
        w.instances
            .register(&instance("big", 100 + p, "r1"))
            .await
            .unwrap();
    }
    let mut watches = Vec::new();
    for i in 0..20 {
        let c = Url::parse(&format!(
            "consumer://127.0.0.1/com.foo.S{i}?interface=com.foo.S{i}&check=false"
        ))
        .unwrap();
        watches.push(Watch::subscribe(&w.registry, &c).await);
    }
    for w in &mut watches {
        w.until("10 providers", T, |w| {
            w.latest("providers").is_some_and(|l| l.len() == 10)
        })
        .await;
    }
    assert_eq!(
        w.registry.resolver().fetch_attempts(),
        1,
        "one fetch for the revision"
    );
}

#[tokio::test]
async fn one_instance_per_protocol_gives_each_provider_once() {
    // dubbo-go's shape: one instance per protocol port, both announcing both endpoints.
    let w = world("");
    w.report.add_mapping(IFACE, "go").await.unwrap();
    let mut tri = service(IFACE, None, &[]);
    tri.protocol = Some("tri".into());
    w.publish("go", "r", vec![service(IFACE, None, &[]), tri])
        .await;
    for port in [7001, 7002] {
        let i = instance("go", port, "r").with_metadata(
            registry_core::instance::ENDPOINTS_KEY,
            r#"[{"port":7001,"protocol":"dubbo"},{"port":7002,"protocol":"tri"}]"#,
        );
        w.instances.register(&i).await.unwrap();
    }
    let mut watch = Watch::subscribe(&w.registry, &consumer("")).await;
    watch
        .until("two providers", T, |w| w.latest("providers").is_some())
        .await;
    let mut got: Vec<String> = watch
        .latest("providers")
        .unwrap()
        .iter()
        .map(|u| format!("{}:{}", u.protocol_str(), u.port()))
        .collect();
    got.sort();
    assert_eq!(got, vec!["dubbo:7001", "tri:7002"]);
}

/// A MetadataService that answers only when let through (`gate`), with one service.
#[derive(Debug)]
struct Gated {
    gate: Arc<tokio::sync::Semaphore>,
}

#[async_trait::async_trait]
impl app_discovery::MetadataServiceClient for Gated {
    async fn get_metadata_info(
        &self,
        _url: &Url,
        revision: &str,
    ) -> app_discovery::Result<MetadataInfo> {
        self.gate.acquire().await.unwrap().forget();
        Ok(MetadataInfo::new(
            "shop",
            revision,
            vec![service(IFACE, None, &[])],
        ))
    }
}

fn local_instance(port: i32, rev: &str) -> ServiceInstance {
    let mut m = BTreeMap::new();
    m.insert(REVISION_KEY.to_owned(), rev.to_owned());
    m.insert(
        "dubbo.endpoints".to_owned(),
        format!(
            r#"[{{"port":{port},"protocol":"dubbo"}},{{"port":{},"protocol":"tri"}}]"#,
            port + 1000
        ),
    );
    ServiceInstance::new("shop", "127.0.0.1", port, m)
}

fn ahead(w: &Watch) -> Vec<String> {
    w.latest("preconnect")
        .unwrap_or(&[])
        .iter()
        .filter(|u| u.protocol() != Some("empty"))
        .map(|u| u.to_string())
        .collect()
}

#[tokio::test]
async fn new_instances_are_announced_for_preconnect_while_their_metadata_is_fetched() {
    let instances = Arc::new(MemoryInstanceDiscovery::new());
    let report = MetadataReport::new(Arc::new(MemoryConfigCenter::new()), ReportLayout::Tree);
    let gate = Arc::new(tokio::sync::Semaphore::new(1));
    let clients =
        MetadataServiceClients::new().with_v1("dubbo", Arc::new(Gated { gate: gate.clone() }));
    let (ro, ao) = fast_options();
    let registry = ServiceDiscoveryRegistry::new(
        Url::parse("memory://app-preconnect").unwrap(),
        instances.clone(),
        Some(report.clone()),
        MetadataResolver::new(Some(report.clone()), clients, ro),
        ao,
    );
    report.add_mapping(IFACE, "shop").await.unwrap();
    instances.register(&local_instance(1, "r1")).await.unwrap();
    let mut watch = Watch::subscribe(&registry, &consumer("&preconnect=true")).await;
    let mut plain = Watch::subscribe(&registry, &consumer("")).await;
    until_ports(&mut watch, "r1 resolved", &[1]).await;
    // The first list comes with nothing announced ahead.
    watch.drain();
    assert!(
        watch.latest("preconnect").is_none(),
        "{:?}",
        watch.history()
    );

    // A new instance on a new revision whose MetadataService does not answer yet: its
    // endpoints are announced, the providers stay as they were.
    instances.register(&local_instance(2, "r2")).await.unwrap();
    watch
        .until("the new instance announced", T, |w| {
            ahead(w) == ["dubbo://127.0.0.1:2", "tri://127.0.0.1:1002"]
        })
        .await;
    assert_eq!(ports(&watch), vec![1]);
    // A known address restarted onto a revision not resolved yet keeps its URLs and is not
    // announced (it has its connections).
    instances.register(&local_instance(1, "r3")).await.unwrap();
    tests::eventually("r3 pending", T, || async {
        let s = registry.describe_app("shop", T).await;
        s.unresolved
            .iter()
            .any(|u| &*u.revision == "r3")
            .then_some(())
    })
    .await;
    watch.drain();
    assert_eq!(
        ahead(&watch),
        ["dubbo://127.0.0.1:2", "tri://127.0.0.1:1002"]
    );

    // The MetadataService answers: the providers list has the new instance, then nothing is
    // announced any more.
    gate.add_permits(2);
    until_ports(&mut watch, "r2 resolved", &[1, 2]).await;
    watch
        .until("nothing announced", T, |w| w.is_empty_marker("preconnect"))
        .await;
    let h = watch.history();
    let listed = h
        .iter()
        .position(|n| &*n.category == "providers" && n.urls.iter().any(|u| u.port() == 2))
        .expect("a providers list with the new instance");
    let withdrawn = h
        .iter()
        .position(|n| &*n.category == "preconnect" && n.is_empty_marker())
        .expect("the announcement withdrawn");
    assert!(
        listed < withdrawn,
        "the providers list comes before the announcement is withdrawn: {h:?}"
    );
    // A subscription that did not ask sees providers only.
    until_ports(&mut plain, "plain: r2 resolved", &[1, 2]).await;
    plain.drain();
    assert!(plain.history().iter().all(|n| &*n.category == "providers"));
}
