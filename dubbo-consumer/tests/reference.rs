//! The front door on the in-process `memory://` registry and config centre: a reference built
//! from its options calls the providers a Dubbo consumer of those options would call.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use dubbo_consumer::invoker::router::RuleKey;
use dubbo_consumer::invoker::testutil::RecordingFactory;
use dubbo_consumer::{
    connect, connect_config_center, Error, Invocation, Protocols, Reference, Url,
};

/// Calls per port, over the ports that were called.
fn calls(f: &RecordingFactory) -> BTreeMap<i32, usize> {
    f.calls_by_port()
        .into_iter()
        .filter(|(_, n)| *n > 0)
        .collect()
}

fn provider(proto: &str, port: u16, iface: &str, extra: &str) -> Url {
    Url::parse(&format!(
        "{proto}://10.0.0.1:{port}/{iface}?interface={iface}&side=provider&methods=hello{extra}"
    ))
    .unwrap()
}

fn store(tag: &str) -> String {
    format!("memory://front-{tag}-{}", std::process::id())
}

#[tokio::test]
async fn a_reference_calls_the_providers_its_version_and_group_select() {
    let registry = connect(&store("select")).await.unwrap();
    let iface = "com.foo.Select";
    for (port, extra) in [
        (7001, "&version=1.0.0&group=g"),
        (7002, "&version=1.0.0&group=g"),
        (7003, "&version=2.0.0&group=g"),
        (7004, "&version=1.0.0"),
    ] {
        registry
            .register(&provider("echo", port, iface, extra))
            .await
            .unwrap();
    }
    let factory = Arc::new(RecordingFactory::default());
    let reference = Reference::builder(iface)
        .version("1.0.0")
        .group("g")
        .loadbalance("roundrobin")
        .invoker_factory(factory.clone())
        .build(registry.clone())
        .await
        .unwrap();
    for _ in 0..4 {
        reference.invoke(&Invocation::new("hello")).await.unwrap();
    }
    assert_eq!(calls(&factory), BTreeMap::from([(7001, 2), (7002, 2)]));
    // The consumer is registered under `consumers`, as Dubbo does.
    let consumers = Url::parse(&format!(
        "consumer://10.0.0.9/{iface}?interface={iface}&category=consumers&version=1.0.0&group=g"
    ))
    .unwrap();
    assert_eq!(registry.lookup(&consumers).await.unwrap().len(), 1);
    reference.destroy();
    assert!(reference.invoke(&Invocation::new("hello")).await.is_err());
}

#[tokio::test]
async fn check_fails_without_a_provider_and_without_check_the_call_says_so() {
    let registry = connect(&store("check")).await.unwrap();
    let e = Reference::builder("com.foo.Nobody")
        .ready_timeout(Duration::from_millis(200))
        .invoker_factory(Arc::new(RecordingFactory::default()))
        .build(registry.clone())
        .await
        .err()
        .unwrap();
    assert!(matches!(e, Error::NoProvider { .. }), "{e}");
    assert!(e.is_retryable());
    assert!(e.to_string().contains("com.foo.Nobody"), "{e}");

    let reference = Reference::builder("com.foo.Nobody")
        .check(false)
        .ready_timeout(Duration::from_millis(200))
        .invoker_factory(Arc::new(RecordingFactory::default()))
        .build(registry)
        .await
        .unwrap();
    let e = reference
        .invoke(&Invocation::new("hello"))
        .await
        .unwrap_err();
    assert!(e.message.contains("No provider available"), "{e}");
    // The call error converts into the front door's error, keeping its classifier.
    let e: Error = e.into();
    assert!(e.as_rpc().is_some());
}

#[tokio::test]
async fn the_provider_urls_protocol_picks_the_invoker_factory() {
    let registry = connect(&store("protocols")).await.unwrap();
    let iface = "com.foo.Protocols";
    registry
        .register(&provider("echo", 7101, iface, ""))
        .await
        .unwrap();
    registry
        .register(&provider("rmi", 7102, iface, ""))
        .await
        .unwrap();
    let echo = Arc::new(RecordingFactory::default());
    let reference = Reference::builder(iface)
        .protocols(Protocols::empty().with("echo", echo.clone()))
        .build(registry)
        .await
        .unwrap();
    for _ in 0..6 {
        let r = reference.invoke(&Invocation::new("hello")).await.unwrap();
        assert_eq!(r.attachments["port"], "7101");
    }
    // rmi:// has no factory: that provider is skipped, not the whole list.
    assert_eq!(echo.referred(), 1);
    assert_eq!(reference.directory().invoker_urls().len(), 1);
}

#[tokio::test]
async fn mock_retries_and_timeout_become_consumer_parameters() {
    let registry = connect(&store("params")).await.unwrap();
    let iface = "com.foo.Params";
    registry
        .register(&provider("echo", 7201, iface, ""))
        .await
        .unwrap();
    let factory = Arc::new(RecordingFactory::default());
    let reference = Reference::builder(iface)
        .mock("force:return 42")
        .retries(5)
        .timeout(Duration::from_millis(1500))
        .cluster("failfast")
        .invoker_factory(factory.clone())
        .build(registry)
        .await
        .unwrap();
    let c = reference.consumer_url();
    assert_eq!(c.param("retries"), Some("5"));
    assert_eq!(c.param("timeout"), Some("1500"));
    assert_eq!(c.param("cluster"), Some("failfast"));
    assert_eq!(c.param("side"), Some("consumer"));
    // force: the provider is never called.
    let r = reference
        .invoke(&Invocation::new("hello").with_return_type("int"))
        .await
        .unwrap();
    assert_eq!(r.value, 42);
    assert!(calls(&factory).is_empty());
}

#[tokio::test]
async fn rules_in_the_registrys_config_centre_route_the_calls() {
    let name = store("rules");
    let registry = connect(&name).await.unwrap();
    let iface = "com.foo.Rules";
    registry
        .register(&provider("echo", 7301, iface, "&region=hz"))
        .await
        .unwrap();
    registry
        .register(&provider("echo", 7302, iface, "&region=sh"))
        .await
        .unwrap();
    // The registry is the config centre by default (same memory:// store name).
    let cc = connect_config_center(&name).await.unwrap();
    let builder = Reference::builder(iface);
    let key = RuleKey::ServiceCondition.config_key(&builder.consumer_url("10.0.0.9"));
    cc.publish(
        &key,
        "dubbo",
        &format!(
            "configVersion: v3.0\nscope: service\nforce: true\nenabled: true\nkey: {iface}\nconditions:\n  - => region = hz\n"
        ),
    )
    .await
    .unwrap();
    let factory = Arc::new(RecordingFactory::default());
    let reference = builder
        .invoker_factory(factory.clone())
        .build(registry.clone())
        .await
        .unwrap();
    for _ in 0..6 {
        reference.invoke(&Invocation::new("hello")).await.unwrap();
    }
    assert_eq!(calls(&factory), BTreeMap::from([(7301, 6)]));

    // Without a config centre the rule is not followed.
    let factory = Arc::new(RecordingFactory::default());
    let plain = Reference::builder(iface)
        .without_config_center()
        .loadbalance("roundrobin")
        .invoker_factory(factory.clone())
        .build(registry)
        .await
        .unwrap();
    for _ in 0..6 {
        plain.invoke(&Invocation::new("hello")).await.unwrap();
    }
    assert_eq!(calls(&factory), BTreeMap::from([(7301, 3), (7302, 3)]));
}
