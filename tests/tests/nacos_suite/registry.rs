//! The Nacos backend against a real Nacos-compatible server (rnacos): names and metadata as
//! stored (checked through raw HTTP), wildcard/range scans, legacy names, disabled instances,
//! namespaces and `$` names. Each test uses its own namespace (`tests::unique`).
//!
//! Included by `nacos_registry.rs` (v1 HTTP transport) and `nacos_grpc_registry.rs` (gRPC):
//! `super::TRANSPORT` is the registry-URL suffix choosing the transport.

use std::time::Duration;

use registry_core::{Registry, Url};
use registry_nacos::NacosRegistry;
use serde_json::Value;
use tests::contract::{consumer_url, provider_url, Watch};
use tests::nacos::{http, iface};

const T: Duration = Duration::from_secs(15);

fn registry(addr: &str, ns: &str, extra: &str) -> registry_nacos::NacosRegistry {
    let url = Url::parse(&format!(
        "nacos://{addr}?namespace={ns}&nacos.poll-interval=200&nacos.scan-interval=300\
         &file-cache=false{extra}{}",
        super::TRANSPORT
    ))
    .unwrap();
    NacosRegistry::new(&url).unwrap()
}

/// `instance/list` as stored (all instances), straight over HTTP.
async fn raw_hosts(addr: &str, ns: &str, service: &str) -> Vec<Value> {
    let r = http()
        .get(format!("http://{addr}/nacos/v1/ns/instance/list"))
        .query(&[
            ("serviceName", service),
            ("groupName", "DEFAULT_GROUP"),
            ("namespaceId", ns),
            ("healthyOnly", "false"),
        ])
        .send()
        .await
        .unwrap();
    let v: Value = serde_json::from_str(&r.text().await.unwrap()).unwrap();
    v["hosts"].as_array().cloned().unwrap_or_default()
}

