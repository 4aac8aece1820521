//! [`InvokerService`]: an invoker as a `tower::Service`.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use crate::rpc::{Invocation, RpcError, RpcResponse, SharedInvoker};

/// An [`Invoker`](crate::rpc::Invoker) as a `tower::Service<Invocation>`: always ready (the
/// invoker itself decides per call: failover, mock, no provider), each call one
/// `Invoker::invoke`. Cheap to clone: clones share the invoker.
#[derive(Debug, Clone)]
pub struct InvokerService {
    invoker: SharedInvoker,
}

impl InvokerService {
    /// Serves calls with `invoker`.
    pub fn new(invoker: SharedInvoker) -> Self {
        InvokerService { invoker }
    }

    /// The invoker.
    pub fn get_ref(&self) -> &SharedInvoker {
        &self.invoker
    }

    /// The invoker, taken back.
    pub fn into_inner(self) -> SharedInvoker {
        self.invoker
    }
}

impl tower::Service<Invocation> for InvokerService {
    type Response = RpcResponse;
    type Error = RpcError;
    type Future = Pin<Box<dyn Future<Output = Result<RpcResponse, RpcError>> + Send + 'static>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), RpcError>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, invocation: Invocation) -> Self::Future {
        let invoker = self.invoker.clone();
        Box::pin(async move { invoker.invoke(&invocation).await })
    }
}
