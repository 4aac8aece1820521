//! The application-level rows of `dubbo-bench`: one application of 1,000 instances exporting 50
//! interfaces (Java-sized ServiceInfo parameters), followed by 50 subscriptions (one per
//! interface) on the in-process backends (`memory://` instances and metadata report, `remote`
//! storage), so the numbers are the pipeline's own cost: mapping, revisions, URL building,
//! the per-subscription lists.
//!
//! - `first_lists_ms`: from subscribing the 50 interfaces to each having its 1,000 URLs;
//! - `restart_same_services_us`: one instance moves to a new revision whose services are
//!   unchanged (URLs kept), until all 50 subscriptions published;
//! - `restart_new_revision_us`: one instance restarts with a revision of its own (as Java's
//!   per-process `timestamp` parameter makes it: a new MetadataInfo to fetch, 50 new URLs);
//! - `bytes_per_instance`: memory the pipeline holds per instance (50 URLs, the snapshots,
//!   the URL cache), measured by the counting allocator.

use std::collections::BTreeMap;
use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

use app_discovery::{
    AppDiscoveryOptions, MetadataInfo, MetadataReport, MetadataResolver, MetadataServiceClients,
    ReportLayout, ResolverOptions, ServiceDiscoveryRegistry, ServiceInfo,
};
use registry_core::instance::{REVISION_KEY, STORAGE_TYPE_KEY};
use registry_core::{
    InstanceDiscovery, MemoryConfigCenter, MemoryInstanceDiscovery, Registry, ServiceInstance,
    Subscription, Url,
};
use serde_json::{json, Value};
use stats_alloc::{Region, StatsAlloc};

const APP: &str = "bench-app";

fn iface(k: usize) -> String {
    format!("org.bench.app.Service{k:02}")
}

/// A ServiceInfo shaped like what Java 3.3 exports (its parameter set).
fn service(k: usize, timestamp: u64) -> ServiceInfo {
    let name = iface(k);
    let mut s = ServiceInfo::new(&name, "dubbo");
    s.version = Some("1.0.0".into());
    let methods: Vec<String> = (0..8).map(|m| format!("method{m}")).collect();
    for (key, v) in [
        ("anyhost", "true".to_owned()),
        ("application", APP.to_owned()),
        ("deprecated", "false".to_owned()),
        ("dubbo", "2.0.2".to_owned()),
        ("dynamic", "true".to_owned()),
        ("generic", "false".to_owned()),
        ("interface", name.clone()),
        ("metadata-type", "local".to_owned()),
        ("methods", methods.join(",")),
        ("prefer.serialization", "hessian2,fastjson2".to_owned()),
        ("release", "3.3.6".to_owned()),
        ("service-name-mapping", "true".to_owned()),
        ("side", "provider".to_owned()),
        ("timestamp", timestamp.to_string()),
        ("version", "1.0.0".to_owned()),
    ] {
        s.params.insert(key.to_owned(), v);
    }
    s
}

fn instance(i: usize, revision: &str) -> ServiceInstance {
    let mut m = BTreeMap::new();
    m.insert(REVISION_KEY.to_owned(), revision.to_owned());
    m.insert(STORAGE_TYPE_KEY.to_owned(), "remote".to_owned());
    m.insert(
        "dubbo.endpoints".to_owned(),
        r#"[{"port":20880,"protocol":"dubbo"}]"#.to_owned(),
    );
    m.insert("timestamp".to_owned(), (1_700_000_000_000 + i).to_string());
    ServiceInstance::new(
        APP,
        format!("10.{}.{}.{}", i / 65536, (i / 256) % 256, i % 256),
        20880,
        m,
    )
}

struct World {
    instances: Arc<MemoryInstanceDiscovery>,
    report: MetadataReport,
    registry: ServiceDiscoveryRegistry,
}

async fn world(n: usize, services: usize) -> anyhow::Result<World> {
    let instances = Arc::new(MemoryInstanceDiscovery::new());
    let report = MetadataReport::new(Arc::new(MemoryConfigCenter::new()), ReportLayout::Tree);
    for k in 0..services {
        report.add_mapping(&iface(k), APP).await?;
    }
    report
        .publish_app_metadata(&MetadataInfo::new(
            APP,
            "r0",
            (0..services).map(|k| service(k, 1)),
        ))
        .await?;
    for i in 0..n {
        instances.register(&instance(i, "r0")).await?;
    }
    let resolver = MetadataResolver::new(
        Some(report.clone()),
        MetadataServiceClients::new(),
        ResolverOptions::default(),
    );
    let registry = ServiceDiscoveryRegistry::new(
        Url::parse("memory://bench-app")?,
        instances.clone(),
        Some(report.clone()),
        resolver,
        AppDiscoveryOptions {
            subscribe_wait: Duration::from_secs(60),
            ..AppDiscoveryOptions::default()
        },
    );
    Ok(World {
        instances,
        report,
        registry,
    })
}

