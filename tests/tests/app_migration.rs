//! Migration between discovery levels on the in-process backends: the default
//! `APPLICATION_FIRST` with its per-call fallback, `proportion`, rules published live in the
//! config centre (steps, threshold, force, interface and application sub-rules), a refused
//! switch keeping the previous step, an application-level-only registry, and the local rule
//! file (`migration.file`, Java's `dubbo.migration.file`) the config centre overrides.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use app_discovery::migration::{Level, MigrationReference, ReferenceConfig, MIGRATION_GROUP};
use app_discovery::{
    AppDiscoveryOptions, MetadataInfo, MetadataReport, MetadataResolver, MetadataServiceClients,
    MigrationStep, ReportLayout, ResolverOptions, ServiceDiscoveryRegistry, ServiceInfo,
};
use async_trait::async_trait;
use invoker::directory::DirectoryOptions;
use invoker::rpc::{
    Invocation, Invoker, InvokerFactory, RpcError, RpcResponse, RpcResult, SharedInvoker,
};
use registry_core::instance::{REVISION_KEY, STORAGE_TYPE_KEY};
use registry_core::{
    ConfigCenter, InstanceDiscovery, MemoryConfigCenter, MemoryInstanceDiscovery, Registry,
    ServiceInstance, Url,
};

const T: Duration = Duration::from_secs(10);
const IFACE: &str = "com.foo.Greeter";

/// Invokers that answer with their port and are available unless their port is "down".
#[derive(Debug, Default)]
struct Ports {
    down: Mutex<BTreeSet<i32>>,
    calls: Mutex<BTreeMap<i32, usize>>,
}

#[derive(Debug)]
struct PortInvoker {
    url: Url,
    ports: Arc<Ports>,
}

#[async_trait]
impl Invoker for PortInvoker {
    fn url(&self) -> &Url {
        &self.url
    }
    fn is_available(&self) -> bool {
        !self.ports.down.lock().unwrap().contains(&self.url.port())
    }
    async fn invoke(&self, _inv: &Invocation) -> RpcResult {
        *self
            .ports
            .calls
            .lock()
            .unwrap()
            .entry(self.url.port())
            .or_default() += 1;
        Ok(RpcResponse::new(serde_json::json!(self.url.port())))
    }
}

#[derive(Debug)]
struct PortFactory(Arc<Ports>);

impl InvokerFactory for PortFactory {
    fn refer(&self, provider: &Url) -> Result<SharedInvoker, RpcError> {
        Ok(Arc::new(PortInvoker {
            url: provider.clone(),
            ports: self.0.clone(),
        }))
    }
}

struct World {
    interface: Arc<dyn Registry>,
    instances: Arc<MemoryInstanceDiscovery>,
    app: ServiceDiscoveryRegistry,
    cc: Arc<MemoryConfigCenter>,
    ports: Arc<Ports>,
}

/// Interface-level providers on ports 1xxx, application-level on 2xxx.
async fn world(iface_ports: &[i32], app_ports: &[i32]) -> World {
    let name = tests::unique("mig");
    let interface: Arc<dyn registry_core::Registry> = Arc::new(
        registry_core::MemoryRegistry::from_url(&Url::parse(&format!("memory://{name}")).unwrap()),
    );
    for p in iface_ports {
        let u = Url::parse(&format!(
            "dubbo://127.0.0.1:{p}/{IFACE}?interface={IFACE}&side=provider&application=shop"
        ))
        .unwrap();
        interface.register(&u).await.unwrap();
    }
    let instances = Arc::new(MemoryInstanceDiscovery::new());
    let report = MetadataReport::new(Arc::new(MemoryConfigCenter::new()), ReportLayout::Tree);
    report.add_mapping(IFACE, "shop").await.unwrap();
    let mut s = ServiceInfo::new(IFACE, "dubbo");
    s.params.insert("side".into(), "provider".into());
    report
        .publish_app_metadata(&MetadataInfo::new("shop", "r1", [s]))
        .await
        .unwrap();
    let w = World {
        app: ServiceDiscoveryRegistry::new(
            Url::parse(&format!("memory://{name}")).unwrap(),
            instances.clone(),
            Some(report.clone()),
            MetadataResolver::new(
                Some(report.clone()),
                MetadataServiceClients::new(),
                ResolverOptions::default(),
            ),
            AppDiscoveryOptions::default(),
        ),
        interface,
        instances,
        cc: Arc::new(MemoryConfigCenter::new()),
        ports: Arc::default(),
    };
    for p in app_ports {
        w.add_instance(*p).await;
    }
    w
}

