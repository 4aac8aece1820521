//! Failback (Dubbo's `FailbackRegistry`): the wrapper that turns a [`RegistryBackend`] into a
//! [`Registry`].
//!
//! What it adds to a backend:
//! - **Retries.** A failed `register`, `unregister` or `subscribe` is retried in the background
//!   with exponential backoff and jitter ([`RetryPolicy`]: first retry after ≤ 1 s by default,
//!   capped at 30 s, unlimited unless `retry.times` says otherwise). A later success, or a new
//!   `register`/`unregister` of the same URL, cancels the pending retry; a dropped
//!   [`Subscription`] ends its retry.
//! - **`check`.** `register`/`unregister` return the error only when `check` is true (default)
//!   on both the registry URL and the operation URL and the URL's port is not 0; `subscribe`
//!   returns it only when `check` holds on both and there is no cache-file entry to fall back
//!   on. Otherwise the error is logged and retried. Invalid input is always returned (retrying
//!   cannot fix it) and never retried.
//! - **Cache file** ([`crate::cache_file`]): every notification marks the cache dirty; a
//!   background task saves it 500 ms later (debounced, off the notify path; `save.file=true`
//!   saves without the delay), and at most once per `file-save-interval` ms (default 1000)
//!   while the registry churns: changes in between are coalesced and the latest state is
//!   always written (a failed save is tried again after the interval). When `subscribe` fails
//!   and the cache has URLs for the consumer, they are published first.
//! - **Recovery.** [`FailbackRegistry::recover`] re-registers every registered URL and retries
//!   every subscription that has not succeeded yet. It runs automatically whenever
//!   [`RegistryBackend::session_generation`] changes (a new session lost the ephemeral nodes);
//!   established watches are the backend's responsibility.
//! - **Destroy.** [`Registry::destroy`] stops all tasks, unregisters the URLs with `dynamic`
//!   true (default), ends every subscription stream and destroys the backend. Dropping the
//!   `FailbackRegistry` stops its tasks as well (without unregistering).
//! - `accepts=p1,-p2` on the registry URL restricts which protocols are registered.
//! - **Health** ([`Registry::health`]): the backend's connection state, with the operations
//!   waiting for a retry; connected with retries pending is *degraded*.
//! - **Metrics**: register and subscribe counts and times under Dubbo's names
//!   ([`RegistryOpMetrics`]).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use parking_lot::Mutex;
use tokio::sync::{watch, Notify};
use tokio::task::AbortHandle;
use tokio_util::sync::CancellationToken;

use crate::cache_file::CacheFile;
use crate::error::{Error, Result};
use crate::health::{now_ms, RegistryHealth, RegistryState};
use crate::matching::is_empty_url;
use crate::metrics::RegistryOpMetrics;
use crate::notify::group_by_category;
use crate::registry::{Registry, RegistryBackend};
use crate::retry::RetryPolicy;
use crate::subscription::{channel_with_hook, PublishHook, Publisher, Subscription};
use crate::url::Url;

/// Debounce of cache-file saves.
pub const CACHE_SAVE_DELAY: Duration = Duration::from_millis(500);

/// Least time between two cache-file saves (registry param `file-save-interval`, ms).
pub const CACHE_SAVE_INTERVAL: Duration = Duration::from_millis(1000);

/// Wraps a [`RegistryBackend`] into a [`Registry`] with failback semantics (module docs).
#[derive(Debug)]
pub struct FailbackRegistry<B: RegistryBackend> {
    shared: Arc<Shared<B>>,
}

#[derive(Debug)]
struct Shared<B> {
    backend: B,
    policy: RetryPolicy,
    check: bool,
    cache: Option<Arc<CacheFile>>,
    cache_dirty: Arc<Notify>,
    save_delay: Duration,
    save_interval: Duration,
    /// The last save failed: the next one writes even if nothing changed since.
    cache_failed: std::sync::atomic::AtomicBool,
    state: Mutex<State>,
    stop: CancellationToken,
    /// Background work not yet started (no runtime at construction time).
    unstarted: Mutex<Option<Unstarted>>,
    /// The health published by [`Registry::health`].
    health: watch::Sender<RegistryHealth>,
    /// The backend's own health, if it reports one.
    backend_health: Option<watch::Receiver<RegistryHealth>>,
    /// Pending retries changed: the health is recomputed.
    health_dirty: Arc<Notify>,
    /// The last failure of a registry operation (for the health's `last_error`).
    last_failure: Mutex<Option<String>>,
    ops: RegistryOpMetrics,
}

