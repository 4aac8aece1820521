//! [`ServiceDiscoveryRegistry`]: the application-level pipeline as a [`Registry`], so that
//! `invoker::RegistryDirectory` consumes it unchanged (Java: `ServiceDiscoveryRegistry`).
//!
//! ```text
//! subscribe(consumer)
//!   mapping: provided-by | metadata report (watched) | subscribed-services
//!     --> apps --> AppState per app (shared) --> matching provider URLs --> "providers" list
//! ```
//!
//! - **Mapping** (`ServiceDiscoveryRegistry.doSubscribe`): the reference's `provided-by`
//!   (then no remote lookup), else the metadata report's mapping of the interface, followed live,
//!   else the registry URL's `subscribed-services`. An empty mapping is not an error: nothing is
//!   published until an application appears. A new application is subscribed at once; an
//!   application removed from the mapping is unsubscribed (Java never acts on removals; an
//!   emptied mapping keeps the current applications).
//! - **Notifications**: the `providers` category, the complete list of matching URLs of
//!   every mapped application ([`crate::service_key::ServiceMatcher`]), in a stable order.
//!   `empty://` when none match — except that nothing is published while nothing ever matched
//!   and no application changed since the subscription (Java's `addListenerAndNotify` notifies
//!   only a non-empty first list). A subscription saying `preconnect=true` (a directory's)
//!   also gets the `preconnect` category: the addresses of new instances whose MetadataInfo is
//!   being fetched ([`AppSnapshot::ahead`]), published after the providers list of the same
//!   change, `empty://` once none is left. Configurators and routers come from the config centre
//!   (`invoker::directory::RuleWatcher`), as for Java's application-level directory.
//! - `subscribe` returns once the mapping was read and every mapped application settled (its
//!   revisions had a first answer), at most [`AppDiscoveryOptions::subscribe_wait`]; the first
//!   list is then queued.
//! - `register` of a consumer URL is accepted and does nothing (Java registers consumers only
//!   at interface level); registering providers at application level is refused.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Arc, Weak};
use std::time::Duration;

use async_trait::async_trait;
use parking_lot::Mutex;
use registry_core::matching::{empty_url, ANY, PRECONNECT, PRECONNECT_PARAM, PROVIDERS};
use registry_core::subscription::channel;
use registry_core::{Publisher, Registry, SharedInstanceDiscovery, Subscription, Url};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use crate::app_state::{AppOptions, AppSnapshot, AppState};
use crate::report::{AppSet, MappingWatch, MetadataReport};
use crate::resolver::MetadataResolver;
use crate::service_key::ServiceMatcher;

/// The reference parameter naming the provider applications (`provided-by`).
pub const PROVIDED_BY: &str = "provided-by";
/// The registry parameter naming fallback applications (`subscribed-services`).
pub const SUBSCRIBED_SERVICES: &str = "subscribed-services";

/// Options of the application-level registry.
#[derive(Debug, Clone)]
pub struct AppDiscoveryOptions {
    /// Per-application timing.
    pub app: AppOptions,
    /// How long `subscribe` waits for the first list (module docs).
    pub subscribe_wait: Duration,
    /// Pause between attempts to set up the mapping watch while the report is unreachable.
    pub mapping_retry: Duration,
}

impl Default for AppDiscoveryOptions {
    fn default() -> Self {
        AppDiscoveryOptions {
            app: AppOptions::default(),
            subscribe_wait: Duration::from_secs(10),
            mapping_retry: Duration::from_secs(1),
        }
    }
}

/// Where one provider URL came from (for tools: the CLI prints it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Origin {
    /// The provider application.
    pub app: String,
    /// The revision whose MetadataInfo built the URL.
    pub revision: String,
    /// The revision the instance announces now when it differs (not resolved yet: the URL is
    /// kept from `revision`).
    pub announced: Option<String>,
}

struct Inner {
    url: Url,
    discovery: SharedInstanceDiscovery,
    report: Option<MetadataReport>,
    resolver: MetadataResolver,
    options: AppDiscoveryOptions,
    apps: Mutex<HashMap<String, Weak<AppState>>>,
    stop: CancellationToken,
}

