//! ActiveLimit (`ActiveLimitFilter`): a per-method concurrency limit on each provider, plus the
//! call counting ([`crate::status::RpcStatus`]) that `leastactive`, `shortestresponse` and `p2c`
//! read.
//!
//! - `max = getMethodParameter(method, "actives", 0)` of the invoker URL; `<= 0` = unlimited
//!   (calls are still counted).
//! - Admission is an atomic compare-and-swap on the method's active count: it never admits more
//!   than `max` calls, however many callers race.
//! - A call that cannot be admitted waits for a slot to be released, at most the remaining
//!   part of `getMethodParameter(method, "timeout", 0)` ms of the invoker URL (method level
//!   first), then fails with `LIMIT_EXCEEDED` (code 7)
//!   "Waiting concurrent invoke timeout in client-side ...". **`timeout <= 0` rejects at
//!   once**: Dubbo's `wait(0)` waits for one release and then always throws, so waiting buys
//!   nothing; failing fast keeps the outcome and never parks a caller without a bound.
//! - An admitted call releases its slot exactly once however it ends: success, error (a
//!   downstream `LIMIT_EXCEEDED` included — Dubbo leaks the slot there, apache/dubbo#16455, a
//!   documented divergence), timeout or cancellation (the future dropped): the release is an
//!   RAII guard ([`crate::status::CallGuard`]).
//! - A biz error counts as a completed (successful) call, as Dubbo's `onResponse` does for an
//!   application exception; every other error or a cancellation counts as failed.
//!
//! Apply **one** of the two layers to a provider invoker: [`ActiveLimitLayer`] when the
//! reference has `actives` configured, otherwise [`CountingLayer`] (both count).
//! [`CountingFactory`] does that choice for every provider a directory refers (Dubbo activates
//! ActiveLimitFilter when the URL has `actives`, service or method level).

use std::sync::Arc;

use async_trait::async_trait;
use registry_core::Url;

use super::InvokerLayer;
use crate::rpc::{
    Invocation, Invoker, InvokerFactory, RpcError, RpcErrorCode, RpcResult, SharedInvoker,
};
use crate::status::{CallGuard, RpcStatus, ServiceStatus};

/// Counts every call (active, total, failed, elapsed) without limiting.
#[derive(Debug, Clone, Copy, Default)]
pub struct CountingLayer;

/// Counts every call and enforces the method-level `actives` limit.
#[derive(Debug, Clone, Copy, Default)]
pub struct ActiveLimitLayer;

impl InvokerLayer for CountingLayer {
    fn layer(&self, inner: SharedInvoker) -> SharedInvoker {
        Arc::new(ActiveLimitInvoker::new(inner, false))
    }
}

impl InvokerLayer for ActiveLimitLayer {
    fn layer(&self, inner: SharedInvoker) -> SharedInvoker {
        Arc::new(ActiveLimitInvoker::new(inner, true))
    }
}

/// An invoker wrapped by [`ActiveLimitLayer`] or [`CountingLayer`].
#[derive(Debug)]
pub struct ActiveLimitInvoker {
    inner: SharedInvoker,
    status: Arc<ServiceStatus>,
    enforce: bool,
}

impl ActiveLimitInvoker {
    /// Wraps `inner`; `enforce` applies the `actives` limit.
    pub fn new(inner: SharedInvoker, enforce: bool) -> Self {
        let status = ServiceStatus::for_url(inner.url());
        ActiveLimitInvoker {
            inner,
            status,
            enforce,
        }
    }

    /// The counters of the wrapped invoker.
    pub fn status(&self) -> &Arc<ServiceStatus> {
        &self.status
    }

    async fn admit(&self, method: &str) -> Result<CallGuard, RpcError> {
        let url = self.inner.url();
        let max = if self.enforce {
            clamp(url.method_param_i64(method, "actives", 0))
        } else {
            0
        };
        let ms = self.status.method(method);
        if let Some(g) = self.status.try_begin(&ms, max) {
            return Ok(g);
        }
        let timeout = url.method_param_i64(method, "timeout", 0);
        let start = tokio::time::Instant::now();
        if timeout > 0 {
            // Dubbo's loop: retry admission, wait at most the remaining time for a release,
            // and give up as soon as the remaining time is used up (checked after every
            // wake-up, before trying again).
            let deadline = start + std::time::Duration::from_millis(timeout.unsigned_abs());
            loop {
                let notified = ms.released().notified();
                tokio::pin!(notified);
                notified.as_mut().enable();
                if let Some(g) = self.status.try_begin(&ms, max) {
                    return Ok(g);
                }
                if tokio::time::timeout_at(deadline, notified).await.is_err()
                    || tokio::time::Instant::now() >= deadline
                {
                    break;
                }
            }
        }
        Err(limit_exceeded(
            url,
            method,
            start.elapsed().as_millis(),
            timeout,
            &ms,
            max,
        ))
    }
}

fn clamp(v: i64) -> i32 {
    i32::try_from(v.max(0)).unwrap_or(i32::MAX)
}

fn limit_exceeded(
    url: &Url,
    method: &str,
    elapsed_ms: u128,
    timeout: i64,
    ms: &RpcStatus,
    max: i32,
) -> RpcError {
    RpcError::new(
        RpcErrorCode::LimitExceeded,
        format!(
            "Waiting concurrent invoke timeout in client-side for service: {}, method: {method}, \
             elapsed: {elapsed_ms}, timeout: {timeout}. concurrent invokes: {}. max concurrent \
             invoke limit: {max}",
            url.service_interface().unwrap_or(""),
            ms.active()
        ),
    )
}

#[async_trait]
impl Invoker for ActiveLimitInvoker {
    crate::delegate_invoker!(inner);

    async fn invoke(&self, invocation: &Invocation) -> RpcResult {
        let guard = self.admit(invocation.real_method()).await?;
        let r = self.inner.invoke(invocation).await;
        guard.finish(match &r {
            Ok(_) => true,
            Err(e) => e.is_biz(),
        });
        r
    }
}

/// Wraps an [`InvokerFactory`] so that every provider invoker it refers is counted
/// ([`CountingLayer`]) or counted and limited ([`ActiveLimitLayer`], when the provider URL has
/// an `actives` parameter at service or method level): what `leastactive`,
/// `shortestresponse` and `p2c` need to see real load.
#[derive(Debug)]
pub struct CountingFactory {
    inner: Arc<dyn InvokerFactory>,
}

impl CountingFactory {
    /// Wraps `inner` (the user's transport).
    pub fn new(inner: Arc<dyn InvokerFactory>) -> Self {
        CountingFactory { inner }
    }
}

impl InvokerFactory for CountingFactory {
    fn refer(&self, provider: &Url) -> Result<SharedInvoker, RpcError> {
        let inv = self.inner.refer(provider)?;
        let limited =
            provider.has_param("actives") || provider.any_method_param("actives").is_some();
        Ok(if limited {
            ActiveLimitLayer.layer(inv)
        } else {
            CountingLayer.layer(inv)
        })
    }
    fn preconnect(&self, endpoint: &Url) -> Option<crate::rpc::Preconnect> {
        self.inner.preconnect(endpoint)
    }
}
