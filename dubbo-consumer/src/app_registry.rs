//! The application-level registry of a registry URL (feature `app-discovery`): Dubbo's
//! `ServiceDiscoveryRegistry` over the instance store and the metadata report of the same
//! address.
//!
//! | URL | instances | mapping and `remote` MetadataInfo |
//! |---|---|---|
//! | `zookeeper://` | `registry_zk::ZkServiceDiscovery` (`/services/<app>`, or `/<group>/<app>`) | `registry_zk::ZkConfigCenter` rooted at `/<group or dubbo>` |
//! | `nacos://` | `registry_nacos::NacosServiceDiscovery` (service `<app>`) | `registry_nacos::NacosConfigCenter` |
//! | `memory://NAME` | [`registry_core::MemoryInstanceDiscovery`] of that name | [`registry_core::MemoryConfigCenter`] of that name |
//!
//! As in Java, the metadata centre is the registry address. A registry URL with
//! `registry-type=service`, or written `service-discovery-registry://host:port?registry=zookeeper`
//! (Dubbo's `RegistryProtocol` form), is application level only; a plain one serves both
//! levels ([`crate::Levels`]).
//!
//! MetadataService clients: v1 over `dubbo` (Hessian2, feature `dubbo`) and `tri` (wrapper
//! mode, feature `triple`), v2 over Triple IDL (feature `triple`).

use std::sync::Arc;
use std::time::Duration;

use app_discovery::{
    AppDiscoveryOptions, MetadataReport, MetadataResolver, MetadataServiceClients, ReportLayout,
    ResolverOptions, ServiceDiscoveryRegistry,
};
use registry_core::{
    MemoryConfigCenter, MemoryInstanceDiscovery, SharedConfigCenter, SharedInstanceDiscovery, Url,
};

use crate::error::{Error, Result};

/// The protocol of the application-level form of a registry URL.
pub const SERVICE_DISCOVERY_REGISTRY: &str = "service-discovery-registry";

const APP_REGISTRY: &str = "application-level registry";
const METADATA_REPORT: &str = "metadata report";

/// True when `url` asks for the application level only (`registry-type=service`, or the
/// `service-discovery-registry` protocol).
pub fn is_service_registry(url: &Url) -> bool {
    url.protocol() == Some(SERVICE_DISCOVERY_REGISTRY)
        || url.param("registry-type") == Some("service")
}

/// `service-discovery-registry://h:p?registry=zookeeper` becomes
/// `zookeeper://h:p?...&registry-type=service`; other URLs are returned unchanged.
///
/// Errors: [`Error::InvalidUrl`] when the `registry` parameter is missing.
pub fn normalize_registry_url(url: &Url) -> Result<Url> {
    if url.protocol() != Some(SERVICE_DISCOVERY_REGISTRY) {
        return Ok(url.clone());
    }
    let real = url
        .param("registry")
        .filter(|r| !r.is_empty())
        .ok_or_else(|| Error::InvalidUrl {
            what: "registry",
            input: url.to_string(),
            reason: "service-discovery-registry:// needs registry=zookeeper|nacos".into(),
        })?;
    Ok(url
        .with_protocol(real)
        .without_params(&["registry"])
        .with_param("registry-type", "service"))
}

/// The MetadataService clients of this build (see the module docs).
pub fn metadata_clients() -> MetadataServiceClients {
    let clients = MetadataServiceClients::new();
    #[cfg(feature = "dubbo")]
    let clients = clients.with_v1(
        "dubbo",
        Arc::new(app_discovery::InvokerMetadataClient::new(Arc::new(
            protocol_dubbo::DubboInvokerFactory::new(),
        ))),
    );
    #[cfg(feature = "triple")]
    let clients = clients
        .with_v1(
            "tri",
            Arc::new(app_discovery::InvokerMetadataClient::new(Arc::new(
                protocol_triple::TripleInvokerFactory::new(protocol_triple::PayloadMode::Wrapper),
            ))),
        )
        .with_v2(Arc::new(protocol_triple::MetadataServiceV2Client::new()));
    clients
}

