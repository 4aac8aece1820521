//! # protocol-dubbo
//!
//! The Dubbo2 protocol (`dubbo://`) for the consumer engine: where the call path ends.
//!
//! ```text
//! RegistryDirectory --refer(url)--> DubboInvokerFactory --> DubboInvoker (one per provider URL)
//!   cluster --> load balance --> filters --> DubboInvoker::invoke
//!     --> ConnectionPool (shared per host:port) --> Client (connect/reconnect) --> Conn
//!         (writer task + reader task, pending calls by request id) --> TCP
//! ```
//!
//! Contract:
//! - Wire format exactly as Java Dubbo 3.3 writes and reads it (`ExchangeCodec`, `DubboCodec`): the
//!   16-byte [`header`], Hessian2 request bodies ([`request`]) with the attachments Java sends,
//!   response bodies with every result flag ([`response`]), heartbeats and readonly events, status
//!   codes ([`status`]), the `payload` limit (8 MiB) both ways ([`frame`]).
//! - One shared connection per provider address by default (`shareconnections`), or
//!   `connections=N` of the invoker's own; connect at refer time in the background (`lazy=true`:
//!   on the first call); reconnect with backoff; a heartbeat after 60 s (`heartbeat`) without
//!   traffic; close and reconnect after `heartbeat.timeout` without reading.
//! - Many calls in flight per connection, multiplexed by request id; per-call timeout from the
//!   (method-level) `timeout`; sync, async and one-way (`return=false`) calls.
//! - Errors map to Dubbo's codes ([`DubboError::to_rpc_error`]): a provider exception is a
//!   biz [`RpcError`](::invoker::rpc::RpcError) carrying its Java class and message; a timeout is code 2;
//!   a lost connection or a non-OK status is a network error (code 1), so failover retries it.
//! - [`Invoker::is_available`](::invoker::rpc::Invoker::is_available) follows the connection state and readonly events,
//!   so the cluster's `availablecheck` skips a provider whose connection dropped while a
//!   background task reconnects it.
//! - Bad input from the network (wrong magic, absurd lengths, truncated or undecodable
//!   bodies, unknown request ids) gives a clear error or is logged and dropped; never a panic.
//!   Response bodies decode within [`hessian2::Limits`] (depth, lengths, and a memory budget
//!   tied to the body size that also covers the JSON form).
//! - What a provider URL (or the config centre) may set for the consumer is clamped by
//!   [`DubboOptions`]: `payload` (8 MiB at most by default), `heartbeat` (1 s at least),
//!   `reconnect` (1 s at least), `connections`/`shareconnections` (64 at most), every period
//!   to a day and the call timeout to Java's `int` range. Background connects run at most
//!   16 at a time per factory; a provider that stops reading is given up after 10 s without
//!   write progress, and the write queue is bounded (16 MiB).
//!
//! The entry point is [`DubboInvokerFactory`]: give it to a directory (or to
//! `dubbo_consumer::Protocols`), or refer one provider URL yourself:
//!
//! ```no_run
//! use invoker::{Invocation, Invoker, InvokerFactory};
//! use protocol_dubbo::DubboInvokerFactory;
//! use registry_core::Url;
//!
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! let factory = DubboInvokerFactory::new();
//! let provider = factory.refer(&Url::parse(
//!     "dubbo://127.0.0.1:20880/org.apache.dubbo.demo.DemoService?interface=org.apache.dubbo.demo.DemoService",
//! )?)?;
//! let hello = Invocation::new("sayHello")
//!     .with_arguments(vec!["java.lang.String".into()], vec!["world".into()]);
//! println!("{}", provider.invoke(&hello).await?.value);
//! # Ok(()) }
//! ```

#![warn(unreachable_pub)]

/// An in-process echo provider and typical payloads for benchmarks (feature `testutil`).
#[cfg(any(test, feature = "testutil"))]
pub mod bench_support;
mod client;
pub mod config;
mod connection;
pub mod error;
pub mod factory;
pub mod frame;
pub mod header;
pub mod invoker;
pub mod pool;
pub mod request;
pub mod response;
pub mod serialization;
pub mod status;
pub mod types;

pub use config::DubboOptions;
pub use error::DubboError;
pub use factory::DubboInvokerFactory;
pub use invoker::DubboInvoker;
pub use pool::ConnectionPool;
pub use types::{infer_java_type, infer_java_types};