#[derive(Debug)]
struct Unstarted {
    session: Option<tokio::sync::watch::Receiver<u64>>,
}

#[derive(Debug, Default)]
struct State {
    registered: Vec<Url>,
    tasks: HashMap<TaskKey, (u64, AbortHandle)>,
    subscriptions: Vec<SubEntry>,
    destroyed: bool,
    next_id: u64,
}

#[derive(Debug)]
struct SubEntry {
    id: u64,
    publisher: Publisher,
    ok: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum TaskKey {
    Register(Url),
    Unregister(Url),
    Subscribe(u64),
}

impl<B: RegistryBackend> FailbackRegistry<B> {
    /// Wraps `backend`, reading `check`, `retry.*`, `file`/`file-cache`, `save.file` from its
    /// URL. Background tasks start now when called inside a tokio runtime, else on first use.
    pub fn new(backend: B) -> Self {
        let url = backend.url().clone();
        let session = backend.session_generation();
        let backend_health = backend.health();
        let initial = match &backend_health {
            Some(rx) => rx.borrow().clone(),
            None => RegistryHealth::connected(url.address()),
        };
        let shared = Arc::new(Shared {
            health: watch::Sender::new(initial),
            backend_health,
            health_dirty: Arc::new(Notify::new()),
            last_failure: Mutex::new(None),
            ops: RegistryOpMetrics::new(&url),
            policy: RetryPolicy::from_url(&url),
            check: url.param_bool("check", true),
            cache: CacheFile::for_registry(&url).map(Arc::new),
            cache_dirty: Arc::new(Notify::new()),
            save_delay: if url.param_bool("save.file", false) {
                Duration::ZERO
            } else {
                CACHE_SAVE_DELAY
            },
            save_interval: url
                .param("file-save-interval")
                .and_then(|v| v.trim().parse::<u64>().ok())
                .map_or(CACHE_SAVE_INTERVAL, Duration::from_millis),
            cache_failed: std::sync::atomic::AtomicBool::new(false),
            backend,
            state: Mutex::new(State::default()),
            stop: CancellationToken::new(),
            unstarted: Mutex::new(Some(Unstarted { session })),
        });
        let me = FailbackRegistry { shared };
        me.shared.refresh_health();
        if tokio::runtime::Handle::try_current().is_ok() {
            me.shared.start();
        }
        me
    }

    /// The wrapped backend.
    pub fn backend(&self) -> &B {
        &self.shared.backend
    }

    /// The cache file, when enabled.
    pub fn cache_file(&self) -> Option<&CacheFile> {
        self.shared.cache.as_deref()
    }

    /// URLs currently registered through this registry.
    pub fn registered(&self) -> Vec<Url> {
        self.shared.state.lock().registered.clone()
    }

    /// Number of pending background retries.
    pub fn pending_retries(&self) -> usize {
        self.shared.state.lock().tasks.len()
    }

