//! Realistic provider lists and invokers that do nothing, for benchmarks and tests: the
//! criterion benches, the `dubbo-bench` tool (crate `bench`) and tests that measure the
//! directory rather than a transport.
//!
//! [`apply_timings`] builds a directory with `providers` providers, then times (a) applying a
//! full list in which one provider changed (the same `Url` objects for the others, as
//! backends deliver them) and (b) a from-scratch rebuild of the same list in a new
//! directory.

use std::sync::Arc;
use std::time::Instant;

use async_trait::async_trait;
use registry_core::Url;

use crate::directory::{DirectoryOptions, RegistryDirectory};
use crate::rpc::{
    Invocation, Invoker, InvokerFactory, RpcError, RpcResponse, RpcResult, SharedInvoker,
};

/// An invoker that does nothing (the transport is not what is measured).
#[derive(Debug)]
pub struct NoopInvoker {
    url: Url,
}

#[async_trait]
impl Invoker for NoopInvoker {
    fn url(&self) -> &Url {
        &self.url
    }
    async fn invoke(&self, _invocation: &Invocation) -> RpcResult {
        Ok(RpcResponse::empty())
    }
}

/// A factory of [`NoopInvoker`]s.
#[derive(Debug, Default)]
pub struct NoopFactory;

impl InvokerFactory for NoopFactory {
    fn refer(&self, provider: &Url) -> Result<SharedInvoker, RpcError> {
        Ok(Arc::new(NoopInvoker {
            url: provider.clone(),
        }))
    }
}

/// The consumer URL used by the measurements.
pub fn consumer() -> Url {
    Url::builder("consumer")
        .host("10.0.0.1")
        .path("com.example.DemoService")
        .params([
            ("interface", "com.example.DemoService"),
            ("application", "bench-consumer"),
            ("side", "consumer"),
            ("timeout", "3000"),
            ("methods", "sayHello,sayGoodbye"),
        ])
        .build()
}

/// A realistic provider URL number `i` (distinct host/port, shared params).
pub fn provider(i: usize, timestamp: u64) -> Url {
    let host = format!("10.{}.{}.{}", (i >> 16) & 255, (i >> 8) & 255, i & 255);
    let ts = timestamp.to_string();
    Url::builder("dubbo")
        .host(&host)
        .port(20880)
        .path("com.example.DemoService")
        .params([
            ("anyhost", "true"),
            ("application", "bench-provider"),
            ("deprecated", "false"),
            ("dubbo", "2.0.2"),
            ("dynamic", "true"),
            ("generic", "false"),
            ("interface", "com.example.DemoService"),
            ("methods", "sayHello,sayGoodbye"),
            ("release", "3.3.1"),
            ("side", "provider"),
            ("weight", "100"),
            ("timestamp", ts.as_str()),
        ])
        .build()
}

/// `providers` distinct provider URLs.
pub fn provider_list(providers: usize) -> Vec<Url> {
    (0..providers)
        .map(|i| provider(i, 1_700_000_000_000))
        .collect()
}

/// A directory already holding `list`.
pub fn directory_with(list: &[Url]) -> Arc<RegistryDirectory> {
    let dir = RegistryDirectory::new(
        consumer(),
        Url::builder("zookeeper")
            .host("127.0.0.1")
            .port(2181)
            .build(),
        Arc::new(NoopFactory),
        DirectoryOptions::default(),
    );
    dir.notify_category("providers", list);
    dir
}

/// `(one_change_us, rebuild_us)` at `providers` providers: the mean time to apply a full
/// list with one provider replaced (alternating between two versions of it), and the time of
/// a from-scratch apply of the same list in a new directory (median of a few runs).
pub fn apply_timings(providers: usize) -> (f64, f64) {
    let providers = providers.max(1);
    let base = provider_list(providers);
    let dir = directory_with(&base);
    let mid = providers / 2;
    let mut a = base.clone();
    let mut b = base.clone();
    a[mid] = provider(mid + providers, 1_700_000_000_001);
    b[mid] = provider(mid + 2 * providers, 1_700_000_000_002);
    let rounds = (200_000 / providers).clamp(5, 200);
    let start = Instant::now();
    for r in 0..rounds {
        dir.notify_category("providers", if r % 2 == 0 { &a } else { &b });
    }
    let one_change_us = start.elapsed().as_secs_f64() * 1e6 / rounds as f64;
    let runs = if providers >= 50_000 { 3 } else { 5 };
    let mut rebuilds: Vec<f64> = (0..runs)
        .map(|_| {
            let start = Instant::now();
            let d = directory_with(&base);
            let t = start.elapsed().as_secs_f64() * 1e6;
            drop(d);
            t
        })
        .collect();
    rebuilds.sort_by(f64::total_cmp);
    (one_change_us, rebuilds[rebuilds.len() / 2])
}
