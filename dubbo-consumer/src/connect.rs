//! [`connect`] and [`Connector`]: a registry or a config centre from its URL.
//!
//! | URL | registry | config centre |
//! |---|---|---|
//! | `zookeeper://[user:pass@]host:port` (feature `zookeeper`) | `registry_zk::ZookeeperRegistry` | `registry_zk::ZkConfigCenter` |
//! | `nacos://[user:pass@]host:port` (feature `nacos`) | `registry_nacos::NacosRegistry` | `registry_nacos::NacosConfigCenter` |
//! | `memory://[name]` | [`registry_core::MemoryRegistry`] | [`registry_core::MemoryConfigCenter`] |
//! | `service-discovery-registry://host:port?registry=zookeeper\|nacos`, or any of the above with `registry-type=service` (feature `app-discovery`) | `app_discovery::ServiceDiscoveryRegistry` (application level, [`crate::app_registry`]) | the same address |
//!
//! Every backend is opened with its own `connect(&Url)`; its parameters (ensemble `backup`,
//! `namespace`, `nacos.transport`, credentials, `check`, ...) are read from the URL as Dubbo
//! reads them. With [`Connector::timeout`] the whole connect is bounded, and the backends'
//! own connect/request timeouts default to it.
//!
//! [`Connector::levels`] connects both discovery levels of a plain registry URL (what a Java
//! 3.3 consumer subscribes in its default `APPLICATION_FIRST` step), for
//! [`crate::ReferenceBuilder::build_levels`].
//!
//! As in Dubbo, the config centre defaults to the registry (`useRegistryAsConfigCenterIfNecessary`):
//! [`config_center_url`] picks the URL.

use std::sync::Arc;
use std::time::Duration;

use registry_core::url::secret::redact;
use registry_core::{Registry, SharedConfigCenter, Url};

use crate::error::{Error, Result};
#[cfg(feature = "app-discovery")]
use crate::levels::{Level, Levels};

/// The registry and config-centre protocols this build serves.
pub const PROTOCOLS: &[&str] = &[
    #[cfg(feature = "zookeeper")]
    "zookeeper",
    #[cfg(feature = "nacos")]
    "nacos",
    "memory",
    #[cfg(feature = "app-discovery")]
    "service-discovery-registry",
];

const REGISTRY: &str = "registry";
const CONFIG_CENTRE: &str = "config centre";

/// Connects to the registry at `url`: `zookeeper://[user:pass@]host:port` (feature
/// `zookeeper`), `nacos://[user:pass@]host:port` (feature `nacos`) or `memory://[name]`, with
/// the backend's parameters in the query.
///
/// Errors: a URL that does not parse or names a protocol this build does not serve; the
/// backend's errors (unreachable, refused credentials; with the registry's `check=false` a
/// ZooKeeper ensemble that is down is not an error: the session is retried in the
/// background).
pub async fn connect(url: &str) -> Result<Arc<dyn Registry>> {
    Connector::new(url).registry().await
}

/// Connects both discovery levels of the registry at `url` ([`Connector::levels`] with
/// [`Level::All`]): a plain registry URL gets the interface and the application level, an
/// application-level one (`registry-type=service`) only the latter.
#[cfg(feature = "app-discovery")]
pub async fn connect_levels(url: &str) -> Result<Levels> {
    Connector::new(url).levels(Level::All).await
}

/// Connects to the config centre at `url` (same URL forms as [`connect`]).
pub async fn connect_config_center(url: &str) -> Result<SharedConfigCenter> {
    Connector::new(url).config_center().await
}

/// The config centre of `registry`: `override_url` when given (Dubbo's
/// `dubbo.config-center.address`), none when the registry says `use-as-config-center=false`,
/// else the registry URL itself (Dubbo's `useRegistryAsConfigCenterIfNecessary`; the
/// application-level form `service-discovery-registry://...?registry=P` stands for its
/// `P://` address).
pub fn config_center_url(registry: &Url, override_url: Option<&Url>) -> Option<Url> {
    if let Some(o) = override_url {
        return Some(o.clone());
    }
    if !registry.param_bool("use-as-config-center", true) {
        return None;
    }
    #[cfg(feature = "app-discovery")]
    if let Ok(u) = crate::app_registry::normalize_registry_url(registry) {
        return Some(u);
    }
    Some(registry.clone())
}