    /// Re-registers every registered URL and retries every subscription that has not
    /// succeeded yet, in the background (`FailbackRegistry.recover`).
    pub fn recover(&self) {
        self.shared.start();
        Shared::recover(&self.shared);
    }
}

impl<B: RegistryBackend> Drop for FailbackRegistry<B> {
    fn drop(&mut self) {
        self.shared.stop.cancel();
        let mut st = self.shared.state.lock();
        for (_, (_, h)) in st.tasks.drain() {
            h.abort();
        }
    }
}

impl<B: RegistryBackend> Shared<B> {
    /// Starts the session watcher and the cache saver once (needs a runtime).
    fn start(self: &Arc<Self>) {
        let Some(un) = self.unstarted.lock().take() else {
            return;
        };
        let Ok(rt) = tokio::runtime::Handle::try_current() else {
            *self.unstarted.lock() = Some(un);
            return;
        };
        {
            let weak = Arc::downgrade(self);
            let stop = self.stop.clone();
            let dirty = self.health_dirty.clone();
            let mut backend = self.backend_health.clone();
            rt.spawn(async move {
                loop {
                    let backend_changed = async {
                        match backend.as_mut() {
                            Some(rx) => rx.changed().await.is_ok(),
                            None => std::future::pending().await,
                        }
                    };
                    tokio::select! {
                        _ = stop.cancelled() => break,
                        _ = dirty.notified() => {}
                        alive = backend_changed => if !alive { backend = None },
                    }
                    let Some(me) = weak.upgrade() else { return };
                    me.refresh_health();
                }
                if let Some(me) = weak.upgrade() {
                    me.refresh_health();
                }
            });
        }
        if let Some(mut rx) = un.session {
            let weak = Arc::downgrade(self);
            let stop = self.stop.clone();
            let mut seen = *rx.borrow_and_update();
            rt.spawn(async move {
                loop {
                    tokio::select! {
                        _ = stop.cancelled() => return,
                        r = rx.changed() => if r.is_err() { return },
                    }
                    let g = *rx.borrow_and_update();
                    if g != seen {
                        seen = g;
                        let Some(me) = weak.upgrade() else { return };
                        tracing::info!(registry = %me.backend.url(), generation = g, "new registry session: recovering registrations");
                        Shared::recover(&me);
                    }
                }
            });
        }
        if self.cache.is_some() {
            let weak = Arc::downgrade(self);
            let stop = self.stop.clone();
            let dirty = self.cache_dirty.clone();
            let (delay, interval) = (self.save_delay, self.save_interval);
            rt.spawn(async move {
                let mut last: Option<tokio::time::Instant> = None;
                loop {
                    tokio::select! {
                        _ = stop.cancelled() => return,
                        _ = dirty.notified() => {}
                    }
                    // Debounce, then keep to one save per interval: what changes meanwhile
                    // leaves the notification set and is written by the next save.
                    let mut at = tokio::time::Instant::now() + delay;
                    if let Some(l) = last {
                        at = at.max(l + interval);
                    }
                    tokio::select! {
                        _ = stop.cancelled() => return,
                        _ = tokio::time::sleep_until(at) => {}
                    }
                    let Some(me) = weak.upgrade() else { return };
                    last = Some(tokio::time::Instant::now());
                    if !me.save_cache().await {
                        dirty.notify_one();
                    }
                }
            });
        }
    }

    /// Recomputes the published health: the backend's state, the pending retries (connected
    /// with retries pending is degraded) and destruction.
    fn refresh_health(&self) {
        let mut h = match &self.backend_health {
            Some(rx) => rx.borrow().clone(),
            None => {
                let mut h = RegistryHealth::connected(self.backend.url().address());
                if !self.backend.is_available() {
                    h.state = RegistryState::Reconnecting {
                        reason: "the registry is not available".to_owned(),
                    };
                }
                h
            }
        };
        let (pending, destroyed) = {
            let st = self.state.lock();
            (st.tasks.len(), st.destroyed)
        };
        h.pending_retries = pending;
        if pending > 0 {
            let failure = self.last_failure.lock().clone();
            if let Some(f) = &failure {
                h.last_error = Some(f.clone());
            }
            if h.state == RegistryState::Connected {
                let what = if pending == 1 {
                    "operation"
                } else {
                    "operations"
                };
                h.state = RegistryState::Degraded {
                    reason: match failure {
                        Some(f) => format!("{pending} registry {what} waiting for retry: {f}"),
                        None => format!("{pending} registry {what} waiting for retry"),
                    },
                };
            }
        }
        if destroyed || self.stop.is_cancelled() {
            h.state = RegistryState::Closed;
        }
        self.health.send_if_modified(|cur| {
            if *cur == h {
                return false;
            }
            // The same state with new details began when it began; a new one begins now.
            h.since_unix_ms = if cur.state.name() == h.state.name() {
                cur.since_unix_ms
            } else {
                now_ms()
            };
            *cur = h.clone();
            true
        });
    }

    /// A registry operation failed with `e`.
    fn failed(&self, e: &Error) {
        *self.last_failure.lock() = Some(e.to_string());
        self.health_dirty.notify_one();
    }

    fn hook(&self) -> Option<PublishHook> {
        self.cache.as_ref()?;
        let dirty = self.cache_dirty.clone();
        Some(Arc::new(move || dirty.notify_one()))
    }