/// Waits until every subscription's latest list satisfies `ok`.
async fn until(subs: &mut [Subscription], ok: impl Fn(&[Url]) -> bool) -> anyhow::Result<()> {
    let deadline = Instant::now() + Duration::from_secs(120);
    for s in subs.iter_mut() {
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let n = tokio::time::timeout(left, s.next())
                .await
                .map_err(|_| anyhow::anyhow!("application-level bench: no list in time"))?
                .ok_or_else(|| anyhow::anyhow!("subscription ended"))?;
            let mut latest = n;
            while let Some(m) = s.try_next() {
                latest = m;
            }
            if ok(&latest.urls) {
                break;
            }
        }
    }
    Ok(())
}

/// Runs the rows: `n` instances × `services` interfaces, `restarts` restarts of each kind.
pub fn run<A: std::alloc::GlobalAlloc>(
    alloc: &'static StatsAlloc<A>,
    n: usize,
    services: usize,
    restarts: usize,
) -> anyhow::Result<Value> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    rt.block_on(async {
        let w = world(n, services).await?;
        let region = Region::new(alloc);
        let start = Instant::now();
        let mut subs = Vec::with_capacity(services);
        for k in 0..services {
            let c = Url::parse(&format!(
                "consumer://127.0.0.1/{0}?interface={0}&version=1.0.0&check=false",
                iface(k)
            ))?;
            subs.push(w.registry.subscribe(&c).await?);
        }
        until(&mut subs, |u| u.len() == n).await?;
        let first_ms = start.elapsed().as_secs_f64() * 1e3;
        let s = region.change();
        let bytes =
            s.bytes_allocated as f64 - s.bytes_deallocated as f64 + s.bytes_reallocated as f64;

        // Same services, new revision: the MetadataInfo is equal, URLs are kept.
        w.report
            .publish_app_metadata(&MetadataInfo::new(
                APP,
                "same",
                (0..services).map(|k| service(k, 1)),
            ))
            .await?;
        let st = w.registry.app_state(APP);
        let published = Arc::new(tokio::sync::Notify::new());
        st.subscribe(&published);
        let t = Instant::now();
        for i in 0..restarts {
            w.instances.register(&instance(i, "same")).await?;
            wait_revision(&st, &published, i, "same").await?;
            drain(&mut subs);
        }
        let same_us = t.elapsed().as_secs_f64() * 1e6 / restarts as f64;

        // A revision per restarted process (Java's timestamp parameter), fetched and built.
        let t = Instant::now();
        for i in 0..restarts {
            let rev = format!("own-{i}");
            w.report
                .publish_app_metadata(&MetadataInfo::new(
                    APP,
                    &rev,
                    (0..services).map(|k| service(k, 2 + i as u64)),
                ))
                .await?;
            w.instances.register(&instance(i, &rev)).await?;
            let ts = (2 + i).to_string();
            until(&mut subs, |u| {
                u.len() == n && u.iter().any(|x| x.param("timestamp") == Some(ts.as_str()))
            })
            .await?;
        }
        let new_us = t.elapsed().as_secs_f64() * 1e6 / restarts as f64;
        black_box(&subs);
        drop(subs);
        Registry::destroy(&w.registry).await;
        Ok(json!({
            "instances": n,
            "services": services,
            "first_lists_ms": (first_ms * 10.0).round() / 10.0,
            "restart_same_services_us": (same_us * 10.0).round() / 10.0,
            "restart_new_revision_us": (new_us * 10.0).round() / 10.0,
            "bytes_per_instance": (bytes / n as f64).round(),
        }))
    })
}

/// Waits (woken by every publish) until instance `i`'s revision `rev` is in use.
async fn wait_revision(
    st: &app_discovery::AppState,
    published: &tokio::sync::Notify,
    i: usize,
    rev: &str,
) -> anyhow::Result<()> {
    let addr = instance(i, rev).address();
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let snap = st.snapshot();
        if snap
            .revisions
            .iter()
            .any(|r| &*r.revision == rev && r.instances.iter().any(|x| x.address() == addr))
        {
            return Ok(());
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if tokio::time::timeout(left, published.notified())
            .await
            .is_err()
        {
            anyhow::bail!("revision {rev} of instance {i} not applied in time");
        }
    }
}

fn drain(subs: &mut [Subscription]) {
    for s in subs {
        while s.try_next().is_some() {}
    }
}