impl World {
    async fn add_instance(&self, port: i32) {
        let mut m = BTreeMap::new();
        m.insert(REVISION_KEY.to_owned(), "r1".to_owned());
        m.insert(STORAGE_TYPE_KEY.to_owned(), "remote".to_owned());
        self.instances
            .register(&ServiceInstance::new("shop", "127.0.0.1", port, m))
            .await
            .unwrap();
    }

    async fn open(&self, extra: &str, interface: bool) -> MigrationReference {
        self.try_open(extra, interface).await.unwrap()
    }

    async fn try_open(&self, extra: &str, interface: bool) -> Result<MigrationReference, RpcError> {
        let consumer = Url::parse(&format!(
            "consumer://127.0.0.1/{IFACE}?interface={IFACE}&application=demo-consumer&check=false{extra}"
        ))
        .unwrap();
        MigrationReference::open(ReferenceConfig {
            consumer,
            factory: Arc::new(PortFactory(self.ports.clone())),
            options: DirectoryOptions {
                register: false,
                ready_timeout: T,
                ..DirectoryOptions::default()
            },
            interface_registry: interface.then(|| self.interface.clone()),
            app_registry: Some(self.app.clone()),
            config_center: Some(self.cc.clone()),
            rule_wait: T,
        })
        .await
    }

    async fn rule(&self, yaml: Option<&str>) {
        match yaml {
            Some(y) => self
                .cc
                .publish("demo-consumer.migration", MIGRATION_GROUP, y)
                .await
                .unwrap(),
            None => self
                .cc
                .remove("demo-consumer.migration", MIGRATION_GROUP)
                .await
                .unwrap(),
        }
    }
}

/// The level and the ports of `n` calls through the migration directory.
fn levels(r: &MigrationReference, n: usize) -> (BTreeMap<&'static str, usize>, BTreeSet<i32>) {
    let d = r.directory();
    let mut by_level = BTreeMap::new();
    let mut ports = BTreeSet::new();
    for _ in 0..n {
        let (level, set) = d.list_level(&Invocation::new("greet")).unwrap();
        let name = match level {
            Level::Interface => "interface",
            Level::Application => "application",
        };
        *by_level.entry(name).or_default() += 1;
        ports.extend(set.invokers().iter().map(|i| i.url().port()));
    }
    (by_level, ports)
}

async fn until_step(r: &MigrationReference, step: MigrationStep) {
    tests::eventually(&format!("step {step}"), T, || async {
        (r.directory().step() == step).then_some(())
    })
    .await;
}

#[tokio::test]
async fn application_first_prefers_the_app_level_and_falls_back_per_call() {
    let w = world(&[1001], &[2001, 2002]).await;
    let r = w.open("", true).await;
    assert_eq!(r.directory().step(), MigrationStep::ApplicationFirst);
    tests::eventually("app level preferred", T, || async {
        r.directory().prefers_application().then_some(())
    })
    .await;
    let (l, ports) = levels(&r, 20);
    assert_eq!(l.get("application"), Some(&20));
    assert_eq!(ports, [2001, 2002].into());

    // Every application-level invoker unavailable: this call falls back to the interface level.
    w.ports.down.lock().unwrap().extend([2001, 2002]);
    let (l, ports) = levels(&r, 5);
    assert_eq!(l.get("interface"), Some(&5));
    assert_eq!(ports, [1001].into());
    // Back up: back to the application level, without any rule change.
    w.ports.down.lock().unwrap().clear();
    assert_eq!(levels(&r, 5).0.get("application"), Some(&5));

    // And through a real cluster: calls answer from the application level.
    let cluster = invoker::cluster::join(r.directory() as Arc<dyn invoker::directory::Directory>);
    let v = cluster
        .invoke(&Invocation::new("greet"))
        .await
        .unwrap()
        .value;
    assert!(v == 2001 || v == 2002, "{v}");
}

#[tokio::test]
async fn application_first_uses_the_interface_level_while_the_app_level_is_empty() {
    let w = world(&[1001], &[]).await;
    let r = w.open("", true).await;
    assert!(!r.directory().prefers_application());
    assert_eq!(levels(&r, 3).0.get("interface"), Some(&3));
    // A provider registers at application level: the preference follows the directory.
    w.add_instance(2001).await;
    tests::eventually("app level preferred after its first address", T, || async {
        r.directory().prefers_application().then_some(())
    })
    .await;
    assert_eq!(levels(&r, 3).1, [2001].into());
}

