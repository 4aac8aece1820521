//! Application-level service discovery (Dubbo 3): the [`ServiceInstance`] model and the
//! [`InstanceDiscovery`] seam a registry backend implements.
//!
//! ```text
//! ZooKeeper /services/<app>/<ip:port> (Curator JSON) | Nacos service <app> | memory
//!   --watch(app)--> InstanceWatch (the complete instance list of one application, in order)
//!   --> app-level pipeline (revision -> MetadataInfo -> provider URLs) --> RegistryDirectory
//! ```
//!
//! A Dubbo 3 provider registered at application level (`register-mode=instance` or `all`)
//! appears once per process (dubbo-go: once per protocol): host, port and a string metadata
//! map whose keys ([`REVISION_KEY`], [`STORAGE_TYPE_KEY`], ...) say which revision of the
//! application's `MetadataInfo` it serves and where to read it.
//!
//! Rules of the [`InstanceDiscovery::watch`] contract, which every backend keeps:
//! - the watch yields the **complete** current instance list of the application first (empty
//!   when it has none or does not exist), then every later list, in order; a watcher that falls
//!   behind sees the latest list;
//! - a revision change of a registered instance (ZooKeeper `setData`, Nacos metadata update)
//!   is a new list;
//! - connection trouble never yields a spurious list: the last known one stays until the backend
//!   has really read a new one;
//! - an entry the backend cannot understand is skipped (logged), never fatal;
//! - dropping the [`InstanceWatch`] stops watching.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use async_trait::async_trait;
use tokio::sync::watch;

use crate::error::Result;
use crate::url::Url;

/// Metadata key: the revision of the application's `MetadataInfo` the instance serves.
pub const REVISION_KEY: &str = "dubbo.metadata.revision";
/// Metadata key: `local` (ask the instance's MetadataService, the default) or `remote` (read
/// the metadata report).
pub const STORAGE_TYPE_KEY: &str = "dubbo.metadata.storage-type";
/// Metadata key: JSON object of the MetadataService URL parameters (`protocol`, `port`, ...).
pub const METADATA_SERVICE_URL_PARAMS_KEY: &str = "dubbo.metadata-service.url-params";
/// Metadata key: JSON list of `{"port": .., "protocol": ..}`, one per exported protocol.
pub const ENDPOINTS_KEY: &str = "dubbo.endpoints";
/// Metadata key: the MetadataService version to call (`1.0.0` or `2.0.0`).
pub const METADATA_SERVICE_VERSION_KEY: &str = "meta-v";
/// The revision of an application that exports nothing.
pub const EMPTY_REVISION: &str = "0";

/// One registered process of an application: `app` at `host:port` with its metadata.
///
/// Cheap to clone (one `Arc`). Equality is Java's `DefaultServiceInstance.equals`: application,
/// host, port and every metadata entry **except the revision**, so an instance that only moved
/// to a new revision is the same instance (its connections are kept when what it serves did not
/// change). `enabled`/`healthy` are reported by the backend and take no part in equality.
#[derive(Clone)]
pub struct ServiceInstance {
    inner: Arc<Inner>,
}

#[derive(PartialEq, Eq)]
struct Inner {
    app: Arc<str>,
    host: Box<str>,
    port: i32,
    metadata: BTreeMap<String, String>,
    enabled: bool,
    healthy: bool,
}

impl ServiceInstance {
    /// An enabled, healthy instance.
    pub fn new(
        app: impl Into<Arc<str>>,
        host: impl Into<Box<str>>,
        port: i32,
        metadata: BTreeMap<String, String>,
    ) -> Self {
        ServiceInstance {
            inner: Arc::new(Inner {
                app: app.into(),
                host: host.into(),
                port,
                metadata,
                enabled: true,
                healthy: true,
            }),
        }
    }

    /// The same instance with the backend's `enabled` and `healthy` flags.
    pub fn with_status(self, enabled: bool, healthy: bool) -> Self {
        if self.inner.enabled == enabled && self.inner.healthy == healthy {
            return self;
        }
        let i = &self.inner;
        ServiceInstance {
            inner: Arc::new(Inner {
                app: i.app.clone(),
                host: i.host.clone(),
                port: i.port,
                metadata: i.metadata.clone(),
                enabled,
                healthy,
            }),
        }
    }

    /// A copy with one metadata entry set (tests and revision updates).
    pub fn with_metadata(&self, key: &str, value: &str) -> Self {
        let i = &self.inner;
        let mut metadata = i.metadata.clone();
        metadata.insert(key.to_owned(), value.to_owned());
        ServiceInstance {
            inner: Arc::new(Inner {
                app: i.app.clone(),
                host: i.host.clone(),
                port: i.port,
                metadata,
                enabled: i.enabled,
                healthy: i.healthy,
            }),
        }
    }

