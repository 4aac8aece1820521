//! Invokers that call nothing and record what they were asked, for end-to-end tests of the
//! directory and cluster layers: [`invoker::testutil::RecordingFactory`] (where the calls land,
//! which invokers were destroyed) and [`subscribe`], a directory of a service on a registry
//! whose invokers it records.

use std::sync::Arc;

use invoker::directory::{DirectoryOptions, RegistryDirectory};
pub use invoker::testutil::{RecordedInvoker, RecordingFactory};
use registry_core::Registry;

use crate::contract::consumer_url;

/// A [`RegistryDirectory`] of `iface` on `registry` (providers, configurators and routers;
/// round robin) whose invokers a new [`RecordingFactory`] records; panics when subscribing
/// fails.
pub async fn subscribe(
    registry: Arc<dyn Registry>,
    iface: &str,
) -> (Arc<RecordingFactory>, Arc<RegistryDirectory>) {
    let factory = Arc::new(RecordingFactory::default());
    let consumer = consumer_url(
        iface,
        "providers,configurators,routers",
        "loadbalance=roundrobin",
    );
    let dir = RegistryDirectory::subscribe(
        registry,
        consumer,
        factory.clone(),
        DirectoryOptions::default(),
    )
    .await
    .unwrap_or_else(|e| panic!("subscribe the directory of {iface}: {e}"));
    (factory, dir)
}
