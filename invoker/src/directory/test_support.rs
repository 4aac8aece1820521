//! Test invokers and a factory that records what it referred and destroyed.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

use async_trait::async_trait;
use parking_lot::Mutex;
use registry_core::Url;
use serde_json::Value;

use crate::rpc::{
    Invocation, Invoker, InvokerFactory, RpcError, RpcErrorCode, RpcResponse, RpcResult,
    SharedInvoker,
};

/// An invoker answering with its address.
#[derive(Debug)]
pub(crate) struct TestInvoker {
    url: Url,
    pub destroyed: AtomicBool,
    pub calls: AtomicUsize,
}

#[async_trait]
impl Invoker for TestInvoker {
    fn url(&self) -> &Url {
        &self.url
    }
    fn is_available(&self) -> bool {
        !self.destroyed.load(Ordering::Acquire)
    }
    async fn invoke(&self, _invocation: &Invocation) -> RpcResult {
        self.calls.fetch_add(1, Ordering::Relaxed);
        Ok(RpcResponse::new(Value::String(
            self.url.address().unwrap_or_default(),
        )))
    }
    fn destroy(&self) {
        self.destroyed.store(true, Ordering::Release);
    }
}

/// Records every refer; fails for protocol `bad`.
#[derive(Debug, Default)]
pub(crate) struct RecordingFactory {
    pub made: Mutex<Vec<Arc<TestInvoker>>>,
}

impl RecordingFactory {
    pub fn referred(&self) -> usize {
        self.made.lock().len()
    }

    /// Number of times a provider at `address` was referred.
    pub fn referred_at(&self, address: &str) -> usize {
        self.made
            .lock()
            .iter()
            .filter(|i| i.url.address().as_deref() == Some(address))
            .count()
    }

    pub fn destroyed(&self) -> usize {
        self.made
            .lock()
            .iter()
            .filter(|i| i.destroyed.load(Ordering::Acquire))
            .count()
    }
}

impl InvokerFactory for RecordingFactory {
    fn refer(&self, provider: &Url) -> Result<SharedInvoker, RpcError> {
        if provider.protocol() == Some("bad") {
            return Err(RpcError::new(
                RpcErrorCode::Unknown,
                "unsupported protocol bad",
            ));
        }
        let inv = Arc::new(TestInvoker {
            url: provider.clone(),
            destroyed: AtomicBool::new(false),
            calls: AtomicUsize::new(0),
        });
        self.made.lock().push(inv.clone());
        Ok(inv)
    }
}
