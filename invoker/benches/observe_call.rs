//! A cluster call (failover over 64 providers that answer at once) bare, with Dubbo's
//! consumer metrics recorded (Prometheus recorder installed, aggregation on), and with the
//! W3C trace context layer: what observability costs per call, measured in the same run.
//! (That metrics add no allocation per call is asserted by `tests/metrics_alloc.rs`; the
//! trace layer copies the call's attachments, one map per call.)

#![allow(clippy::expect_used)]

use std::sync::Arc;

use async_trait::async_trait;
use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use invoker::cluster::{self, ClusterOptions};
use invoker::directory::Directory;
use invoker::directory::StaticDirectory;
use invoker::filter::trace_context::{TraceContextLayer, TraceSource};
use invoker::filter::InvokerLayer;
use invoker::metrics::MetricsOptions;
use invoker::rpc::{Invocation, Invoker, RpcResponse, RpcResult, SharedInvoker};
use registry_core::Url;

#[derive(Debug)]
struct Noop(Url);

#[async_trait]
impl Invoker for Noop {
    fn url(&self) -> &Url {
        &self.0
    }

    async fn invoke(&self, _invocation: &Invocation) -> RpcResult {
        Ok(RpcResponse::empty())
    }
}

fn cluster(iface: &str, options: ClusterOptions) -> SharedInvoker {
    let consumer = Url::parse(&format!(
        "consumer://10.0.0.1/{iface}?interface={iface}&application=bench&version=1.0.0"
    ))
    .expect("url");
    let providers: Vec<SharedInvoker> = (0..64)
        .map(|i| {
            Arc::new(Noop(
                Url::parse(&format!("dubbo://10.0.1.{i}:20880/{iface}")).expect("url"),
            )) as SharedInvoker
        })
        .collect();
    let dir: Arc<dyn Directory> = Arc::new(StaticDirectory::new(consumer, providers));
    cluster::join_with(dir, options)
}

const BATCH: u64 = 100;

fn bench(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("runtime");
    let _recorder = metrics_exporter_prometheus::PrometheusBuilder::new()
        .install_recorder()
        .expect("recorder");
    let call = Invocation::new("sayHello");
    let variants = [
        ("bare", cluster("bench.Bare", ClusterOptions::default())),
        (
            "metrics",
            cluster(
                "bench.Metrics",
                ClusterOptions {
                    metrics: Some(MetricsOptions {
                        aggregation: true,
                        ..MetricsOptions::default()
                    }),
                    ..ClusterOptions::default()
                },
            ),
        ),
        (
            "trace_context",
            TraceContextLayer::new(TraceSource::Generated { sampled: true })
                .layer(cluster("bench.Trace", ClusterOptions::default())),
        ),
    ];
    let mut g = c.benchmark_group("observe_call");
    g.throughput(Throughput::Elements(BATCH));
    for (name, invoker) in &variants {
        g.bench_function(*name, |b| {
            b.iter(|| {
                rt.block_on(async {
                    for _ in 0..BATCH {
                        let _ = invoker.invoke(&call).await;
                    }
                })
            })
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
