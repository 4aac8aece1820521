//! Invokers that call nothing and record what they were asked, for end-to-end tests of the
//! directory and cluster layers: where the calls land and which invokers were destroyed.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use invoker::directory::{DirectoryOptions, RegistryDirectory};
use invoker::rpc::{
    Invocation, Invoker, InvokerFactory, RpcError, RpcResponse, RpcResult, SharedInvoker,
};
use registry_core::{Registry, Url};

use crate::contract::consumer_url;

/// An invoker that counts its calls and answers each with the attachments `address`
/// (`host:port` of its URL) and `port`.
#[derive(Debug)]
pub struct Recording {
    url: Url,
    calls: AtomicUsize,
    destroyed: AtomicBool,
}

impl Recording {
    /// The calls it answered so far.
    pub fn calls(&self) -> usize {
        self.calls.load(Ordering::SeqCst)
    }

    /// True once it was destroyed.
    pub fn is_destroyed(&self) -> bool {
        self.destroyed.load(Ordering::SeqCst)
    }
}

#[async_trait]
impl Invoker for Recording {
    fn url(&self) -> &Url {
        &self.url
    }
    async fn invoke(&self, _invocation: &Invocation) -> RpcResult {
        self.calls.fetch_add(1, Ordering::SeqCst);
        let mut r = RpcResponse::empty();
        r.attachments
            .insert("address".into(), self.url.address().unwrap_or_default());
        r.attachments
            .insert("port".into(), self.url.port().to_string());
        Ok(r)
    }
    fn destroy(&self) {
        self.destroyed.store(true, Ordering::SeqCst);
    }
}

/// Makes a [`Recording`] invoker for every provider referred, and keeps them all.
#[derive(Debug, Default)]
pub struct RecordingFactory {
    made: Mutex<Vec<Arc<Recording>>>,
}

impl RecordingFactory {
    /// A [`RegistryDirectory`] of `iface` on `registry` (providers, configurators and routers;
    /// round robin) whose invokers this new factory records; panics when subscribing fails.
    pub async fn subscribe(
        registry: Arc<dyn Registry>,
        iface: &str,
    ) -> (Arc<RecordingFactory>, Arc<RegistryDirectory>) {
        let factory = Arc::new(RecordingFactory::default());
        let consumer = consumer_url(
            iface,
            "providers,configurators,routers",
            "loadbalance=roundrobin",
        );
        let dir = RegistryDirectory::subscribe(
            registry,
            consumer,
            factory.clone(),
            DirectoryOptions::default(),
        )
        .await
        .unwrap_or_else(|e| panic!("subscribe the directory of {iface}: {e}"));
        (factory, dir)
    }

    /// Calls per port over every invoker referred for that port.
    pub fn calls_by_port(&self) -> BTreeMap<i32, usize> {
        let mut m = BTreeMap::new();
        for i in self.made().iter() {
            *m.entry(i.url.port()).or_default() += i.calls();
        }
        m
    }

    /// True when invokers were referred for `port` and every one of them is destroyed.
    pub fn destroyed(&self, port: i32) -> bool {
        let made = self.made();
        let of_port: Vec<_> = made.iter().filter(|i| i.url.port() == port).collect();
        !of_port.is_empty() && of_port.iter().all(|i| i.is_destroyed())
    }

    /// (invokers referred, invokers destroyed) for `port`.
    pub fn referred(&self, port: i32) -> (usize, usize) {
        let made = self.made();
        let of_port: Vec<_> = made.iter().filter(|i| i.url.port() == port).collect();
        let destroyed = of_port.iter().filter(|i| i.is_destroyed()).count();
        (of_port.len(), destroyed)
    }

    fn made(&self) -> std::sync::MutexGuard<'_, Vec<Arc<Recording>>> {
        self.made.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl InvokerFactory for RecordingFactory {
    fn refer(&self, provider: &Url) -> Result<SharedInvoker, RpcError> {
        let inv = Arc::new(Recording {
            url: provider.clone(),
            calls: AtomicUsize::new(0),
            destroyed: AtomicBool::new(false),
        });
        self.made().push(inv.clone());
        Ok(inv)
    }
}
