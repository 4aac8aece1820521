//! Recording Dubbo's consumer metrics (aggregation included, with a Prometheus recorder
//! installed) adds no allocation to a call in steady state: a cluster with metrics allocates
//! exactly what the same cluster without them does. Own test binary: the counting allocator
//! sees the whole process. Run with `--nocapture` for the counts.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::alloc::System;
use std::sync::Arc;

use async_trait::async_trait;
use invoker::cluster::{self, ClusterOptions};
use invoker::directory::Directory;
use invoker::directory::StaticDirectory;
use invoker::filter::InvokerLayer;
use invoker::metrics::{MetricsLayer, MetricsOptions};
use invoker::rpc::{Invocation, Invoker, RpcResponse, RpcResult, SharedInvoker};
use registry_core::Url;
use stats_alloc::{Region, StatsAlloc, INSTRUMENTED_SYSTEM};

#[global_allocator]
static GLOBAL: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

/// Answers with the empty result without allocating (the `async_trait` box aside).
#[derive(Debug)]
struct Empty(Url);

#[async_trait]
impl Invoker for Empty {
    fn url(&self) -> &Url {
        &self.0
    }
    async fn invoke(&self, _: &Invocation) -> RpcResult {
        Ok(RpcResponse::empty())
    }
}

fn cluster(iface: &str, metrics: Option<MetricsOptions>) -> SharedInvoker {
    let consumer = Url::parse(&format!(
        "consumer://10.0.0.1/{iface}?interface={iface}&application=alloc-app&version=1.0.0"
    ))
    .unwrap();
    let providers: Vec<SharedInvoker> = (0..64)
        .map(|i| {
            Arc::new(Empty(
                Url::parse(&format!("test://10.0.1.{i}:20880/{iface}")).unwrap(),
            )) as SharedInvoker
        })
        .collect();
    let dir: Arc<dyn Directory> = Arc::new(StaticDirectory::new(consumer, providers));
    cluster::join_with(
        dir,
        ClusterOptions {
            metrics,
            ..ClusterOptions::default()
        },
    )
}

/// Allocations per call: the fewest of five rounds of `n` calls (the counter is process-wide).
async fn per_call(c: &SharedInvoker, call: &Invocation, n: usize) -> f64 {
    for _ in 0..1000 {
        c.invoke(call).await.unwrap();
    }
    let mut best = f64::INFINITY;
    for _ in 0..5 {
        let region = Region::new(GLOBAL);
        for _ in 0..n {
            c.invoke(call).await.unwrap();
        }
        let s = region.change();
        best = best.min((s.allocations + s.reallocations) as f64 / n as f64);
    }
    best
}

#[tokio::test(flavor = "current_thread")]
async fn metrics_add_no_allocation_per_call() {
    let _h = metrics_exporter_prometheus::PrometheusBuilder::new()
        .install_recorder()
        .unwrap();
    let call = Invocation::new("sayHello");
    let n = 10_000;
    let bare = per_call(&cluster("alloc.Bare", None), &call, n).await;
    let with = per_call(
        &cluster(
            "alloc.Metrics",
            Some(MetricsOptions {
                aggregation: true,
                ..MetricsOptions::default()
            }),
        ),
        &call,
        n,
    )
    .await;
    // The layer form boxes one more future (its own `invoke`), and records nothing else.
    let layered = {
        let inner = cluster("alloc.Layer", None);
        let l = MetricsLayer::new(MetricsOptions {
            aggregation: true,
            ..MetricsOptions::default()
        });
        per_call(&l.layer(inner), &call, n).await
    };
    println!("allocations per call: cluster {bare}, with metrics {with}, metrics layer {layered}");
    assert_eq!(with, bare, "metrics allocate on the call path");
    assert_eq!(
        layered,
        bare + 1.0,
        "the layer allocates more than its future"
    );
}
