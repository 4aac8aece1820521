//! Shared helpers for the cluster tests (scripted invokers).
#![allow(dead_code, missing_docs, clippy::unwrap_used)]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use invoker::directory::static_directory::StaticDirectory;
use invoker::directory::Directory;
use invoker::rpc::{
    Invocation, Invoker, RpcError, RpcErrorCode, RpcResponse, RpcResult, SharedInvoker,
};
use registry_core::Url;
use serde_json::Value;

#[derive(Debug)]
pub struct Scripted {
    pub url: Url,
    pub available: bool,
    pub answer: Result<Value, RpcError>,
    pub delay: Option<Duration>,
    pub calls: AtomicUsize,
    pub completed: AtomicUsize,
}

impl Scripted {
    pub fn new(i: usize, answer: Result<Value, RpcError>) -> Arc<Scripted> {
        Scripted::with_url(
            &format!("test://127.0.0.1:{}/demo.Service?name=p{i}", 20880 + i),
            answer,
        )
    }

    pub fn with_url(url: &str, answer: Result<Value, RpcError>) -> Arc<Scripted> {
        Arc::new(Scripted {
            url: Url::parse(url).unwrap(),
            available: true,
            answer,
            delay: None,
            calls: AtomicUsize::new(0),
            completed: AtomicUsize::new(0),
        })
    }

    pub fn unavailable(mut self: Arc<Self>) -> Arc<Self> {
        Arc::get_mut(&mut self).unwrap().available = false;
        self
    }

    pub fn delayed(mut self: Arc<Self>, d: Duration) -> Arc<Self> {
        Arc::get_mut(&mut self).unwrap().delay = Some(d);
        self
    }

    pub fn calls(&self) -> usize {
        self.calls.load(Ordering::SeqCst)
    }

    pub fn name(&self) -> &str {
        self.url.param("name").unwrap_or("")
    }
}

#[async_trait]
impl Invoker for Scripted {
    fn url(&self) -> &Url {
        &self.url
    }

    fn is_available(&self) -> bool {
        self.available
    }

    async fn invoke(&self, _invocation: &Invocation) -> RpcResult {
        self.calls.fetch_add(1, Ordering::SeqCst);
        match self.delay {
            Some(d) => tokio::time::sleep(d).await,
            None => tokio::task::yield_now().await,
        }
        self.completed.fetch_add(1, Ordering::SeqCst);
        self.answer.clone().map(RpcResponse::new)
    }
}

pub fn ok(v: &str) -> Result<Value, RpcError> {
    Ok(Value::from(v))
}

pub fn timeout() -> Result<Value, RpcError> {
    Err(RpcError::new(RpcErrorCode::Timeout, "timeout"))
}

pub fn network() -> Result<Value, RpcError> {
    Err(RpcError::new(RpcErrorCode::Network, "connection reset"))
}

pub fn biz() -> Result<Value, RpcError> {
    Err(RpcError::biz(
        "java.lang.IllegalArgumentException",
        "bad argument",
    ))
}

pub fn consumer(params: &str) -> Url {
    let q = if params.is_empty() {
        String::new()
    } else {
        format!("?{params}")
    };
    Url::parse(&format!("consumer://127.0.0.1/demo.Service{q}")).unwrap()
}

pub fn directory(url: Url, invokers: &[Arc<Scripted>]) -> Arc<dyn Directory> {
    let shared: Vec<SharedInvoker> = invokers
        .iter()
        .map(|i| i.clone() as SharedInvoker)
        .collect();
    Arc::new(StaticDirectory::new(url, shared))
}

pub fn total_calls(invokers: &[Arc<Scripted>]) -> usize {
    invokers.iter().map(|i| i.calls()).sum()
}
