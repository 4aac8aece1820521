//! Nacos instances without Dubbo metadata, beside a real Java Dubbo 3.3.6 provider, as the real
//! Java consumer (`--mode list`, interface level) and our `RegistryDirectory` see them. The
//! instances are registered by the official Java nacos-client (`tests::peers::NacosClientPeer`).
//!
//! Java 3.3.6, measured here:
//! - an instance whose metadata is only `protocol=dubbo` becomes a provider
//!   `dubbo://ip:port/<consumer's interface>` (unavailable when nothing listens there);
//! - an instance with no metadata at all has no protocol: `RegistryDirectory.checkProtocolValid`
//!   throws `IllegalArgumentException: Extension name == null`, the whole notification is lost,
//!   and a consumer that starts while it is registered ends with **no providers**; one that was
//!   running keeps its previous list, frozen: a provider registered later is never added.
//!
//! We copy the first; the second is a Java bug (one bad instance hides every good one): such an
//! instance is skipped with a warning and the others stay (`docs/compatibility.md`,
//! `nacos-instance-without-protocol-skipped`).

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use common::interop::DEMO;
use invoker::cluster;
use invoker::directory::{Directory, DirectoryOptions, RegistryDirectory};
use invoker::rpc::Invocation;
use registry_core::Url;
use serde_json::{json, Value};
use tests::peers::{JavaProvider, NacosClientPeer, PeerProcess, ProviderOptions};

const T: Duration = Duration::from_secs(60);

/// The Java consumer's provider list: `(address, available)`.
async fn java_list(
    test: &str,
    registry: &str,
) -> (BTreeSet<(String, bool)>, tests::peers::ConsumerRun) {
    let run = tests::peers::java_consumer(
        test,
        &[
            "--registry",
            registry,
            "--mode",
            "list",
            "--migration",
            "FORCE_INTERFACE",
            "--stable-ms",
            "3000",
            "--wait-ms",
            "30000",
        ],
        T,
    )
    .await
    .unwrap();
    let list = run.json["providers"]
        .as_array()
        .unwrap_or_else(|| panic!("the Java consumer's list: {}", run.json))
        .iter()
        .map(|p| {
            (
                p["address"].as_str().unwrap().to_owned(),
                p["available"].as_bool().unwrap(),
            )
        })
        .collect();
    (list, run)
}

/// What a running Java consumer (`--mode watch`) holds now: `(address, available)`.
async fn java_holds(watcher: &mut PeerProcess) -> BTreeSet<(String, bool)> {
    watcher.send_line("list").await;
    let now = watcher
        .next_json("the Java consumer's list", T, |v| v["providers"].is_array())
        .await;
    now["providers"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|p| {
            (
                p["address"].as_str().unwrap_or_default().to_owned(),
                p["available"].as_bool().unwrap_or_default(),
            )
        })
        .collect()
}

/// How many times the Java consumer's log reports `RegistryDirectory.checkProtocolValid`'s error.
fn java_failures(watcher: &PeerProcess) -> usize {
    std::fs::read_to_string(watcher.log())
        .unwrap_or_default()
        .matches("Extension name == null")
        .count()
}

