//! The README's embedding example, run: a real Apache Dubbo 3.3.6 Java provider
//! (`scripts/peers/java-dubbo3.sh`) registers in ZooKeeper, and a program with this one
//! dependency calls it in a handful of lines, over Dubbo2 and over Triple.
//!
//! Needs ZooKeeper (`DUBBO_TEST_ZK`) and the Java peer; skipped loudly without them, a
//! failure with `DUBBO_TEST_REQUIRE_SERVERS=1`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use dubbo_consumer::{Connector, Invocation, Level, Reference};
use tests::peers::{JavaProvider, ProviderOptions};

const DEMO: &str = "com.example.peer.DemoService";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_readme_example_calls_a_java_provider_through_zookeeper() {
    let test = "front_door_readme_zookeeper";
    let Some(zk) = tests::zk_addr(test) else {
        return;
    };
    // A private root keeps the test's providers away from everyone else's.
    let registry_url = format!("zookeeper://{zk}?group={}", tests::unique("front-door"));
    let app = tests::unique("front-door-app").replace('_', "-");
    let opts = ProviderOptions {
        registry: Some(registry_url.clone()),
        app: app.clone(),
        version: Some("1.0.0".into()),
        ..ProviderOptions::default()
    };
    let Some(p) = JavaProvider::start(test, &opts).await else {
        return;
    };

    // The README's lines.
    let registry = dubbo_consumer::connect(&registry_url).await.unwrap();
    let demo = Reference::builder(DEMO)
        .version("1.0.0")
        .ready_timeout(Duration::from_secs(30))
        .build(registry.clone())
        .await
        .unwrap();
    let hello = Invocation::new("sayHello")
        .with_arguments(vec!["java.lang.String".into()], vec!["world".into()]);
    assert_eq!(demo.invoke(&hello).await.unwrap().value, "Hello world");

    // Both of the provider's protocols, each picked by its URL's scheme.
    for (proto, port) in [("dubbo", p.dubbo_port), ("tri", p.tri_port)] {
        let only = Reference::builder(DEMO)
            .version("1.0.0")
            .protocol(proto)
            .ready_timeout(Duration::from_secs(30))
            .build(registry.clone())
            .await
            .unwrap();
        let who = only.invoke(&Invocation::new("whoAmI")).await.unwrap();
        assert_eq!(who.value, format!("{app}@{proto}://127.0.0.1:{port}"));
        only.destroy();
    }
    demo.destroy();
    registry.destroy().await;
}

/// The same front door at application level: a Java provider registered with
/// `register-mode=instance` (nothing under `/<group>/<interface>/providers`) is reached through
/// `service-discovery-registry://`, and through both levels of the plain registry URL.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_application_level_java_provider_through_the_front_door() {
    let test = "front_door_app_level_zookeeper";
    let Some(zk) = tests::zk_addr(test) else {
        return;
    };
    let group = tests::unique("front-door-app");
    let registry_url = format!("zookeeper://{zk}?group={group}");
    let app = tests::unique("front-door-shop").replace('_', "-");
    let opts = ProviderOptions {
        registry: Some(registry_url.clone()),
        app: app.clone(),
        register_mode: Some("instance".into()),
        ..ProviderOptions::default()
    };
    let Some(p) = JavaProvider::start(test, &opts).await else {
        return;
    };
    let served_by_the_provider = |who: &str| {
        [("dubbo", p.dubbo_port), ("tri", p.tri_port)]
            .iter()
            .any(|(proto, port)| who == format!("{app}@{proto}://127.0.0.1:{port}"))
    };

    // Application level alone.
    let registry = dubbo_consumer::connect(&format!(
        "service-discovery-registry://{zk}?registry=zookeeper&group={group}"
    ))
    .await
    .unwrap();
    let demo = Reference::builder(DEMO)
        .ready_timeout(Duration::from_secs(30))
        .build(registry.clone())
        .await
        .unwrap();
    let who = demo.invoke(&Invocation::new("whoAmI")).await.unwrap();
    assert!(
        served_by_the_provider(who.value.as_str().unwrap_or_default()),
        "{who:?}"
    );
    demo.destroy();
    registry.destroy().await;

    // Both levels of the plain URL, APPLICATION_FIRST: the application level serves.
    let levels = Connector::new(registry_url.as_str())
        .timeout(Duration::from_secs(30))
        .levels(Level::All)
        .await
        .unwrap();
    let demo = Reference::builder(DEMO)
        .ready_timeout(Duration::from_secs(30))
        .build_levels(&levels)
        .await
        .unwrap();
    let who = demo.invoke(&Invocation::new("whoAmI")).await.unwrap();
    assert!(
        served_by_the_provider(who.value.as_str().unwrap_or_default()),
        "{who:?}"
    );
    let migration = demo.migration().unwrap().directory();
    assert_eq!(migration.step().as_str(), "APPLICATION_FIRST");
    assert!(migration
        .application_directory()
        .is_some_and(|d| !d.invoker_urls().is_empty()));
    demo.close().await;
    levels.destroy().await;
}