/// The application-level registry (module docs). Cheap to clone; dropping every clone (or
/// [`Registry::destroy`]) stops every task.
#[derive(Clone)]
pub struct ServiceDiscoveryRegistry {
    inner: Arc<Inner>,
    _guard: Arc<tokio_util::sync::DropGuard>,
}

impl std::fmt::Debug for ServiceDiscoveryRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServiceDiscoveryRegistry")
            .field("url", &self.inner.url.to_string())
            .field("apps", &self.inner.apps.lock().len())
            .finish()
    }
}

impl ServiceDiscoveryRegistry {
    /// A registry over `discovery` (instances), `report` (mapping and `remote` metadata; `None`
    /// = only `provided-by`/`subscribed-services` and `local` metadata) and `resolver`.
    /// `url` is the registry URL (its `subscribed-services` is read).
    pub fn new(
        url: Url,
        discovery: SharedInstanceDiscovery,
        report: Option<MetadataReport>,
        resolver: MetadataResolver,
        options: AppDiscoveryOptions,
    ) -> Self {
        let stop = CancellationToken::new();
        ServiceDiscoveryRegistry {
            _guard: Arc::new(stop.clone().drop_guard()),
            inner: Arc::new(Inner {
                url,
                discovery,
                report,
                resolver,
                options,
                apps: Mutex::new(HashMap::new()),
                stop,
            }),
        }
    }

    /// The instance discovery.
    pub fn discovery(&self) -> &SharedInstanceDiscovery {
        &self.inner.discovery
    }

    /// The metadata report, if any.
    pub fn report(&self) -> Option<&MetadataReport> {
        self.inner.report.as_ref()
    }

    /// The resolver (shared MetadataInfo cache).
    pub fn resolver(&self) -> &MetadataResolver {
        &self.inner.resolver
    }

    /// The followed application `app` (started when not followed yet). Hold the handle to keep
    /// following it.
    pub fn app_state(&self, app: &str) -> Arc<AppState> {
        let mut apps = self.inner.apps.lock();
        if let Some(s) = apps.get(app).and_then(Weak::upgrade) {
            return s;
        }
        apps.retain(|_, w| w.strong_count() > 0);
        let s = AppState::start(
            app,
            self.inner.discovery.clone(),
            self.inner.resolver.clone(),
            self.inner.options.app.clone(),
            &self.inner.stop,
        );
        apps.insert(app.to_owned(), Arc::downgrade(&s));
        s
    }

    /// The current snapshot of `app` after it settled (at most `wait`): its instances,
    /// revisions, services and URLs. For tools.
    pub async fn describe_app(&self, app: &str, wait: Duration) -> Arc<AppSnapshot> {
        let s = self.app_state(app);
        s.wait_settled(wait).await;
        s.snapshot()
    }

    /// The applications mapped to `interface` now (`provided-by`-free lookup: the report, else
    /// `subscribed-services`).
    pub async fn mapped_apps(&self, interface: &str) -> crate::Result<BTreeSet<String>> {
        let mut apps = match &self.inner.report {
            Some(r) => r.mapping(interface).await?,
            None => BTreeSet::new(),
        };
        if apps.is_empty() {
            apps = self.subscribed_services();
        }
        Ok(apps)
    }

    fn subscribed_services(&self) -> BTreeSet<String> {
        self.inner
            .url
            .param(SUBSCRIBED_SERVICES)
            .map(crate::report::parse_apps)
            .unwrap_or_default()
    }