/// `service/list` of the namespace, straight over HTTP.
async fn raw_services(addr: &str, ns: &str) -> Vec<String> {
    let r = http()
        .get(format!("http://{addr}/nacos/v1/ns/service/list"))
        .query(&[("pageNo", "1"), ("pageSize", "1000"), ("namespaceId", ns)])
        .send()
        .await
        .unwrap();
    let v: Value = serde_json::from_str(&r.text().await.unwrap()).unwrap();
    v["doms"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|x| x.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn names_and_metadata_are_stored_as_dubbo_does() {
    let Some(addr) = tests::nacos_addr("names_and_metadata_are_stored_as_dubbo_does") else {
        return;
    };
    let ns = tests::unique("nacos-names");
    let r = registry(&addr, &ns, "");
    let s = format!("{}$Inner", iface("Names"));
    let p = provider_url(&s, 20880, "version=1.0.0&group=g1&weight=7");
    r.register(&p).await.unwrap();
    let name = format!("providers:{}:1.0.0:g1", s.replace('$', "___"));
    assert_eq!(raw_services(&addr, &ns).await, std::slice::from_ref(&name));
    let hosts = raw_hosts(&addr, &ns, &name).await;
    assert_eq!(hosts.len(), 1, "{hosts:?}");
    let h = &hosts[0];
    assert_eq!(h["ip"], "127.0.0.1");
    assert_eq!(h["port"], 20880);
    assert_eq!(h["ephemeral"], true);
    assert_eq!(
        h["weight"].as_f64(),
        Some(1.0),
        "the Dubbo weight travels as metadata only"
    );
    let md = h["metadata"].as_object().unwrap();
    for (k, v) in p.params() {
        assert_eq!(md.get(k).and_then(Value::as_str), Some(v), "metadata {k}");
    }
    assert_eq!(md["category"], "providers");
    assert_eq!(md["protocol"], "dubbo");
    assert_eq!(md["path"], s.as_str());
    assert_eq!(md.len(), p.param_count() + 3);

    // The consumer sees it with the `$` name (encoded only on the wire).
    let mut w =
        Watch::subscribe(&r, &consumer_url(&s, "providers", "version=1.0.0&group=g1")).await;
    w.until_providers("the provider", T, &["127.0.0.1:20880"])
        .await;
    let got = &w.latest("providers").unwrap()[0];
    assert_eq!(got.param("weight"), Some("7"));
    assert_eq!(got.path(), Some(s.as_str()));

    r.unregister(&p).await.unwrap();
    assert!(raw_hosts(&addr, &ns, &name).await.is_empty());
    w.until_no_providers("empty:// after unregister", T).await;
    r.destroy().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compatible_name_only_when_opted_in() {
    let Some(addr) = tests::nacos_addr("compatible_name_only_when_opted_in") else {
        return;
    };
    let ns = tests::unique("nacos-compat");
    let s = iface("Compat");
    let plain = registry(&addr, &ns, "");
    plain
        .register(&provider_url(&s, 20881, "version=1.0.0"))
        .await
        .unwrap();
    assert_eq!(
        raw_services(&addr, &ns).await,
        [format!("providers:{s}:1.0.0:")]
    );
    plain.destroy().await;

    let ns = tests::unique("nacos-compat2");
    let compat = registry(&addr, &ns, "&nacos.register-compatible=true");
    compat
        .register(&provider_url(&s, 20881, "version=1.0.0"))
        .await
        .unwrap();
    let mut names = raw_services(&addr, &ns).await;
    names.sort();
    assert_eq!(
        names,
        [
            format!("providers:{s}:1.0.0"),
            format!("providers:{s}:1.0.0:")
        ]
    );
    // The current-format subscriber sees the provider once.
    let mut w = Watch::subscribe(&compat, &consumer_url(&s, "providers", "version=1.0.0")).await;
    w.until_providers("one provider", T, &["127.0.0.1:20881"])
        .await;
    assert_eq!(w.latest("providers").unwrap().len(), 1);
    compat.destroy().await;
    assert!(raw_hosts(&addr, &ns, &format!("providers:{s}:1.0.0"))
        .await
        .is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wildcard_and_range_subscriptions_pick_up_new_services() {
    let Some(addr) = tests::nacos_addr("wildcard_and_range_subscriptions_pick_up_new_services")
    else {
        return;
    };
    let ns = tests::unique("nacos-scan");
    let s = iface("Scan");
    let c = registry(&addr, &ns, "");
    let p = registry(&addr, &ns, "");
    let mut any_version = Watch::subscribe(&c, &consumer_url(&s, "providers", "version=*")).await;
    let mut groups =
        Watch::subscribe(&c, &consumer_url(&s, "providers", "group=a,b&version=1")).await;
    let mut any_group =
        Watch::subscribe(&c, &consumer_url(&s, "providers", "group=*&version=2")).await;
    any_version.until_no_providers("empty first", T).await;
    groups.until_no_providers("empty first", T).await;

    // Registered after subscribing: found by the periodic service-list re-scan.
    p.register(&provider_url(&s, 20001, "version=1"))
        .await
        .unwrap();
    p.register(&provider_url(&s, 20002, "version=2&group=a"))
        .await
        .unwrap();
    p.register(&provider_url(&s, 20003, "version=1&group=b"))
        .await
        .unwrap();
    p.register(&provider_url(&s, 20004, "version=1&group=c"))
        .await
        .unwrap();
    any_version
        .until_providers(
            "version=* sees the ungrouped provider of every version",
            T,
            &["127.0.0.1:20001"],
        )
        .await;
    groups
        .until_providers("group=a,b&version=1 sees b:1 only", T, &["127.0.0.1:20003"])
        .await;
    any_group
        .until_providers(
            "group=*&version=2 sees a:2 (isCompatible over-accepts, isMatch filters)",
            T,
            &["127.0.0.1:20002"],
        )
        .await;
    p.destroy().await;
    groups.until_no_providers("empty after destroy", T).await;
    c.destroy().await;
}

/// Sends `/nacos/v1/ns/instance` with `method` for the instance 127.0.0.1:`port` of `service`
/// (query `params` added) and asserts that the server accepted it.
async fn raw_instance(
    method: reqwest::Method,
    (addr, ns, service): (&str, &str, &str),
    port: u16,
    params: &[(&str, &str)],
) {
    let port = port.to_string();
    let r = http()
        .request(method, format!("http://{addr}/nacos/v1/ns/instance"))
        .query(&[
            ("serviceName", service),
            ("groupName", "DEFAULT_GROUP"),
            ("namespaceId", ns),
            ("ip", "127.0.0.1"),
            ("port", port.as_str()),
        ])
        .query(params)
        .send()
        .await
        .unwrap();
    assert!(r.status().is_success(), "{:?}", r.text().await);
}

/// Registers an instance by hand under `service` (persistent, so no beats are needed).
async fn raw_register(addr: &str, ns: &str, service: &str, port: u16, metadata: &Value) {
    let md = metadata.to_string();
    let params = [("ephemeral", "false"), ("metadata", md.as_str())];
    raw_instance(reqwest::Method::POST, (addr, ns, service), port, &params).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn legacy_names_only_when_opted_in() {
    let Some(addr) = tests::nacos_addr("legacy_names_only_when_opted_in") else {
        return;
    };
    let ns = tests::unique("nacos-legacy");
    let s = iface("Legacy");
    // A Dubbo 2.6-style registration under the legacy name `providers:iface:version`.
    let md = serde_json::json!({
        "protocol": "dubbo", "path": s, "interface": s, "version": "1.0.0", "side": "provider",
    });
    raw_register(&addr, &ns, &format!("providers:{s}:1.0.0"), 20990, &md).await;
    let consumer = consumer_url(&s, "providers", "version=1.0.0");
    let default = registry(&addr, &ns, "");
    let mut w = Watch::subscribe(&default, &consumer).await;
    w.until_no_providers("empty:// (3.3 does not subscribe legacy names)", T)
        .await;
    let legacy = registry(&addr, &ns, "&nacos.subscribe.legacy-name=true");
    let mut l = Watch::subscribe(&legacy, &consumer).await;
    l.until_providers("legacy provider", T, &["127.0.0.1:20990"])
        .await;
    // Both formats together: current + legacy are aggregated.
    default
        .register(&provider_url(&s, 20991, "version=1.0.0"))
        .await
        .unwrap();
    l.until_providers("both", T, &["127.0.0.1:20990", "127.0.0.1:20991"])
        .await;
    w.until_providers("current only", T, &["127.0.0.1:20991"])
        .await;
    default.destroy().await;
    legacy.destroy().await;
}

async fn set_enabled(addr: &str, ns: &str, service: &str, port: u16, enabled: bool) {
    let params = [("enabled", if enabled { "true" } else { "false" })];
    raw_instance(reqwest::Method::PUT, (addr, ns, service), port, &params).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn disabled_instances_are_not_notified() {
    let Some(addr) = tests::nacos_addr("disabled_instances_are_not_notified") else {
        return;
    };
    let ns = tests::unique("nacos-disabled");
    let s = iface("Disabled");
    let r = registry(&addr, &ns, "");
    r.register(&provider_url(&s, 20011, "")).await.unwrap();
    r.register(&provider_url(&s, 20012, "")).await.unwrap();
    let mut w = Watch::subscribe(&r, &consumer_url(&s, "providers", "")).await;
    w.until_providers("both", T, &["127.0.0.1:20011", "127.0.0.1:20012"])
        .await;
    let name = format!("providers:{s}::");
    set_enabled(&addr, &ns, &name, 20012, false).await;
    w.until_providers("the disabled one is gone", T, &["127.0.0.1:20011"])
        .await;
    set_enabled(&addr, &ns, &name, 20011, false).await;
    w.until_no_providers("empty:// when all are disabled", T)
        .await;
    set_enabled(&addr, &ns, &name, 20012, true).await;
    w.until_providers("back when enabled", T, &["127.0.0.1:20012"])
        .await;
    r.destroy().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn namespaces_never_see_each_other() {
    let Some(addr) = tests::nacos_addr("namespaces_never_see_each_other") else {
        return;
    };
    let (ns_a, ns_b) = (tests::unique("nacos-ns-a"), tests::unique("nacos-ns-b"));
    let s = iface("Ns");
    let a = registry(&addr, &ns_a, "");
    let b = registry(&addr, &ns_b, "");
    a.register(&provider_url(&s, 20021, "")).await.unwrap();
    b.register(&provider_url(&s, 20022, "")).await.unwrap();
    let consumer = consumer_url(&s, "providers", "");
    let wildcard = consumer_url(&s, "providers", "version=*&group=*");
    for (r, port) in [(&a, "127.0.0.1:20021"), (&b, "127.0.0.1:20022")] {
        let mut w = Watch::subscribe(r, &consumer).await;
        w.until_providers("own namespace only", T, &[port]).await;
        let mut x = Watch::subscribe(r, &wildcard).await;
        x.until_providers("own namespace only (scan)", T, &[port])
            .await;
        let found: Vec<String> = r
            .lookup(&consumer)
            .await
            .unwrap()
            .iter()
            .map(|u| u.address().unwrap())
            .collect();
        assert_eq!(found, [port]);
    }
    assert_eq!(
        raw_services(&addr, &ns_a).await,
        [format!("providers:{s}::")]
    );
    a.destroy().await;
    b.destroy().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failover_to_a_backup_server() {
    let Some(addr) = tests::nacos_addr("failover_to_a_backup_server") else {
        return;
    };
    let ns = tests::unique("nacos-failover");
    let s = iface("Failover");
    // 127.0.0.1:9 refuses connections; the backup is the real server.
    let url = Url::parse(&format!(
        "nacos://127.0.0.1:9?backup={addr}&namespace={ns}&nacos.poll-interval=200&file-cache=false{}",
        super::TRANSPORT
    ))
    .unwrap();
    let r = NacosRegistry::new(&url).unwrap();
    r.register(&provider_url(&s, 20031, "")).await.unwrap();
    let mut w = Watch::subscribe(&r, &consumer_url(&s, "providers", "")).await;
    w.until_providers("provider via the backup", T, &["127.0.0.1:20031"])
        .await;
    assert!(r.is_available());
    r.destroy().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn consumers_are_registered_only_when_asked() {
    let Some(addr) = tests::nacos_addr("consumers_are_registered_only_when_asked") else {
        return;
    };
    let s = iface("Consumers");
    let consumer = Url::parse(&format!(
        "consumer://127.0.0.1/{s}?interface={s}&category=consumers&side=consumer&check=false"
    ))
    .unwrap();
    let ns = tests::unique("nacos-consumers");
    let r = registry(&addr, &ns, "");
    r.register(&consumer).await.unwrap();
    assert!(
        raw_services(&addr, &ns).await.is_empty(),
        "Dubbo registers providers only"
    );
    r.destroy().await;

    let ns = tests::unique("nacos-consumers2");
    let r = registry(&addr, &ns, "&register-consumer-url=true");
    r.register(&consumer).await.unwrap();
    assert_eq!(raw_services(&addr, &ns).await, [format!("consumers:{s}::")]);
    // A concrete interface forces the providers category (`NacosServiceName`): only `admin://` with
    // interface `*` reaches `consumers:` names.
    let any = Url::parse(
        "admin://127.0.0.1/*?interface=*&category=consumers&version=*&group=*&check=false",
    )
    .unwrap();
    let mut w = Watch::subscribe(&r, &any).await;
    w.until("the consumer registration", T, |w| {
        w.latest("consumers")
            .is_some_and(|l| l.len() == 1 && l[0].protocol() == Some("consumer"))
    })
    .await;
    r.destroy().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_service_list_scan_reads_every_page() {
    let Some(addr) = tests::nacos_addr("the_service_list_scan_reads_every_page") else {
        return;
    };
    let ns = tests::unique("nacos-pages");
    let s = iface("Pages");
    let r = registry(&addr, &ns, "");
    // 130 versions = 130 service names: two pages of 100.
    let mut want = std::collections::BTreeSet::new();
    for v in 0..130u16 {
        r.register(&provider_url(&s, 21000 + v, &format!("version=v{v}")))
            .await
            .unwrap();
        want.insert(format!("127.0.0.1:{}", 21000 + v));
    }
    assert_eq!(raw_services(&addr, &ns).await.len(), 130);
    let mut w = Watch::subscribe(&r, &consumer_url(&s, "providers", "version=*")).await;
    w.until("all 130 versions", T, |w| w.addresses("providers") == want)
        .await;
    r.destroy().await;
}
