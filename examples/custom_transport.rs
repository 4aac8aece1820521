//! A custom `InvokerFactory`: the transport is yours. This one speaks a one-line text protocol
//! over TCP to providers found in the in-process `memory://` registry; swap in your Dubbo or
//! Triple client the same way.
//!
//! ```text
//! cargo run -p cli --example custom_transport
//! ```

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use invoker::cluster;
use invoker::directory::{Directory, DirectoryOptions, RegistryDirectory};
use invoker::rpc::{
    Invocation, Invoker, InvokerFactory, RpcError, RpcErrorCode, RpcResponse, RpcResult,
    SharedInvoker,
};
use registry_core::{MemoryRegistry, Registry, Url};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};

/// Invokes by writing `<method> <arg>\n` and reading one line back.
#[derive(Debug)]
struct LineInvoker {
    url: Url,
}

#[async_trait]
impl Invoker for LineInvoker {
    fn url(&self) -> &Url {
        &self.url
    }
    async fn invoke(&self, inv: &Invocation) -> RpcResult {
        let net = |e: std::io::Error| RpcError::new(RpcErrorCode::Network, e.to_string());
        let addr = self.url.address().unwrap_or_default();
        let mut stream = TcpStream::connect(&addr).await.map_err(net)?;
        let arg = inv
            .arguments()
            .first()
            .map(|a| a.to_string())
            .unwrap_or_default();
        stream
            .write_all(format!("{} {arg}\n", inv.method()).as_bytes())
            .await
            .map_err(net)?;
        let mut line = String::new();
        BufReader::new(stream)
            .read_line(&mut line)
            .await
            .map_err(net)?;
        Ok(RpcResponse::new(line.trim_end().into()))
    }
}

#[derive(Debug)]
struct LineFactory;

impl InvokerFactory for LineFactory {
    fn refer(&self, provider: &Url) -> Result<SharedInvoker, RpcError> {
        if provider.protocol() != Some("line") {
            return Err(RpcError::new(
                RpcErrorCode::Unknown,
                "only line:// providers",
            ));
        }
        Ok(Arc::new(LineInvoker {
            url: provider.clone(),
        }))
    }
}

/// A provider: answers every line with `pong <line>`.
async fn serve(listener: TcpListener) {
    while let Ok((stream, _)) = listener.accept().await {
        tokio::spawn(async move {
            let (r, mut w) = stream.into_split();
            let mut line = String::new();
            if BufReader::new(r).read_line(&mut line).await.is_ok() {
                let _ = w.write_all(format!("pong {}", line).as_bytes()).await;
            }
        });
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let port = listener.local_addr()?.port();
    let server = tokio::spawn(serve(listener));

    let registry: Arc<dyn Registry> = Arc::new(MemoryRegistry::new());
    let service = "org.example.PingService";
    registry
        .register(&Url::parse(&format!(
            "line://127.0.0.1:{port}/{service}?interface={service}&side=provider"
        ))?)
        .await?;

    let consumer = Url::parse(&format!(
        "consumer://127.0.0.1/{service}?interface={service}&protocol=line"
    ))?;
    let dir = RegistryDirectory::subscribe(
        registry.clone(),
        consumer,
        Arc::new(LineFactory),
        DirectoryOptions::default(),
    )
    .await?;
    dir.wait_ready_for(Duration::from_secs(5)).await;
    let reference = cluster::join(dir.clone() as Arc<dyn Directory>);
    let inv = Invocation::new("ping")
        .with_arguments(vec!["java.lang.String".into()], vec!["hello".into()]);
    let answer = reference.invoke(&inv).await?;
    println!("{}", answer.value);
    assert_eq!(answer.value, serde_json::json!("pong ping \"hello\""));

    dir.destroy();
    server.abort();
    Ok(())
}
