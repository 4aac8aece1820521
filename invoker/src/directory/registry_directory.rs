//! [`RegistryDirectory`] (Dubbo's `RegistryDirectory`): the directory that follows a registry
//! subscription.
//!
//! Notifications are applied under a mutex (one writer); readers never lock: each change
//! publishes a new immutable [`Snapshot`] through `ArcSwap`, and [`Directory::list`] is a
//! load plus an `Arc` clone. Retired invokers are destroyed after the swap, so calls that
//! already hold the previous set finish on their invoker.
//!
//! Every applied notification, and every [`DirectoryOptions::health_interval`] a re-count of
//! the available invokers, updates the directory's [`DirectoryHealth`] and its metrics
//! (`dubbo_registry_directory_num_*`, notification counts and times).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use arc_swap::ArcSwap;
use futures::future::BoxFuture;
use parking_lot::Mutex;
use registry_core::matching::{
    is_configurator, is_empty_url, is_provider, is_route, ANY, PRECONNECT, PRECONNECT_PARAM,
    PROVIDERS,
};
use registry_core::{Registry, Subscription, Url};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use super::configurator::{configure_all, to_configurators, AffectFilter, Configurator};
use super::health::{DirectoryHealth, DirectoryPhase};
use super::options::DubboCompat;
use super::options::{DirectoryOptions, GroupJoiner, MethodCacheMode};
use super::snapshot::{build, is_multi_group, BuildCtx, ChainInputs, Phase, Snapshot};
use super::table::{calls_protocol, host_hash, Applied, Ctx, Entry, ProviderTable};
use super::Directory;
use crate::filter::active_limit::CountingFactory;
use crate::invoker_set::InvokerSet;
use crate::metrics::{ConsumerMetrics, DirectoryCounts, DirectoryMetrics};
use crate::router::chain::{Chain, ChainMode, RuleSet};
use crate::router::condition::Dialect;
use crate::router::mock::wants_mock;
use crate::router::url_rule::{is_condition_url, UrlCondition, UrlConditionRouter};
use crate::router::{Router, RouterError, RuleKey};
use crate::rpc::{Invocation, InvokerFactory, Preconnect, RpcError, RpcErrorCode, SharedInvoker};
use dynamic_config::DynamicConfigurators;

mod dynamic_config;

pub use dynamic_config::ConfiguratorScope;

/// Categories `notify` accepts (`RegistryDirectory#isValidCategory`).
const VALID_CATEGORIES: [&str; 5] = [
    "routers",
    "providers",
    "configurators",
    "dynamicconfigurators",
    "appdynamicconfigurators",
];

/// The categories a directory subscribes to.
pub const SUBSCRIBE_CATEGORIES: &str = "providers,configurators,routers";

/// At most this many addresses of one `preconnect` list are opened ahead.
const MAX_PRECONNECTS: usize = 256;

/// A directory fed by a registry: configurators, routers and providers in, an immutable
/// per-method snapshot of invokers out.
///
/// See the module docs of [`crate::directory`] for the rules it follows.
pub struct RegistryDirectory {
    consumer: Url,
    registry_url: Url,
    factory: Arc<dyn InvokerFactory>,
    options: DirectoryOptions,
    mode: MethodCacheMode,
    multi_group: bool,
    joiner: Arc<dyn GroupJoiner>,
    snapshot: ArcSwap<Snapshot>,
    directory_url: ArcSwap<Url>,
    state: Mutex<State>,
    ready: watch::Sender<bool>,
    /// Increases with every snapshot published (providers, rules, forbidden, destroyed).
    changes: watch::Sender<u64>,
    provider_apps: watch::Sender<Vec<String>>,
    destroyed: AtomicBool,
    cancel: CancellationToken,
    registration: Mutex<Option<(Arc<dyn Registry>, Url)>>,
    health: watch::Sender<DirectoryHealth>,
    metrics: DirectoryMetrics,
    /// Connections opened ahead for the registry's last `preconnect` list.
    preconnects: Mutex<Vec<Preconnect>>,
}

#[derive(Debug, Default)]
struct State {
    table: ProviderTable,
    /// The configurators applied, in order: registry `configurators` category, then the
    /// config centre's application-level and service-level rules (`dynamic`).
    configurators: Vec<Configurator>,
    dynamic: DynamicConfigurators,
    router_urls: Vec<Url>,
    dynamic_routers: Vec<Arc<dyn Router>>,
    /// Routing rules: config-centre YAML (by key) and, in the 2.x modes, registry
    /// `condition://` URLs.
    rules: RuleSet,
    forbidden: bool,
}