#[tokio::test]
async fn proportion_sends_a_share_of_calls_to_the_interface_level() {
    let w = world(&[1001], &[2001]).await;
    let r = w.open("&migration.promotion=30", true).await;
    tests::eventually("app level preferred", T, || async {
        r.directory().prefers_application().then_some(())
    })
    .await;
    let (l, _) = levels(&r, 2000);
    let app = *l.get("application").unwrap_or(&0) as f64 / 2000.0;
    assert!(
        (0.25..0.35).contains(&app),
        "about 30 % on the application level: {l:?}"
    );
}

#[tokio::test]
async fn rules_published_live_move_between_steps() {
    let w = world(&[1001, 1002], &[2001]).await;
    let r = w.open("", true).await;

    w.rule(Some("step: FORCE_INTERFACE")).await;
    until_step(&r, MigrationStep::ForceInterface).await;
    assert!(
        r.directory().application_directory().is_none(),
        "app level destroyed"
    );
    assert_eq!(levels(&r, 4).1, [1001, 1002].into());

    // 1 app-level address for 2 interface-level ones: below a 0.9 threshold, refused.
    w.rule(Some("step: FORCE_APPLICATION\nthreshold: 0.9"))
        .await;
    tests::eventually("refused switch leaves the interface level", T, || async {
        let d = r.directory();
        (d.step() == MigrationStep::ForceInterface && d.application_directory().is_none())
            .then_some(())
    })
    .await;
    // force: switches regardless, and the interface level goes.
    w.rule(Some("step: FORCE_APPLICATION\nthreshold: 0.9\nforce: true"))
        .await;
    until_step(&r, MigrationStep::ForceApplication).await;
    assert!(r.directory().interface_directory().is_none());
    assert_eq!(levels(&r, 4).1, [2001].into());

    // A garbage rule keeps the step; deleting the rule goes back to the default.
    w.rule(Some("step: [oops")).await;
    w.rule(None).await;
    until_step(&r, MigrationStep::ApplicationFirst).await;
    assert!(r.directory().interface_directory().is_some());
}

#[tokio::test]
async fn interface_and_application_sub_rules() {
    let w = world(&[1001], &[2001]).await;
    let r = w.open("&version=1.0.0", true).await;
    // The interface sub-rule is keyed interface:version (no group) and wins over the top level.
    w.rule(Some(&format!(
        "step: FORCE_APPLICATION\nforce: true\ninterfaces:\n  - serviceKey: {IFACE}:1.0.0\n    step: FORCE_INTERFACE\n"
    )))
    .await;
    until_step(&r, MigrationStep::ForceInterface).await;
    // An application sub-rule for the mapped provider application.
    w.rule(Some(
        "step: FORCE_INTERFACE\napplications:\n  - serviceKey: shop\n    step: FORCE_APPLICATION\n    force: true\n",
    ))
    .await;
    until_step(&r, MigrationStep::ForceApplication).await;
    // A sub-rule for another application does not apply.
    w.rule(Some(
        "step: FORCE_INTERFACE\nforce: true\napplications:\n  - serviceKey: other\n    step: FORCE_APPLICATION\n",
    ))
    .await;
    until_step(&r, MigrationStep::ForceInterface).await;
}

#[tokio::test]
async fn an_application_level_registry_is_always_force_application() {
    let w = world(&[1001], &[2001]).await;
    let r = w.open("", false).await;
    assert_eq!(r.directory().step(), MigrationStep::ForceApplication);
    w.rule(Some("step: FORCE_INTERFACE\nforce: true")).await;
    // The rule is read, and the step stays.
    tests::eventually("rule applied", T, || async {
        (r.rule().await.values.step == Some(MigrationStep::ForceInterface)).then_some(())
    })
    .await;
    assert_eq!(r.directory().step(), MigrationStep::ForceApplication);
    assert_eq!(levels(&r, 2).1, [2001].into());
}

#[tokio::test]
async fn a_delayed_switch_waits_then_compares() {
    let w = world(&[1001], &[2001]).await;
    let r = w.open("", true).await;
    w.rule(Some("step: FORCE_INTERFACE")).await;
    until_step(&r, MigrationStep::ForceInterface).await;
    // FORCE_APPLICATION with a delay: the application level is subscribed at once, compared
    // after `delay` seconds (1 address vs 1: ratio 1 >= 0.5), then switched.
    let published = std::time::Instant::now();
    w.rule(Some("step: FORCE_APPLICATION\ndelay: 1\nthreshold: 0.5"))
        .await;
    until_step(&r, MigrationStep::ForceApplication).await;
    assert!(
        published.elapsed() >= Duration::from_secs(1),
        "switched after {:?}, before the rule's delay",
        published.elapsed()
    );
    assert!(r.directory().interface_directory().is_none());
    assert_eq!(levels(&r, 2).1, [2001].into());
}

