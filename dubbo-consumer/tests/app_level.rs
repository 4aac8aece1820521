//! The front door at application level, on the in-process `memory://` stores: a provider
//! application registered with `register-mode=instance` (mapping, instance, MetadataInfo; no
//! interface-level registration) is reached through `connect(...registry-type=service)` and
//! through both levels of a plain registry URL, with the migration step deciding the level.

#![cfg(feature = "app-discovery")]
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use dubbo_consumer::app_discovery::{MetadataInfo, MetadataReport, ReportLayout, ServiceInfo};
use dubbo_consumer::invoker::testutil::RecordingFactory;
use dubbo_consumer::registry::instance::{REVISION_KEY, STORAGE_TYPE_KEY};
use dubbo_consumer::registry::{
    InstanceDiscovery, MemoryConfigCenter, MemoryInstanceDiscovery, ServiceInstance,
};
use dubbo_consumer::{connect, Connector, Error, Invocation, Level, Reference, Url};

const IFACE: &str = "com.foo.Greeter";

fn store(tag: &str) -> String {
    format!("front-app-{tag}-{}", std::process::id())
}

/// Publishes the provider application `shop` at 10.0.0.1:`port` in the memory stores `name`,
/// as a Dubbo 3 provider with `register-mode=instance` does (metadata stored remotely).
async fn publish_app_provider(name: &str, port: i32) {
    let report = MetadataReport::new(
        Arc::new(MemoryConfigCenter::named(name)),
        ReportLayout::Tree,
    );
    report.add_mapping(IFACE, "shop").await.unwrap();
    report
        .publish_app_metadata(&MetadataInfo::new(
            "shop",
            "r1",
            [ServiceInfo::new(IFACE, "dubbo")],
        ))
        .await
        .unwrap();
    let meta = [(REVISION_KEY, "r1"), (STORAGE_TYPE_KEY, "remote")]
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    MemoryInstanceDiscovery::named(name)
        .register(&ServiceInstance::new("shop", "10.0.0.1", port, meta))
        .await
        .unwrap();
}

fn calls(f: &RecordingFactory) -> BTreeMap<i32, usize> {
    f.calls_by_port()
        .into_iter()
        .filter(|(_, n)| *n > 0)
        .collect()
}

#[tokio::test]
async fn connect_of_an_application_level_url_reaches_an_application_level_provider() {
    let name = store("service");
    publish_app_provider(&name, 20991).await;
    for url in [
        format!("memory://{name}?registry-type=service"),
        format!("service-discovery-registry://{name}?registry=memory"),
    ] {
        let registry = connect(&url).await.unwrap();
        assert_eq!(registry.url().param("registry-type"), Some("service"));
        let factory = Arc::new(RecordingFactory::default());
        let reference = Reference::builder(IFACE)
            .invoker_factory(factory.clone())
            .build(registry.clone())
            .await
            .unwrap();
        reference.invoke(&Invocation::new("hello")).await.unwrap();
        assert_eq!(calls(&factory), BTreeMap::from([(20991, 1)]), "{url}");
        let urls = reference.directory().invoker_urls();
        assert_eq!(urls.len(), 1);
        assert_eq!(urls[0].address().as_deref(), Some("10.0.0.1:20991"));
        reference.destroy();
        registry.destroy().await;
    }
}

#[tokio::test]
async fn both_levels_of_a_plain_url_follow_the_migration_step() {
    let name = store("levels");
    publish_app_provider(&name, 20992).await;
    // The same service registered at interface level too, at another port.
    let interface_level = connect(&format!("memory://{name}")).await.unwrap();
    interface_level
        .register(
            &Url::parse(&format!(
                "dubbo://10.0.0.1:20993/{IFACE}?interface={IFACE}&side=provider&methods=hello"
            ))
            .unwrap(),
        )
        .await
        .unwrap();

    let levels = Connector::new(format!("memory://{name}"))
        .timeout(Duration::from_secs(5))
        .levels(Level::All)
        .await
        .unwrap();
    assert!(levels.interface.is_some() && levels.app.is_some());
    // APPLICATION_FIRST (no rule, no parameter): the application level serves, so it is called.
    let factory = Arc::new(RecordingFactory::default());
    let reference = Reference::builder(IFACE)
        .application("front-app-consumer")
        .invoker_factory(factory.clone())
        .build_levels(&levels)
        .await
        .unwrap();
    let migration = reference.migration().unwrap();
    assert_eq!(migration.directory().step().as_str(), "APPLICATION_FIRST");
    for _ in 0..3 {
        reference.invoke(&Invocation::new("hello")).await.unwrap();
    }
    assert_eq!(calls(&factory), BTreeMap::from([(20992, 3)]));
    reference.close().await;

    // The consumer's `migration.step` (no rule in the config centre): interface level only.
    let factory = Arc::new(RecordingFactory::default());
    let reference = Reference::builder(IFACE)
        .application("front-app-consumer")
        .param("migration.step", "FORCE_INTERFACE")
        .invoker_factory(factory.clone())
        .build_levels(&levels)
        .await
        .unwrap();
    for _ in 0..3 {
        reference.invoke(&Invocation::new("hello")).await.unwrap();
    }
    assert_eq!(calls(&factory), BTreeMap::from([(20993, 3)]));
    let dir = reference.directory();
    assert_eq!(dir.invoker_urls()[0].port(), 20993);
    reference.close().await;
    levels.destroy().await;
}

#[tokio::test]
async fn an_application_level_registry_has_no_interface_level() {
    let name = store("nolevel");
    let url = format!("memory://{name}?registry-type=service");
    let e = Connector::new(url.as_str())
        .levels(Level::Interface)
        .await
        .unwrap_err();
    assert!(matches!(e, Error::NoLevel { .. }), "{e}");
    assert!(e.is_invalid_input() && !e.is_retryable(), "{e}");
    let all = Connector::new(url.as_str())
        .levels(Level::All)
        .await
        .unwrap();
    assert!(all.interface.is_none() && all.app.is_some());
    all.destroy().await;
    let e = connect("service-discovery-registry://h:1")
        .await
        .unwrap_err();
    assert!(matches!(e, Error::InvalidUrl { .. }), "{e}");
}
