//! # registry-nacos
//!
//! The Nacos backend of the subscription engine, over the Nacos **v1 HTTP open API**
//! (`reqwest`): it sits at the start of the flow,
//!
//! ```text
//! Nacos (instance/list, service/list, instance, instance/beat, auth/login)
//!   --> NacosBackend --> FailbackRegistry (registry-core) --> Subscription stream
//!   --> invoker::RegistryDirectory --> cluster --> load balance --> invoker
//! ```
//!
//! and makes a Rust consumer see in Nacos exactly what a Dubbo 3.3 Java consumer sees (fact
//! sheet §6), while what it registers is found by Java consumers:
//!
//! - **names** ([`name`]): `category:interface:version:group`, `$` → `___`, the
//!   `nacos.register-compatible` and `nacos.subscribe.legacy-name` opt-ins, and
//!   [`NacosServiceName`] with Dubbo's `isCompatible` (quirks included);
//! - **register**: an ephemeral instance (ip/port from the URL, metadata = URL params +
//!   category, protocol, path) kept alive by heartbeats ([`heartbeat`]) that re-create it after a
//!   server restart;
//! - **subscribe** ([`subscribe`]): the enabled instances of every matched name (health
//!   ignored), as provider URLs filtered by Dubbo's `isMatch`, `empty://` when none; wildcard
//!   and range subscriptions scan `service/list` and re-scan periodically;
//! - **changes** come from a [`ChangeSource`]; today [`PollingSource`] polls `instance/list`
//!   (`nacos.poll-interval`, default 1 s) and a notification is published at once, only when
//!   the list really changed;
//! - **auth** ([`NacosClient`]): `username`/`password` → access token, refreshed
//!   before its TTL ends and renewed on 403; secrets never reach logs, errors or `Debug`;
//! - **namespaces**: `namespaceId` on every call; **failover** across `host:port` + `backup`;
//! - **errors** ([`NacosError`]): 5xx, timeouts, refused connections and garbage JSON keep the
//!   last good list and are retried with backoff.
//!
//! Registry URL: `nacos://[user:pass@]host:port[?backup=..&namespace=..&group=DEFAULT_GROUP]`,
//! all parameters in [`config`].

mod auth;
mod backend;
pub mod client;
pub mod config;
mod config_center;
pub mod convert;
mod error;
pub mod grpc;
pub mod heartbeat;
mod model;
pub mod name;
pub mod source;
pub mod subscribe;
pub mod transport;

pub use backend::{nacos_registry, NacosBackend, NacosRegistry};
pub use client::NacosClient;
pub use config::NacosConfig;
pub use config_center::NacosConfigCenter;
pub use error::NacosError;
pub use grpc::GrpcNaming;
pub use name::NacosServiceName;
pub use source::{ChangeSource, PollingSource, ServiceSnapshot};
pub use transport::Naming;