/// Parses a registry or config-centre URL given as text; the error masks its secrets.
pub fn parse_url(what: &'static str, text: &str) -> Result<Url> {
    Url::parse(text.trim()).map_err(|e| Error::InvalidUrl {
        what,
        input: redact(text).into_owned(),
        reason: e.to_string(),
    })
}

#[derive(Debug, Clone)]
enum Target {
    Text(String),
    Url(Url),
}

/// Opens a registry or a config centre, with options.
///
/// ```no_run
/// use std::time::Duration;
/// use dubbo_consumer::Connector;
///
/// # async fn demo() -> Result<(), dubbo_consumer::Error> {
/// // Look without writing (no ZooKeeper category nodes are created), give up after 5 s.
/// let registry = Connector::new("zookeeper://127.0.0.1:2181")
///     .timeout(Duration::from_secs(5))
///     .read_only(true)
///     .registry()
///     .await?;
/// # drop(registry); Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct Connector {
    target: Target,
    timeout: Option<Duration>,
    read_only: bool,
    #[cfg_attr(not(feature = "app-discovery"), allow(dead_code))]
    subscribe_wait: Option<Duration>,
}

impl Connector {
    /// A connector for the URL `url` (parsed when connecting).
    pub fn new(url: impl Into<String>) -> Self {
        Connector {
            target: Target::Text(url.into()),
            timeout: None,
            read_only: false,
            subscribe_wait: None,
        }
    }

    /// A connector for an already parsed URL.
    pub fn from_url(url: Url) -> Self {
        Connector {
            target: Target::Url(url),
            timeout: None,
            read_only: false,
            subscribe_wait: None,
        }
    }

    /// Bounds the whole connect by `timeout`, and makes it the backend's connect timeout
    /// (ZooKeeper `timeout`, Nacos `nacos.request-timeout`) unless the URL sets one.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// For looking only (`list`, `watch`): subscribing writes nothing to the registry
    /// (ZooKeeper: `subscribe.create-paths=false` unless the URL says otherwise; Nacos and
    /// `memory://` write nothing to subscribe anyway).
    pub fn read_only(mut self, read_only: bool) -> Self {
        self.read_only = read_only;
        self
    }

    /// How long an application-level subscription waits for its first list before it
    /// reports what it has (default: `app_discovery::AppDiscoveryOptions`' own).
    #[cfg(feature = "app-discovery")]
    pub fn subscribe_wait(mut self, wait: Duration) -> Self {
        self.subscribe_wait = Some(wait);
        self
    }

    fn url(&self, what: &'static str) -> Result<Url> {
        match &self.target {
            Target::Url(u) => Ok(u.clone()),
            Target::Text(t) => parse_url(what, t),
        }
    }

    /// The URL with the connector's options as parameters.
    fn effective_url(&self, what: &'static str) -> Result<Url> {
        let mut url = self.url(what)?;
        if let Some(t) = self.timeout {
            let ms = t.as_millis().to_string();
            match url.protocol() {
                Some("zookeeper") if !url.has_param("timeout") => {
                    url = url.with_param("timeout", &ms)
                }
                Some("nacos") if !url.has_param("nacos.request-timeout") => {
                    url = url.with_param("nacos.request-timeout", &ms)
                }
                _ => {}
            }
        }
        if self.read_only && !url.has_param("subscribe.create-paths") {
            url = url.with_param("subscribe.create-paths", "false");
        }
        Ok(url)
    }

    /// Connects to the registry.
    ///
    /// Errors: see [`connect`]; [`Error::Timeout`] when [`Connector::timeout`] elapsed.
    pub async fn registry(self) -> Result<Arc<dyn Registry>> {
        #[cfg(feature = "app-discovery")]
        {
            let url = self.url(REGISTRY)?;
            if crate::app_registry::is_service_registry(&url) {
                let app = crate::app_registry::connect_app_registry(
                    &url,
                    self.timeout,
                    self.subscribe_wait,
                )
                .await?;
                return Ok(Arc::new(app) as Arc<dyn Registry>);
            }
        }
        let url = self.effective_url(REGISTRY)?;
        bounded(REGISTRY, &url, self.timeout, open_registry(&url)).await
    }