impl std::fmt::Debug for RegistryDirectory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RegistryDirectory")
            .field("consumer", &self.consumer.to_string())
            .field("registry", &self.registry_url.to_string())
            .field("invokers", &self.snapshot.load().all.len())
            .finish()
    }
}

impl RegistryDirectory {
    /// A directory with no subscription: feed it with [`RegistryDirectory::notify`].
    ///
    /// `consumer` is the consumer URL (its params are the refer parameters); `registry_url`
    /// is reported by [`Directory::registry_url`]. The consumer parameter
    /// `method-invoker-cache=2.6` selects the 2.6 per-method cache.
    pub fn new(
        consumer: Url,
        registry_url: Url,
        factory: Arc<dyn InvokerFactory>,
        options: DirectoryOptions,
    ) -> Arc<Self> {
        let mode = if consumer
            .param("method-invoker-cache")
            .is_some_and(|v| v.starts_with("2.6"))
        {
            MethodCacheMode::Dubbo26
        } else {
            options.method_cache
        };
        let factory: Arc<dyn InvokerFactory> = if options.count_calls {
            Arc::new(CountingFactory::new(factory))
        } else {
            factory
        };
        let (ready, _) = watch::channel(false);
        let (changes, _) = watch::channel(0u64);
        let (provider_apps, _) = watch::channel(Vec::new());
        let joiner = options.group_joiner.clone().unwrap_or_else(|| {
            Arc::new(crate::cluster::ClusterGroupJoiner::default()) as Arc<dyn GroupJoiner>
        });
        let health = watch::Sender::new(DirectoryHealth::waiting(
            consumer.service_key().unwrap_or_default(),
        ));
        let metrics = DirectoryMetrics::new(&consumer, &registry_url, "interface");
        Arc::new(RegistryDirectory {
            health,
            metrics,
            multi_group: is_multi_group(&consumer),
            joiner,
            directory_url: ArcSwap::from_pointee(consumer.clone()),
            consumer,
            registry_url,
            factory,
            options,
            mode,
            snapshot: ArcSwap::from_pointee(Snapshot::empty(Phase::Waiting)),
            state: Mutex::new(State::default()),
            ready,
            changes,
            provider_apps,
            destroyed: AtomicBool::new(false),
            cancel: CancellationToken::new(),
            registration: Mutex::new(None),
            preconnects: Mutex::new(Vec::new()),
        })
    }

    /// A directory consuming `subscription` in a background task, which ends when the
    /// directory is destroyed or dropped (dropping the subscription unsubscribes).
    ///
    /// Errors: called outside a tokio runtime.
    pub fn from_subscription(
        subscription: Subscription,
        registry_url: Url,
        factory: Arc<dyn InvokerFactory>,
        options: DirectoryOptions,
    ) -> Result<Arc<Self>, RpcError> {
        let handle = tokio::runtime::Handle::try_current().map_err(|_| {
            RpcError::new(
                RpcErrorCode::Unknown,
                "RegistryDirectory needs a tokio runtime",
            )
        })?;
        let consumer = subscription.consumer().clone();
        let dir = RegistryDirectory::new(consumer, registry_url, factory, options);
        let weak = Arc::downgrade(&dir);
        let cancel = dir.cancel.clone();
        let interval = dir.options.health_interval;
        handle.spawn(follow(subscription, weak, cancel, interval));
        Ok(dir)
    }

