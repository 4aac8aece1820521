//! Application-level discovery for a registry URL: which levels a registry serves, and the
//! [`ServiceDiscoveryRegistry`] of one.
//!
//! - `zookeeper://` → instances from [`registry_zk::ZkServiceDiscovery`] (`/services/<app>`, or
//!   `/<group>/<app>` with a `group`), mapping and `remote` metadata from a
//!   [`registry_zk::ZkConfigCenter`] rooted at `/<group or dubbo>`;
//! - `nacos://` → instances from [`registry_nacos::NacosServiceDiscovery`] (service `<app>`),
//!   mapping and metadata from [`registry_nacos::NacosConfigCenter`];
//! - `memory://NAME` → the in-process stores of that name.
//!
//! As in Java, the metadata centre is the registry address. A registry URL with
//! `registry-type=service` (or written `service-discovery-registry://host:port?registry=zookeeper`)
//! is application level only; otherwise both levels are served.
//!
//! MetadataService clients: v1 over `dubbo` (Hessian2) and `tri` (wrapper mode), v2 over Triple
//! IDL.

use std::sync::Arc;
use std::time::Duration;

use registry_core::url::secret::redact;

use anyhow::{anyhow, bail};
use app_discovery::{
    AppDiscoveryOptions, InvokerMetadataClient, MetadataReport, MetadataResolver,
    MetadataServiceClients, ReportLayout, ResolverOptions, ServiceDiscoveryRegistry,
};
use registry_core::{
    MemoryConfigCenter, MemoryInstanceDiscovery, SharedConfigCenter, SharedInstanceDiscovery, Url,
};

/// True when `url` asks for application level only (`registry-type=service`, or the
/// `service-discovery-registry` protocol).
pub fn is_service_registry(url: &Url) -> bool {
    url.protocol() == Some("service-discovery-registry")
        || url.param("registry-type") == Some("service")
}

/// `service-discovery-registry://h:p?registry=zookeeper` → `zookeeper://h:p?...&registry-type=service`;
/// other URLs unchanged.
pub fn normalize(url: &Url) -> anyhow::Result<Url> {
    if url.protocol() != Some("service-discovery-registry") {
        return Ok(url.clone());
    }
    let real = url
        .param("registry")
        .filter(|r| !r.is_empty())
        .ok_or_else(|| anyhow!("service-discovery-registry:// needs registry=zookeeper|nacos"))?;
    Ok(url
        .with_protocol(real)
        .without_params(&["registry"])
        .with_param("registry-type", "service"))
}

/// The MetadataService clients of this build.
pub fn metadata_clients() -> MetadataServiceClients {
    let dubbo = Arc::new(protocol_dubbo::DubboInvokerFactory::new());
    let tri = Arc::new(protocol_triple::TripleInvokerFactory::new(
        protocol_triple::PayloadMode::Wrapper,
    ));
    MetadataServiceClients::new()
        .with_v1("dubbo", Arc::new(InvokerMetadataClient::new(dubbo)))
        .with_v1("tri", Arc::new(InvokerMetadataClient::new(tri)))
        .with_v2(Arc::new(protocol_triple::MetadataServiceV2Client::new()))
}

/// The instance store and the metadata report of `url` (already [`normalize`]d).
async fn backends(url: &Url) -> anyhow::Result<(SharedInstanceDiscovery, MetadataReport)> {
    match url.protocol() {
        Some("zookeeper") => {
            let d = registry_zk::ZkServiceDiscovery::connect(url)
                .await
                .map_err(|e| anyhow!("cannot connect to {url}: {e}"))?;
            let root = registry_zk::config_center::metadata_root(url);
            let cc = registry_zk::ZkConfigCenter::connect_with_root(url, &root)
                .await
                .map_err(|e| anyhow!("cannot connect to the metadata report {url}: {e}"))?;
            Ok((
                Arc::new(d) as SharedInstanceDiscovery,
                MetadataReport::new(Arc::new(cc) as SharedConfigCenter, ReportLayout::Tree),
            ))
        }
        Some("nacos") => {
            let d = registry_nacos::NacosServiceDiscovery::connect(url)
                .await
                .map_err(|e| anyhow!("cannot connect to {url}: {e}"))?;
            let cc = registry_nacos::NacosConfigCenter::connect(url)
                .await
                .map_err(|e| anyhow!("cannot connect to the metadata report {url}: {e}"))?;
            Ok((
                Arc::new(d) as SharedInstanceDiscovery,
                MetadataReport::new(Arc::new(cc) as SharedConfigCenter, ReportLayout::Nacos),
            ))
        }
        Some("memory") => {
            let name = url.host().unwrap_or("");
            Ok((
                Arc::new(MemoryInstanceDiscovery::from_url(url)) as SharedInstanceDiscovery,
                MetadataReport::new(
                    Arc::new(MemoryConfigCenter::named(name)) as SharedConfigCenter,
                    ReportLayout::Tree,
                ),
            ))
        }
        Some(p) => bail!("no application-level discovery for {p:?} registries"),
        None => bail!("registry URL without protocol: {url}"),
    }
}

/// Connects the application-level registry of `registry` (see the module docs), failing with a
/// clear error within `timeout`. `subscribe_wait` bounds how long a subscription waits for its
/// first list.
pub async fn connect(
    registry: &Url,
    timeout: Duration,
    subscribe_wait: Duration,
) -> anyhow::Result<ServiceDiscoveryRegistry> {
    let url = normalize(registry)?;
    let url = if url.has_param("timeout") {
        url
    } else {
        url.with_param("timeout", &timeout.as_millis().to_string())
    };
    let (discovery, report) =
        tokio::time::timeout(timeout + Duration::from_millis(500), backends(&url))
            .await
            .map_err(|_| anyhow!("registry {url} not reachable within {timeout:?}"))??;
    let resolver = MetadataResolver::new(
        Some(report.clone()),
        metadata_clients(),
        ResolverOptions::default(),
    );
    let options = AppDiscoveryOptions {
        subscribe_wait,
        ..AppDiscoveryOptions::default()
    };
    Ok(ServiceDiscoveryRegistry::new(
        url,
        discovery,
        Some(report),
        resolver,
        options,
    ))
}

/// The registry URL of `target` parsed and normalized.
pub fn parse(target: &str) -> anyhow::Result<Url> {
    let u = Url::parse(target)
        .map_err(|e| anyhow!("invalid registry URL {:?}: {e}", redact(target)))?;
    normalize(&u)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn service_registry_urls() {
        let u =
            Url::parse("service-discovery-registry://127.0.0.1:2181?registry=zookeeper&group=g")
                .unwrap();
        assert!(is_service_registry(&u));
        let n = normalize(&u).unwrap();
        assert_eq!(n.protocol(), Some("zookeeper"));
        assert_eq!(n.param("registry-type"), Some("service"));
        assert_eq!(n.param("group"), Some("g"));
        assert!(is_service_registry(&n));
        let plain = Url::parse("zookeeper://127.0.0.1:2181").unwrap();
        assert!(!is_service_registry(&plain));
        assert!(normalize(&Url::parse("service-discovery-registry://h:1").unwrap()).is_err());
    }
}
