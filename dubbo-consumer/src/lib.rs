//! # dubbo-consumer
//!
//! The one crate a Rust program depends on to be a Dubbo consumer: connect a registry by
//! URL, build a reference, call providers over Dubbo2 or Triple, exactly as a Java Dubbo 3.3
//! consumer would see and call them.
//!
//! ```no_run
//! use dubbo_consumer::{Invocation, Reference};
//!
//! # async fn demo() -> Result<(), dubbo_consumer::Error> {
//! let registry = dubbo_consumer::connect("zookeeper://127.0.0.1:2181").await?;
//! let demo = Reference::builder("org.apache.dubbo.demo.DemoService")
//!     .version("1.0.0")
//!     .build(registry)
//!     .await?;
//! let hello = Invocation::new("sayHello")
//!     .with_arguments(vec!["java.lang.String".into()], vec!["world".into()]);
//! println!("{}", demo.invoke(&hello).await?.value);
//! # Ok(()) }
//! ```
//!
//! ## What happens
//!
//! ```text
//! connect(url) --> Arc<dyn Registry> (zookeeper | nacos: grpc | http | memory)
//!   --subscribe--> ordered per-category full lists (empty:// for none)
//! config centre (the registry's, by default) --watch--> routers, overrides
//!   --> RegistryDirectory (diff, reuse, configurators, routers; immutable per-method snapshot)
//!   --> MockCluster --> cluster strategy --> LoadBalance --> filters
//!   --> Protocols: dubbo:// | tri:// | your own InvokerFactory
//! ```
//!
//! - [`connect`] / [`Connector`]: a registry (or, [`connect_config_center`], a config centre)
//!   from its URL; each backend crate's `connect(&Url)` does the work and returns its own
//!   error, wrapped here in [`Error`].
//! - [`Reference::builder`]: interface, group, version, cluster, loadbalance, mock, timeout,
//!   retries, ... as Dubbo's `<dubbo:reference>`; [`ReferenceBuilder::build`] returns a
//!   [`Reference`], an [`Invoker`].
//! - [`Connector::levels`] / [`connect_levels`] and [`ReferenceBuilder::build_levels`]
//!   (feature `app-discovery`): both discovery levels of a registry, joined as Java 3.3's
//!   `MigrationInvoker` joins them (`APPLICATION_FIRST` unless the config centre's migration
//!   rule says otherwise); [`connect`] of `service-discovery-registry://h:p?registry=zookeeper`
//!   or of a URL with `registry-type=service` is the application level alone.
//! - [`Protocols`]: the provider URL's protocol picks the invoker factory (`dubbo`, `tri`, or
//!   one you add).
//!
//! ## Features
//!
//! | feature | default | what |
//! |---|---|---|
//! | `zookeeper` | yes | `zookeeper://` registries and config centres (`registry-zk`) |
//! | `nacos` | yes | `nacos://` registries and config centres, gRPC or v1 HTTP (`registry-nacos`) |
//! | `dubbo` | yes | `dubbo://` providers (Dubbo2 + Hessian2, `protocol-dubbo`) |
//! | `triple` | yes | `tri://` providers (Triple, wrapper and IDL modes, `protocol-triple`) |
//! | `app-discovery` | yes | application-level discovery (`service-discovery-registry://`, `registry-type=service`) and two-level references ([`Levels`], `app-discovery`) |
//! | `tower` | no | [`tower`]: the cluster invoker as a `tower::Service`, a directory as a `tower::discover` stream |
//!
//! `memory://` (an in-process registry and config centre) is always there.
//!
//! The crates underneath are re-exported ([`registry`], [`invoker`] with the shortcuts
//! [`rpc`], [`cluster`], [`directory`], and per feature `zookeeper`, `nacos`, `dubbo`,
//! `triple`, `app_discovery`) for everything beyond the front door.
//!
//! ## Both discovery levels
//!
//! What a Java 3.3 consumer does by default: subscribe the interface level and the
//! application level (mapping → instances → MetadataInfo) of the same registry, and call the
//! application level when it serves.
//!
//! ```no_run
//! # #[cfg(feature = "app-discovery")]
//! # async fn demo() -> Result<(), dubbo_consumer::Error> {
//! use dubbo_consumer::{Invocation, Level, Reference};
//!
//! let levels = dubbo_consumer::Connector::new("zookeeper://127.0.0.1:2181")
//!     .levels(Level::All)
//!     .await?;
//! let demo = Reference::builder("org.apache.dubbo.demo.DemoService")
//!     .application("demo-consumer") // the migration rule is `demo-consumer.migration`
//!     .build_levels(&levels)
//!     .await?;
//! let step = demo.migration().map(|m| m.directory().step());
//! println!("{step:?}: {}", demo.invoke(&Invocation::new("sayHello")).await?.value);
//! demo.close().await;
//! levels.destroy().await;
//! # Ok(()) }
//! ```

#![warn(unreachable_pub)]

#[cfg(feature = "app-discovery")]
pub mod app_registry;
mod connect;
mod error;
#[cfg(feature = "app-discovery")]
mod levels;
mod protocols;
mod reference;

#[cfg(feature = "app-discovery")]
pub use connect::connect_levels;
pub use connect::{
    config_center_url, connect, connect_config_center, parse_url, Connector, PROTOCOLS,
};
pub use error::{Error, Result};
#[cfg(feature = "app-discovery")]
pub use levels::{Level, Levels};
pub use protocols::Protocols;
pub use reference::{Reference, ReferenceBuilder};

pub use async_trait::async_trait;
pub use invoker::rpc::{
    CallMode, Invocation, Invoker, InvokerFactory, RpcError, RpcErrorCode, RpcResponse, RpcResult,
    SharedInvoker,
};
pub use registry_core::{
    ConfigCenter, Notification, Registry, SharedConfigCenter, Subscription, Url,
};

/// The registry model: URLs, the `Registry` and `ConfigCenter` traits, `memory://`
/// (crate `registry-core`).
pub use registry_core as registry;

/// The call path: directories, cluster strategies, routers, load balancers, filters, mock.
pub use invoker;
pub use invoker::{cluster, directory, rpc};

/// Application-level discovery and migration between levels (crate `app-discovery`).
#[cfg(feature = "app-discovery")]
pub use app_discovery;

/// The ZooKeeper registry and config centre (crate `registry-zk`).
#[cfg(feature = "zookeeper")]
pub use registry_zk as zookeeper;

/// The Nacos registry and config centre (crate `registry-nacos`).
#[cfg(feature = "nacos")]
pub use registry_nacos as nacos;

/// The Dubbo2 protocol (crate `protocol-dubbo`).
#[cfg(feature = "dubbo")]
pub use protocol_dubbo as dubbo;

/// The Triple protocol (crate `protocol-triple`).
#[cfg(feature = "triple")]
pub use protocol_triple as triple;

/// tower adapters: the cluster invoker as a `tower::Service<Invocation>`, a directory as a
/// `tower::discover` stream of provider invokers.
#[cfg(feature = "tower")]
pub use invoker::tower;

/// The README's code, compiled as doctests.
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
pub struct ReadmeDoctests;