    /// Registers the consumer (unless `register` is off or the interface is `*`), subscribes
    /// to providers, configurators and routers of `consumer`, and follows the subscription.
    /// Returns once the first providers list was applied, or after `ready_timeout`.
    ///
    /// The subscription asks for the `preconnect` category too (unless the consumer URL
    /// says `preconnect=false`): where the registry announces addresses of providers to come
    /// (the application level, while a new instance's MetadataInfo is fetched), the factory's
    /// [`InvokerFactory::preconnect`] opens their connections meanwhile.
    ///
    /// Errors: the registry refused the registration or subscription (only with
    /// `check=true`, see [`Registry`]); called outside a tokio runtime.
    pub async fn subscribe(
        registry: Arc<dyn Registry>,
        consumer: Url,
        factory: Arc<dyn InvokerFactory>,
        mut options: DirectoryOptions,
    ) -> Result<Arc<Self>, RpcError> {
        // Registry-level opt-in, as Dubbo's `enable-empty-protection` registry parameter.
        options.empty_protection |= registry.url().param_bool("enable-empty-protection", false);
        let mut registered = None;
        if options.register && consumer.service_interface() != Some(ANY) {
            let url = consumer.with_params([("category", "consumers"), ("check", "false")]);
            registry.register(&url).await.map_err(registry_error)?;
            registered = Some(url);
        }
        let mut sub_url = if consumer.param("category").is_some() {
            consumer.clone()
        } else {
            consumer.with_param("category", SUBSCRIBE_CATEGORIES)
        };
        // Connections to new providers opened ahead where the registry can tell (the
        // application level); `preconnect=false` on the consumer URL turns it off.
        if consumer.param(PRECONNECT_PARAM).is_none() {
            sub_url = sub_url.with_param(PRECONNECT_PARAM, "true");
        }
        let subscription = match registry.subscribe(&sub_url).await {
            Ok(s) => s,
            Err(e) => {
                if let Some(url) = &registered {
                    let _ = registry.unregister(url).await;
                }
                return Err(registry_error(e));
            }
        };
        let ready_timeout = options.ready_timeout;
        let dir = Self::from_subscription(subscription, registry.url().clone(), factory, options)?;
        if let Some(url) = registered {
            *dir.registration.lock() = Some((registry, url));
        }
        // Like Dubbo's synchronous subscribe: the reference starts with the first list
        // (bounded; a registry that is down leaves the directory waiting, not failing).
        if !dir.wait_ready_for(ready_timeout).await {
            tracing::warn!(consumer = %dir.consumer, ?ready_timeout, "no provider list yet; the directory keeps waiting in the background");
        }
        Ok(dir)
    }

    /// The options.
    pub fn options(&self) -> &DirectoryOptions {
        &self.options
    }

    /// The consumer URL registered under `consumers`, if any.
    pub fn registered_consumer_url(&self) -> Option<Url> {
        self.registration.lock().as_ref().map(|(_, u)| u.clone())
    }

    /// Sets (`Some(raw YAML)`) or clears (`None`, the key was deleted) a routing rule from the
    /// config centre (group [`crate::router::RULE_GROUP`], key [`RuleKey::config_key`]).
    ///
    /// An invalid rule logs a warning naming the key and keeps the previous rule, as Java
    /// does; the error says why it was refused. A script rule is refused the same way.
    /// The new rule applies to calls listed after this returns.
    ///
    /// Errors: the rule was refused ([`RouterError::is_bad_rule`], unsupported version or
    /// script), or the directory is destroyed.
    pub fn set_router_rule(&self, key: RuleKey, raw: Option<&str>) -> Result<(), RouterError> {
        if self.destroyed.load(Ordering::Acquire) {
            return Err(RouterError::Destroyed);
        }
        let config_key = key.config_key(&self.consumer);
        let started = std::time::Instant::now();
        // Read and compile before taking the state lock: notifications go on meanwhile.
        let parsed = match raw.map(|text| RuleSet::parse(&key, text, self.dialect())) {
            None => None,
            Some(Ok(rule)) => Some(rule),
            Some(Err(e)) => {
                tracing::warn!(key = %config_key, error = %e, "routing rule refused; the previous rule stays");
                self.record_error(format!("routing rule {config_key} refused: {e}"));
                return Err(e);
            }
        };
        let mut st = self.state.lock();
        if st.rules.install(&key, parsed) {
            self.publish_rules(&st);
            tracing::debug!(key = %config_key, removed = raw.is_none(), elapsed = ?started.elapsed(), "routing rule applied");
        }
        Ok(())
    }

    /// The condition-matching dialect of the compatibility mode.
    fn dialect(&self) -> Dialect {
        match self.options.compat {
            DubboCompat::V3 => Dialect::V3,
            DubboCompat::V26 | DubboCompat::V27 => Dialect::V27,
        }
    }

    /// The per-call chain's inputs (`None` for the 2.6 per-method cache, which routes when
    /// the snapshot is built).
    fn chain_inputs<'a>(&'a self, st: &'a State) -> Option<ChainInputs<'a>> {
        if self.mode == MethodCacheMode::Dubbo26 {
            return None;
        }
        let mode = match self.options.compat {
            DubboCompat::V3 => ChainMode::V3,
            DubboCompat::V26 | DubboCompat::V27 => ChainMode::V27,
        };
        Some(ChainInputs {
            rules: &st.rules,
            mode,
            consumer_app: self.consumer.param("application").unwrap_or(""),
            exclude_tag: self
                .consumer
                .param_list("router")
                .iter()
                .any(|r| r.trim() == "-tag" || r.trim() == "-default"),
        })
    }

