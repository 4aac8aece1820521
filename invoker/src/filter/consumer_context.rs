//! ConsumerContext (`ConsumerContextFilter`): carries the caller's context into every call.
//!
//! A [`CallContext`] is the Rust shape of Dubbo's `RpcContext`: server attachments (of the
//! request being served, when a provider calls on), client attachments set by the caller,
//! and an optional deadline (Dubbo's `timeout-countdown`). It is scoped to a task with
//! [`CallContext::scope`]. The filter, outermost in the chain:
//! - sets `remote.application` to the invoker URL's `application`;
//! - copies the server attachments, then the client attachments (overwriting);
//! - with a deadline and `enable-timeout-countdown` (method param, default true): fails with
//!   [`RpcErrorCode::TimeoutTerminate`] (code 8) without calling when it has expired, else
//!   passes the remaining milliseconds as the `_TO` attachment;
//! - after a successful call, copies the result attachments into the context's response
//!   attachments.
//!
//! Nothing is copied (no allocation) when there is no context and `remote.application` is
//! already right.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use parking_lot::Mutex;
use tokio::time::Instant;

use super::InvokerLayer;
use crate::keys::TIMEOUT_ATTACHMENT_KEY;
use crate::rpc::{Invocation, Invoker, RpcError, RpcErrorCode, RpcResult, SharedInvoker};

/// The attachment naming the consumer's application.
pub const REMOTE_APPLICATION_KEY: &str = "remote.application";

tokio::task_local! {
    static CURRENT: Arc<CallContext>;
}

/// The caller's context for the calls made inside [`CallContext::scope`].
#[derive(Debug, Default)]
pub struct CallContext {
    server_attachments: BTreeMap<String, String>,
    client_attachments: BTreeMap<String, String>,
    deadline: Option<Instant>,
    response_attachments: Mutex<BTreeMap<String, String>>,
}

impl CallContext {
    /// An empty context.
    pub fn new() -> Self {
        CallContext::default()
    }

    /// Adds a client attachment (sent with every call in scope).
    pub fn with_attachment(mut self, k: impl Into<String>, v: impl Into<String>) -> Self {
        self.client_attachments.insert(k.into(), v.into());
        self
    }

    /// Adds a server attachment (of the request being served).
    pub fn with_server_attachment(mut self, k: impl Into<String>, v: impl Into<String>) -> Self {
        self.server_attachments.insert(k.into(), v.into());
        self
    }

    /// Sets the deadline (timeout countdown) of the calls in scope.
    pub fn with_deadline(mut self, deadline: Instant) -> Self {
        self.deadline = Some(deadline);
        self
    }

    /// Sets the deadline to now + `timeout`. A timeout past what the clock can hold (e.g.
    /// `Duration::MAX`) means no deadline.
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.deadline = Instant::now().checked_add(timeout);
        self
    }

    /// Runs `f` with this context as the current one.
    pub async fn scope<F: std::future::Future>(self: Arc<Self>, f: F) -> F::Output {
        CURRENT.scope(self, f).await
    }

    /// The current context, if the task runs inside [`CallContext::scope`].
    pub fn current() -> Option<Arc<CallContext>> {
        CURRENT.try_with(Arc::clone).ok()
    }

    /// Client attachments.
    pub fn attachments(&self) -> &BTreeMap<String, String> {
        &self.client_attachments
    }

    /// Time left before the deadline (`None` without a deadline).
    pub fn remaining(&self) -> Option<Duration> {
        self.deadline
            .map(|d| d.saturating_duration_since(Instant::now()))
    }

    /// Result attachments of the calls made in scope (the last call's values win).
    pub fn response_attachments(&self) -> BTreeMap<String, String> {
        self.response_attachments.lock().clone()
    }

    fn has_attachments(&self) -> bool {
        !self.server_attachments.is_empty() || !self.client_attachments.is_empty()
    }
}

/// The ConsumerContext filter layer.
#[derive(Debug, Default, Clone, Copy)]
pub struct ConsumerContextLayer;

impl InvokerLayer for ConsumerContextLayer {
    fn layer(&self, inner: SharedInvoker) -> SharedInvoker {
        Arc::new(ConsumerContextInvoker { inner })
    }
}

/// An invoker wrapped by [`ConsumerContextLayer`].
#[derive(Debug)]
pub struct ConsumerContextInvoker {
    inner: SharedInvoker,
}

#[async_trait]
impl Invoker for ConsumerContextInvoker {
    crate::delegate_invoker!(inner);

    async fn invoke(&self, invocation: &Invocation) -> RpcResult {
        let ctx = CallContext::current();
        let url = self.inner.url();
        let method = invocation.real_method();
        let app = url.param("application").filter(|a| !a.is_empty());
        let mut inv: Cow<'_, Invocation> = Cow::Borrowed(invocation);
        if let Some(app) = app {
            if invocation.attachment(REMOTE_APPLICATION_KEY) != Some(app) {
                inv.to_mut()
                    .attachments
                    .insert(REMOTE_APPLICATION_KEY.to_owned(), app.to_owned());
            }
        }
        if let Some(ctx) = &ctx {
            if ctx.has_attachments() {
                let a = &mut inv.to_mut().attachments;
                a.extend(
                    ctx.server_attachments
                        .iter()
                        .map(|(k, v)| (k.clone(), v.clone())),
                );
                a.extend(
                    ctx.client_attachments
                        .iter()
                        .map(|(k, v)| (k.clone(), v.clone())),
                );
            }
            if let Some(left) = ctx.remaining() {
                if url.method_param_bool(method, "enable-timeout-countdown", true) {
                    if left.is_zero() {
                        return Err(RpcError::new(
                            RpcErrorCode::TimeoutTerminate,
                            format!(
                                "No time left for making the following call: {}.{method}, terminate directly.",
                                url.service_interface().unwrap_or("")
                            ),
                        ));
                    }
                    inv.to_mut().attachments.insert(
                        TIMEOUT_ATTACHMENT_KEY.to_owned(),
                        left.as_millis().to_string(),
                    );
                }
            }
        }
        let result = self.inner.invoke(&inv).await;
        if let (Some(ctx), Ok(resp)) = (&ctx, &result) {
            if !resp.attachments.is_empty() {
                ctx.response_attachments
                    .lock()
                    .extend(resp.attachments.iter().map(|(k, v)| (k.clone(), v.clone())));
            }
        }
        result
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_endless_timeout_is_no_deadline() {
        let c = CallContext::new().with_timeout(Duration::MAX);
        assert_eq!(c.remaining(), None);
        let c = CallContext::new().with_timeout(Duration::from_secs(5));
        assert!(c.remaining().is_some_and(|r| r <= Duration::from_secs(5)));
    }
}
