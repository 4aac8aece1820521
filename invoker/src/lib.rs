//! # invoker
//!
//! The consumer's call path, fed by a registry subscription:
//!
//! ```text
//! Subscription --> RegistryDirectory (diff, reuse invokers, configurators, routers, snapshot)
//!   --> MockClusterInvoker --> cluster strategy --> LoadBalance --> filters --> Invoker
//! ```
//!
//! The entry points, re-exported here: [`RegistryDirectory::subscribe`] follows one service
//! in a registry and refers each provider URL through an [`InvokerFactory`] (a protocol:
//! `protocol-dubbo`, `protocol-triple`, or your own); [`join`] puts the mock wrapper, the
//! cluster strategy, load balancing and filters on top of the directory and returns one
//! [`Invoker`] to call with an [`Invocation`]. Most programs use the `dubbo-consumer` crate,
//! which does both from a registry URL; this crate is for building the pieces yourself.
//!
//! ```
//! use std::sync::Arc;
//!
//! use async_trait::async_trait;
//! use invoker::{
//!     join, Directory, DirectoryOptions, Invocation, Invoker, InvokerFactory, RegistryDirectory,
//!     RpcError, RpcResponse, RpcResult, SharedInvoker,
//! };
//! use registry_core::memory::MemoryRegistry;
//! use registry_core::{Registry, Url};
//!
//! /// A protocol of your own: every provider answers with its address.
//! #[derive(Debug)]
//! struct Echo;
//!
//! #[derive(Debug)]
//! struct EchoInvoker(Url);
//!
//! #[async_trait]
//! impl Invoker for EchoInvoker {
//!     fn url(&self) -> &Url {
//!         &self.0
//!     }
//!     async fn invoke(&self, _call: &Invocation) -> RpcResult {
//!         Ok(RpcResponse::new(self.0.address().unwrap_or_default().into()))
//!     }
//! }
//!
//! impl InvokerFactory for Echo {
//!     fn refer(&self, provider: &Url) -> Result<SharedInvoker, RpcError> {
//!         Ok(Arc::new(EchoInvoker(provider.clone())))
//!     }
//! }
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let registry: Arc<dyn Registry> = Arc::new(MemoryRegistry::new());
//! registry
//!     .register(&Url::parse("echo://10.0.0.1:7/demo.Greeter?interface=demo.Greeter")?)
//!     .await?;
//! let consumer = Url::parse(
//!     "consumer://10.0.0.9/demo.Greeter?interface=demo.Greeter&category=providers,configurators,routers",
//! )?;
//! let directory =
//!     RegistryDirectory::subscribe(registry, consumer, Arc::new(Echo), DirectoryOptions::default())
//!         .await?;
//! assert!(directory.wait_ready_for(std::time::Duration::from_secs(3)).await);
//! let greeter = join(directory as Arc<dyn Directory>);
//! let reply = greeter.invoke(&Invocation::new("hello")).await?;
//! assert_eq!(reply.value, "10.0.0.1:7");
//! # Ok(()) }
//! ```
//!
//! The modules:
//! - [`rpc`]: the call model ([`rpc::Invocation`], [`rpc::Invoker`], [`rpc::InvokerFactory`],
//!   [`rpc::RpcError`] with Dubbo's codes);
//! - [`directory`]: [`directory::Directory`] and the registry-fed directory with its
//!   immutable per-method snapshot;
//! - [`cluster`]: failover, failfast, failsafe, failback, forking, broadcast, available,
//!   mergeable (multi-group references, with the result mergers of [`merger`]);
//! - [`mock`]: force/fail mock decisions and mock values;
//! - [`router`]: routers applied when a directory snapshot is built (incl. the mock selector);
//! - [`loadbalance`]: random, roundrobin, leastactive, shortestresponse, consistenthash, p2c;
//! - [`filter`]: ActiveLimit, ConsumerContext, Deprecated, Future, TraceContext (W3C
//!   `traceparent`/`tracestate`, [`trace_context`]);
//! - [`metrics`]: Dubbo's consumer and directory metrics under Java's names;
//! - [`keys`]: the parameter and attachment names several layers read (`dubbo.tag`, `_TO`,
//!   ...); [`invoker_set`], [`status`]: the snapshot a cluster selects from, the call
//!   counters;
//! - `testutil` (feature `testutil`): scripted invokers, a recording factory, a fixed
//!   directory, provider lists for benchmarks;
//! - `tower` (feature `tower`): the cluster invoker as a `tower::Service`, a directory as a
//!   `tower::discover` stream.

#![warn(unreachable_pub)]

pub mod cluster;
pub mod directory;
pub mod filter;
pub mod invoker_set;
pub mod keys;
pub mod loadbalance;
pub mod merger;
pub mod metrics;
pub mod mock;
pub mod router;
pub mod rpc;
pub mod rules;
pub mod status;
#[cfg(any(test, feature = "testutil"))]
pub mod testutil;
#[cfg(feature = "tower")]
pub mod tower;
pub mod trace_context;

pub use cluster::{join, join_with, ClusterInvoker, ClusterKind, ClusterOptions};
pub use directory::{Directory, DirectoryOptions, RegistryDirectory, RuleWatcher};
pub use filter::InvokerLayer;
pub use loadbalance::LoadBalance;
pub use mock::MockRegistry;
pub use router::{Router, RouterFactory};
pub use rpc::{
    CallMode, Invocation, Invoker, InvokerFactory, RpcError, RpcErrorCode, RpcResponse, RpcResult,
    SharedInvoker,
};
