//! [`StaticDirectory`]: a fixed list of invokers (tests, demos, and the sub-clusters of a
//! multi-group reference).
//!
//! Like Dubbo's `StaticDirectory` + `MockInvokersSelector`, `mock://` invokers are kept apart:
//! a normal `list` hides them, and a `list` whose invocation carries the attachment
//! `invocation.need.mock=true` returns only them. Both lists are built once, so `list` is an
//! `Arc` clone.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use registry_core::Url;

use super::Directory;
use crate::invoker_set::InvokerSet;
use crate::router::mock::wants_mock;
use crate::rpc::{Invocation, RpcError, RpcErrorCode, SharedInvoker};

/// True when an invoker serves a `mock://` provider URL.
pub(crate) fn is_mock_invoker(invoker: &SharedInvoker) -> bool {
    invoker.url().protocol() == Some("mock")
}

/// A directory over a fixed list of invokers.
#[derive(Debug)]
pub struct StaticDirectory {
    consumer_url: Url,
    registry_url: Url,
    invokers: Arc<InvokerSet>,
    mock_invokers: Arc<InvokerSet>,
    destroyed: AtomicBool,
}

impl StaticDirectory {
    /// A directory over `invokers` (in list order) for the reference described by
    /// `consumer_url`; the registry URL is the consumer URL.
    pub fn new(consumer_url: Url, invokers: Vec<SharedInvoker>) -> Self {
        let (mock, normal): (Vec<_>, Vec<_>) = invokers.into_iter().partition(is_mock_invoker);
        StaticDirectory {
            registry_url: consumer_url.clone(),
            consumer_url,
            invokers: Arc::new(InvokerSet::new(normal)),
            mock_invokers: Arc::new(InvokerSet::new(mock)),
            destroyed: AtomicBool::new(false),
        }
    }

    /// Sets the URL returned by [`Directory::registry_url`] (where `cluster.availablecheck` is
    /// read).
    pub fn with_registry_url(mut self, registry_url: Url) -> Self {
        self.registry_url = registry_url;
        self
    }

    /// Marks the directory destroyed: `list` fails from now on. Invokers are not destroyed
    /// (the directory does not own them).
    pub fn destroy(&self) {
        self.destroyed.store(true, Ordering::Release);
    }

    /// True once [`StaticDirectory::destroy`] ran.
    pub fn is_destroyed(&self) -> bool {
        self.destroyed.load(Ordering::Acquire)
    }

    /// All non-mock invokers.
    pub fn invokers(&self) -> &Arc<InvokerSet> {
        &self.invokers
    }
}

impl Directory for StaticDirectory {
    fn consumer_url(&self) -> Url {
        self.consumer_url.clone()
    }

    fn registry_url(&self) -> Url {
        self.registry_url.clone()
    }

    fn list(&self, invocation: &Invocation) -> Result<Arc<InvokerSet>, RpcError> {
        if self.is_destroyed() {
            return Err(RpcError::new(
                RpcErrorCode::Unknown,
                format!(
                    "Directory of type StaticDirectory for {} is already destroyed",
                    self.consumer_url.service_interface().unwrap_or("")
                ),
            ));
        }
        if wants_mock(invocation) {
            Ok(self.mock_invokers.clone())
        } else {
            Ok(self.invokers.clone())
        }
    }

    fn is_available(&self) -> bool {
        !self.is_destroyed() && self.invokers.invokers().iter().any(|i| i.is_available())
    }

    fn destroy(&self) {
        StaticDirectory::destroy(self);
    }
}
