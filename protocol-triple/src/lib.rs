//! `protocol-triple`: the consumer side of Dubbo 3's Triple protocol (`tri://`).
//!
//! Where it sits: the directory refers every `tri://` provider URL through
//! [`TripleInvokerFactory`] (an `invoker::rpc::InvokerFactory`); the cluster picks a
//! [`TripleInvoker`] and calls it. Underneath, one [`Connection`] per provider address carries
//! every call as an HTTP/2 stream (h2c, prior knowledge) and reconnects with backoff.
//!
//! The contract (as Java 3.3's `TripleInvoker` and `RequestMetadata`; see docs/compatibility.md):
//! - Requests: `POST /{path}/{method}`, `content-type: application/grpc+proto`, `te: trailers`,
//!   `grpc-timeout` from the call timeout (the `timeout` attachment, else the URL's
//!   method-level `timeout`, else 3000 ms), `tri-service-version`/`tri-service-group` only when
//!   the URL has them, `tri-consumer-appname`, every other attachment as a lower-cased header.
//! - Framing: the gRPC 5-byte prefix ([`frame`]); each message's compressed flag is honoured
//!   with the response's `grpc-encoding` (gzip and deflate are decoded).
//! - Outcomes: `grpc-status` 0 with one message is a result; `tri-exception-code: 3` with a
//!   wrapped Throwable is a business error ([`TripleError::Biz`] → biz `RpcError` with class
//!   and message); any other status (trailers, trailers-only, or an HTTP status of a non-gRPC
//!   response: 404 → `UNIMPLEMENTED`) is [`TripleError::Status`] with the percent-decoded
//!   `grpc-message`. RST_STREAM, GOAWAY, truncation, garbage and silence are clear errors
//!   bounded by the call timeout.
//! - Payloads ([`PayloadMode`]): wrapper mode (Hessian2 in `TripleRequestWrapper`, exactly as
//!   Java 3.3 writes it, [`wrapper`]) or IDL mode (protobuf: run-time schemas from `.proto`
//!   files with proto3 JSON in and out, [`idl`]; or typed `prost` messages with
//!   [`TripleClient`]). An IDL service the files define is called on its proto path
//!   `/{package.Service}/{Rpc}` whichever of its names is used; any other name (a plain Java
//!   interface taking protobuf messages, [`IdlService::with_messages`]) at `/{name}/{method}`.
//! - Limits: messages above the URL's `payload` (default 8 MiB, and a URL may not raise it past
//!   [`TripleLimits::max_payload`]) are refused both ways with a clear error, the response
//!   before it is buffered; wrapper-mode results decode within [`TripleLimits::hessian`]; an
//!   invoker caches request paths for at most [`TripleLimits::max_cached_methods`] method names;
//!   a factory's connections connect at most
//!   [`ConnectionOptions::max_concurrent_connects`] at a time.
//! - Dead peers: an HTTP/2 PING (while calls wait and nothing was read for
//!   [`ConnectionOptions::keepalive_interval`], when a call times out, and after every connect)
//!   must be answered within [`ConnectionOptions::keepalive_timeout`], or the connection is
//!   given up, the invoker turns unavailable and the connection is re-established.
//! - Availability: an invoker is available while its connection is up (or first
//!   connecting); a lost connection makes it unavailable at once and is re-established in
//!   the background.
//! - Application-level discovery: [`MetadataServiceV2Client`] asks an instance for its
//!   `MetadataInfo` over MetadataService v2 (IDL, [`metadata`]).
//! - Writes: with 16 or more calls in flight on a connection, requests queued close together
//!   leave in one write (at most `in_flight / 8` held, at most 0.5–1 ms, never a control
//!   frame); [`ConnectionOptions::write_coalescing`] turns it off.
//!
//! The entry point is [`TripleInvokerFactory`]: give it to a directory (or to
//! `dubbo_consumer::Protocols`), or refer one provider URL yourself:
//!
//! ```no_run
//! use invoker::{Invocation, Invoker, InvokerFactory};
//! use protocol_triple::{PayloadMode, TripleInvokerFactory};
//! use registry_core::Url;
//!
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! // Wrapper mode: Hessian2 arguments, as a Java interface without IDL is called.
//! let factory = TripleInvokerFactory::new(PayloadMode::Wrapper);
//! let provider = factory.refer(&Url::parse(
//!     "tri://127.0.0.1:50051/org.apache.dubbo.demo.DemoService?interface=org.apache.dubbo.demo.DemoService",
//! )?)?;
//! let hello = Invocation::new("sayHello")
//!     .with_arguments(vec!["java.lang.String".into()], vec!["world".into()]);
//! println!("{}", provider.invoke(&hello).await?.value);
//! # Ok(()) }
//! ```

#![warn(unreachable_pub)]

mod call;
mod client;
mod coalesce;
pub mod compression;
mod connection;
mod error;
mod factory;
pub mod frame;
mod headers;
pub mod idl;
mod idl_cost;
mod invoker;
pub mod metadata;
mod payload;
pub mod status;
pub mod wrapper;
pub mod wrapper_codec;

pub use call::Reply;
pub use client::TripleClient;
pub use connection::{Connection, ConnectionOptions};
pub use error::TripleError;
pub use factory::{TripleInvokerFactory, DEFAULT_PORT};
pub use headers::{BaseHeaders, CONTENT_TYPE_PROTO};
pub use idl::{IdlMethod, ProtoSchema};
pub use invoker::{TripleInvoker, TripleLimits, DEFAULT_PAYLOAD, DEFAULT_TIMEOUT_MS};
pub use metadata::MetadataServiceV2Client;
pub use payload::{IdlService, PayloadMode};
pub use status::Code;