    /// Applies a rule change: the providers did not change, so the new snapshot shares
    /// every set and target of the current one and only gets a new chain.
    fn publish_rules(&self, st: &State) {
        let current = self.snapshot.load();
        let routing = current.routing.as_ref().filter(|r| r.has_targets());
        if let (Some(inputs), Some(routing)) = (self.chain_inputs(st), routing) {
            let chain = Chain::build(
                inputs.rules,
                routing.targets(),
                inputs.consumer_app,
                inputs.mode,
                inputs.exclude_tag,
            );
            if let Some(snap) =
                current.with_routing(Arc::new(routing.with_chain(Arc::new(chain), &current.all)))
            {
                self.store_snapshot(snap);
                return;
            }
        }
        if current.phase == Phase::Ready {
            self.publish(st);
        }
    }

    /// Number of routing rules held (config-centre keys plus registry condition URLs).
    pub fn router_rule_count(&self) -> usize {
        let st = self.state.lock();
        usize::from(st.rules.service.is_some())
            + st.rules.app.len()
            + st.rules.tag.len()
            + st.rules.url_rules.len()
    }

    /// The distinct provider applications of the current list, in list order (the provider
    /// URL's `application`, else `remote.application`; empty ones skipped). The rules keyed by
    /// a provider application (`<app>.tag-router`, `<app>.condition-router`) apply while that
    /// application is the first one here, as in Java; the config-centre watcher follows the
    /// keys of every application listed so that a change of the first one needs no re-read.
    pub fn provider_applications(&self) -> Vec<String> {
        self.provider_apps.borrow().clone()
    }

    /// A change notification for [`RegistryDirectory::provider_applications`]: the receiver
    /// sees a new value whenever the set (or its order) changes.
    pub fn watch_provider_applications(&self) -> watch::Receiver<Vec<String>> {
        self.provider_apps.subscribe()
    }

    /// The router URLs last notified (kept even without a router factory).
    pub fn router_urls(&self) -> Vec<Url> {
        self.state.lock().router_urls.clone()
    }

    /// The current configurators, in application order.
    pub fn configurators(&self) -> Vec<Configurator> {
        self.state.lock().configurators.clone()
    }

    /// The merged provider URLs with an invoker, in list order (mock providers included).
    pub fn invoker_urls(&self) -> Vec<Url> {
        self.state
            .lock()
            .table
            .entries()
            .filter(|e| e.invoker.is_some())
            .map(|e| e.merged.clone())
            .collect()
    }

    /// Number of provider URLs currently held (valid or not).
    pub fn provider_count(&self) -> usize {
        self.state.lock().table.len()
    }

    /// True once [`RegistryDirectory::destroy`] ran (or the directory was dropped).
    pub fn is_destroyed(&self) -> bool {
        self.destroyed.load(Ordering::Acquire)
    }

    /// Number of invokers of the current snapshot, before routing (Dubbo's
    /// `getAllInvokers().size()`); 0 while waiting, forbidden or destroyed. No lock.
    pub fn invoker_count(&self) -> usize {
        self.snapshot.load().all.len()
    }

    /// A change notification for the snapshot [`Directory::list`] reads: the receiver sees a
    /// new value (a count) after every published snapshot (a providers list, a rule or
    /// configurator change, `empty://`) and after [`RegistryDirectory::destroy`].
    pub fn watch_changes(&self) -> watch::Receiver<u64> {
        self.changes.subscribe()
    }

    fn changed(&self) {
        self.changes.send_modify(|g| *g += 1);
    }

    /// True once the first providers notification was applied (or the directory was
    /// destroyed).
    pub fn is_ready(&self) -> bool {
        *self.ready.borrow()
    }

    /// Waits until the first providers notification was applied, at most `timeout`.
    /// Returns false on timeout.
    pub async fn wait_ready_for(&self, timeout: Duration) -> bool {
        let mut rx = self.ready.subscribe();
        let ok = matches!(
            tokio::time::timeout(timeout, rx.wait_for(|r| *r)).await,
            Ok(Ok(_))
        );
        ok
    }

    /// Applies one notification (Dubbo's `RegistryDirectory#notify(List<URL>)`): URLs are
    /// classified as configurators, routers or providers. A list with no provider URL
    /// re-applies configurators/routers to the current providers; an empty list changes
    /// nothing else.
    pub fn notify(&self, urls: &[Url]) {
        self.notify_inner(urls, false);
    }