    /// Connects the discovery levels `level` asks for: the interface level as
    /// [`Connector::registry`] does, the application level over the same address
    /// ([`crate::app_registry`]). A `registry-type=service` registry has no interface level:
    /// [`Level::All`] gets its application level only.
    ///
    /// Errors: see [`connect`]; [`Error::NoLevel`] when `level` is [`Level::Interface`] and the
    /// registry is application level only.
    #[cfg(feature = "app-discovery")]
    pub async fn levels(self, level: Level) -> Result<Levels> {
        use crate::app_registry::{
            connect_app_registry, is_service_registry, normalize_registry_url,
        };
        let raw = self.url(REGISTRY)?;
        let url = normalize_registry_url(&raw)?;
        let service_only = is_service_registry(&url);
        if service_only && level == Level::Interface {
            return Err(Error::NoLevel {
                level: "interface",
                url: url.to_string(),
            });
        }
        let interface = if level != Level::Application && !service_only {
            Some(self.clone().registry().await?)
        } else {
            None
        };
        let app = if level != Level::Interface {
            Some(connect_app_registry(&url, self.timeout, self.subscribe_wait).await?)
        } else {
            None
        };
        Ok(Levels {
            url,
            interface,
            app,
        })
    }

    /// Connects to the config centre.
    ///
    /// Errors: see [`connect`]; [`Error::Timeout`] when [`Connector::timeout`] elapsed.
    pub async fn config_center(self) -> Result<SharedConfigCenter> {
        let url = self.effective_url(CONFIG_CENTRE)?;
        bounded(CONFIG_CENTRE, &url, self.timeout, open_config_center(&url)).await
    }
}

/// Runs `fut`, bounded by `timeout` plus a little slack for the backend to report its own
/// timeout first (its message says more).
pub(crate) async fn bounded<T>(
    what: &'static str,
    url: &Url,
    timeout: Option<Duration>,
    fut: impl std::future::Future<Output = Result<T>>,
) -> Result<T> {
    match timeout {
        None => fut.await,
        Some(t) => tokio::time::timeout(t + Duration::from_millis(500), fut)
            .await
            .map_err(|_| Error::Timeout {
                what,
                url: url.to_string(),
                timeout: t,
            })?,
    }
}

fn unsupported(what: &'static str, url: &Url) -> Error {
    match url.protocol() {
        Some(p) if !p.is_empty() => Error::Unsupported {
            what,
            protocol: p.to_owned(),
            supported: PROTOCOLS.join(", "),
        },
        _ => Error::InvalidUrl {
            what,
            input: url.to_string(),
            reason: "no protocol".into(),
        },
    }
}

async fn open_registry(url: &Url) -> Result<Arc<dyn Registry>> {
    match url.protocol() {
        #[cfg(feature = "zookeeper")]
        Some("zookeeper") => registry_zk::ZookeeperRegistry::connect(url)
            .await
            .map(|r| Arc::new(r) as Arc<dyn Registry>)
            .map_err(Error::zookeeper(REGISTRY, url)),
        #[cfg(feature = "nacos")]
        Some("nacos") => registry_nacos::NacosRegistry::connect(url)
            .await
            .map(|r| Arc::new(r) as Arc<dyn Registry>)
            .map_err(Error::nacos(REGISTRY, url)),
        Some("memory") => registry_core::MemoryRegistry::connect(url)
            .await
            .map(|r| Arc::new(r) as Arc<dyn Registry>)
            .map_err(|source| Error::Registry {
                what: REGISTRY.into(),
                url: url.to_string(),
                source,
            }),
        _ => Err(unsupported(REGISTRY, url)),
    }
}