fn addresses(dir: &RegistryDirectory) -> BTreeSet<String> {
    dir.invoker_urls()
        .iter()
        .map(|u| format!("{}:{}", u.host().unwrap_or(""), u.port()))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bare_nacos_instances_are_seen_as_the_java_consumer_sees_them_and_never_hide_the_good_ones()
{
    let test = "java_nacos_bare_instances";
    let Some(nacos) = tests::nacos_addr(test) else {
        return;
    };
    let ns = tests::unique("bare-ns");
    let registry = format!("nacos://{nacos}?namespace={ns}");
    let opts = ProviderOptions {
        registry: Some(registry.clone()),
        app: tests::unique("bare-app").replace('_', "-"),
        protocols: vec!["dubbo".into()],
        register_mode: Some("interface".into()),
        services: vec!["demo".into()],
        ..ProviderOptions::default()
    };
    let Some(provider) = JavaProvider::start(test, &opts).await else {
        return;
    };
    let Some(mut client) = NacosClientPeer::start(test, &nacos, &ns).await else {
        return;
    };
    let service = format!("providers:{DEMO}::");
    let good = format!("127.0.0.1:{}", provider.dubbo_port);
    let [only_protocol, bare, marker] = [0, 1, 2].map(|_| tests::peers::free_port());
    let register = |port: u16, metadata: Value| {
        json!({"op": "register", "service": service, "ip": "127.0.0.1", "port": port,
               "metadata": metadata})
    };

    // 1. An instance with only `protocol`: Java lists it (unavailable: nothing listens there).
    client
        .cmd(register(only_protocol, json!({"protocol": "dubbo"})))
        .await;
    let (java, run) = java_list(test, &registry).await;
    let only_protocol_addr = format!("127.0.0.1:{only_protocol}");
    assert_eq!(
        java,
        BTreeSet::from([(good.clone(), true), (only_protocol_addr.clone(), false)]),
        "the Java consumer: {}",
        run.json
    );
    let java_path = run.json["providers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["address"] == only_protocol_addr)
        .map(|p| p["path"].clone())
        .unwrap();
    assert_eq!(java_path, DEMO, "Java reads the path through the consumer");

    let consumer = Url::parse(&format!(
        "consumer://127.0.0.1/{DEMO}?interface={DEMO}&side=consumer\
         &category=providers,configurators,routers&check=false"
    ))
    .unwrap();
    let reg: Arc<dyn registry_core::Registry> =
        Arc::new(registry_nacos::NacosRegistry::new(&Url::parse(&registry).unwrap()).unwrap());
    let dir = RegistryDirectory::subscribe(
        reg.clone(),
        consumer,
        Arc::new(dubbo_consumer::Protocols::new()),
        DirectoryOptions {
            register: false,
            ..DirectoryOptions::default()
        },
    )
    .await
    .unwrap();
    let want: BTreeSet<String> = java.iter().map(|(a, _)| a.clone()).collect();
    tests::eventually(
        "our directory holds what the Java consumer holds",
        T,
        || {
            let now = addresses(&dir);
            let want = want.clone();
            async move { (now == want).then_some(()) }
        },
    )
    .await;
    let url = dir
        .invoker_urls()
        .iter()
        .find(|u| u.port() == i32::from(only_protocol))
        .cloned()
        .unwrap();
    assert_eq!(url.protocol(), Some("dubbo"));
    assert_eq!(
        url.service_interface(),
        Some(DEMO),
        "the interface through the consumer, as Java: {url}"
    );

    // A Java consumer that is running when the bare instance appears.
    let mut watcher = PeerProcess::spawn(
        &format!("{test}-java-watch"),
        "java-dubbo3",
        "consumer",
        &[
            "--registry",
            &registry,
            "--mode",
            "watch",
            "--migration",
            "FORCE_INTERFACE",
        ]
        .map(String::from),
    )
    .await;
    let deadline = tokio::time::Instant::now() + T;
    loop {
        let seen = java_holds(&mut watcher).await;
        if seen.iter().map(|(a, _)| a).eq(java.iter().map(|(a, _)| a)) {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the running Java consumer's first list: {seen:?}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }

    // 2. An instance without any metadata appears while the consumers run: ours skips it and
    //    keeps the others. A later valid instance (the marker) shows the notification was applied.
    client.cmd(register(bare, json!({}))).await;
    tests::eventually(
        "the running Java consumer fails on the bare instance",
        T,
        || {
            let n = java_failures(&watcher);
            async move { (n > 0).then_some(()) }
        },
    )
    .await;
    let _ = java_holds(&mut watcher).await;
    let failures = java_failures(&watcher);
    client
        .cmd(register(marker, json!({"protocol": "dubbo"})))
        .await;
    let with_marker: BTreeSet<String> = want
        .iter()
        .cloned()
        .chain([format!("127.0.0.1:{marker}")])
        .collect();
    tests::eventually(
        "the marker listed, the bare instance skipped, the good provider kept",
        T,
        || {
            let now = addresses(&dir);
            let want = with_marker.clone();
            async move { (now == want).then_some(()) }
        },
    )
    .await;
    // Java, running: the notification with the marker fails too, and its list stays frozen as it
    // was before the bare instance appeared (the marker is never added).
    tests::eventually(
        "the running Java consumer fails on the marker's notification too",
        T,
        || {
            let n = java_failures(&watcher);
            async move { (n > failures).then_some(()) }
        },
    )
    .await;
    let frozen = java_holds(&mut watcher).await;
    assert_eq!(
        frozen
            .iter()
            .map(|(a, _)| a.clone())
            .collect::<BTreeSet<_>>(),
        want,
        "Java 3.3.6 keeps a running consumer's list frozen once a bare instance is registered; \
         if this changed, update docs/compatibility.md"
    );
    drop(watcher);

    // The good provider still answers through the cluster (failover past the dead ones).
    let invoker = cluster::join(dir.clone() as Arc<dyn Directory>);
    let mut answered = false;
    for _ in 0..6 {
        if let Ok(r) = invoker.invoke(&Invocation::new("whoAmI")).await {
            assert_eq!(
                r.value,
                json!(format!("{}@dubbo://{good}", opts.app)),
                "only the Java provider answers"
            );
            answered = true;
            break;
        }
    }
    assert!(
        answered,
        "the good provider answers beside the bare instances"
    );

    // 3. Java's bug, the reason we diverge: a Java consumer starting now sees nothing at all.
    let (java, run) = java_list(test, &registry).await;
    assert!(
        java.is_empty(),
        "Java 3.3.6 loses the whole list to one instance without metadata; if this changed, \
         update docs/compatibility.md: {}",
        run.json
    );
    let log = std::fs::read_to_string(&run.log).unwrap_or_default();
    assert!(
        log.contains("Extension name == null"),
        "the Java consumer's error: {}",
        tests::peers::tail(&run.log, 40)
    );

    dir.destroy();
    reg.destroy().await;
    drop(client);
    drop(provider);
}