    /// Applies one [`registry_core::Notification`] of a subscription: the complete list of
    /// `category`. A `providers` list is taken as providers (and `empty://`) without
    /// re-classifying every URL, which keeps a large list cheap; other categories go through
    /// [`RegistryDirectory::notify`].
    pub fn notify_category(&self, category: &str, urls: &[Url]) {
        let _span = tracing::debug_span!(
            "notify",
            service = self.consumer.service_interface().unwrap_or(""),
            category,
            count = urls.len(),
        )
        .entered();
        if category == PRECONNECT {
            self.preconnect(urls);
            return;
        }
        self.notify_inner(urls, category == PROVIDERS);
    }

    /// Opens connections to the addresses of a `preconnect` list (those of a protocol the
    /// consumer calls, at most [`MAX_PRECONNECTS`]) and lets go of those opened for the
    /// previous list: a provider referred meanwhile took its connection over.
    fn preconnect(&self, urls: &[Url]) {
        if self.destroyed.load(Ordering::Acquire) {
            return;
        }
        let held: Vec<Preconnect> = urls
            .iter()
            .filter(|u| !is_empty_url(u) && calls_protocol(&self.consumer, u.protocol_str()))
            .take(MAX_PRECONNECTS)
            .filter_map(|u| self.factory.preconnect(u))
            .collect();
        if !held.is_empty() {
            tracing::debug!(
                count = held.len(),
                "connecting ahead to new provider addresses"
            );
        }
        let old = std::mem::replace(&mut *self.preconnects.lock(), held);
        drop(old);
    }

    fn notify_inner(&self, urls: &[Url], trusted_providers: bool) {
        if self.destroyed.load(Ordering::Acquire) {
            return;
        }
        let started = Instant::now();
        crate::metrics::notification();
        let mut configurators: Vec<Url> = Vec::new();
        let mut routers: Vec<Url> = Vec::new();
        let mut providers: Vec<Url> = Vec::new();
        let only_providers = trusted_providers
            || urls
                .iter()
                .all(|u| is_provider(u) && u.param("compatible_config").is_none());
        if !only_providers {
            for u in urls {
                if !valid_category(u) || u.param("compatible_config").is_some() {
                    tracing::warn!(url = %u, "ignoring URL of an unsupported category");
                    continue;
                }
                if is_configurator(u) {
                    configurators.push(u.clone());
                } else if is_route(u) {
                    routers.push(u.clone());
                } else if is_provider(u) {
                    providers.push(u.clone());
                }
            }
        }
        let providers: &[Url] = if only_providers { urls } else { &providers };
        // The size Java reports for a providers list (`empty://` is none).
        let listed = (!providers.is_empty()).then(|| {
            if providers.len() == 1 && is_empty_url(&providers[0]) {
                0
            } else {
                providers.len()
            }
        });
        let mut st = self.state.lock();
        let mut cfg_changed = false;
        if let Some(cs) = to_configurators(&configurators, self.options.compat) {
            st.set_registry_configurators(cs);
            cfg_changed = true;
        }
        let mut routers_changed = false;
        if !routers.is_empty() {
            // `router=<type>` names the router protocol (Dubbo's toRouters).
            st.router_urls = routers
                .iter()
                .filter(|u| !is_empty_url(u))
                .map(|u| match u.param("router").filter(|t| !t.is_empty()) {
                    Some(t) => u.with_protocol(t),
                    None => u.clone(),
                })
                .collect();
            st.dynamic_routers = match &self.options.router_factory {
                Some(f) => st.router_urls.iter().filter_map(|u| f.router(u)).collect(),
                None => Vec::new(),
            };
            self.apply_url_rules(&mut st);
            routers_changed = true;
        }
        self.refresh(&mut st, providers, cfg_changed, routers_changed);
        let known = st.table.len();
        let with_invoker = st.table.valid();
        let refer_error = st.table.take_refer_error();
        drop(st);
        self.metrics.notified(listed, started.elapsed());
        if let Some(e) = refer_error {
            self.record_error(e);
        }
        self.update_health(Some((known, with_invoker)));
    }

