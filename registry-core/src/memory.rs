//! `memory://`: an in-process registry with the same semantics as the real backends.
//!
//! Design: [`MemoryBackend`] is a [`RegistryBackend`] over a shared in-process store, and
//! [`MemoryRegistry`] wraps it in the same [`FailbackRegistry`] every backend uses, so `check`,
//! `accepts`, `destroy` and the cache file behave exactly as for ZooKeeper or Nacos (the memory
//! store itself never fails, so nothing is ever retried).
//!
//! Semantics (as Dubbo's `ZookeeperRegistry`):
//! - each subscribed category (`category`, default `providers`; `*` = providers, consumers,
//!   routers, configurators) is published as the complete list of registered URLs whose
//!   `category` (default providers) is that category and that [`is_match`] the consumer, or as
//!   the `empty://` URL built from the consumer when there are none, except that with
//!   `enable-empty-protection=true` on the registry URL an empty **providers** list is not
//!   published;
//! - a consumer with interface `*` sees every service, including services registered later;
//!   its notifications carry the union over all services;
//! - registrations belong to the handle that made them: [`Registry::destroy`](crate::Registry::destroy) removes the
//!   dynamic ones, and so does dropping the last handle (like a closed ZooKeeper session);
//!   `dynamic=false` registrations stay in the store;
//! - [`Registry::lookup`](crate::Registry::lookup) returns the matching URLs of every subscribed category, without
//!   `empty://`.
//!
//! Stores: [`MemoryRegistry::new`] makes an isolated store; [`MemoryRegistry::connect`] with
//! `memory://<name>` attaches a new handle to the process-global store of that name, so a
//! provider side and a consumer side in one process meet. `memory://` without a name is
//! isolated.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, LazyLock};

use async_trait::async_trait;
use parking_lot::Mutex;

use crate::error::{Error, Result};
use crate::failback::FailbackRegistry;
use crate::matching::{is_match, subscribed_categories, ANY, PROVIDERS};
use crate::notify::with_empty_marker;
use crate::registry::RegistryBackend;
use crate::subscription::Publisher;
use crate::url::Url;

/// The shared state behind one registry name.
#[derive(Debug, Default)]
struct Store {
    inner: Mutex<StoreInner>,
}

#[derive(Debug, Default)]
struct StoreInner {
    /// Registrations by service interface, each with the id of the handle that made it.
    services: HashMap<String, Vec<(u64, Url)>>,
    watchers: Vec<Watcher>,
}

#[derive(Debug)]
struct Watcher {
    owner: u64,
    publisher: Publisher,
    /// The consumer's interface, `*` for all.
    interface: String,
    empty_protection: bool,
}

static NAMED: LazyLock<Mutex<HashMap<String, Arc<Store>>>> = LazyLock::new(Default::default);
static HANDLE_IDS: AtomicU64 = AtomicU64::new(1);

impl StoreInner {
    /// Publishes the current lists to every watcher interested in `interface`.
    fn notify(&mut self, interface: &str) {
        self.watchers.retain(|w| !w.publisher.is_closed());
        let services = &self.services;
        for w in &self.watchers {
            if w.interface == interface || w.interface == ANY {
                publish_current(services, w);
            }
        }
    }
}

fn publish_current(services: &HashMap<String, Vec<(u64, Url)>>, w: &Watcher) {
    let consumer = w.publisher.consumer();
    for cat in subscribed_categories(consumer) {
        let urls = matching(services, consumer, &cat);
        if let Some(list) = with_empty_marker(consumer, &cat, urls, w.empty_protection) {
            w.publisher.publish_if_changed(&cat, list.into());
        }
    }
}

/// The registered URLs of `category` that match `consumer` (all services for interface `*`).
fn matching(
    services: &HashMap<String, Vec<(u64, Url)>>,
    consumer: &Url,
    category: &str,
) -> Vec<Url> {
    let iface = consumer.service_interface().unwrap_or("");
    let pick = |list: &Vec<(u64, Url)>| -> Vec<Url> {
        list.iter()
            .map(|(_, u)| u)
            .filter(|u| u.category_or(PROVIDERS) == category && is_match(consumer, u))
            .cloned()
            .collect()
    };
    if iface != ANY {
        return services.get(iface).map(pick).unwrap_or_default();
    }
    let mut out: Vec<Url> = services.values().flat_map(pick).collect();
    // A deterministic order across services.
    out.sort_by_cached_key(Url::to_full_string);
    out
}

/// One handle on a memory store: the [`RegistryBackend`] behind [`MemoryRegistry`].
#[derive(Debug)]
pub struct MemoryBackend {
    url: Url,
    id: u64,
    store: Arc<Store>,
    empty_protection: bool,
}

impl MemoryBackend {
    /// A handle on the store for `url`: the named global store for `memory://<name>`, else a
    /// new isolated one.
    pub fn new(url: Url) -> Self {
        let store = match store_name(&url) {
            Some(name) => NAMED.lock().entry(name).or_default().clone(),
            None => Arc::new(Store::default()),
        };
        Self::with_store(url, store)
    }

    fn with_store(url: Url, store: Arc<Store>) -> Self {
        MemoryBackend {
            empty_protection: url.param_bool("enable-empty-protection", false),
            url,
            id: HANDLE_IDS.fetch_add(1, Ordering::Relaxed),
            store,
        }
    }

    /// A new handle on the same store (another "client" of this registry).
    pub fn handle(&self) -> Self {
        Self::with_store(self.url.clone(), self.store.clone())
    }

