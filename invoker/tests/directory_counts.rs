//! The registry directory counts calls per provider by default, so load-aware balancers
//! (leastactive here) see the real in-flight load through the whole call path.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use invoker::cluster;
use invoker::directory::{Directory, DirectoryOptions, RegistryDirectory};
use invoker::rpc::{
    Invocation, Invoker, InvokerFactory, RpcError, RpcResponse, RpcResult, SharedInvoker,
};
use parking_lot::Mutex;
use registry_core::{MemoryRegistry, Registry, Url};
use tokio::sync::Semaphore;

#[derive(Debug)]
struct Gate {
    started: Mutex<Vec<String>>,
    release: Semaphore,
}

#[derive(Debug)]
struct Held {
    url: Url,
    gate: Arc<Gate>,
}

#[async_trait]
impl Invoker for Held {
    fn url(&self) -> &Url {
        &self.url
    }
    async fn invoke(&self, _: &Invocation) -> RpcResult {
        self.gate
            .started
            .lock()
            .push(self.url.address().unwrap_or_default());
        if let Ok(permit) = self.gate.release.acquire().await {
            permit.forget();
        }
        Ok(RpcResponse::empty())
    }
}

#[derive(Debug)]
struct HeldFactory(Arc<Gate>);

impl InvokerFactory for HeldFactory {
    fn refer(&self, provider: &Url) -> Result<SharedInvoker, RpcError> {
        Ok(Arc::new(Held {
            url: provider.clone(),
            gate: self.0.clone(),
        }))
    }
}

async fn started(gate: &Gate, n: usize) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    while gate.started.lock().len() < n {
        assert!(
            tokio::time::Instant::now() < deadline,
            "call {n} never started"
        );
        tokio::task::yield_now().await;
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn leastactive_sees_in_flight_calls_through_the_directory() {
    let registry: Arc<dyn Registry> = Arc::new(MemoryRegistry::new());
    for port in [1, 2] {
        let p = Url::parse(&format!(
            "dubbo://10.0.0.{port}:20880/S?interface=S&side=provider"
        ))
        .unwrap();
        registry.register(&p).await.unwrap();
    }
    let gate = Arc::new(Gate {
        started: Mutex::new(Vec::new()),
        release: Semaphore::new(0),
    });
    let consumer = Url::parse("consumer://10.0.0.9/S?interface=S&loadbalance=leastactive").unwrap();
    let dir = RegistryDirectory::subscribe(
        registry,
        consumer,
        Arc::new(HeldFactory(gate.clone())),
        DirectoryOptions::default(),
    )
    .await
    .unwrap();
    assert_eq!(dir.provider_count(), 2);
    let reference = cluster::join(dir.clone() as Arc<dyn Directory>);
    for round in 0..20 {
        gate.started.lock().clear();
        let a = tokio::spawn({
            let r = reference.clone();
            async move { r.invoke(&Invocation::new("m")).await }
        });
        started(&gate, 1).await;
        let b = tokio::spawn({
            let r = reference.clone();
            async move { r.invoke(&Invocation::new("m")).await }
        });
        started(&gate, 2).await;
        let picked = gate.started.lock().clone();
        assert_ne!(
            picked[0], picked[1],
            "round {round}: both calls went to {}",
            picked[0]
        );
        gate.release.add_permits(2);
        a.await.unwrap().unwrap();
        b.await.unwrap().unwrap();
    }
}
