//! Application-level discovery against real Apache Dubbo 3.3.6 Java providers registered with
//! `register-mode=instance` only, on the Nacos-compatible test server (`DUBBO_TEST_NACOS`):
//! the application is the Nacos service `<app>`, the mapping a config (`<interface>`, group
//! `mapping`), `remote` metadata a config (`<app>`, group `<revision>`). `dubbo-registry list`
//! and `invoke` find and call them, as the Java consumer does; the migration rule in the Nacos
//! config centre chooses the level, at start and when it changes while a consumer runs.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use app_discovery::migration::{Level, MigrationReference, ReferenceConfig, MIGRATION_GROUP};
use app_discovery::{
    AppDiscoveryOptions, InvokerMetadataClient, MetadataReport, MetadataResolver,
    MetadataServiceClients, MigrationStep, ReportLayout, ResolverOptions, ServiceDiscoveryRegistry,
};
use common::app::{java_list, java_provider, revision, run};
use invoker::directory::{Directory, DirectoryOptions};
use invoker::rpc::{Invocation, InvokerFactory};
use registry_core::{ConfigCenter, Url};
use registry_nacos::{NacosConfigCenter, NacosRegistry, NacosServiceDiscovery};

const DEMO: &str = "com.example.peer.DemoService";

async fn found_and_called(tag: &str, extra: &[&str]) {
    let Some(addr) = tests::nacos_addr(tag) else {
        return;
    };
    let ns = tests::unique(tag);
    let reg = format!("nacos://{addr}?namespace={ns}");
    let app = tests::unique("shop").replace('-', "_");
    let Some(p) = java_provider(tag, &reg, &app, "instance", &["demo", "echo"], extra).await else {
        return;
    };
    let want: BTreeSet<(String, String)> = [
        ("dubbo".to_owned(), format!("127.0.0.1:{}", p.dubbo_port)),
        ("tri".to_owned(), format!("127.0.0.1:{}", p.tri_port)),
    ]
    .into();
    // The mapping and the instance may reach the server a moment after READY.
    let mut rows = Vec::new();
    for _ in 0..60 {
        let listed = run(&["list", &reg, DEMO, "--json", "--level", "application"]).await;
        assert_eq!(listed.code, 0, "{}", listed.stderr);
        rows = listed.json().as_array().unwrap().clone();
        if rows.len() == 2 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    let seen: BTreeSet<(String, String)> = rows
        .iter()
        .map(|r| {
            assert_eq!(r["application"], app.as_str(), "{r}");
            assert_eq!(r["revision"], revision(&p).as_str(), "{r}");
            let url = r["url"].as_str().unwrap();
            (
                url.split("://").next().unwrap().to_owned(),
                r["address"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(seen, want, "{rows:?}");
    let called = run(&["invoke", &reg, DEMO, "sayHello", "[\"nacos\"]", "--json"]).await;
    assert_eq!(called.code, 0, "{} {}", called.stdout, called.stderr);
    let v = called.json();
    assert_eq!(v["result"], "Hello nacos");
    assert_eq!(v["level"], "application");
    assert_eq!(v["application"], app.as_str());
    let (java, java_seen) = java_list(&format!("{tag}-java"), &reg, DEMO, Some(2))
        .await
        .expect("the Java consumer");
    assert_eq!(java_seen, want, "the Java consumer saw {java}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nacos_instance_mode_with_local_metadata() {
    found_and_called("appjava-nacos-local", &[]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nacos_instance_mode_with_remote_metadata() {
    found_and_called("appjava-nacos-remote", &["--metadata-type", "remote"]).await;
}

/// The migration rule in the Nacos config centre (data id `<consumer app>.migration`, group
/// `DUBBO_SERVICEDISCOVERY_MIGRATION`) chooses the level `invoke` calls through, for a Java
/// provider registered at both levels (`register-mode=all`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nacos_migration_rule_chooses_the_level() {
    let tag = "appjava-nacos-mig";
    let Some(addr) = tests::nacos_addr(tag) else {
        return;
    };
    let reg = format!("nacos://{addr}?namespace={}", tests::unique(tag));
    let app = tests::unique("shop").replace('-', "_");
    let Some(_p) = java_provider(tag, &reg, &app, "all", &["demo"], &[]).await else {
        return;
    };
    // Both levels listed (registration and mapping may land a moment after READY).
    let mut levels = BTreeSet::new();
    for _ in 0..60 {
        let listed = run(&["list", &reg, DEMO, "--json", "--level", "all"]).await;
        levels = listed
            .json()
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["level"].as_str().unwrap().to_owned())
            .collect();
        if levels.len() == 2 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    assert_eq!(
        levels,
        ["application".to_owned(), "interface".to_owned()].into()
    );
    let consumer = tests::unique("nacos-mig-consumer");
    let key = format!("{consumer}.migration");
    // `--migration-file`: the file's rule while the config centre has none, and the config
    // centre's rule once it has one.
    let file = std::env::temp_dir().join(format!("{}.yaml", tests::unique("migration-file")));
    std::fs::write(&file, "step: FORCE_INTERFACE\n").unwrap();
    let file = file.display().to_string();
    let with_file = || async {
        let called = run(&[
            "invoke",
            &reg,
            DEMO,
            "sayHello",
            "[\"file\"]",
            "--application",
            &consumer,
            "--migration-file",
            &file,
            "--json",
        ])
        .await;
        assert_eq!(called.code, 0, "{} {}", called.stdout, called.stderr);
        called.json()["level"].as_str().unwrap().to_owned()
    };
    assert_eq!(with_file().await, "interface");
    for (step, level) in [
        ("FORCE_INTERFACE", "interface"),
        ("FORCE_APPLICATION", "application"),
    ] {
        let put = run(&[
            "config",
            "put",
            &reg,
            &key,
            "--group",
            "DUBBO_SERVICEDISCOVERY_MIGRATION",
            "--value",
            &format!("key: {consumer}\nstep: {step}\n"),
        ])
        .await;
        assert_eq!(put.code, 0, "{}", put.stderr);
        let called = run(&[
            "invoke",
            &reg,
            DEMO,
            "sayHello",
            "[\"mig\"]",
            "--application",
            &consumer,
            "--json",
        ])
        .await;
        assert_eq!(called.code, 0, "{} {}", called.stdout, called.stderr);
        let v = called.json();
        assert_eq!(v["result"], "Hello mig");
        assert_eq!(v["level"], level, "{step}: {v}");
    }
    // The config centre now says FORCE_APPLICATION: it wins over the file.
    assert_eq!(with_file().await, "application");
    let _ = std::fs::remove_file(&file);
}

/// The migration rule changed while a consumer runs, on Nacos: a long-lived reference (both
/// levels and the config centre of one namespace, wired as `dubbo-registry` does) to a Java
/// provider registered at both levels follows `FORCE_INTERFACE` → `FORCE_APPLICATION` →
/// `APPLICATION_FIRST` and back, each published to `<consumer app>.migration` in group
/// `DUBBO_SERVICEDISCOVERY_MIGRATION`; after each change every call goes to the level the
/// step says, and the level a step does not use is unsubscribed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nacos_migration_rule_changed_live() {
    let tag = "appjava-nacos-mig-live";
    let Some(addr) = tests::nacos_addr(tag) else {
        return;
    };
    let reg = format!("nacos://{addr}?namespace={}", tests::unique(tag));
    let app = tests::unique("live").replace('-', "_");
    let Some(_p) = java_provider(tag, &reg, &app, "all", &["demo"], &[]).await else {
        return;
    };
    let url = Url::parse(&reg).unwrap();
    let dubbo = Arc::new(protocol_dubbo::DubboInvokerFactory::new());
    let clients = MetadataServiceClients::new()
        .with_v1("dubbo", Arc::new(InvokerMetadataClient::new(dubbo.clone())))
        .with_v2(Arc::new(protocol_triple::MetadataServiceV2Client::new()));
    let report = MetadataReport::new(
        Arc::new(NacosConfigCenter::connect(&url).await.unwrap()),
        ReportLayout::Nacos,
    );
    let app_registry = ServiceDiscoveryRegistry::new(
        url.clone(),
        Arc::new(NacosServiceDiscovery::connect(&url).await.unwrap()),
        Some(report.clone()),
        MetadataResolver::new(Some(report), clients, ResolverOptions::default()),
        AppDiscoveryOptions::default(),
    );
    let cc = Arc::new(NacosConfigCenter::connect(&url).await.unwrap());
    let consumer_app = tests::unique("nacos-live-consumer");
    let consumer = Url::parse(&format!(
        "consumer://127.0.0.1/{DEMO}?interface={DEMO}&application={consumer_app}&protocol=dubbo&check=false&timeout=3000&retries=0"
    ))
    .unwrap();
    let factory: Arc<dyn InvokerFactory> = dubbo;
    let r = MigrationReference::open(ReferenceConfig {
        consumer,
        factory,
        options: DirectoryOptions {
            register: false,
            ready_timeout: Duration::from_secs(30),
            ..DirectoryOptions::default()
        },
        interface_registry: Some(Arc::new(NacosRegistry::connect(&url).await.unwrap())),
        app_registry: Some(app_registry),
        config_center: Some(cc.clone()),
        rule_wait: Duration::from_secs(10),
    })
    .await
    .unwrap();
    let d = r.directory();
    let cluster = invoker::cluster::join(d.clone() as Arc<dyn Directory>);
    let who = Invocation::new("whoAmI");
    // Both levels hold the provider (registration and mapping may land after READY).
    tests::eventually("both levels hold the provider", T, || async {
        let i = d.interface_directory().map_or(0, |x| x.invoker_count());
        let a = d.application_directory().map_or(0, |x| x.invoker_count());
        (i > 0 && a > 0).then_some(())
    })
    .await;
    let key = format!("{consumer_app}.migration");
    for step in [
        MigrationStep::ForceInterface,
        MigrationStep::ForceApplication,
        MigrationStep::ApplicationFirst,
        MigrationStep::ForceApplication,
        MigrationStep::ForceInterface,
        MigrationStep::ApplicationFirst,
    ] {
        cc.publish(
            &key,
            MIGRATION_GROUP,
            &format!("key: {consumer_app}\nstep: {step}\n"),
        )
        .await
        .unwrap();
        let level = match step {
            MigrationStep::ForceInterface => Level::Interface,
            _ => Level::Application,
        };
        tests::eventually(&format!("{step} in effect"), T, || async {
            let dirs = (
                d.interface_directory().is_some(),
                d.application_directory().is_some(),
            );
            let want = match step {
                MigrationStep::ForceInterface => (true, false),
                MigrationStep::ForceApplication => (false, true),
                MigrationStep::ApplicationFirst => (true, true),
            };
            (d.step() == step
                && dirs == want
                && d.list_level(&who).map(|l| l.0).ok() == Some(level))
            .then_some(())
        })
        .await;
        // Every call goes to that level, and is answered by the provider.
        for _ in 0..20 {
            let (l, invokers) = d.list_level(&who).unwrap();
            assert_eq!(l, level, "{step}");
            assert!(!invokers.is_empty(), "{step}: providers at {l:?}");
        }
        let v = cluster.invoke(&who).await.unwrap().value;
        assert!(v.as_str().unwrap().starts_with(&app), "{step}: {v}");
    }
}

const T: Duration = Duration::from_secs(60);
