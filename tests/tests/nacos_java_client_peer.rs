//! Interop with the official Java Nacos client (`com.alibaba.nacos:nacos-client` 2.5.1, gRPC),
//! driven by `scripts/peers/java-dubbo3.sh nacos` against rnacos (`DUBBO_TEST_NACOS`): the
//! Dubbo-style instances it registers we list and watch as exact provider URLs, and what we
//! register it sees under the exact Dubbo service name, group and metadata.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::time::Duration;

use registry_core::Registry;
use registry_core::Url;
use registry_nacos::convert::instance_metadata;
use registry_nacos::NacosRegistry;
use serde_json::{json, Value};
use tests::contract::{consumer_url, provider_url, Watch};
use tests::peers::NacosClientPeer;

const T: Duration = Duration::from_secs(60);

fn iface(tag: &str) -> String {
    tests::unique(&format!("org.javanacos.{tag}")).replace('-', "_")
}

fn registry(addr: &str, ns: &str) -> registry_nacos::NacosRegistry {
    NacosRegistry::new(
        &Url::parse(&format!("nacos://{addr}?namespace={ns}&file-cache=false")).unwrap(),
    )
    .unwrap()
}

fn metadata_of(instance: &Value) -> BTreeMap<String, String> {
    serde_json::from_value(instance["metadata"].clone()).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_the_java_nacos_client_registers_we_list_and_watch_as_exact_urls() {
    let test = "what_the_java_nacos_client_registers_we_list";
    let Some(addr) = tests::nacos_addr(test) else {
        return;
    };
    let ns = tests::unique("java-nacos");
    let Some(mut peer) = NacosClientPeer::start(test, &addr, &ns).await else {
        return;
    };
    let s = iface("FromJava");
    let md: BTreeMap<String, String> = [
        ("application", "java-nacos-provider"),
        ("category", "providers"),
        ("interface", s.as_str()),
        ("methods", "sayHello,sayBye"),
        ("path", s.as_str()),
        ("protocol", "tri"),
        ("side", "provider"),
        ("version", "1.0"),
        ("group", "g1"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v.to_owned()))
    .collect();
    let service = format!("providers:{s}:1.0:g1");
    peer.cmd(
        json!({"op": "register", "service": service, "ip": "127.0.0.1", "port": 20601,
                    "metadata": md}),
    )
    .await;
    peer.cmd(
        json!({"op": "register", "service": service, "ip": "127.0.0.1", "port": 20602,
                    "metadata": md}),
    )
    .await;

    let r = registry(&addr, &ns);
    let consumer = consumer_url(&s, "providers", "version=1.0&group=g1");
    let mut w = Watch::new(r.subscribe(&consumer).await.unwrap());
    w.until("both instances of the Java client", T, |w| {
        w.addresses("providers") == tests::set(&["127.0.0.1:20601", "127.0.0.1:20602"])
    })
    .await;
    for u in w.latest("providers").unwrap() {
        assert_eq!(u.protocol(), Some("tri"));
        assert_eq!(u.path(), Some(s.as_str()));
        let params: BTreeMap<String, String> = u
            .params()
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect();
        assert_eq!(params, md, "the URL is exactly the registered metadata");
    }
    assert_eq!(r.lookup(&consumer).await.unwrap().len(), 2);

    // Deregistered one by one; the last one leaving is an explicit empty list.
    peer.cmd(json!({"op": "deregister", "service": service, "ip": "127.0.0.1", "port": 20601}))
        .await;
    w.until("one instance left", T, |w| {
        w.addresses("providers") == tests::set(&["127.0.0.1:20602"])
    })
    .await;
    // The client's connection ends with its process: its ephemeral instance goes too.
    peer.process.kill().await;
    w.until("gone with the Java client", T, |w| {
        w.is_empty_marker("providers")
    })
    .await;
    r.destroy().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_we_register_the_java_nacos_client_sees_with_the_exact_name_and_metadata() {
    let test = "what_we_register_the_java_nacos_client_sees";
    let Some(addr) = tests::nacos_addr(test) else {
        return;
    };
    let ns = tests::unique("java-nacos2");
    let Some(mut peer) = NacosClientPeer::start(test, &addr, &ns).await else {
        return;
    };
    let s = iface("ToJava");
    let service = format!("providers:{s}:2.0:blue");
    peer.cmd(json!({"op": "subscribe", "service": service}))
        .await;

    let r = registry(&addr, &ns);
    let p1 = provider_url(&s, 20611, "version=2.0&group=blue");
    let p2 = provider_url(&s, 20612, "version=2.0&group=blue&weight=50");
    r.register(&p1).await.unwrap();
    r.register(&p2).await.unwrap();
    peer.event("both instances pushed to the Java client", T, |v| {
        v["instances"].as_array().is_some_and(|a| a.len() == 2)
    })
    .await;
    let listed = peer.cmd(json!({"op": "list", "service": service})).await;
    let hosts = listed["instances"].as_array().unwrap();
    assert_eq!(hosts.len(), 2, "{listed}");
    for (url, port) in [(&p1, 20611), (&p2, 20612)] {
        let h = hosts.iter().find(|h| h["port"] == port).unwrap();
        assert_eq!(metadata_of(h), instance_metadata(url), "{h}");
        assert_eq!(h["ip"], "127.0.0.1");
        assert_eq!(h["healthy"], true);
        assert_eq!(h["enabled"], true);
        assert_eq!(h["ephemeral"], true);
    }
    // As Dubbo's NacosRegistry.createInstance: `weight` stays a metadata entry; the instance
    // keeps Nacos' default weight.
    let h2 = hosts.iter().find(|h| h["port"] == 20612).unwrap();
    assert_eq!(h2["metadata"]["weight"], "50", "{h2}");
    assert!(hosts.iter().all(|h| h["weight"] == json!(1.0)), "{listed}");

    r.unregister(&p1).await.unwrap();
    peer.event("one instance left", T, |v| {
        v["instances"]
            .as_array()
            .is_some_and(|a| a.len() == 1 && a[0]["port"] == 20612)
    })
    .await;
    r.destroy().await;
    peer.event("none left once our connection is gone", T, |v| {
        v["instances"].as_array().is_some_and(Vec::is_empty)
    })
    .await;
}
