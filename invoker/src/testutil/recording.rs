//! [`RecordingFactory`]: an invoker factory that keeps every invoker it made, to see where
//! calls land and which invokers a directory destroyed.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Weak};

use async_trait::async_trait;
use parking_lot::Mutex;
use registry_core::Url;
use serde_json::Value;

use crate::rpc::{
    Invocation, Invoker, InvokerFactory, Preconnect, RpcError, RpcErrorCode, RpcResponse,
    RpcResult, SharedInvoker,
};

/// An invoker that calls nothing: it answers every call with its address (`host:port`) as the
/// value and the attachments `address` and `port`, counts its calls and knows when it was
/// destroyed (then it is unavailable).
#[derive(Debug)]
pub struct RecordedInvoker {
    url: Url,
    calls: AtomicUsize,
    destroyed: AtomicBool,
}

impl RecordedInvoker {
    /// Calls answered so far.
    pub fn calls(&self) -> usize {
        self.calls.load(Ordering::SeqCst)
    }

    /// True once destroyed.
    pub fn is_destroyed(&self) -> bool {
        self.destroyed.load(Ordering::SeqCst)
    }
}

#[async_trait]
impl Invoker for RecordedInvoker {
    fn url(&self) -> &Url {
        &self.url
    }
    fn is_available(&self) -> bool {
        !self.is_destroyed()
    }
    async fn invoke(&self, _invocation: &Invocation) -> RpcResult {
        self.calls.fetch_add(1, Ordering::SeqCst);
        let address = self.url.address().unwrap_or_default();
        let mut r = RpcResponse::new(Value::String(address.clone()));
        r.attachments.insert("address".into(), address);
        r.attachments
            .insert("port".into(), self.url.port().to_string());
        Ok(r)
    }
    fn destroy(&self) {
        self.destroyed.store(true, Ordering::SeqCst);
    }
}

/// Makes a [`RecordedInvoker`] for every provider referred and keeps them all; refuses the
/// protocol `bad` (a provider whose refer fails). Records every preconnect (except of
/// protocol `bad`) and knows which are still held.
#[derive(Debug, Default)]
pub struct RecordingFactory {
    made: Mutex<Vec<Arc<RecordedInvoker>>>,
    ahead: Mutex<Vec<(Url, Weak<()>)>>,
}

impl RecordingFactory {
    /// Number of preconnects asked for so far.
    pub fn preconnects(&self) -> usize {
        self.ahead.lock().len()
    }

    /// The endpoints (`protocol://host:port`) of the preconnects still held, sorted.
    pub fn held_ahead(&self) -> Vec<String> {
        let mut v: Vec<String> = self
            .ahead
            .lock()
            .iter()
            .filter(|(_, w)| w.strong_count() > 0)
            .map(|(u, _)| {
                format!(
                    "{}://{}",
                    u.protocol().unwrap_or(""),
                    u.address().unwrap_or_default()
                )
            })
            .collect();
        v.sort();
        v
    }

    /// Every invoker made, in order.
    pub fn made(&self) -> Vec<Arc<RecordedInvoker>> {
        self.made.lock().clone()
    }

    /// Number of refers.
    pub fn referred(&self) -> usize {
        self.made.lock().len()
    }

    /// Number of times a provider at `address` (`host:port`) was referred.
    pub fn referred_at(&self, address: &str) -> usize {
        self.made
            .lock()
            .iter()
            .filter(|i| i.url.address().as_deref() == Some(address))
            .count()
    }

    /// Number of invokers destroyed.
    pub fn destroyed(&self) -> usize {
        self.made.lock().iter().filter(|i| i.is_destroyed()).count()
    }

    /// True when invokers were referred for `port` and every one of them is destroyed.
    pub fn destroyed_at_port(&self, port: i32) -> bool {
        let made = self.made.lock();
        let mut of_port = made.iter().filter(|i| i.url.port() == port).peekable();
        of_port.peek().is_some() && of_port.all(|i| i.is_destroyed())
    }

    /// (invokers referred, invokers destroyed) for `port`.
    pub fn referred_at_port(&self, port: i32) -> (usize, usize) {
        let made = self.made.lock();
        let of_port: Vec<_> = made.iter().filter(|i| i.url.port() == port).collect();
        let destroyed = of_port.iter().filter(|i| i.is_destroyed()).count();
        (of_port.len(), destroyed)
    }

    /// Calls per port, over every invoker referred for that port.
    pub fn calls_by_port(&self) -> BTreeMap<i32, usize> {
        let mut m = BTreeMap::new();
        for i in self.made.lock().iter() {
            *m.entry(i.url.port()).or_default() += i.calls();
        }
        m
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
        let inv = Arc::new(RecordedInvoker {
            url: provider.clone(),
            calls: AtomicUsize::new(0),
            destroyed: AtomicBool::new(false),
        });
        self.made.lock().push(inv.clone());
        Ok(inv)
    }

    fn preconnect(&self, endpoint: &Url) -> Option<Preconnect> {
        if endpoint.protocol() == Some("bad") {
            return None;
        }
        let held = Arc::new(());
        self.ahead
            .lock()
            .push((endpoint.clone(), Arc::downgrade(&held)));
        Some(Preconnect::new(held))
    }
}