    /// Where `url` came from: a provider URL this registry published, or the URL a directory
    /// made of it (merged with the consumer's parameters: then protocol, address and path
    /// identify it). The first followed application holding it answers.
    pub fn origin(&self, url: &Url) -> Option<Origin> {
        let same = |u: &Url| {
            Url::ptr_eq(u, url)
                || (u.protocol() == url.protocol()
                    && u.port() == url.port()
                    && u.host() == url.host()
                    && u.path() == url.path())
        };
        let apps: Vec<Arc<AppState>> = self
            .inner
            .apps
            .lock()
            .values()
            .filter_map(Weak::upgrade)
            .collect();
        for a in apps {
            let snap = a.snapshot();
            for r in &snap.revisions {
                let hit = r.services.iter().any(|s| s.urls.iter().any(same));
                if !hit {
                    continue;
                }
                let addr = url.address().unwrap_or_default();
                let announced = if r.stale.contains(&addr) {
                    snap.unresolved
                        .iter()
                        .find(|u| u.instances.contains(&addr))
                        .map(|u| u.revision.to_string())
                } else {
                    None
                };
                return Some(Origin {
                    app: a.app().to_owned(),
                    revision: r.revision.to_string(),
                    announced,
                });
            }
        }
        None
    }

    /// The mapping source of `consumer` (`None`: neither `provided-by` nor a report).
    fn mapping_source(&self, consumer: &Url) -> MappingSource {
        if let Some(p) = consumer.param(PROVIDED_BY).filter(|p| !p.trim().is_empty()) {
            return MappingSource::Fixed(crate::report::parse_apps(p));
        }
        match &self.inner.report {
            Some(r) => MappingSource::Report(r.clone()),
            None => MappingSource::Fixed(BTreeSet::new()),
        }
    }
}

enum MappingSource {
    Fixed(BTreeSet<String>),
    Report(MetadataReport),
}

#[async_trait]
impl Registry for ServiceDiscoveryRegistry {
    fn url(&self) -> &Url {
        &self.inner.url
    }

    fn is_available(&self) -> bool {
        !self.inner.stop.is_cancelled()
    }

    async fn register(&self, url: &Url) -> registry_core::Result<()> {
        let consumer = url.protocol() == Some("consumer")
            || url.param("side") == Some("consumer")
            || url.category_or(PROVIDERS) == "consumers";
        if !consumer {
            return Err(registry_core::Error::Refused(format!(
                "registering providers at application level is not supported ({})",
                url.to_identity_string()
            )));
        }
        Ok(())
    }

    async fn unregister(&self, _url: &Url) -> registry_core::Result<()> {
        Ok(())
    }

    async fn subscribe(&self, consumer: &Url) -> registry_core::Result<Subscription> {
        if self.inner.stop.is_cancelled() {
            return Err(registry_core::Error::Destroyed);
        }
        let iface = consumer.service_interface().unwrap_or("");
        if iface.is_empty() || iface == ANY {
            return Err(registry_core::Error::InvalidAddress(format!(
                "application-level discovery needs one interface, not {iface:?}"
            )));
        }
        let check = self.inner.url.param_bool("check", true) && consumer.param_bool("check", true);
        let fallback = self.subscribed_services();
        // `None`: the report is unreachable now (check=false): the task keeps trying.
        let mapping = match self.mapping_source(consumer) {
            MappingSource::Fixed(s) => Some(MappingWatch::fixed(if s.is_empty() {
                fallback.clone()
            } else {
                s
            })),
            MappingSource::Report(r) => match r.watch_mapping(iface).await {
                Ok(w) => Some(w),
                Err(e) if check => return Err(e.into()),
                Err(e) => {
                    tracing::warn!(interface = iface, error = %e, "mapping not readable yet (check=false); retrying in the background");
                    None
                }
            },
        };
        let (publisher, subscription) = channel(consumer.clone());
        let (first_tx, first_rx) = tokio::sync::oneshot::channel();
        let task = SubTask {
            registry: self.clone_weak(),
            publisher,
            matcher: ServiceMatcher::from_consumer(consumer),
            interface: iface.to_owned(),
            fallback,
            apps: BTreeMap::new(),
            notify: Arc::new(Notify::new()),
            published: false,
            first: Some(first_tx),
            sources: Vec::new(),
            preconnect: consumer.param_bool(PRECONNECT_PARAM, false),
            ahead: Vec::new(),
        };
        tokio::spawn(task.run(mapping));
        let _ = tokio::time::timeout(self.inner.options.subscribe_wait, first_rx).await;
        Ok(subscription)
    }

