//! The call model: [`Invocation`], [`Invoker`], [`InvokerFactory`], [`RpcError`], and what
//! every protocol reads alike from a provider URL: [`call_timeout`], [`socket_address`],
//! [`payload_limit`].

mod endpoint;
mod error;
mod invocation;
mod invoker;
mod timeout;

pub use endpoint::{connection_key, payload_limit, socket_address, DEFAULT_PAYLOAD};
pub use error::{RpcError, RpcErrorCode};
pub use invocation::{CallMode, Invocation, RpcResponse};
#[doc(hidden)]
pub use invoker::__Url;
pub use invoker::{Invoker, InvokerFactory, Preconnect, RpcResult, SharedInvoker};
pub use timeout::call_timeout;
