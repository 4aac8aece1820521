//! Test doubles (feature `testutil`), shared by the tests of every crate: providers whose
//! answers a test scripts, a factory that records what a directory referred and destroyed,
//! a fixed directory, and realistic provider lists for benchmarks.
//!
//! ```
//! use invoker::cluster;
//! use invoker::rpc::Invocation;
//! use invoker::testutil::{consumer, network, ok, scripted_directory, ScriptedInvoker};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! // Failover: the first provider fails with a network error, the second answers.
//! let a = ScriptedInvoker::new(0, network());
//! let b = ScriptedInvoker::new(1, ok("hi"));
//! let url = consumer("loadbalance=roundrobin&retries=2");
//! let cluster = cluster::join(scripted_directory(url, &[a.clone(), b.clone()]));
//! let r = cluster.invoke(&Invocation::new("hello")).await.unwrap();
//! assert_eq!(r.value, "hi");
//! assert_eq!(b.calls(), 1);
//! # }
//! ```

pub mod providers;
mod recording;
mod scripted;

pub use recording::{RecordedInvoker, RecordingFactory};
pub use scripted::{
    biz, consumer, network, ok, scripted_directory, timeout, total_calls, ScriptedInvoker,
};