    /// Copies the last notified lists into the cache and writes the file if anything changed.
    /// Returns false when the write failed (to be tried again).
    async fn save_cache(&self) -> bool {
        let Some(cache) = self.cache.clone() else {
            return true;
        };
        let lists: Vec<(Url, Vec<Url>)> = {
            let mut st = self.state.lock();
            st.subscriptions.retain(|s| !s.publisher.is_closed());
            st.subscriptions
                .iter()
                .map(|s| {
                    let urls = s
                        .publisher
                        .last_all()
                        .iter()
                        .flat_map(|n| n.urls.iter().cloned())
                        .collect();
                    (s.publisher.consumer().clone(), urls)
                })
                .collect()
        };
        let mut changed = false;
        for (consumer, urls) in &lists {
            if !urls.is_empty() {
                changed |= cache.update(consumer, urls);
            }
        }
        if !changed && !self.cache_failed.load(std::sync::atomic::Ordering::Acquire) {
            return true;
        }
        let r = tokio::task::spawn_blocking(move || cache.save()).await;
        let ok = match r {
            Ok(Ok(())) => true,
            Ok(Err(e)) => {
                tracing::warn!(error = %e, "registry cache file not saved; trying again later");
                false
            }
            Err(e) => {
                tracing::warn!(error = %e, "registry cache save task failed");
                false
            }
        };
        self.cache_failed
            .store(!ok, std::sync::atomic::Ordering::Release);
        ok
    }

    fn check_for(&self, url: &Url) -> bool {
        self.check && url.param_bool("check", true)
    }

    fn accepts(&self, url: &Url) -> bool {
        let accepts = self.backend.url().param_list("accepts");
        if accepts.is_empty() {
            return true;
        }
        let proto = url.protocol_str();
        if accepts.iter().any(|a| a.strip_prefix('-') == Some(proto)) {
            return false;
        }
        let positive: Vec<&&str> = accepts.iter().filter(|a| !a.starts_with('-')).collect();
        positive.is_empty() || positive.iter().any(|a| **a == proto)
    }

    fn cancel(&self, key: &TaskKey) {
        if let Some((_, h)) = self.state.lock().tasks.remove(key) {
            h.abort();
            self.health_dirty.notify_one();
        }
    }

    /// Schedules a background retry of `key` (replacing a pending one).
    fn schedule(self: &Arc<Self>, key: TaskKey, immediately: bool) {
        let Ok(rt) = tokio::runtime::Handle::try_current() else {
            tracing::warn!("no tokio runtime: failed registry operation will not be retried");
            return;
        };
        let mut st = self.state.lock();
        if st.destroyed || self.stop.is_cancelled() {
            return;
        }
        st.next_id += 1;
        let id = st.next_id;
        let weak = Arc::downgrade(self);
        let stop = self.stop.clone();
        let policy = self.policy;
        let task_key = key.clone();
        let h = rt.spawn(async move {
            let mut attempt: u32 = 0;
            loop {
                if !policy.allows(attempt) {
                    tracing::warn!(task = ?task_key, attempt, "giving up retrying registry operation (retry.times)");
                    break;
                }
                let delay = if immediately && attempt == 0 { Duration::ZERO } else { policy.delay(attempt) };
                tokio::select! {
                    _ = stop.cancelled() => return,
                    _ = tokio::time::sleep(delay) => {}
                }
                let Some(me) = weak.upgrade() else { return };
                crate::metrics::retry();
                match me.retry_once(&task_key).await {
                    Ok(true) => break,
                    Ok(false) => {
                        tracing::debug!(task = ?task_key, "registry retry no longer needed");
                        break;
                    }
                    Err(e) => {
                        tracing::warn!(task = ?task_key, attempt, error = %e, "registry retry failed");
                        me.failed(&e);
                        attempt = attempt.saturating_add(1);
                    }
                }
            }
            if let Some(me) = weak.upgrade() {
                let mut st = me.state.lock();
                if st.tasks.get(&task_key).is_some_and(|(tid, _)| *tid == id) {
                    st.tasks.remove(&task_key);
                }
                drop(st);
                me.health_dirty.notify_one();
            }
        });
        if let Some((_, old)) = st.tasks.insert(key, (id, h.abort_handle())) {
            old.abort();
        }
        self.health_dirty.notify_one();
    }

