//! The call model: [`Invocation`], [`Invoker`], [`InvokerFactory`], [`RpcError`].

mod error;
mod invocation;
mod invoker;

pub use error::{RpcError, RpcErrorCode};
pub use invocation::{CallMode, Invocation, RpcResponse};
pub use invoker::{Invoker, InvokerFactory, RpcResult, SharedInvoker};
