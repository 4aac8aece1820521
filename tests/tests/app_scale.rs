//! Scale and rolling restarts on the in-process backends: one application of 1,000 instances
//! exporting 50 interfaces, 50 subscriptions (one per interface), then every instance
//! restarted one after the other onto a revision of its own (as Java's per-process
//! `timestamp` parameter makes it). Every list any subscription published along the way has
//! all 1,000 providers — never fewer (dubbo-go #3615), never a stale extra one (#3468) — and
//! each ends on the new revisions; the MetadataInfo of a revision is fetched once for all 50
//! subscriptions.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use app_discovery::{
    AppDiscoveryOptions, MetadataInfo, MetadataReport, MetadataResolver, MetadataServiceClients,
    ReportLayout, ResolverOptions, ServiceDiscoveryRegistry, ServiceInfo,
};
use registry_core::instance::{REVISION_KEY, STORAGE_TYPE_KEY};
use registry_core::{
    InstanceDiscovery, MemoryConfigCenter, MemoryInstanceDiscovery, Registry, ServiceInstance,
    Subscription, Url,
};

const N: usize = 1000;
const SERVICES: usize = 50;
const APP: &str = "scale-app";

fn iface(k: usize) -> String {
    format!("org.scale.Service{k:02}")
}

fn services(timestamp: usize) -> Vec<ServiceInfo> {
    (0..SERVICES)
        .map(|k| {
            let mut s = ServiceInfo::new(&iface(k), "dubbo");
            s.params.insert("side".into(), "provider".into());
            s.params.insert("timestamp".into(), timestamp.to_string());
            s
        })
        .collect()
}

fn instance(i: usize, rev: &str) -> ServiceInstance {
    let mut m = BTreeMap::new();
    m.insert(REVISION_KEY.to_owned(), rev.to_owned());
    m.insert(STORAGE_TYPE_KEY.to_owned(), "remote".to_owned());
    ServiceInstance::new(APP, format!("10.1.{}.{}", i / 250, i % 250), 20880, m)
}

/// Applies every queued notification; checks each list; returns the latest.
fn drain(sub: &mut Subscription, latest: &mut Vec<Url>, k: usize) {
    while let Some(n) = sub.try_next() {
        assert_eq!(&*n.category, "providers");
        assert!(
            !n.is_empty_marker(),
            "service {k}: empty:// during a rolling restart"
        );
        assert_eq!(
            n.urls.len(),
            N,
            "service {k}: a list without every provider"
        );
        latest.clear();
        latest.extend(n.urls.iter().cloned());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rolling_restart_of_1000_instances_of_50_interfaces() {
    let instances = Arc::new(MemoryInstanceDiscovery::new());
    let report = MetadataReport::new(Arc::new(MemoryConfigCenter::new()), ReportLayout::Tree);
    for k in 0..SERVICES {
        report.add_mapping(&iface(k), APP).await.unwrap();
    }
    report
        .publish_app_metadata(&MetadataInfo::new(APP, "r0", services(0)))
        .await
        .unwrap();
    for i in 0..N {
        instances.register(&instance(i, "r0")).await.unwrap();
    }
    let resolver = MetadataResolver::new(
        Some(report.clone()),
        MetadataServiceClients::new(),
        ResolverOptions::default(),
    );
    let registry = ServiceDiscoveryRegistry::new(
        Url::parse("memory://scale").unwrap(),
        instances.clone(),
        Some(report.clone()),
        resolver.clone(),
        AppDiscoveryOptions {
            subscribe_wait: Duration::from_secs(60),
            ..AppDiscoveryOptions::default()
        },
    );
    let mut subs = Vec::new();
    for k in 0..SERVICES {
        let c = Url::parse(&format!(
            "consumer://127.0.0.1/{0}?interface={0}&check=false",
            iface(k)
        ))
        .unwrap();
        subs.push((registry.subscribe(&c).await.unwrap(), Vec::new()));
    }
    for (k, (s, latest)) in subs.iter_mut().enumerate() {
        drain(s, latest, k);
        assert_eq!(latest.len(), N, "service {k}: the first list");
    }
    assert_eq!(resolver.fetch_attempts(), 1);

    // Rolling restart: instance i comes back with revision r{i+1}, its metadata written just
    // before (as a `remote`-storage provider does), 20 at a time.
    for batch in (0..N).collect::<Vec<_>>().chunks(20) {
        for &i in batch {
            let rev = format!("r{}", i + 1);
            report
                .publish_app_metadata(&MetadataInfo::new(APP, &rev, services(i + 1)))
                .await
                .unwrap();
            instances.register(&instance(i, &rev)).await.unwrap();
        }
        for (k, (s, latest)) in subs.iter_mut().enumerate() {
            drain(s, latest, k);
        }
    }
    // Everything on the new revisions: each URL carries its instance's own timestamp.
    for (k, (s, latest)) in subs.iter_mut().enumerate() {
        tests::eventually(
            "the last revisions applied",
            Duration::from_secs(30),
            || {
                drain(s, latest, k);
                let done = latest.iter().all(|u| {
                    let host = u.host().unwrap_or("");
                    let mut parts = host.rsplit('.');
                    let last: usize = parts.next().unwrap().parse().unwrap();
                    let third: usize = parts.next().unwrap().parse().unwrap();
                    u.param("timestamp") == Some(&(third * 250 + last + 1).to_string())
                });
                std::future::ready(done.then_some(()))
            },
        )
        .await;
    }
    // One fetch per revision, shared by the 50 subscriptions.
    assert_eq!(resolver.fetch_attempts(), 1 + N as u64);
    let snap = registry.describe_app(APP, Duration::from_secs(1)).await;
    assert_eq!(snap.instances, N);
    assert!(snap.unresolved.is_empty());
    assert!(snap.revisions.iter().all(|r| r.stale.is_empty()));
    Registry::destroy(&registry).await;
}