    /// Number of live registrations in the store (all handles).
    pub fn registration_count(&self) -> usize {
        self.store
            .inner
            .lock()
            .services
            .values()
            .map(Vec::len)
            .sum()
    }

    /// Number of live watches in the store (closed subscriptions are pruned first).
    pub fn watcher_count(&self) -> usize {
        let mut st = self.store.inner.lock();
        st.watchers.retain(|w| !w.publisher.is_closed());
        st.watchers.len()
    }

    fn remove_owned(&self, dynamic_only: bool) {
        let mut st = self.store.inner.lock();
        let mut touched = Vec::new();
        for (iface, list) in st.services.iter_mut() {
            let before = list.len();
            list.retain(|(o, u)| *o != self.id || (dynamic_only && !u.param_bool("dynamic", true)));
            if list.len() != before {
                touched.push(iface.clone());
            }
        }
        st.watchers.retain(|w| w.owner != self.id);
        for iface in touched {
            st.notify(&iface);
        }
    }
}

fn store_name(url: &Url) -> Option<String> {
    let mut name = url.address().unwrap_or_default();
    if let Some(p) = url.path().filter(|p| !p.is_empty()) {
        name.push('/');
        name.push_str(p);
    }
    (!name.is_empty()).then_some(name)
}

fn interface_of(url: &Url) -> Result<&str> {
    url.service_interface()
        .filter(|s| !s.is_empty())
        .ok_or_else(|| Error::invalid_url("URL without interface", &url.to_string()))
}

#[async_trait]
impl RegistryBackend for MemoryBackend {
    fn url(&self) -> &Url {
        &self.url
    }

    fn is_available(&self) -> bool {
        true
    }

    async fn do_register(&self, url: &Url) -> Result<()> {
        let iface = interface_of(url)?.to_owned();
        let mut st = self.store.inner.lock();
        let list = st.services.entry(iface.clone()).or_default();
        list.retain(|(_, u)| u != url);
        list.push((self.id, url.clone()));
        st.notify(&iface);
        Ok(())
    }

    async fn do_unregister(&self, url: &Url) -> Result<()> {
        let iface = interface_of(url)?.to_owned();
        let mut st = self.store.inner.lock();
        let removed = st.services.get_mut(&iface).is_some_and(|list| {
            let before = list.len();
            list.retain(|(_, u)| u != url);
            list.len() != before
        });
        if removed {
            st.notify(&iface);
        }
        Ok(())
    }

    async fn do_subscribe(&self, publisher: Publisher) -> Result<()> {
        let interface = interface_of(publisher.consumer())?.to_owned();
        let mut st = self.store.inner.lock();
        st.watchers.retain(|w| !w.publisher.is_closed());
        let w = Watcher {
            owner: self.id,
            publisher,
            interface,
            empty_protection: self.empty_protection,
        };
        publish_current(&st.services, &w);
        st.watchers.push(w);
        Ok(())
    }

    async fn do_lookup(&self, consumer: &Url) -> Result<Vec<Url>> {
        interface_of(consumer)?;
        let st = self.store.inner.lock();
        Ok(subscribed_categories(consumer)
            .iter()
            .flat_map(|c| matching(&st.services, consumer, c))
            .collect())
    }

    async fn do_destroy(&self) {
        self.remove_owned(true);
    }
}

impl Drop for MemoryBackend {
    fn drop(&mut self) {
        self.remove_owned(true);
    }
}

/// The `memory://` registry: a [`MemoryBackend`] wrapped in [`FailbackRegistry`].
#[derive(Debug)]
pub struct MemoryRegistry {
    inner: FailbackRegistry<MemoryBackend>,
}

impl MemoryRegistry {
    /// An isolated registry (`memory://`).
    pub fn new() -> Self {
        Self::from_backend(MemoryBackend::new(Url::builder("memory").build()))
    }

    /// A handle on the process-global store `name` (`memory://<name>`).
    pub fn named(name: &str) -> Self {
        Self::from_backend(MemoryBackend::new(
            Url::builder("memory").host(name).build(),
        ))
    }

    /// A handle for a registry URL (named store when the URL has a host, see [`MemoryRegistry::connect`]);
    /// registry params (`enable-empty-protection`, `check`, `file`, ...) apply.
    pub fn from_url(url: &Url) -> Self {
        Self::from_backend(MemoryBackend::new(url.clone()))
    }

    /// Opens `memory://[name]` (the process-global store `name`, isolated without one), the
    /// same way the other backends connect.
    ///
    /// Errors: not a `memory://` URL.
    pub async fn connect(url: &Url) -> Result<Self> {
        if url.protocol() != Some("memory") {
            return Err(Error::InvalidAddress(format!("not a memory:// URL: {url}")));
        }
        Ok(Self::from_url(url))
    }

    fn from_backend(b: MemoryBackend) -> Self {
        MemoryRegistry {
            inner: FailbackRegistry::new(b),
        }
    }

    /// Another handle (client) on the same store, with its own registrations and subscriptions.
    pub fn handle(&self) -> Self {
        Self::from_backend(self.inner.backend().handle())
    }

    /// The backend (store statistics).
    pub fn backend(&self) -> &MemoryBackend {
        self.inner.backend()
    }
}

impl Default for MemoryRegistry {
    fn default() -> Self {
        Self::new()
    }
}

crate::delegate_registry!(MemoryRegistry => inner);
