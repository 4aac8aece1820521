//! Cluster `select` on the no-retry path (sticky off, availablecheck on), per balancer.

#![allow(clippy::expect_used)]

use std::sync::Arc;

use async_trait::async_trait;
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use invoker::cluster::core::{ClusterCore, DEFAULT_RESELECT_COUNT};
use invoker::directory::StaticDirectory;
use invoker::invoker_set::InvokerSet;
use invoker::loadbalance;
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

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("cluster_select");
    for n in [255usize, 10_000] {
        let invokers: Vec<SharedInvoker> = (0..n)
            .map(|i| {
                let u = format!(
                    "dubbo://10.{}.{}.{}:20880/demo.Service?weight=100",
                    i >> 16,
                    (i >> 8) & 255,
                    i & 255
                );
                Arc::new(Noop(Url::parse(&u).expect("url"))) as SharedInvoker
            })
            .collect();
        let consumer = Url::parse("consumer://127.0.0.1/demo.Service").expect("url");
        let dir = StaticDirectory::new(consumer, invokers.clone());
        let core = ClusterCore::new(Arc::new(dir), None, DEFAULT_RESELECT_COUNT);
        let set = InvokerSet::new(invokers);
        let call = Invocation::new("sayHello");
        for name in ["random", "roundrobin", "leastactive"] {
            let lb = loadbalance::by_name(name);
            g.bench_with_input(BenchmarkId::new(name, n), &n, |b, _| {
                b.iter(|| core.select(&*lb, &call, &set, &[]))
            });
        }
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
