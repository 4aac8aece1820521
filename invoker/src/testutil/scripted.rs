//! [`ScriptedInvoker`]: a provider whose answer, availability and delay a test chooses, and
//! [`scripted_directory`]: a fixed list of them in front of a cluster.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use registry_core::Url;
use serde_json::Value;

use crate::directory::static_directory::StaticDirectory;
use crate::directory::Directory;
use crate::rpc::{
    Invocation, Invoker, RpcError, RpcErrorCode, RpcResponse, RpcResult, SharedInvoker,
};

/// A provider that answers every call with its scripted answer (after `delay`, else after
/// one yield, as a real transport answers on a later poll) and counts its calls.
#[derive(Debug)]
pub struct ScriptedInvoker {
    url: Url,
    available: bool,
    answer: Result<Value, RpcError>,
    delay: Option<Duration>,
    calls: AtomicUsize,
    completed: AtomicUsize,
}

impl ScriptedInvoker {
    /// Provider number `i`: `test://127.0.0.1:<20880 + i>/demo.Service?name=p<i>`.
    pub fn new(i: usize, answer: Result<Value, RpcError>) -> Arc<ScriptedInvoker> {
        ScriptedInvoker::with_url(
            &format!("test://127.0.0.1:{}/demo.Service?name=p{i}", 20880 + i),
            answer,
        )
    }

    /// A provider at `url` (a URL that does not parse becomes `test://127.0.0.1/invalid`).
    pub fn with_url(url: &str, answer: Result<Value, RpcError>) -> Arc<ScriptedInvoker> {
        let url = Url::parse(url).unwrap_or_else(|_| {
            Url::builder("test")
                .host("127.0.0.1")
                .path("invalid")
                .build()
        });
        ScriptedInvoker::at(url, answer)
    }

    /// A provider at `url`.
    pub fn at(url: Url, answer: Result<Value, RpcError>) -> Arc<ScriptedInvoker> {
        Arc::new(ScriptedInvoker {
            url,
            available: true,
            answer,
            delay: None,
            calls: AtomicUsize::new(0),
            completed: AtomicUsize::new(0),
        })
    }

    /// The same provider, unavailable (`is_available` false). Call it before sharing.
    pub fn unavailable(self: Arc<Self>) -> Arc<Self> {
        Self::edit(self, |s| s.available = false)
    }

    /// The same provider, answering after `d`. Call it before sharing.
    pub fn delayed(self: Arc<Self>, d: Duration) -> Arc<Self> {
        Self::edit(self, |s| s.delay = Some(d))
    }

    fn edit(mut this: Arc<Self>, f: impl FnOnce(&mut ScriptedInvoker)) -> Arc<Self> {
        match Arc::get_mut(&mut this) {
            Some(s) => {
                f(s);
                this
            }
            None => {
                let mut copy = ScriptedInvoker {
                    url: this.url.clone(),
                    available: this.available,
                    answer: this.answer.clone(),
                    delay: this.delay,
                    calls: AtomicUsize::new(this.calls()),
                    completed: AtomicUsize::new(this.completed()),
                };
                f(&mut copy);
                Arc::new(copy)
            }
        }
    }

    /// Calls started.
    pub fn calls(&self) -> usize {
        self.calls.load(Ordering::SeqCst)
    }

    /// Calls that ran to their answer (not cancelled).
    pub fn completed(&self) -> usize {
        self.completed.load(Ordering::SeqCst)
    }

    /// The URL's `name` parameter (`p<i>` for [`ScriptedInvoker::new`]).
    pub fn name(&self) -> &str {
        self.url.param("name").unwrap_or("")
    }
}

#[async_trait]
impl Invoker for ScriptedInvoker {
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

/// The answer `v` (a string value).
pub fn ok(v: &str) -> Result<Value, RpcError> {
    Ok(Value::from(v))
}

/// A timeout (code 2).
pub fn timeout() -> Result<Value, RpcError> {
    Err(RpcError::new(RpcErrorCode::Timeout, "timeout"))
}

/// A network error (code 1).
pub fn network() -> Result<Value, RpcError> {
    Err(RpcError::new(RpcErrorCode::Network, "connection reset"))
}

/// A business exception (`java.lang.IllegalArgumentException`).
pub fn biz() -> Result<Value, RpcError> {
    Err(RpcError::biz(
        "java.lang.IllegalArgumentException",
        "bad argument",
    ))
}

/// `consumer://127.0.0.1/demo.Service?<params>` (`params` in query form, may be empty); a
/// query that does not parse gives the URL without parameters.
pub fn consumer(params: &str) -> Url {
    let q = if params.is_empty() {
        String::new()
    } else {
        format!("?{params}")
    };
    Url::parse(&format!("consumer://127.0.0.1/demo.Service{q}")).unwrap_or_else(|_| {
        Url::builder("consumer")
            .host("127.0.0.1")
            .path("demo.Service")
            .build()
    })
}

/// A directory listing `invokers` for the consumer `url`.
pub fn scripted_directory(url: Url, invokers: &[Arc<ScriptedInvoker>]) -> Arc<dyn Directory> {
    let shared: Vec<SharedInvoker> = invokers
        .iter()
        .map(|i| i.clone() as SharedInvoker)
        .collect();
    Arc::new(StaticDirectory::new(url, shared))
}

/// Calls started over `invokers`.
pub fn total_calls(invokers: &[Arc<ScriptedInvoker>]) -> usize {
    invokers.iter().map(|i| i.calls()).sum()
}