/// The instance store and the metadata report of `url` (already normalized).
async fn backends(url: &Url) -> Result<(SharedInstanceDiscovery, MetadataReport)> {
    match url.protocol() {
        #[cfg(feature = "zookeeper")]
        Some("zookeeper") => {
            let d = registry_zk::ZkServiceDiscovery::connect(url)
                .await
                .map_err(Error::zookeeper(APP_REGISTRY, url))?;
            let root = registry_zk::config_center::metadata_root(url);
            let cc = registry_zk::ZkConfigCenter::connect_with_root(url, &root)
                .await
                .map_err(Error::zookeeper(METADATA_REPORT, url))?;
            Ok((
                Arc::new(d) as SharedInstanceDiscovery,
                MetadataReport::new(Arc::new(cc) as SharedConfigCenter, ReportLayout::Tree),
            ))
        }
        #[cfg(feature = "nacos")]
        Some("nacos") => {
            let d = registry_nacos::NacosServiceDiscovery::connect(url)
                .await
                .map_err(Error::nacos(APP_REGISTRY, url))?;
            let cc = registry_nacos::NacosConfigCenter::connect(url)
                .await
                .map_err(Error::nacos(METADATA_REPORT, url))?;
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
        Some(p) => Err(Error::Unsupported {
            what: APP_REGISTRY,
            protocol: p.to_owned(),
            supported: crate::connect::PROTOCOLS
                .iter()
                .filter(|p| **p != SERVICE_DISCOVERY_REGISTRY)
                .copied()
                .collect::<Vec<_>>()
                .join(", "),
        }),
        None => Err(Error::InvalidUrl {
            what: "registry",
            input: url.to_string(),
            reason: "no protocol".into(),
        }),
    }
}

/// Connects the application-level registry of `registry` (see the module docs). With a
/// `timeout` the connect is bounded by it, and it is the backends' `timeout` unless the URL
/// sets one. `subscribe_wait` bounds how long a subscription waits for its first list
/// (default: [`AppDiscoveryOptions`]' own).
pub(crate) async fn connect_app_registry(
    registry: &Url,
    timeout: Option<Duration>,
    subscribe_wait: Option<Duration>,
) -> Result<ServiceDiscoveryRegistry> {
    let mut url = normalize_registry_url(registry)?;
    if let Some(t) = timeout {
        if !url.has_param("timeout") {
            url = url.with_param("timeout", &t.as_millis().to_string());
        }
    }
    let (discovery, report) =
        crate::connect::bounded(APP_REGISTRY, &url, timeout, backends(&url)).await?;
    let resolver = MetadataResolver::new(
        Some(report.clone()),
        metadata_clients(),
        ResolverOptions::default(),
    );
    let mut options = AppDiscoveryOptions::default();
    if let Some(w) = subscribe_wait {
        options.subscribe_wait = w;
    }
    Ok(ServiceDiscoveryRegistry::new(
        url,
        discovery,
        Some(report),
        resolver,
        options,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_application_level_form_of_a_registry_url() {
        let u =
            Url::parse("service-discovery-registry://127.0.0.1:2181?registry=zookeeper&group=g")
                .unwrap();
        assert!(is_service_registry(&u));
        let n = normalize_registry_url(&u).unwrap();
        assert_eq!(n.protocol(), Some("zookeeper"));
        assert_eq!(n.param("registry-type"), Some("service"));
        assert_eq!(n.param("registry"), None);
        assert_eq!(n.param("group"), Some("g"));
        assert!(is_service_registry(&n));
        let plain = Url::parse("zookeeper://127.0.0.1:2181").unwrap();
        assert!(!is_service_registry(&plain));
        assert_eq!(normalize_registry_url(&plain).unwrap(), plain);
        let e = normalize_registry_url(&Url::parse("service-discovery-registry://h:1").unwrap())
            .unwrap_err();
        assert!(e.is_invalid_input(), "{e}");
    }

    #[tokio::test]
    async fn a_protocol_without_application_level_discovery_is_a_clear_error() {
        let u = Url::parse("foo://h:1?registry-type=service").unwrap();
        let e = connect_app_registry(&u, None, None).await.unwrap_err();
        assert!(
            matches!(&e, Error::Unsupported { protocol, .. } if protocol == "foo"),
            "{e}"
        );
        assert!(e.to_string().contains("application-level"), "{e}");
    }
}