    /// Re-counts the invokers (and, after a notification, the providers) into the health
    /// and the directory gauges; `notified` = (providers known, providers with an invoker).
    fn update_health(&self, notified: Option<(usize, usize)>) {
        let snap = self.snapshot.load();
        let phase = match snap.phase {
            Phase::Waiting => DirectoryPhase::Waiting,
            Phase::Ready => DirectoryPhase::Ready,
            Phase::Forbidden => DirectoryPhase::Forbidden,
            Phase::Destroyed => DirectoryPhase::Destroyed,
        };
        let invokers = snap.all.invokers();
        let available = invokers.iter().filter(|i| i.is_available()).count();
        let mut counts = None;
        self.health.send_if_modified(|h| {
            let before = h.clone();
            h.phase = phase;
            h.invokers = invokers.len();
            h.available = available;
            if let Some((known, with_invoker)) = notified {
                h.providers = known;
                h.disabled = known.saturating_sub(with_invoker);
                h.notifications += 1;
                h.last_notify_unix_ms = Some(registry_core::health::now_ms());
            }
            counts = Some(DirectoryCounts {
                all: h.invokers,
                valid: h.available,
                to_reconnect: h.to_reconnect(),
                disabled: h.disabled,
            });
            *h != before
        });
        if let Some(c) = counts {
            self.metrics.set_counts(c);
        }
    }

    /// Records an error in the health (`last_error`).
    fn record_error(&self, e: String) {
        self.health.send_modify(|h| {
            h.last_error = Some(e);
            h.last_error_unix_ms = Some(registry_core::health::now_ms());
        });
    }

    /// The directory's health: what it holds and how it is doing; the receiver sees every
    /// change (see [`DirectoryHealth`]).
    pub fn health(&self) -> watch::Receiver<DirectoryHealth> {
        self.health.subscribe()
    }

    /// The periodic re-count of the directory's task: availability changes that came with
    /// no notification (a connection dropped or came back), and the service's aggregated
    /// call metrics.
    fn tick(&self) {
        if self.destroyed.load(Ordering::Acquire) {
            return;
        }
        self.update_health(None);
        if let Some(m) = ConsumerMetrics::lookup(&self.consumer) {
            m.refresh();
        }
    }

    /// Registry `condition://` URLs: Dubbo 3.3 has no `condition` RouterFactory and ignores
    /// them; the 2.6/2.7 modes apply them. A URL whose rule does not parse is reported and
    /// the previous URL rules are kept.
    fn apply_url_rules(&self, st: &mut State) {
        let conds: Vec<&Url> = st
            .router_urls
            .iter()
            .filter(|u| is_condition_url(u))
            .collect();
        if self.options.compat == DubboCompat::V3 {
            if !conds.is_empty() {
                tracing::info!(count = conds.len(), "ignoring condition:// router URLs, as Dubbo 3.3 does (applied only in the 2.6/2.7 modes)");
            }
            return;
        }
        let mut rules = Vec::with_capacity(conds.len());
        for u in conds {
            match UrlCondition::from_url(u, self.dialect()) {
                Ok(r) => rules.push(Arc::new(r)),
                Err(e) => {
                    tracing::warn!(url = %u.without_params(&["rule"]), error = %e, "bad condition router URL; the previous router URLs stay");
                    return;
                }
            }
        }
        st.rules.url_rules = rules;
    }

    /// `refreshOverrideAndInvoker` + `refreshInvoker`.
    fn refresh(&self, st: &mut State, providers: &[Url], cfg_changed: bool, routers_changed: bool) {
        if cfg_changed {
            let local = self.consumer.host().unwrap_or("");
            let dir_url = configure_all(
                &st.configurators,
                &self.consumer,
                local,
                self.options.compat,
            );
            self.directory_url.store(Arc::new(dir_url));
        }
        if providers.len() == 1 && is_empty_url(&providers[0]) {
            if self.options.empty_protection && st.table.valid() > 0 {
                tracing::warn!(consumer = %self.consumer, "registry says empty://; empty protection keeps the current providers");
                self.mark_ready();
                return;
            }
            st.forbidden = true;
            let retired = st.table.clear();
            self.snapshot
                .store(Arc::new(Snapshot::empty(Phase::Forbidden)));
            self.changed();
            self.mark_ready();
            destroy_all(retired);
            return;
        }
        let sort_keys = self.mode == MethodCacheMode::Dubbo26;
        let ctx = Ctx {
            consumer: &self.consumer,
            configurators: &st.configurators,
            compat: self.options.compat,
            factory: &*self.factory,
            sort_keys,
        };
        let mut retired = Vec::new();
        let mut changed = routers_changed;
        if cfg_changed {
            let Applied {
                changed: c,
                retired: r,
                ..
            } = {
                let local = self.consumer.host().unwrap_or("");
                let touched: Vec<AffectFilter> = st
                    .dynamic
                    .take_touched()
                    .iter()
                    .map(|c| c.affect_filter(local))
                    .collect();
                // When every configurator names its hosts, entries of other hosts are
                // skipped on a hash compare, without reading their URL.
                let hashes: Option<Vec<u64>> = touched.iter().try_fold(Vec::new(), |mut acc, c| {
                    acc.extend(c.hosts()?.into_iter().map(host_hash));
                    Some(acc)
                });
                st.table.remerge(&ctx, &|e: &Entry| {
                    if hashes.as_ref().is_some_and(|hs| !hs.contains(&e.host_hash)) {
                        return false;
                    }
                    let (h, p) = (e.raw.host().unwrap_or(""), e.raw.port());
                    touched.iter().any(|c| c.may_affect(h, p))
                })
            };
            changed |= c;
            retired.extend(r);
        }
        let was_forbidden = st.forbidden;
        if !providers.is_empty() {
            st.forbidden = false;
            let Applied {
                changed: c,
                retired: r,
                kept_old,
            } = st.table.apply(providers, &ctx);
            if kept_old {
                tracing::debug!(consumer = %self.consumer, "kept the previous providers");
            }
            changed |= c;
            retired.extend(r);
        } else if !changed {
            return;
        }
        let phase_changed = self.snapshot.load().phase != Phase::Ready && !providers.is_empty();
        if changed || phase_changed || was_forbidden != st.forbidden {
            self.publish(st);
        }
        if !providers.is_empty() {
            self.mark_ready();
        }
        destroy_all(retired);
    }