    /// The application (Dubbo's service name of the instance).
    pub fn app(&self) -> &str {
        &self.inner.app
    }

    /// The application name, shared.
    pub fn app_arc(&self) -> &Arc<str> {
        &self.inner.app
    }

    /// The host.
    pub fn host(&self) -> &str {
        &self.inner.host
    }

    /// The port.
    pub fn port(&self) -> i32 {
        self.inner.port
    }

    /// `host:port` (the Curator id and the ZooKeeper node name).
    pub fn address(&self) -> String {
        format!("{}:{}", self.inner.host, self.inner.port)
    }

    /// Every metadata entry.
    pub fn metadata(&self) -> &BTreeMap<String, String> {
        &self.inner.metadata
    }

    /// One metadata entry.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.inner.metadata.get(key).map(String::as_str)
    }

    /// The revision it serves, `None` when missing, empty or [`EMPTY_REVISION`] (such an
    /// instance exports nothing a consumer can use).
    pub fn revision(&self) -> Option<&str> {
        self.get(REVISION_KEY)
            .filter(|r| !r.is_empty() && *r != EMPTY_REVISION)
    }

    /// True when the metadata says `storage-type=remote` (the metadata report holds its
    /// `MetadataInfo`); `local` (the instance's MetadataService) otherwise.
    pub fn is_remote_storage(&self) -> bool {
        self.get(STORAGE_TYPE_KEY) == Some("remote")
    }

    /// The backend's `enabled` flag (true unless the registry says otherwise).
    pub fn is_enabled(&self) -> bool {
        self.inner.enabled
    }

    /// The backend's `healthy` flag (true unless the registry says otherwise).
    pub fn is_healthy(&self) -> bool {
        self.inner.healthy
    }

    /// True when both are the same allocation.
    pub fn ptr_eq(a: &ServiceInstance, b: &ServiceInstance) -> bool {
        Arc::ptr_eq(&a.inner, &b.inner)
    }

    /// True when every field, the revision and the flags included, is equal.
    pub fn identical(a: &ServiceInstance, b: &ServiceInstance) -> bool {
        Self::ptr_eq(a, b) || a.inner == b.inner
    }
}

impl PartialEq for ServiceInstance {
    fn eq(&self, other: &Self) -> bool {
        if Arc::ptr_eq(&self.inner, &other.inner) {
            return true;
        }
        let (a, b) = (&*self.inner, &*other.inner);
        if a.app != b.app || a.host != b.host || a.port != b.port {
            return false;
        }
        let mut x = a
            .metadata
            .iter()
            .filter(|(k, _)| k.as_str() != REVISION_KEY);
        let mut y = b
            .metadata
            .iter()
            .filter(|(k, _)| k.as_str() != REVISION_KEY);
        loop {
            match (x.next(), y.next()) {
                (None, None) => return true,
                (Some(p), Some(q)) if p == q => {}
                _ => return false,
            }
        }
    }
}

impl Eq for ServiceInstance {}

impl std::hash::Hash for ServiceInstance {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.inner.app.hash(state);
        self.inner.host.hash(state);
        self.inner.port.hash(state);
        for (k, v) in &self.inner.metadata {
            if k != REVISION_KEY {
                k.hash(state);
                v.hash(state);
            }
        }
    }
}

impl fmt::Debug for ServiceInstance {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ServiceInstance")
            .field("app", &self.inner.app)
            .field("address", &self.address())
            .field("revision", &self.get(REVISION_KEY))
            .field("enabled", &self.inner.enabled)
            .field("healthy", &self.inner.healthy)
            .finish()
    }
}

impl fmt::Display for ServiceInstance {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}@{}:{} (revision {})",
            self.inner.app,
            self.inner.host,
            self.inner.port,
            self.get(REVISION_KEY).unwrap_or("-")
        )
    }
}

/// The complete instance list of one application.
pub type InstanceList = Arc<[ServiceInstance]>;

/// The instance list of one application as a watcher sees it, in order; the latest wins.
pub struct InstanceWatch {
    rx: watch::Receiver<InstanceList>,
    seen_first: bool,
    _guard: Option<Box<dyn Send + Sync>>,
}

impl fmt::Debug for InstanceWatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("InstanceWatch")
            .field("instances", &self.rx.borrow().len())
            .finish_non_exhaustive()
    }
}

impl InstanceWatch {
    /// A watch over `rx`; `guard` is dropped with the watch (stops the backend's watching).
    pub fn new(rx: watch::Receiver<InstanceList>, guard: Option<Box<dyn Send + Sync>>) -> Self {
        InstanceWatch {
            rx,
            seen_first: false,
            _guard: guard,
        }
    }