    async fn lookup(&self, consumer: &Url) -> registry_core::Result<Vec<Url>> {
        let mut sub = self.subscribe(consumer).await?;
        let mut out = Vec::new();
        while let Some(n) = sub.try_next() {
            if &*n.category != PROVIDERS {
                continue;
            }
            out = n
                .urls
                .iter()
                .filter(|u| u.protocol() != Some("empty"))
                .cloned()
                .collect();
        }
        Ok(out)
    }

    async fn destroy(&self) {
        self.inner.stop.cancel();
        self.inner.apps.lock().clear();
    }
}

impl ServiceDiscoveryRegistry {
    fn clone_weak(&self) -> WeakRegistry {
        WeakRegistry {
            inner: Arc::downgrade(&self.inner),
            guard: Arc::downgrade(&self._guard),
            stop: self.inner.stop.clone(),
        }
    }
}

/// A registry handle that does not keep the registry alive.
struct WeakRegistry {
    inner: Weak<Inner>,
    guard: Weak<tokio_util::sync::DropGuard>,
    stop: CancellationToken,
}

impl WeakRegistry {
    fn upgrade(&self) -> Option<ServiceDiscoveryRegistry> {
        Some(ServiceDiscoveryRegistry {
            inner: self.inner.upgrade()?,
            _guard: self.guard.upgrade()?,
        })
    }
}

/// One subscription: follows the mapping and the mapped applications, publishes providers.
struct SubTask {
    registry: WeakRegistry,
    publisher: Publisher,
    matcher: ServiceMatcher,
    interface: String,
    fallback: BTreeSet<String>,
    /// app → (state, generation when subscribed).
    apps: BTreeMap<String, (Arc<AppState>, u64)>,
    notify: Arc<Notify>,
    published: bool,
    first: Option<tokio::sync::oneshot::Sender<()>>,
    /// The URL lists the last published list was made of (by pointer): an application change
    /// that leaves every one of them untouched is skipped without building a list.
    sources: Vec<Arc<[Url]>>,
    /// The subscriber asked for the `preconnect` category.
    preconnect: bool,
    /// The `ahead` lists the last published `preconnect` list was made of (by pointer).
    ahead: Vec<Arc<[Url]>>,
}

impl SubTask {
    async fn run(mut self, mapping: Option<MappingWatch>) {
        let stop = self.registry.stop.clone();
        let closed = self.publisher.closed_token();
        let mut mapping = mapping;
        if mapping.is_none() {
            // Nothing to wait for: the report is unreachable (check=false).
            if let Some(tx) = self.first.take() {
                let _ = tx.send(());
            }
        }
        loop {
            let Some(m) = mapping.as_mut() else {
                // The report was unreachable at subscribe time (check=false): keep trying.
                let Some(reg) = self.registry.upgrade() else {
                    return;
                };
                let Some(report) = reg.report().cloned() else {
                    return;
                };
                let wait = reg.inner.options.mapping_retry;
                drop(reg);
                match report.watch_mapping(&self.interface).await {
                    Ok(w) => mapping = Some(w),
                    Err(e) => {
                        tracing::debug!(interface = %self.interface, error = %e, "mapping still not readable");
                        tokio::select! {
                            _ = stop.cancelled() => return,
                            _ = closed.cancelled() => return,
                            _ = tokio::time::sleep(wait) => {}
                        }
                    }
                }
                continue;
            };
            tokio::select! {
                _ = stop.cancelled() => return,
                _ = closed.cancelled() => return,
                set = m.next() => {
                    let Some(set) = set else { return };
                    if !self.set_apps(&set).await {
                        return;
                    }
                    self.recompute();
                }
                _ = self.notify.notified() => self.recompute(),
            }
        }
    }

