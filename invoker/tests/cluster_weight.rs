//! A cluster invoker (one registry of a multi-registry reference) is weighted by its registry
//! URL (§10.1): `weight` of a `RegistryService` registry URL, without warm-up.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test fixtures panic on bad input

use std::sync::Arc;

use invoker::cluster;
use invoker::directory::static_directory::StaticDirectory;
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
