//! # registry-zk
//!
//! The ZooKeeper backend of the Dubbo-compatible subscription engine (Dubbo's `ZookeeperRegistry`).
//! It sits at the start of the flow:
//!
//! ```text
//! ZooKeeper --(persistent recursive watches)--> ZkBackend --> FailbackRegistry
//!   --subscribe--> ordered per-category full lists (empty:// for none) --> invoker::RegistryDirectory
//! ```
//!
//! ## Contract
//! - **Layout exactly as Dubbo** ([`paths`]): `<root>/<URL.encode(interface)>/<category>/
//!   <URL.encode(url.to_full_string())>`, root from the registry URL's `group` (default
//!   `/dubbo`); parents persistent, registrations ephemeral unless `dynamic=false`; registering
//!   replaces a node left by a dead session.
//! - **Subscribe**: one persistent recursive watch per category path, added **before** the
//!   initial plain `getChildren`; `NodeCreated`/`NodeDeleted` events are applied incrementally to
//!   a per-path [`children::ChildSet`] that reuses the parsed `Url` of unchanged children, so one
//!   change among 50k providers costs one parse plus one list publish. Bursts coalesce.
//!   Children are converted as Dubbo 3.3 does (`toUrlsWithEmpty`) except that the provider's
//!   `timestamp` and `pid` are kept (divergence `zk-keep-timestamp`), and notifications are
//!   immediate (divergence `zk-notify-immediately`). Interface `*` watches the root for new
//!   services.
//! - **Connection trouble never blanks a list.** On every reconnect the persistent watches are
//!   added again (zookeeper-client 0.11.2 does not re-send them) and every path is re-listed;
//!   only real changes are published. After session expiry a new session is opened,
//!   registrations are re-created, [`ZkBackend`]'s `session_generation` increases (the failback
//!   layer re-registers too; both are idempotent) and subscriptions re-sync.
//! - Dropping or destroying the registry, or dropping a subscription, stops its tasks (and
//!   removes the server-side watches).
//! - **Dynamic configuration** ([`ZkConfigCenter`]): `/<namespace>/config/<group>/<key>` data
//!   nodes (namespace = the URL's `namespace`, else `group`, else `dubbo`), one persistent
//!   watch per key, re-added and re-read after every reconnect; a key reads `None` only
//!   when the server says it is gone.
//! - Large first lists (10k–50k providers, 7–37 MB) are read with one plain `getChildren` and
//!   converted on all cores ([`children::convert_many`]).
//! - **TLS** to the ensemble's `secureClientPort` with the ZooKeeper client's own names on the
//!   URL (`zookeeper.client.secure=true`, `zookeeper.ssl.trustStore.location` = CA PEM,
//!   `zookeeper.ssl.keyStore.location` = one PEM file with our key and chain for mutual TLS);
//!   the server's certificate must name the host of the address. A session that cannot be
//!   opened over TLS is explained by one handshake of our own ([`ZkError::Tls`]: unknown CA,
//!   expired, wrong name, client certificate refused).
//!
//! ```no_run
//! use registry_core::{Registry, Url};
//! use registry_zk::ZookeeperRegistry;
//!
//! # async fn demo() -> registry_core::Result<()> {
//! let registry = ZookeeperRegistry::connect(&Url::parse("zookeeper://127.0.0.1:2181")?).await?;
//! let consumer = Url::parse(
//!     "consumer://10.0.0.9/com.foo.Bar?interface=com.foo.Bar&category=providers,configurators,routers",
//! )?;
//! let mut sub = registry.subscribe(&consumer).await?;
//! while let Some(n) = sub.next().await {
//!     println!("{}: {} urls", n.category, n.urls.len());
//! }
//! # Ok(())
//! # }
//! ```

#![warn(unreachable_pub)]

mod aggregate;
mod backend;
pub mod children;
pub mod config;
pub mod config_center;
pub mod curator;
mod error;
pub mod instances;
pub mod paths;
mod registry;
mod session;
pub mod testing;
mod tls_probe;
mod watch;

pub use backend::ZkBackend;
pub use config::ZkConfig;
pub use config_center::ZkConfigCenter;
pub use error::{Result, ZkError};
pub use instances::ZkServiceDiscovery;
pub use registry::ZookeeperRegistry;
