//! [`MockClusterInvoker`]: the force/fail mock decision in front of every cluster.

use std::sync::Arc;

use async_trait::async_trait;
use registry_core::Url;
use tracing::{info, warn};

use super::is_config_empty;
use super::mock_invoker::MockInvoker;
use super::registry::MockRegistry;
use super::value_cache::MockValueCache;
use crate::directory::static_directory::is_mock_invoker;
use crate::directory::Directory;
use crate::keys::NEED_MOCK;
use crate::rpc::{Invocation, Invoker, RpcError, RpcResult, SharedInvoker};

/// What the `mock` parameter asks for one call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MockDecision {
    /// Call the providers only.
    NoMock,
    /// Call the mock only.
    Force,
    /// Call the providers; on a non-biz error, the mock.
    Fail,
}

impl MockDecision {
    /// The decision for `method` from the consumer URL: `method_param(method, "mock")`
    /// (method level beats service level), trimmed.
    pub fn for_method(consumer_url: &Url, method: &str) -> Self {
        let value = consumer_url.method_param(method, "mock").map(str::trim);
        if is_config_empty(value) {
            MockDecision::NoMock
        } else if value.is_some_and(|v| v.starts_with("force")) {
            MockDecision::Force
        } else {
            MockDecision::Fail
        }
    }
}

/// Wraps a cluster with the mock decision (Dubbo's `MockClusterInvoker`).
#[derive(Debug)]
pub struct MockClusterInvoker {
    directory: Arc<dyn Directory>,
    inner: SharedInvoker,
    registry: Arc<MockRegistry>,
    registry_url: Url,
    values: Arc<MockValueCache>,
}

impl MockClusterInvoker {
    /// Wraps `inner` (the cluster over `directory`).
    pub fn new(
        directory: Arc<dyn Directory>,
        inner: SharedInvoker,
        registry: Arc<MockRegistry>,
    ) -> Self {
        MockClusterInvoker {
            registry_url: directory.registry_url(),
            directory,
            inner,
            registry,
            values: Arc::new(MockValueCache::default()),
        }
    }

    /// The answers of `return`/`throw` mocks kept by this invoker ([`MockValueCache`]).
    pub fn mock_values(&self) -> &MockValueCache {
        &self.values
    }

    /// The wrapped cluster invoker.
    pub fn inner(&self) -> &SharedInvoker {
        &self.inner
    }

    /// The mock for this call: the first `mock://` provider of the directory (its own URL
    /// defines the mock), else the consumer URL.
    fn mock_invoker(&self, invocation: &Invocation, consumer_url: &Url) -> MockInvoker {
        let interface = consumer_url.service_interface().unwrap_or("").to_owned();
        let probe = invocation.clone().with_attachment(NEED_MOCK, "true");
        let provider_url = match self.directory.list(&probe) {
            Ok(set) => set
                .invokers()
                .iter()
                .find(|i| is_mock_invoker(i))
                .map(|i| i.url().clone()),
            Err(e) => {
                warn!(error = %e, "listing mock providers failed; using the consumer URL's mock");
                None
            }
        };
        MockInvoker::new(
            provider_url.unwrap_or_else(|| consumer_url.clone()),
            interface,
            self.registry.clone(),
        )
        .with_value_cache(self.values.clone())
    }

    async fn do_mock_invoke(
        &self,
        invocation: &Invocation,
        consumer_url: &Url,
        cause: Option<&RpcError>,
    ) -> RpcResult {
        crate::metrics::mocked();
        let span = tracing::debug_span!(
            "mock",
            service = consumer_url.service_interface().unwrap_or(""),
            method = invocation.real_method(),
            cause = cause.map(|c| c.message.as_str()).unwrap_or("force"),
        );
        let mock = span.in_scope(|| self.mock_invoker(invocation, consumer_url));
        match tracing::Instrument::instrument(mock.answer_async(invocation), span).await {
            Ok(r) => Ok(r),
            Err(e) if e.is_biz() => Err(e),
            Err(e) => {
                let mut msg = format!("mock error : {}", e.message);
                if let Some(c) = cause {
                    msg.push_str(&format!(", invoke error is :{c}"));
                }
                Err(RpcError {
                    code: e.code,
                    message: msg,
                    exception_class: e.exception_class,
                })
            }
        }
    }
}

#[async_trait]
impl Invoker for MockClusterInvoker {
    crate::delegate_invoker!(inner => url, is_available, destroy);

    fn registry_url(&self) -> Option<&Url> {
        Some(&self.registry_url)
    }

    async fn invoke(&self, invocation: &Invocation) -> RpcResult {
        let consumer_url = self.directory.consumer_url();
        match MockDecision::for_method(&consumer_url, invocation.real_method()) {
            MockDecision::NoMock => self.inner.invoke(invocation).await,
            MockDecision::Force => {
                warn!(
                    method = invocation.real_method(),
                    "force-mock: the providers are not called"
                );
                self.do_mock_invoke(invocation, &consumer_url, None).await
            }
            MockDecision::Fail => match self.inner.invoke(invocation).await {
                Ok(r) => Ok(r),
                Err(e) if e.is_biz() => Err(e),
                Err(e) => {
                    info!(method = invocation.real_method(), error = %e, "fail-mock: the call failed, answering from the mock");
                    self.do_mock_invoke(invocation, &consumer_url, Some(&e))
                        .await
                }
            },
        }
    }
}