    fn publish(&self, st: &State) {
        self.update_provider_apps(st);
        let dir_url = self.directory_url.load_full();
        let mut routers: Vec<Arc<dyn Router>> = self.options.routers.clone();
        routers.extend(st.dynamic_routers.iter().cloned());
        if self.mode == MethodCacheMode::Dubbo26 {
            // 2.6: condition routers run per cached method when the snapshot is built.
            let mut urls = st.rules.url_rules.clone();
            urls.sort_by(|a, b| {
                a.priority
                    .cmp(&b.priority)
                    .then_with(|| a.full.cmp(&b.full))
            });
            routers.extend(
                urls.into_iter()
                    .map(|u| Arc::new(UrlConditionRouter(u)) as Arc<dyn Router>),
            );
        }
        let current = self.snapshot.load();
        let ctx = BuildCtx {
            previous: (current.phase == Phase::Ready).then_some(&*current.all),
            previous_routing: current
                .routing
                .as_deref()
                .filter(|_| current.phase == Phase::Ready),
            capacity: st.table.len(),
            consumer: &dir_url,
            routers: &routers,
            joiner: Some(&*self.joiner),
            multi_group: self.multi_group,
            mode: self.mode,
            rules: self.chain_inputs(st),
        };
        let snap = build(st.table.entries(), st.table.has_shared(), &ctx);
        self.store_snapshot(snap);
        tracing::debug!(
            service = self.consumer.service_interface().unwrap_or(""),
            providers = st.table.len(),
            "directory snapshot published"
        );
    }

    fn store_snapshot(&self, snap: Snapshot) {
        self.snapshot.store(Arc::new(snap));
        crate::metrics::snapshot_published();
        self.changed();
    }

    fn update_provider_apps(&self, st: &State) {
        // Entries share their interned application name: mostly a pointer compare.
        let mut seen: Vec<&Arc<str>> = Vec::new();
        for e in st.table.entries() {
            if e.mock || e.invoker.is_none() {
                continue;
            }
            let Some(app) = &e.app else { continue };
            if !seen.iter().any(|a| Arc::ptr_eq(a, app) || ***a == **app) {
                seen.push(app);
            }
        }
        let apps: Vec<String> = seen.iter().map(|a| a.to_string()).collect();
        self.provider_apps.send_if_modified(|cur| {
            if *cur == apps {
                false
            } else {
                *cur = apps;
                true
            }
        });
    }

    fn mark_ready(&self) {
        self.ready.send_if_modified(|r| !std::mem::replace(r, true));
    }

    /// Destroys the directory: stops following the registry, unregisters the consumer URL
    /// (in the background), destroys every invoker. Idempotent. `list` then fails with
    /// "already destroyed".
    pub fn destroy(&self) {
        if self.destroyed.swap(true, Ordering::AcqRel) {
            return;
        }
        self.cancel.cancel();
        self.preconnects.lock().clear();
        let retired = {
            let mut st = self.state.lock();
            st.table.clear()
        };
        self.snapshot
            .store(Arc::new(Snapshot::empty(Phase::Destroyed)));
        self.changed();
        self.mark_ready();
        destroy_all(retired);
        self.update_health(Some((0, 0)));
        self.unregister_in_background();
    }

