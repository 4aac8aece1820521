//! # registry-core
//!
//! The spine of the Dubbo-compatible subscription engine. It sits at the start of the flow:
//!
//! ```text
//! registry backend (zk | nacos | memory) --subscribe--> ordered update stream
//!   --> invoker::RegistryDirectory --> cluster --> load balance --> filters --> invoker
//! ```
//!
//! It holds:
//! - the Dubbo URL model ([`Url`], [`ServiceAddressUrl`], [`codec`]) with Dubbo 3.3's parsing,
//!   encoding, parameter and key rules (Dubbo's `URL`, `URLStrParser`);
//! - matching and classification ([`matching`], `UrlUtils`) and the notify rules ([`notify`],
//!   `AbstractRegistry.notify`);
//! - the subscription contract: the [`Registry`] trait, the [`RegistryBackend`] trait backends
//!   implement, and the coalescing [`Subscription`] stream ([`subscription`]);
//! - failback retries ([`failback`] with the [`retry`] schedule, Dubbo's `FailbackRegistry`), the
//!   local cache file ([`cache_file`], `AbstractRegistry`'s properties file);
//! - the dynamic-configuration contract [`ConfigCenter`] ([`config_center`]: get and an ordered
//!   watch of a key in a group, like Dubbo's DynamicConfiguration) and its in-process
//!   [`MemoryConfigCenter`];
//! - the bounded YAML reader every config-centre rule kind goes through ([`rule_yaml`]);
//! - [`MemoryRegistry`] (`memory://`, [`MemoryRegistry::connect`]), an in-process registry with the
//!   same semantics, built as a [`RegistryBackend`] inside [`FailbackRegistry`];
//! - application-level discovery's seam ([`instance`]): the [`ServiceInstance`] model and the
//!   [`InstanceDiscovery`] trait ZooKeeper and Nacos implement, with the in-process
//!   [`MemoryInstanceDiscovery`].
//!
//! Contract in one paragraph: a subscriber receives, per category, the complete current list
//! of matching URLs, in order, with `empty://` for "none"; connection trouble never blanks a
//! list; dropping the subscription unsubscribes. Invalid input is an [`Error`], never a panic.
//!
//! ```
//! use registry_core::{MemoryRegistry, Registry, Url};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> registry_core::Result<()> {
//! let registry = MemoryRegistry::new();
//! let provider = Url::parse("dubbo://10.0.0.1:20880/demo.Greeter?interface=demo.Greeter")?;
//! registry.register(&provider).await?;
//! let consumer =
//!     Url::parse("consumer://10.0.0.9/demo.Greeter?interface=demo.Greeter&category=providers")?;
//! let mut providers = registry.subscribe(&consumer).await?;
//! let first = providers.next().await.expect("the current list");
//! assert_eq!(&*first.category, "providers");
//! assert_eq!(first.urls[0].address().as_deref(), Some("10.0.0.1:20880"));
//! # Ok(()) }
//! ```

#![warn(unreachable_pub)]

pub mod address;
pub mod backoff;
pub mod cache_file;
pub mod codec;
pub mod config_center;
mod error;
pub mod failback;
pub mod health;
pub mod instance;
pub mod ip;
pub mod matching;
pub mod memory;
pub mod memory_config;
pub mod memory_instances;
pub mod metrics;
pub mod notify;
pub mod registry;
pub mod retry;
pub mod rule_yaml;
pub mod subscription;
pub mod url;

pub use config_center::{ConfigCenter, ConfigValue, ConfigWatch, SharedConfigCenter};
pub use error::{Error, Result};
pub use failback::FailbackRegistry;
pub use health::{HealthReporter, RegistryHealth, RegistryState};
pub use instance::{
    InstanceDiscovery, InstanceList, InstanceWatch, ServiceInstance, SharedInstanceDiscovery,
};
pub use memory::MemoryRegistry;
pub use memory_config::MemoryConfigCenter;
pub use memory_instances::MemoryInstanceDiscovery;
pub use registry::{Registry, RegistryBackend};
pub use subscription::{Notification, Publisher, Subscription};
pub use url::{ServiceAddressUrl, Url, UrlBuilder};
