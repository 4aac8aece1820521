//! Embedding the registry layer alone on Nacos: register a provider the way Dubbo 3.3 does
//! and follow the service's provider list as a stream of complete notifications.
//!
//! ```text
//! cargo run -p cli --example nacos_watch -- nacos://127.0.0.1:8848
//! ```

use std::time::Duration;

use registry_core::{Registry, Url};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let addr = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "nacos://127.0.0.1:8848".into());
    // A private Nacos group keeps this example away from real services.
    let registry_url =
        Url::parse(&addr)?.with_param("group", &format!("example-{}", std::process::id()));
    let registry = registry_nacos::NacosRegistry::new(&registry_url)?;

    let service = "org.example.InventoryService";
    let provider = Url::parse(&format!(
        "dubbo://127.0.0.1:20990/{service}?interface={service}&version=2.0.0&side=provider&methods=stock,reserve"
    ))?;
    registry.register(&provider).await?;
    println!("registered as Nacos service providers:{service}:2.0.0:");

    let consumer = Url::parse(&format!(
        "consumer://127.0.0.1/{service}?interface={service}&version=*&category=providers&check=false"
    ))?;
    let mut subscription = registry.subscribe(&consumer).await?;
    // Every notification is the complete list of one category; "none" is an empty:// URL.
    loop {
        let next = tokio::time::timeout(Duration::from_secs(15), subscription.next()).await?;
        let Some(n) = next else {
            return Err("subscription ended".into());
        };
        println!("{}: {} url(s)", n.category, n.urls.len());
        for u in n.urls.iter() {
            println!("  {u}");
        }
        if n.urls.iter().any(|u| u.port() == 20990) {
            break;
        }
    }
    registry.unregister(&provider).await?;
    registry.destroy().await;
    Ok(())
}