    fn unregister_in_background(&self) {
        let Some((registry, url)) = self.registration.lock().take() else {
            return;
        };
        match tokio::runtime::Handle::try_current() {
            Ok(h) => {
                h.spawn(async move {
                    if let Err(e) = registry.unregister(&url).await {
                        tracing::warn!(error = %e, "failed to unregister the consumer URL");
                    }
                });
            }
            Err(_) => tracing::warn!("no runtime to unregister the consumer URL"),
        }
    }

    fn forbidden_error(&self) -> RpcError {
        RpcError::new(
            RpcErrorCode::Forbidden,
            format!(
                "No provider available from registry {} for service {} on consumer {}, please check status of providers(disabled, not registered or in blacklist).",
                self.registry_url.address().unwrap_or_default(),
                self.consumer.service_key().unwrap_or_default(),
                self.consumer.host().unwrap_or(""),
            ),
        )
    }
}

impl Drop for RegistryDirectory {
    /// Dropping the directory destroys it: the subscription task ends, invokers are
    /// destroyed and the consumer URL is unregistered in the background.
    fn drop(&mut self) {
        self.destroy();
    }
}

impl Directory for RegistryDirectory {
    fn consumer_url(&self) -> Url {
        (**self.directory_url.load()).clone()
    }

    fn registry_url(&self) -> Url {
        self.registry_url.clone()
    }

    fn list(&self, invocation: &Invocation) -> Result<Arc<InvokerSet>, RpcError> {
        let snap = self.snapshot.load();
        match snap.phase {
            Phase::Destroyed => {
                return Err(RpcError::new(
                    RpcErrorCode::Unknown,
                    format!(
                        "Directory of type RegistryDirectory already destroyed for service {} from registry {}",
                        self.consumer.service_key().unwrap_or_default(),
                        self.registry_url.address().unwrap_or_default()
                    ),
                ))
            }
            Phase::Forbidden if self.options.should_fail_fast => return Err(self.forbidden_error()),
            _ => {}
        }
        if wants_mock(invocation) {
            return Ok(snap.mock.clone());
        }
        Ok(snap.select(invocation))
    }

    fn is_available(&self) -> bool {
        let snap = self.snapshot.load();
        snap.phase == Phase::Ready && snap.all.invokers().iter().any(|i| i.is_available())
    }

    fn wait_ready(&self) -> BoxFuture<'_, bool> {
        Box::pin(self.wait_ready_for(self.options.ready_timeout))
    }

    fn destroy(&self) {
        RegistryDirectory::destroy(self)
    }
}

fn valid_category(u: &Url) -> bool {
    u.protocol() == Some("route") || VALID_CATEGORIES.contains(&u.category_or("providers"))
}

fn destroy_all(retired: Vec<SharedInvoker>) {
    for inv in retired {
        inv.destroy();
    }
}

fn registry_error(e: registry_core::Error) -> RpcError {
    let code = if e.is_retryable() {
        RpcErrorCode::Network
    } else {
        RpcErrorCode::Unknown
    };
    RpcError::new(code, e.to_string())
}

/// The background task: applies notifications until the stream ends, the directory is
/// dropped or destroyed; re-counts the available invokers every `interval`.
async fn follow(
    mut subscription: Subscription,
    dir: Weak<RegistryDirectory>,
    cancel: CancellationToken,
    interval: Option<Duration>,
) {
    let mut tick = interval.map(|i| {
        let mut t = tokio::time::interval(i.max(Duration::from_millis(10)));
        t.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        t
    });
    let mut open = true;
    loop {
        let ticked = async {
            match tick.as_mut() {
                Some(t) => {
                    t.tick().await;
                }
                None => std::future::pending().await,
            }
        };
        let next = async {
            if open {
                subscription.next().await
            } else {
                std::future::pending().await
            }
        };
        tokio::select! {
            _ = cancel.cancelled() => break,
            n = next => {
                let Some(n) = n else {
                    // The registry ended the stream: keep the lists, keep counting.
                    if tick.is_none() {
                        break;
                    }
                    open = false;
                    continue;
                };
                let Some(d) = dir.upgrade() else { break };
                d.notify_category(&n.category, &n.urls);
            }
            () = ticked => {
                let Some(d) = dir.upgrade() else { break };
                d.tick();
            }
        }
    }
}
