//! # registry-nacos
//!
//! The Nacos backend of the subscription engine. It sits at the start of the flow,
//!
//! ```text
//! Nacos 2.x/3.x gRPC (default)            Nacos v1 HTTP (nacos.transport=http)
//!   Instance/BatchInstance, Subscribe,      instance, instance/beat, instance/list,
//!   NotifySubscriber pushes, ServiceList,   service/list, auth/login
//!   ServiceQuery, HealthCheck
//!          \                                 /
//!           --> Naming (transport seam) + ChangeSource --> NacosBackend
//!   --> FailbackRegistry (registry-core) --> Subscription stream
//!   --> invoker::RegistryDirectory --> cluster --> load balance --> invoker
//! ```
//!
//! and makes a Rust consumer see in Nacos exactly what a Dubbo 3.3 Java consumer sees (Dubbo's
//! `NacosRegistry`, `NacosServiceName`; see docs/compatibility.md), while what it registers is
//! found by Java consumers. Everything above the transport is shared by both transports:
//!
//! - **names** ([`name`]): `category:interface:version:group`, `$` → `___`, the
//!   `nacos.register-compatible` and `nacos.subscribe.legacy-name` opt-ins, and
//!   [`NacosServiceName`] with Dubbo's `isCompatible` (quirks included);
//! - **register**: an ephemeral instance (ip/port from the URL, metadata = URL params +
//!   category, protocol, path); `ephemeral=false` on the provider URL makes it a persistent
//!   instance (`PersistentInstanceRequest` when the server advertises
//!   `supportPersistentInstanceByGrpc`, else the v1 HTTP API, as nacos-client chooses);
//! - **subscribe** ([`subscribe`]): the enabled instances of every matched name (health
//!   ignored), as provider URLs filtered by Dubbo's `isMatch`, `empty://` when none; wildcard
//!   and range subscriptions scan the service list and re-scan every `nacos.scan-interval`,
//!   or, over gRPC to a server advertising `fuzzyWatch` (Nacos 3.x), follow a fuzzy watch;
//! - **changes** come from a [`ChangeSource`] and a notification is published at once, only
//!   when the list really changed;
//! - **auth**: `username`/`password` → access token over HTTP (`/nacos/v3/auth/user/login`,
//!   falling back to `/nacos/v1/auth/users/login`), refreshed before its TTL ends and renewed on
//!   403; secrets never reach logs, errors or `Debug`;
//! - **application level** ([`NacosServiceDiscovery`]): the instances of an application
//!   (service `<app>`) with their metadata, for Dubbo 3 application-level discovery;
//! - **errors** ([`NacosError`]): garbage, refused and failed requests keep the last good list
//!   and are retried.
//!
//! ## gRPC (default, [`grpc`])
//!
//! One connection per registry (server list + namespace), to port + `nacos.grpc-port-offset`
//! (1000), owned by one task: ServerCheck, bi-stream with ConnectionSetup (never blocking on the
//! stream's response headers), SetupAck or HealthCheck probing, HealthCheck after 5 s idle,
//! ClientDetection / ConnectReset answered, reconnect with backoff across `backup` servers,
//! 64 MiB decoding limit. Instances live as long as the connection (a killed process's
//! instances vanish at once); after every reconnect registrations (batched per service, as Dubbo
//! 3.3 does) and subscriptions are redone and the fresh snapshots published; a list is never
//! blanked during an outage. Pushes and subscribe replies are full snapshots applied in
//! arrival order by that one task; every push is acked with its requestId. No polling unless
//! `nacos.query-interval` asks for it. The same machinery carries the config centre
//! ([`NacosConfigCenter`]).
//!
//! ## v1 HTTP (`nacos.transport=http`)
//!
//! `reqwest` requests failing over across the servers, heartbeats per instance
//! ([`heartbeat`]), [`PollingSource`] polling `instance/list` every `nacos.poll-interval`.
//!
//! ## Which transport for which server
//!
//! | server | gRPC (default) | v1 HTTP (`nacos.transport=http`) |
//! |---|---|---|
//! | Nacos 1.x | no gRPC port: use HTTP | works |
//! | Nacos 2.x | works (2.0–2.2 without SetupAck: HealthCheck probing) | works |
//! | Nacos 3.0 / 3.1 | works (fuzzy watch for wildcards) | naming works; admin v1 calls answer 410 (not used) |
//! | Nacos 3.2+ | works | v1 removed (404) unless the legacy-adapter jar is installed |
//! | Nacos 3.3 (client auth on by default) | works with `user:pass@` | only with the adapter, and credentials |
//! | rnacos 0.8 (tests) | works (no SetupAck, no fuzzy watch) | works |
//!
//! Only rnacos is tested here (plus nacos-sdk-python as a peer); the Java rows follow the
//! protocol fact sheet (`nacos-grpc.md`) and are not measured.
//!
//! Registry URL: `nacos://[user:pass@]host:port[?backup=..&namespace=..&group=DEFAULT_GROUP]`,
//! all parameters in [`config`].
//!
//! ```no_run
//! use registry_core::{Registry, Url};
//! use registry_nacos::NacosRegistry;
//!
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! let registry = NacosRegistry::connect(&Url::parse("nacos://127.0.0.1:8848?namespace=dev")?).await?;
//! let consumer =
//!     Url::parse("consumer://10.0.0.9/com.foo.Bar?interface=com.foo.Bar&category=providers")?;
//! let mut providers = registry.subscribe(&consumer).await?;
//! while let Some(list) = providers.next().await {
//!     println!("{}: {} URLs", list.category, list.urls.len());
//! }
//! # Ok(()) }
//! ```

#![warn(unreachable_pub)]

mod auth;
mod backend;
pub mod client;
pub mod config;
mod config_center;
pub mod convert;
mod discovery;
mod error;
pub mod grpc;
pub mod heartbeat;
mod model;
pub mod name;
pub mod source;
pub mod subscribe;
pub mod transport;

pub use backend::{NacosBackend, NacosRegistry};
pub use client::NacosClient;
pub use config::NacosConfig;
pub use config_center::NacosConfigCenter;
pub use discovery::NacosServiceDiscovery;
pub use error::NacosError;
pub use grpc::GrpcNaming;
pub use name::NacosServiceName;
pub use source::{ChangeSource, PollingSource, ServiceSnapshot};
pub use transport::Naming;
