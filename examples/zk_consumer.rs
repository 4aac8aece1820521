//! Embedding the library as a Dubbo consumer on ZooKeeper: follow the providers of a service
//! with a `RegistryDirectory`, call them through the cluster layer (failover + round robin).
//!
//! ```text
//! cargo run -p cli --example zk_consumer -- zookeeper://127.0.0.1:2181
//! ```
//! To be self-contained it also registers two providers itself, as a Java provider would.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use invoker::cluster;
use invoker::directory::{Directory, DirectoryOptions, RegistryDirectory};
use invoker::rpc::{
    Invocation, Invoker, InvokerFactory, RpcError, RpcResponse, RpcResult, SharedInvoker,
};
use registry_core::{Registry, Url};
use registry_zk::ZookeeperRegistry;

/// The transport: here every "connection" answers in-process with its address.
#[derive(Debug)]
struct Echo(Url);

#[async_trait]
impl Invoker for Echo {
    fn url(&self) -> &Url {
        &self.0
    }
    async fn invoke(&self, inv: &Invocation) -> RpcResult {
        let who = self.0.address().unwrap_or_default();
        Ok(RpcResponse::new(
            format!("{} answered by {who}", inv.method()).into(),
        ))
    }
}

#[derive(Debug)]
struct EchoFactory;

impl InvokerFactory for EchoFactory {
    fn refer(&self, provider: &Url) -> Result<SharedInvoker, RpcError> {
        Ok(Arc::new(Echo(provider.clone())))
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let addr = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "zookeeper://127.0.0.1:2181".into());
    // A private root (`group`) keeps this example away from real services.
    let registry_url =
        Url::parse(&addr)?.with_param("group", &format!("/example-{}", std::process::id()));
    let registry: Arc<dyn Registry> = Arc::new(ZookeeperRegistry::connect(&registry_url).await?);

    let service = "org.example.GreetingService";
    for port in [20880, 20881] {
        let p = Url::parse(&format!(
            "dubbo://127.0.0.1:{port}/{service}?interface={service}&version=1.0.0&side=provider&methods=greet"
        ))?;
        registry.register(&p).await?;
    }

    let consumer = Url::parse(&format!(
        "consumer://127.0.0.1/{service}?interface={service}&version=1.0.0&side=consumer&loadbalance=roundrobin&retries=2"
    ))?;
    let dir = RegistryDirectory::subscribe(
        registry.clone(),
        consumer,
        Arc::new(EchoFactory),
        DirectoryOptions::default(),
    )
    .await?;
    if !dir.wait_ready_for(Duration::from_secs(10)).await {
        return Err("no provider list within 10 s".into());
    }
    let reference = cluster::join(dir.clone() as Arc<dyn Directory>);
    for _ in 0..4 {
        let answer = reference.invoke(&Invocation::new("greet")).await?;
        println!("{}", answer.value);
    }

    dir.destroy();
    registry.destroy().await;
    Ok(())
}
