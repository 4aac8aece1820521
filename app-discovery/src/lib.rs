//! # app-discovery
//!
//! Dubbo 3 **application-level service discovery** for the consumer engine: a provider
//! registered with `register-mode=instance` writes nothing under `/dubbo/<interface>/providers`;
//! it registers its application, maps its interfaces to the application, and serves its
//! interface list through its MetadataService. This crate turns that into ordinary provider
//! URLs for `invoker::RegistryDirectory`:
//!
//! ```text
//! reference (interface, group, version, protocol)
//!   1. mapping  interface -> apps          provided-by | MetadataReport (watched) | subscribed-services
//!   2. instances of each app               registry_core::InstanceDiscovery (ZooKeeper, Nacos, memory)
//!   3. MetadataInfo per revision, shared   MetadataResolver: MetadataReport (remote) | MetadataService (local, v1/v2)
//!   4. instance x ServiceInfo -> URL       urls (port rules, URL objects reused across revisions)
//!   --> ServiceDiscoveryRegistry: a registry_core::Registry ("providers" lists, empty://, ordered)
//!   --> invoker::RegistryDirectory (configurators, routers, per-method cache) --> cluster
//! ```
//!
//! Where each piece lives:
//! - [`registry_core::instance`]: the instance model and the `InstanceDiscovery` seam;
//!   `registry_zk::ZkServiceDiscovery` and `registry_nacos::NacosServiceDiscovery` implement it;
//! - [`report`]: the mapping and `remote` MetadataInfo over any `ConfigCenter`
//!   (`registry_zk::ZkConfigCenter` rooted at `/dubbo`, `registry_nacos::NacosConfigCenter`);
//! - [`metadata_service`]: the MetadataService URL and the [`MetadataServiceClient`] seam (v1
//!   through any `InvokerFactory` here; v2 in `protocol_triple`);
//! - [`resolver`], [`app_state`], [`urls`], [`registry`]: the protocol-independent pipeline;
//! - [`migration`]: `FORCE_INTERFACE` / `APPLICATION_FIRST` / `FORCE_APPLICATION` over two
//!   `RegistryDirectory`s, the rule followed live from the config centre, the per-call fallback.
//!
//! Contract: a subscriber gets the complete matching provider list of every mapped application;
//! an empty mapping waits; an unreachable MetadataService keeps the addresses already known and
//! is retried in the background; one failing revision never empties the others; a revision
//! change that leaves what a provider serves unchanged keeps its URL (and so its invoker and
//! connection). Bad data (instance JSON, MetadataInfo, url-params) is skipped with a warning,
//! never a panic.
//!
//! ```
//! use std::sync::Arc;
//! use app_discovery::{
//!     AppDiscoveryOptions, MetadataInfo, MetadataReport, MetadataResolver,
//!     MetadataServiceClients, ReportLayout, ResolverOptions, ServiceDiscoveryRegistry, ServiceInfo,
//! };
//! use registry_core::instance::{REVISION_KEY, STORAGE_TYPE_KEY};
//! use registry_core::{InstanceDiscovery, MemoryConfigCenter, MemoryInstanceDiscovery, Registry, ServiceInstance, Url};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! // A provider application "shop" at 10.0.0.1:20880, its metadata stored remotely.
//! let instances = Arc::new(MemoryInstanceDiscovery::new());
//! let report = MetadataReport::new(Arc::new(MemoryConfigCenter::new()), ReportLayout::Tree);
//! report.add_mapping("com.foo.Greeter", "shop").await?;
//! report.publish_app_metadata(&MetadataInfo::new("shop", "r1", [ServiceInfo::new("com.foo.Greeter", "dubbo")])).await?;
//! let meta = [(REVISION_KEY, "r1"), (STORAGE_TYPE_KEY, "remote")];
//! let meta = meta.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
//! instances.register(&ServiceInstance::new("shop", "10.0.0.1", 20880, meta)).await?;
//!
//! // The consumer side: a Registry that RegistryDirectory can subscribe to.
//! let resolver = MetadataResolver::new(Some(report.clone()), MetadataServiceClients::new(), ResolverOptions::default());
//! let registry = ServiceDiscoveryRegistry::new(
//!     Url::parse("memory://")?, instances, Some(report), resolver, AppDiscoveryOptions::default());
//! let consumer = Url::parse("consumer://10.0.0.9/com.foo.Greeter?interface=com.foo.Greeter")?;
//! let mut sub = registry.subscribe(&consumer).await?;
//! let n = sub.next().await.unwrap();
//! assert_eq!(n.urls[0].to_string(), "dubbo://10.0.0.1:20880/com.foo.Greeter?dubbo.metadata.storage-type=remote&interface=com.foo.Greeter");
//! # Ok(()) }
//! ```

pub mod app_state;
mod error;
pub mod metadata_info;
pub mod metadata_service;
pub mod migration;
pub mod registry;
pub mod report;
pub mod resolver;
pub mod service_key;
pub mod urls;

pub use app_state::{AppOptions, AppSnapshot, AppState};
pub use error::{Error, Result};
pub use metadata_info::{MetadataInfo, ServiceInfo};
pub use metadata_service::{
    InvokerMetadataClient, MetadataServiceClient, MetadataServiceClients,
    SharedMetadataServiceClient,
};
pub use migration::{
    MigrationDirectory, MigrationReference, MigrationRule, MigrationStep, ReferenceConfig,
};
pub use registry::{AppDiscoveryOptions, Origin, ServiceDiscoveryRegistry};
pub use report::{MappingWatch, MetadataReport, ReportLayout};
pub use resolver::{MetadataResolver, ResolverOptions};
pub use service_key::ServiceMatcher;