    /// Follows the applications of `set` (or the fallback when it is empty); waits for newly
    /// added applications to settle before the first list. False when the registry is gone.
    async fn set_apps(&mut self, set: &AppSet) -> bool {
        let Some(reg) = self.registry.upgrade() else {
            return false;
        };
        let wanted: BTreeSet<String> = if set.is_empty() {
            if self.apps.is_empty() {
                self.fallback.clone()
            } else {
                // An emptied mapping keeps the applications already followed.
                return true;
            }
        } else {
            (**set).clone()
        };
        let removed: Vec<String> = self
            .apps
            .keys()
            .filter(|a| !wanted.contains(*a))
            .cloned()
            .collect();
        for a in removed {
            tracing::info!(interface = %self.interface, app = %a, "application left the mapping; unsubscribed");
            self.apps.remove(&a);
        }
        let mut added = Vec::new();
        for a in wanted {
            if self.apps.contains_key(&a) {
                continue;
            }
            let st = reg.app_state(&a);
            st.subscribe(&self.notify);
            let gen = st.snapshot().generation;
            tracing::info!(interface = %self.interface, app = %a, "subscribed to application");
            self.apps.insert(a, (st.clone(), gen));
            added.push(st);
        }
        if self.first.is_some() {
            let wait = reg.inner.options.subscribe_wait;
            drop(reg);
            for st in added {
                st.wait_settled(wait).await;
            }
        }
        true
    }

    fn recompute(&mut self) {
        self.publish_providers();
        if self.preconnect {
            self.publish_ahead();
        }
    }

    /// Publishes the `preconnect` list when an application's `ahead` list changed.
    fn publish_ahead(&mut self) {
        let lists: Vec<Arc<[Url]>> = self
            .apps
            .values()
            .map(|(st, _)| st.snapshot())
            .filter(|s| s.ready && !s.ahead.is_empty())
            .map(|s| s.ahead.clone())
            .collect();
        if same_lists(&lists, &self.ahead) {
            return;
        }
        let urls: Vec<Url> = lists.iter().flat_map(|l| l.iter().cloned()).collect();
        let urls: Arc<[Url]> = if urls.is_empty() {
            Arc::from(vec![empty_url(self.publisher.consumer(), PRECONNECT)])
        } else {
            urls.into()
        };
        self.publisher.publish_if_changed(PRECONNECT, urls);
        self.ahead = lists;
    }

    fn publish_providers(&mut self) {
        let mut sources: Vec<Arc<[Url]>> = Vec::new();
        let mut any_ready = false;
        let mut moved = false;
        let mut all_settled = true;
        for (st, gen) in self.apps.values() {
            let snap = st.snapshot();
            all_settled &= snap.settled;
            if snap.generation > *gen {
                moved = true;
            }
            if !snap.ready {
                continue;
            }
            any_ready = true;
            for s in snap
                .by_interface
                .get(self.matcher.interface())
                .into_iter()
                .flatten()
            {
                if !s.urls.is_empty() && self.matcher.matches(&s.info) {
                    sources.push(s.urls.clone());
                }
            }
        }
        let first_done = all_settled || !self.apps.is_empty() && any_ready;
        if self.published && same_lists(&sources, &self.sources) {
            return;
        }
        let mut urls: Vec<Url> = Vec::with_capacity(sources.iter().map(|s| s.len()).sum());
        for s in &sources {
            urls.extend(s.iter().cloned());
        }
        self.sources = sources;
        if urls.is_empty() {
            if any_ready && (self.published || moved) {
                let e = empty_url(self.publisher.consumer(), PROVIDERS);
                self.publisher
                    .publish_if_changed(PROVIDERS, Arc::from(vec![e]));
                self.published = true;
            }
        } else {
            self.publisher.publish_if_changed(PROVIDERS, urls.into());
            self.published = true;
        }
        if first_done || self.apps.is_empty() {
            if let Some(tx) = self.first.take() {
                let _ = tx.send(());
            }
        }
    }
}

/// True when `a` and `b` hold the same lists (by pointer) in the same order.
fn same_lists(a: &[Arc<[Url]>], b: &[Arc<[Url]>]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| Arc::ptr_eq(x, y))
}
