//! A cluster invoker (one registry of a multi-registry reference) is weighted by its registry
//! URL (`AbstractLoadBalance.getWeight`): `weight` of a `RegistryService` registry URL, without
//! warm-up.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test fixtures panic on bad input

use std::sync::Arc;

use invoker::cluster;
use invoker::directory::StaticDirectory;
use invoker::invoker_set::{now_ms, InvokerSet};
use invoker::rpc::SharedInvoker;
use registry_core::Url;

fn registry_cluster(weight: u32) -> SharedInvoker {
    let consumer = Url::parse("consumer://10.0.0.9/S?interface=S&weight=7").unwrap();
    let registry = Url::parse(&format!(
        "registry://10.0.0.1:2181/org.apache.dubbo.registry.RegistryService?weight={weight}&timestamp={}",
        now_ms() - 1_000
    ))
    .unwrap();
    let dir = StaticDirectory::new(consumer, Vec::new()).with_registry_url(registry);
    cluster::join(Arc::new(dir))
}

#[test]
fn cluster_invokers_are_weighted_by_their_registry_url() {
    let set = InvokerSet::new(vec![registry_cluster(30), registry_cluster(70)]);
    let now = now_ms();
    // Not the consumer's weight=7, and no warm-up although the timestamp is 1 s old.
    assert_eq!(set.weight(0, "m", now), 30);
    assert_eq!(set.weight(1, "m", now), 70);
}

/// Dubbo's `AbstractLoadBalanceTest#testGetRegistryWeight`: a plain invoker gets the default
/// 100, a cluster invoker its registry URL's `weight` (30), not its own URL's (20).
#[test]
fn registry_weight_beats_the_cluster_invokers_own_url() {
    let own =
        Url::parse("dubbo://10.0.0.9/org.apache.dubbo.registry.RegistryService?weight=20").unwrap();
    let reg =
        Url::parse("dubbo://10.0.0.1/org.apache.dubbo.registry.RegistryService?weight=30").unwrap();
    let dir = StaticDirectory::new(own, Vec::new()).with_registry_url(reg);
    let plain: SharedInvoker = Arc::new(Plain(Url::parse("dubbo://10.0.0.2/DemoService").unwrap()));
    let set = InvokerSet::new(vec![plain, cluster::join(Arc::new(dir))]);
    let now = now_ms();
    assert_eq!(set.weight(0, "say", now), 100);
    assert_eq!(set.weight(1, "say", now), 30);
}

/// A registry URL that is not a `RegistryService` URL: its method-level `weight`, warmed up
/// by the cluster invoker's own (consumer) URL `timestamp`, as Java reads
/// `invoker.getUrl().getParameter(timestamp)`.
#[test]
fn non_registry_service_registry_url_weight_warms_up_on_the_own_timestamp() {
    let now = now_ms();
    let own = Url::parse(&format!(
        "consumer://10.0.0.9/S?interface=S&timestamp={}&warmup=600000",
        now - 60_000
    ))
    .unwrap();
    let reg = Url::parse("nacos://10.0.0.1:8848/S?say.weight=100&weight=7").unwrap();
    let dir = StaticDirectory::new(own, Vec::new()).with_registry_url(reg);
    let set = InvokerSet::new(vec![cluster::join(Arc::new(dir))]);
    // 60 s into a 10 min warm-up of weight 100 → 10.
    assert_eq!(set.weight(0, "say", now), 10);
    // Another method: the service-level weight 7 → max(1, 60000 / (600000 / 7)) = 1 (0.7).
    assert_eq!(set.weight(0, "other", now), 1);
}

#[derive(Debug)]
struct Plain(Url);

#[async_trait::async_trait]
impl invoker::rpc::Invoker for Plain {
    fn url(&self) -> &Url {
        &self.0
    }
    async fn invoke(&self, _i: &invoker::rpc::Invocation) -> invoker::rpc::RpcResult {
        Ok(invoker::rpc::RpcResponse::empty())
    }
}

/// A path-less registry URL (how this library usually names registries) is a registry
/// (`RegistryService`) URL: plain `weight`, no warm-up from the consumer's timestamp.
#[test]
fn path_less_registry_url_is_a_registry_service_url() {
    let now = now_ms();
    let own = Url::parse(&format!(
        "consumer://10.0.0.9/S?interface=S&timestamp={}",
        now - 1_000
    ))
    .unwrap();
    let reg = Url::parse("zookeeper://10.0.0.1:2181?weight=40&say.weight=5").unwrap();
    let dir = StaticDirectory::new(own, Vec::new()).with_registry_url(reg);
    let set = InvokerSet::new(vec![cluster::join(Arc::new(dir))]);
    assert_eq!(set.weight(0, "say", now), 40);
}