/// A file holding `text`, removed when dropped.
struct RuleFile(std::path::PathBuf);

impl RuleFile {
    fn new(text: &str) -> RuleFile {
        let p = std::env::temp_dir().join(format!("{}.yaml", tests::unique("migration-file")));
        std::fs::write(&p, text).unwrap();
        RuleFile(p)
    }
    fn param(&self) -> String {
        format!("&migration.file={}", self.0.display())
    }
}

impl Drop for RuleFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

#[tokio::test]
async fn a_local_rule_file_applies_until_the_config_centre_has_a_rule() {
    let w = world(&[1001], &[2001]).await;
    let file = RuleFile::new("key: demo-consumer\nstep: FORCE_INTERFACE\n");
    let r = w.open(&file.param(), true).await;
    assert_eq!(r.directory().step(), MigrationStep::ForceInterface);
    assert!(r.directory().application_directory().is_none());
    assert_eq!(levels(&r, 4).1, [1001].into());
    // The config centre's rule replaces it ...
    w.rule(Some("step: FORCE_APPLICATION\nforce: true")).await;
    until_step(&r, MigrationStep::ForceApplication).await;
    assert_eq!(levels(&r, 4).1, [2001].into());
    // ... and deleting that rule goes back to the defaults, as Java goes back to its init rule.
    w.rule(None).await;
    until_step(&r, MigrationStep::ApplicationFirst).await;

    // A rule already in the config centre wins over the file from the start.
    let w = world(&[1001], &[2001]).await;
    w.rule(Some("step: FORCE_APPLICATION\nforce: true")).await;
    let r = w.open(&file.param(), true).await;
    assert_eq!(r.directory().step(), MigrationStep::ForceApplication);
}

#[tokio::test]
async fn the_registry_url_may_name_the_rule_file() {
    let name = tests::unique("mig-file-reg");
    let file = RuleFile::new("step: FORCE_APPLICATION\n");
    let consumer = Url::parse(&format!(
        "consumer://127.0.0.1/{IFACE}?interface={IFACE}&application=demo-consumer"
    ))
    .unwrap();
    let registry = Url::parse(&format!("memory://{name}?{}", &file.param()[1..])).unwrap();
    let rule = app_discovery::migration::local_rule(&consumer, &registry)
        .unwrap()
        .unwrap();
    assert_eq!(rule.values.step, Some(MigrationStep::ForceApplication));
    // The consumer's own parameter comes first.
    let other = RuleFile::new("step: FORCE_INTERFACE\n");
    let consumer = Url::parse(&format!("{consumer}{}", other.param())).unwrap();
    let rule = app_discovery::migration::local_rule(&consumer, &registry)
        .unwrap()
        .unwrap();
    assert_eq!(rule.values.step, Some(MigrationStep::ForceInterface));
    let none = Url::parse("memory://x").unwrap();
    assert!(app_discovery::migration::local_rule(&none, &none)
        .unwrap()
        .is_none());
}

#[tokio::test]
async fn a_bad_rule_file_is_a_clear_error() {
    let w = world(&[1001], &[2001]).await;
    let missing = std::env::temp_dir().join(tests::unique("no-such-migration-file"));
    let e = w
        .try_open(&format!("&migration.file={}", missing.display()), true)
        .await
        .unwrap_err();
    assert!(e.to_string().contains("migration rule file"), "{e}");
    let garbage = RuleFile::new("step: SOMETIMES\n");
    let e = w.try_open(&garbage.param(), true).await.unwrap_err();
    assert!(e.to_string().contains("SOMETIMES"), "{e}");
    // Past the bounds of every rule: a document nested deeper than 50.
    let deep = RuleFile::new(&format!(
        "step: FORCE_INTERFACE\nx: {}1{}\n",
        "[".repeat(60),
        "]".repeat(60)
    ));
    let e = w.try_open(&deep.param(), true).await.unwrap_err();
    assert!(e.to_string().contains("nested"), "{e}");
    // Larger than a rule may be: refused without reading it whole.
    let big = RuleFile::new(&format!(
        "step: FORCE_INTERFACE\nkey: {}\n",
        "k".repeat(2 << 20)
    ));
    let e = w.try_open(&big.param(), true).await.unwrap_err();
    assert!(e.to_string().contains("limit"), "{e}");
    // Checked even while the config centre has a rule (the file is not needed yet).
    w.rule(Some("step: FORCE_INTERFACE")).await;
    let e = w.try_open(&garbage.param(), true).await.unwrap_err();
    assert!(e.to_string().contains("SOMETIMES"), "{e}");
}