    /// The next list: the current one on the first call, then each change. `None` when the
    /// backend is gone (destroyed).
    pub async fn next(&mut self) -> Option<InstanceList> {
        if !self.seen_first {
            self.seen_first = true;
            self.rx.mark_unchanged();
            return Some(self.rx.borrow().clone());
        }
        self.rx.changed().await.ok()?;
        Some(self.rx.borrow_and_update().clone())
    }

    /// The latest list, without waiting.
    pub fn current(&self) -> InstanceList {
        self.rx.borrow().clone()
    }

    /// The list when it changed since the last [`InstanceWatch::next`] or `try_next`, without
    /// waiting (after the first `next`).
    pub fn try_next(&mut self) -> Option<InstanceList> {
        if !self.seen_first || !self.rx.has_changed().unwrap_or(false) {
            return None;
        }
        Some(self.rx.borrow_and_update().clone())
    }
}

/// Publishes `list` to a watch unless it equals the current one instance by instance
/// (revisions and flags included). Returns whether it was sent.
pub fn send_if_changed(tx: &watch::Sender<InstanceList>, list: InstanceList) -> bool {
    tx.send_if_modified(|cur| {
        let same = cur.len() == list.len()
            && cur
                .iter()
                .zip(list.iter())
                .all(|(a, b)| ServiceInstance::identical(a, b));
        if same {
            false
        } else {
            *cur = list;
            true
        }
    })
}

/// Where application instances are registered: ZooKeeper (`/services/<app>/<host:port>`,
/// Curator JSON), Nacos (service `<app>`) or memory. See the module docs for the contract.
#[async_trait]
pub trait InstanceDiscovery: Send + Sync + fmt::Debug {
    /// The registry URL (credentials are never shown by its `Display`).
    fn url(&self) -> &Url;

    /// Watches the instances of `app` (the current list first, then every change).
    /// Fails only when the watch cannot be set up at all.
    async fn watch(&self, app: &str) -> Result<InstanceWatch>;

    /// The applications registered (ZooKeeper: the children of the root; Nacos: the service
    /// names of the group that are not interface-level names).
    async fn applications(&self) -> Result<Vec<String>>;

    /// Registers (or updates) an instance, as a Dubbo 3 provider does at application level.
    async fn register(&self, instance: &ServiceInstance) -> Result<()>;

    /// Removes an instance; removing an absent one is not an error.
    async fn unregister(&self, instance: &ServiceInstance) -> Result<()>;
}

/// A shared instance discovery.
pub type SharedInstanceDiscovery = Arc<dyn InstanceDiscovery>;

/// Sorts instances by host, then port (the order every backend publishes in).
pub fn sort_instances(list: &mut [ServiceInstance]) {
    list.sort_by(|a, b| a.host().cmp(b.host()).then_with(|| a.port().cmp(&b.port())));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn inst(rev: &str) -> ServiceInstance {
        let mut m = BTreeMap::new();
        m.insert(REVISION_KEY.to_owned(), rev.to_owned());
        m.insert("timestamp".to_owned(), "1".to_owned());
        ServiceInstance::new("app", "10.0.0.1", 20880, m)
    }

    #[test]
    fn equality_ignores_the_revision_only() {
        assert_eq!(inst("a"), inst("b"));
        assert!(!ServiceInstance::identical(&inst("a"), &inst("b")));
        assert_ne!(inst("a"), inst("a").with_metadata("timestamp", "2"));
        use std::hash::{BuildHasher, RandomState};
        let s = RandomState::new();
        assert_eq!(s.hash_one(inst("a")), s.hash_one(inst("b")));
    }

    #[test]
    fn revision_rules() {
        assert_eq!(inst("abc").revision(), Some("abc"));
        assert_eq!(inst("0").revision(), None);
        assert_eq!(inst("").revision(), None);
        let none = ServiceInstance::new("a", "h", 1, BTreeMap::new());
        assert_eq!(none.revision(), None);
        assert!(!none.is_remote_storage());
        assert!(none
            .with_metadata(STORAGE_TYPE_KEY, "remote")
            .is_remote_storage());
    }

    #[tokio::test]
    async fn watch_yields_current_then_changes() {
        let (tx, rx) = watch::channel::<InstanceList>(Arc::from(vec![inst("a")]));
        let mut w = InstanceWatch::new(rx, None);
        assert_eq!(w.next().await.unwrap().len(), 1);
        assert!(!send_if_changed(&tx, Arc::from(vec![inst("a")])));
        assert!(send_if_changed(&tx, Arc::from(vec![inst("b")])));
        assert_eq!(w.next().await.unwrap()[0].revision(), Some("b"));
        drop(tx);
        assert!(w.next().await.is_none());
    }
}