    /// One retry. `Ok(true)` done, `Ok(false)` no longer needed, `Err` try again later.
    async fn retry_once(&self, key: &TaskKey) -> Result<bool> {
        match key {
            TaskKey::Register(url) => {
                if !self.state.lock().registered.contains(url) {
                    return Ok(false);
                }
                self.backend.do_register(url).await?;
                tracing::info!(url = %url, "registered after retry");
                Ok(true)
            }
            TaskKey::Unregister(url) => {
                if self.state.lock().registered.contains(url) {
                    return Ok(false);
                }
                self.backend.do_unregister(url).await?;
                tracing::info!(url = %url, "unregistered after retry");
                Ok(true)
            }
            TaskKey::Subscribe(id) => {
                let publisher = {
                    let st = self.state.lock();
                    st.subscriptions
                        .iter()
                        .find(|s| s.id == *id)
                        .map(|s| s.publisher.clone())
                };
                let Some(p) = publisher.filter(|p| !p.is_closed()) else {
                    return Ok(false);
                };
                self.backend.do_subscribe(p).await?;
                let mut st = self.state.lock();
                if let Some(s) = st.subscriptions.iter_mut().find(|s| s.id == *id) {
                    s.ok = true;
                }
                Ok(true)
            }
        }
    }

    fn recover(self: &Arc<Self>) {
        let (urls, subs): (Vec<Url>, Vec<u64>) = {
            let mut st = self.state.lock();
            if st.destroyed {
                return;
            }
            st.subscriptions.retain(|s| !s.publisher.is_closed());
            (
                st.registered.clone(),
                st.subscriptions
                    .iter()
                    .filter(|s| !s.ok)
                    .map(|s| s.id)
                    .collect(),
            )
        };
        for u in urls {
            self.schedule(TaskKey::Register(u), true);
        }
        for id in subs {
            self.schedule(TaskKey::Subscribe(id), true);
        }
    }

    fn ensure_alive(&self) -> Result<()> {
        if self.state.lock().destroyed {
            Err(Error::Destroyed)
        } else {
            Ok(())
        }
    }
}

#[async_trait]
impl<B: RegistryBackend> Registry for FailbackRegistry<B> {
    fn url(&self) -> &Url {
        self.shared.backend.url()
    }

    fn is_available(&self) -> bool {
        !self.shared.state.lock().destroyed && self.shared.backend.is_available()
    }

    fn health(&self) -> watch::Receiver<RegistryHealth> {
        self.shared.start();
        self.shared.refresh_health();
        self.shared.health.subscribe()
    }

