//! tower adapters (feature `tower`): Dubbo's call path inside a tower stack, and tower's
//! balancers over Dubbo providers.
//!
//! - [`InvokerService`]: any [`Invoker`](crate::rpc::Invoker), e.g. the cluster invoker of
//!   [`crate::cluster::join`], as a `tower::Service<Invocation>`; tower's layers (timeouts,
//!   rate limits, retries, buffers) then wrap the whole Dubbo call path.
//! - [`DirectoryDiscover`]: a [`RegistryDirectory`](crate::directory::RegistryDirectory) as a
//!   `tower::discover` stream: `Change::Insert(identity, InvokerService)` for each provider
//!   invoker the directory lists (after configurators and routers), `Change::Remove` when it
//!   leaves, so `tower::balance` can balance over the providers a Dubbo consumer sees.
//!
//! ```
//! use std::sync::Arc;
//! use invoker::directory::{DirectoryOptions, RegistryDirectory};
//! use invoker::rpc::{Invocation, Invoker, InvokerFactory, RpcError, RpcResponse, RpcResult, SharedInvoker};
//! use invoker::tower::DirectoryDiscover;
//! use registry_core::{MemoryRegistry, Registry, Url};
//! use tower::balance::p2c::Balance;
//! use tower::load::{CompleteOnResponse, PendingRequestsDiscover};
//! use tower::ServiceExt;
//!
//! #[derive(Debug)]
//! struct Echo(Url);
//!
//! #[async_trait::async_trait]
//! impl Invoker for Echo {
//!     fn url(&self) -> &Url { &self.0 }
//!     async fn invoke(&self, _: &Invocation) -> RpcResult {
//!         Ok(RpcResponse::new(self.0.port().into()))
//!     }
//! }
//!
//! #[derive(Debug)]
//! struct EchoFactory;
//!
//! impl InvokerFactory for EchoFactory {
//!     fn refer(&self, provider: &Url) -> Result<SharedInvoker, RpcError> {
//!         Ok(Arc::new(Echo(provider.clone())))
//!     }
//! }
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), tower::BoxError> {
//! let registry = Arc::new(MemoryRegistry::new());
//! registry.register(&Url::parse("echo://10.0.0.1:7001/com.foo.Echo?interface=com.foo.Echo")?).await?;
//! let consumer = Url::parse("consumer://10.0.0.9/com.foo.Echo?interface=com.foo.Echo")?;
//! let dir = RegistryDirectory::subscribe(registry, consumer, Arc::new(EchoFactory), DirectoryOptions::default()).await?;
//!
//! // tower's power-of-two-choices balancer over the providers, by calls in flight.
//! let discover = PendingRequestsDiscover::new(DirectoryDiscover::new(dir), CompleteOnResponse::default());
//! let balance = Balance::new(discover);
//! let answer = balance.oneshot(Invocation::new("echo")).await?;
//! assert_eq!(answer.value, 7001);
//! # Ok(()) }
//! ```

mod discover;
mod service;

pub use discover::DirectoryDiscover;
pub use service::InvokerService;
