//! Future (`FutureFilter`): per-method `oninvoke` / `onreturn` / `onthrow` callbacks.
//!
//! Callbacks are registered per method name on the [`FutureLayer`] (Dubbo reads them from the
//! consumer model attribute `async-method-info`). `oninvoke` runs before the call, `onreturn`
//! after a success, `onthrow` after a failure. An error returned by `oninvoke` or `onreturn`
//! is routed to `onthrow`. Callbacks never change the call's result.

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

use async_trait::async_trait;
use tracing::warn;

use super::InvokerLayer;
use crate::rpc::{Invocation, Invoker, RpcError, RpcResponse, RpcResult, SharedInvoker};

/// Runs before the call.
pub type OnInvoke = Arc<dyn Fn(&Invocation) -> Result<(), RpcError> + Send + Sync>;
/// Runs after a successful call with the response and the invocation (its arguments).
pub type OnReturn = Arc<dyn Fn(&RpcResponse, &Invocation) -> Result<(), RpcError> + Send + Sync>;
/// Runs after a failed call (or a failed callback).
pub type OnThrow = Arc<dyn Fn(&RpcError, &Invocation) + Send + Sync>;

/// The callbacks of one method (Dubbo's `AsyncMethodInfo`).
#[derive(Clone, Default)]
pub struct AsyncMethodInfo {
    /// Before the call.
    pub oninvoke: Option<OnInvoke>,
    /// After a success.
    pub onreturn: Option<OnReturn>,
    /// After a failure.
    pub onthrow: Option<OnThrow>,
}

impl fmt::Debug for AsyncMethodInfo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AsyncMethodInfo")
            .field("oninvoke", &self.oninvoke.is_some())
            .field("onreturn", &self.onreturn.is_some())
            .field("onthrow", &self.onthrow.is_some())
            .finish()
    }
}

/// The Future filter layer: callbacks per method name.
#[derive(Debug, Clone, Default)]
pub struct FutureLayer {
    methods: Arc<HashMap<String, AsyncMethodInfo>>,
}

impl FutureLayer {
    /// A layer with no callbacks.
    pub fn new() -> Self {
        FutureLayer::default()
    }

    fn entry(&mut self, method: &str) -> &mut AsyncMethodInfo {
        Arc::make_mut(&mut self.methods)
            .entry(method.to_owned())
            .or_default()
    }

    /// Sets the callbacks of `method`.
    pub fn method(mut self, method: &str, info: AsyncMethodInfo) -> Self {
        *self.entry(method) = info;
        self
    }

    /// Sets `oninvoke` of `method`.
    pub fn on_invoke(mut self, method: &str, f: OnInvoke) -> Self {
        self.entry(method).oninvoke = Some(f);
        self
    }

    /// Sets `onreturn` of `method`.
    pub fn on_return(mut self, method: &str, f: OnReturn) -> Self {
        self.entry(method).onreturn = Some(f);
        self
    }

    /// Sets `onthrow` of `method`.
    pub fn on_throw(mut self, method: &str, f: OnThrow) -> Self {
        self.entry(method).onthrow = Some(f);
        self
    }
}

impl InvokerLayer for FutureLayer {
    fn layer(&self, inner: SharedInvoker) -> SharedInvoker {
        Arc::new(FutureInvoker {
            inner,
            methods: self.methods.clone(),
        })
    }
}

/// An invoker wrapped by [`FutureLayer`].
#[derive(Debug)]
pub struct FutureInvoker {
    inner: SharedInvoker,
    methods: Arc<HashMap<String, AsyncMethodInfo>>,
}

fn fire_throw(info: &AsyncMethodInfo, e: &RpcError, invocation: &Invocation) {
    match &info.onthrow {
        Some(f) => f(e, invocation),
        None => {
            warn!(method = invocation.real_method(), error = %e, "callback failed and no onthrow is set")
        }
    }
}

#[async_trait]
impl Invoker for FutureInvoker {
    crate::delegate_invoker!(inner);

    async fn invoke(&self, invocation: &Invocation) -> RpcResult {
        let Some(info) = self.methods.get(invocation.real_method()) else {
            return self.inner.invoke(invocation).await;
        };
        if let Some(f) = &info.oninvoke {
            if let Err(e) = f(invocation) {
                fire_throw(info, &e, invocation);
            }
        }
        let result = self.inner.invoke(invocation).await;
        match &result {
            Ok(resp) => {
                if let Some(f) = &info.onreturn {
                    if let Err(e) = f(resp, invocation) {
                        fire_throw(info, &e, invocation);
                    }
                }
            }
            Err(e) => fire_throw(info, e, invocation),
        }
        result
    }
}