    #[tracing::instrument(level = "debug", skip_all, fields(
        registry = %self.shared.backend.url(),
        service = url.service_interface().unwrap_or(""),
        category = url.category_or("providers"),
    ))]
    async fn register(&self, url: &Url) -> Result<()> {
        let sh = &self.shared;
        sh.ensure_alive()?;
        sh.start();
        if !sh.accepts(url) {
            tracing::info!(url = %url, "not registered: the registry does not accept this protocol");
            return Ok(());
        }
        {
            let mut st = sh.state.lock();
            st.registered.retain(|u| u != url);
            st.registered.push(url.clone());
        }
        sh.cancel(&TaskKey::Register(url.clone()));
        sh.cancel(&TaskKey::Unregister(url.clone()));
        let started = Instant::now();
        let r = sh.backend.do_register(url).await;
        sh.ops.registered(r.is_ok(), started.elapsed());
        match r {
            Ok(()) => Ok(()),
            Err(e) => {
                sh.failed(&e);
                if e.is_invalid_input() || (sh.check_for(url) && url.port() != 0) {
                    sh.state.lock().registered.retain(|u| u != url);
                    return Err(e);
                }
                tracing::warn!(url = %url, error = %e, "register failed; retrying in the background");
                sh.schedule(TaskKey::Register(url.clone()), false);
                Ok(())
            }
        }
    }

    async fn unregister(&self, url: &Url) -> Result<()> {
        let sh = &self.shared;
        sh.ensure_alive()?;
        sh.start();
        sh.state.lock().registered.retain(|u| u != url);
        sh.cancel(&TaskKey::Register(url.clone()));
        sh.cancel(&TaskKey::Unregister(url.clone()));
        match sh.backend.do_unregister(url).await {
            Ok(()) => Ok(()),
            Err(e) => {
                sh.failed(&e);
                if e.is_invalid_input() || (sh.check_for(url) && url.port() != 0) {
                    return Err(e);
                }
                tracing::warn!(url = %url, error = %e, "unregister failed; retrying in the background");
                sh.schedule(TaskKey::Unregister(url.clone()), false);
                Ok(())
            }
        }
    }

    #[tracing::instrument(level = "debug", skip_all, fields(
        registry = %self.shared.backend.url(),
        service = consumer.service_interface().unwrap_or(""),
        category = consumer.category_or("providers"),
    ))]
    async fn subscribe(&self, consumer: &Url) -> Result<Subscription> {
        let sh = &self.shared;
        sh.ensure_alive()?;
        sh.start();
        let (p, s) = channel_with_hook(consumer.clone(), sh.hook());
        let id = {
            let mut st = sh.state.lock();
            st.subscriptions.retain(|s| !s.publisher.is_closed());
            st.next_id += 1;
            let id = st.next_id;
            st.subscriptions.push(SubEntry {
                id,
                publisher: p.clone(),
                ok: false,
            });
            id
        };
        let started = Instant::now();
        let r = sh.backend.do_subscribe(p.clone()).await;
        sh.ops.subscribed(r.is_ok(), started.elapsed());
        match r {
            Ok(()) => {
                if let Some(e) = sh
                    .state
                    .lock()
                    .subscriptions
                    .iter_mut()
                    .find(|e| e.id == id)
                {
                    e.ok = true;
                }
                Ok(s)
            }
            Err(e) => {
                sh.failed(&e);
                let cached = sh
                    .cache
                    .as_ref()
                    .map(|c| c.urls_for(consumer))
                    .unwrap_or_default();
                let remove = |sh: &Shared<B>| sh.state.lock().subscriptions.retain(|e| e.id != id);
                if e.is_invalid_input() {
                    remove(sh);
                    return Err(e);
                }
                if !cached.is_empty() {
                    tracing::warn!(consumer = %consumer, error = %e, "subscribe failed; using the cache file and retrying");
                    for (category, urls) in group_by_category(consumer, &cached) {
                        p.publish(&category, urls.into());
                    }
                } else if sh.check_for(consumer) {
                    remove(sh);
                    return Err(e);
                } else {
                    tracing::warn!(consumer = %consumer, error = %e, "subscribe failed; retrying in the background");
                }
                sh.schedule(TaskKey::Subscribe(id), false);
                Ok(s)
            }
        }
    }

    async fn lookup(&self, consumer: &Url) -> Result<Vec<Url>> {
        let sh = &self.shared;
        sh.ensure_alive()?;
        match sh.backend.do_lookup(consumer).await {
            Ok(v) => Ok(v),
            Err(e) => {
                let cached: Vec<Url> = sh
                    .cache
                    .as_ref()
                    .map(|c| c.urls_for(consumer))
                    .unwrap_or_default()
                    .into_iter()
                    .filter(|u| !is_empty_url(u) && crate::matching::is_match(consumer, u))
                    .collect();
                if cached.is_empty() {
                    Err(e)
                } else {
                    Ok(cached)
                }
            }
        }
    }

    async fn destroy(&self) {
        let sh = &self.shared;
        let (registered, subs) = {
            let mut st = sh.state.lock();
            if st.destroyed {
                return;
            }
            st.destroyed = true;
            for (_, (_, h)) in st.tasks.drain() {
                h.abort();
            }
            (
                std::mem::take(&mut st.registered),
                std::mem::take(&mut st.subscriptions),
            )
        };
        sh.stop.cancel();
        for url in registered.iter().filter(|u| u.param_bool("dynamic", true)) {
            if let Err(e) = sh.backend.do_unregister(url).await {
                tracing::warn!(url = %url, error = %e, "unregister on destroy failed");
            }
        }
        if let Some(cache) = sh.cache.clone() {
            let mut changed = false;
            for s in subs.iter().filter(|s| !s.publisher.is_closed()) {
                let urls: Vec<Url> = s
                    .publisher
                    .last_all()
                    .iter()
                    .flat_map(|n| n.urls.iter().cloned())
                    .collect();
                if !urls.is_empty() {
                    changed |= cache.update(s.publisher.consumer(), &urls);
                }
            }
            if changed {
                if let Err(e) = tokio::task::spawn_blocking(move || cache.save())
                    .await
                    .unwrap_or_else(|e| Err(Error::Io(e.to_string())))
                {
                    tracing::warn!(error = %e, "registry cache file not saved on destroy");
                }
            }
        }
        drop(subs);
        sh.backend.do_destroy().await;
        sh.refresh_health();
    }
}