async fn open_config_center(url: &Url) -> Result<SharedConfigCenter> {
    match url.protocol() {
        #[cfg(feature = "zookeeper")]
        Some("zookeeper") => registry_zk::ZkConfigCenter::connect(url)
            .await
            .map(|c| Arc::new(c) as SharedConfigCenter)
            .map_err(Error::zookeeper(CONFIG_CENTRE, url)),
        #[cfg(feature = "nacos")]
        Some("nacos") => registry_nacos::NacosConfigCenter::connect(url)
            .await
            .map(|c| Arc::new(c) as SharedConfigCenter)
            .map_err(Error::nacos(CONFIG_CENTRE, url)),
        Some("memory") => registry_core::MemoryConfigCenter::connect(url)
            .await
            .map(|c| Arc::new(c) as SharedConfigCenter)
            .map_err(|source| Error::Registry {
                what: CONFIG_CENTRE.into(),
                url: url.to_string(),
                source,
            }),
        _ => Err(unsupported(CONFIG_CENTRE, url)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_config_centre_defaults_to_the_registry() {
        let r = Url::parse("zookeeper://127.0.0.1:2181?group=g").unwrap();
        assert_eq!(config_center_url(&r, None), Some(r.clone()));
        let off = r.with_param("use-as-config-center", "false");
        assert_eq!(config_center_url(&off, None), None);
        let o = Url::parse("zookeeper://10.0.0.1:2181").unwrap();
        assert_eq!(
            config_center_url(&off, Some(&o)).unwrap().host(),
            Some("10.0.0.1")
        );
    }

    #[test]
    fn options_become_parameters_unless_the_url_sets_them() {
        let c = Connector::new("zookeeper://h:1")
            .timeout(Duration::from_millis(1500))
            .read_only(true);
        let u = c.effective_url(REGISTRY).unwrap();
        assert_eq!(u.param("timeout"), Some("1500"));
        assert_eq!(u.param("subscribe.create-paths"), Some("false"));
        let c = Connector::new("zookeeper://h:1?timeout=9&subscribe.create-paths=true")
            .timeout(Duration::from_millis(1500))
            .read_only(true);
        let u = c.effective_url(REGISTRY).unwrap();
        assert_eq!(u.param("timeout"), Some("9"));
        assert_eq!(u.param("subscribe.create-paths"), Some("true"));
        let u = Connector::new("nacos://h:1")
            .timeout(Duration::from_millis(700))
            .effective_url(REGISTRY)
            .unwrap();
        assert_eq!(u.param("nacos.request-timeout"), Some("700"));
        assert_eq!(u.param("timeout"), None);
    }

    #[tokio::test]
    async fn unknown_protocols_and_bad_urls_are_clear_errors() {
        let e = connect("foo://h:1").await.err().unwrap();
        assert!(
            matches!(&e, Error::Unsupported { protocol, .. } if protocol == "foo"),
            "{e}"
        );
        assert!(e.is_invalid_input() && !e.is_retryable());
        assert!(e.to_string().contains("memory"), "{e}");
        let e = connect("zookeeper://u:s3cret@h:x").await.err().unwrap();
        assert!(matches!(e, Error::InvalidUrl { .. }), "{e}");
        assert!(!e.to_string().contains("s3cret"), "{e}");
        let e = connect_config_center("bar://h:1").await.err().unwrap();
        assert!(e.to_string().contains("config centre"), "{e}");
    }

    #[tokio::test]
    async fn memory_registries_and_config_centres_share_their_named_store() {
        let a = connect("memory://front-door-connect").await.unwrap();
        let b = connect("memory://front-door-connect").await.unwrap();
        let p = Url::parse("dubbo://10.0.0.1:20880/com.foo.Bar?interface=com.foo.Bar").unwrap();
        a.register(&p).await.unwrap();
        let c = Url::parse("consumer://10.0.0.9/com.foo.Bar?interface=com.foo.Bar").unwrap();
        assert_eq!(b.lookup(&c).await.unwrap(), vec![p]);
        let cc = connect_config_center("memory://front-door-connect-cc")
            .await
            .unwrap();
        cc.publish("k", "dubbo", "v").await.unwrap();
        let again = connect_config_center("memory://front-door-connect-cc")
            .await
            .unwrap();
        assert_eq!(again.get("k", "dubbo").await.unwrap().as_deref(), Some("v"));
    }
}
