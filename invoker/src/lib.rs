//! # invoker
//!
//! The consumer's call path, fed by a registry subscription:
//!
//! ```text
//! Subscription --> RegistryDirectory (diff, reuse invokers, configurators, routers, snapshot)
//!   --> MockClusterInvoker --> cluster strategy --> LoadBalance --> filters --> Invoker
//! ```
//!
//! - [`rpc`]: the call model ([`rpc::Invocation`], [`rpc::Invoker`], [`rpc::InvokerFactory`],
//!   [`rpc::RpcError`] with Dubbo's codes);
//! - [`directory`]: [`directory::Directory`] and the registry-fed directory with its
//!   immutable per-method snapshot;
//! - [`cluster`]: failover, failfast, failsafe, failback, forking, broadcast, available,
//!   mergeable (multi-group references, with the result mergers of [`merger`]);
//! - [`mock`]: force/fail mock decisions and mock values;
//! - [`router`]: routers applied when a directory snapshot is built (incl. the mock selector);
//! - [`loadbalance`]: random, roundrobin, leastactive, shortestresponse, consistenthash, p2c;
//! - [`filter`]: ActiveLimit, ConsumerContext, Deprecated, Future;
//! - `testutil` (feature `testutil`): scripted invokers, a recording factory, a fixed
//!   directory, provider lists for benchmarks;
//! - `tower` (feature `tower`): the cluster invoker as a `tower::Service`, a directory as a
//!   `tower::discover` stream.

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
pub mod status;
#[cfg(any(test, feature = "testutil"))]
pub mod testutil;
#[cfg(feature = "tower")]
pub mod tower;
