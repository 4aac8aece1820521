//! One application followed by the pipeline: its instances, the MetadataInfo of each revision,
//! and the provider URLs they make. Shared by every subscription whose mapping names the
//! application (Java shares a `ServiceInstancesChangedListener` per application set; sharing
//! per application shares more).
//!
//! The task behind an [`AppState`]:
//! - follows [`InstanceDiscovery::watch`](registry_core::InstanceDiscovery::watch) of the application (re-trying the watch set-up while
//!   the registry is unreachable);
//! - groups the enabled instances by revision (no revision or `"0"`: skipped) and asks the
//!   [`MetadataResolver`] for every revision not known yet, concurrently, in the background;
//! - rebuilds the provider URLs ([`UrlCache`]: unchanged pairs keep their `Url` object) and
//!   publishes a new [`AppSnapshot`], waking the subscriptions.
//!
//! What it publishes, and when (these rules are where it differs from Java on purpose, see
//! `docs/compatibility.md`):
//! - an instance whose revision is resolved contributes one URL per ServiceInfo;
//! - an instance whose **new** revision is not resolved yet (being fetched, or failed) keeps
//!   contributing the URLs of the last revision it was resolved with — it is alive and still
//!   serves them — until the new one resolves (Java drops it, or keeps every old address when
//!   all revisions fail);
//! - an instance never resolved contributes nothing until its revision resolves;
//! - the first snapshot waits until every revision has had its first answer (Java's subscribe
//!   blocks the same way); later changes (an instance gone, a new one resolved) are published
//!   at once, except that a list that would be empty only because revisions are unresolved is
//!   not published (the previous one stays): a provider restarted with a new revision never
//!   leaves the consumer with no provider while its metadata is fetched;
//! - failed revisions are fetched again every [`AppOptions::retry_interval`] (Java: 10 s)
//!   while an instance still uses them;
//! - once a list was published, the addresses (`dubbo.endpoints`) of new instances whose
//!   revision is being fetched are in [`AppSnapshot::ahead`], so that subscriptions can have
//!   their connections opened while the MetadataInfo is on its way.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::{Arc, Weak};
use std::time::Duration;

use arc_swap::ArcSwap;
use parking_lot::Mutex;
use registry_core::{InstanceList, ServiceInstance, SharedInstanceDiscovery, Url};
use rustc_hash::{FxHashMap, FxHashSet};
use tokio::sync::Notify;
use tokio::task::JoinSet;
use tokio_util::sync::{CancellationToken, DropGuard};

use crate::error::Error;
use crate::metadata_info::{MetadataInfo, ServiceInfo};
use crate::resolver::MetadataResolver;
use crate::urls::UrlCache;

/// Timing of the application pipeline.
#[derive(Debug, Clone)]
pub struct AppOptions {
    /// How often failed revisions are fetched again while in use (Java: 10 s).
    pub retry_interval: Duration,
    /// Pause between attempts to set up the instance watch while the registry is unreachable.
    pub watch_retry: Duration,
}

impl Default for AppOptions {
    fn default() -> Self {
        AppOptions {
            retry_interval: Duration::from_secs(10),
            watch_retry: Duration::from_secs(1),
        }
    }
}

/// The provider URLs of one ServiceInfo of one revision.
#[derive(Debug, Clone)]
pub struct ServiceUrls {
    /// The service.
    pub info: Arc<ServiceInfo>,
    /// One URL per instance serving it with this revision, sorted by address. The same
    /// allocation as in the previous snapshot when the list did not change (subscriptions
    /// compare by pointer to skip unchanged services).
    pub urls: Arc<[Url]>,
}

/// One revision as the snapshot uses it.
#[derive(Debug, Clone)]
pub struct RevisionView {
    /// The revision.
    pub revision: Arc<str>,
    /// Its MetadataInfo.
    pub metadata: Arc<MetadataInfo>,
    /// The instances whose URLs come from it (sorted by address); includes instances that
    /// moved to a revision not resolved yet (`stale`).
    pub instances: Vec<ServiceInstance>,
    /// Addresses (of `instances`) that currently announce another, unresolved revision.
    pub stale: Vec<String>,
    /// Per ServiceInfo (match-key order).
    pub services: Vec<ServiceUrls>,
}

/// A revision that could not be resolved yet.
#[derive(Debug, Clone)]
pub struct Unresolved {
    /// The revision.
    pub revision: Arc<str>,
    /// Addresses announcing it.
    pub instances: Vec<String>,
    /// The last error, `None` while the first fetch is running.
    pub error: Option<Error>,
}

/// What one application currently contributes.
#[derive(Debug, Clone, Default)]
pub struct AppSnapshot {
    /// True once a list was published (consumers may use it).
    pub ready: bool,
    /// True once every revision seen so far had a first answer (resolved or failed), or the
    /// application has no instance.
    pub settled: bool,
    /// Increases with every published change.
    pub generation: u64,
    /// Enabled instances with a revision.
    pub instances: usize,
    /// Instances skipped (disabled, or without a usable revision).
    pub skipped: usize,
    /// The resolved revisions in use (sorted).
    pub revisions: Vec<RevisionView>,
    /// The same services by interface name, in revision order (what subscriptions read).
    pub by_interface: FxHashMap<Arc<str>, Vec<ServiceUrls>>,
    /// Revisions not resolved (being fetched or failed).
    pub unresolved: Vec<Unresolved>,
    /// `protocol://host:port` of each `dubbo.endpoints` entry of the instances never resolved
    /// whose revision is being fetched, sorted; empty before the first published list (module
    /// docs).
    pub ahead: Arc<[Url]>,
}

impl AppSnapshot {
    /// Number of provider URLs.
    pub fn url_count(&self) -> usize {
        self.revisions
            .iter()
            .flat_map(|r| &r.services)
            .map(|s| s.urls.len())
            .sum()
    }
}

/// A followed application (module docs). Dropping the last handle stops its task.
#[derive(Debug)]
pub struct AppState {
    app: Arc<str>,
    snapshot: Arc<ArcSwap<AppSnapshot>>,
    subscribers: Arc<Mutex<Vec<Weak<Notify>>>>,
    settled: Arc<Notify>,
    _stop: DropGuard,
}

impl AppState {
    /// Starts following `app`.
    pub(crate) fn start(
        app: &str,
        discovery: SharedInstanceDiscovery,
        resolver: MetadataResolver,
        options: AppOptions,
        parent: &CancellationToken,
    ) -> Arc<AppState> {
        let stop = parent.child_token();
        let snapshot = Arc::new(ArcSwap::from_pointee(AppSnapshot::default()));
        let subscribers: Arc<Mutex<Vec<Weak<Notify>>>> = Arc::default();
        let settled = Arc::new(Notify::new());
        let app: Arc<str> = Arc::from(app);
        let task = Task {
            app: app.clone(),
            discovery,
            resolver,
            options,
            snapshot: snapshot.clone(),
            subscribers: subscribers.clone(),
            settled: settled.clone(),
            stop: stop.clone(),
            instances: InstanceList::from(Vec::new()),
            meta: HashMap::new(),
            last_good: HashMap::new(),
            urls: UrlCache::new(),
            pass: 0,
            generation: 0,
            published: false,
            fetches: JoinSet::new(),
            fetch_ids: HashMap::new(),
        };
        tokio::spawn(task.run());
        Arc::new(AppState {
            app,
            snapshot,
            subscribers,
            settled,
            _stop: stop.drop_guard(),
        })
    }

    /// The application.
    pub fn app(&self) -> &str {
        &self.app
    }

    /// The current snapshot (no lock).
    pub fn snapshot(&self) -> Arc<AppSnapshot> {
        self.snapshot.load_full()
    }

    /// Wakes `n` after every published change (until `n` is dropped).
    pub fn subscribe(&self, n: &Arc<Notify>) {
        let mut s = self.subscribers.lock();
        s.retain(|w| w.strong_count() > 0);
        s.push(Arc::downgrade(n));
    }

    /// Waits until the snapshot is settled, at most `timeout`; true when settled.
    pub async fn wait_settled(&self, timeout: Duration) -> bool {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let n = self.settled.notified();
            if self.snapshot.load().settled {
                return true;
            }
            if tokio::time::timeout_at(deadline, n).await.is_err() {
                return self.snapshot.load().settled;
            }
        }
    }
}

/// State of one revision.
#[derive(Debug)]
enum Rev {
    Pending,
    Ready(Arc<MetadataInfo>),
    Failed(Error),
}

/// A finished fetch: the revision and its outcome.
type Fetched = (Arc<str>, Result<Arc<MetadataInfo>, Error>);

/// The instances using one MetadataInfo in a rebuild, and the stale ones among them.
#[derive(Default)]
struct Users {
    instances: Vec<ServiceInstance>,
    stale: Vec<String>,
}

struct Task {
    app: Arc<str>,
    discovery: SharedInstanceDiscovery,
    resolver: MetadataResolver,
    options: AppOptions,
    snapshot: Arc<ArcSwap<AppSnapshot>>,
    subscribers: Arc<Mutex<Vec<Weak<Notify>>>>,
    settled: Arc<Notify>,
    stop: CancellationToken,
    instances: InstanceList,
    meta: HashMap<Arc<str>, Rev>,
    /// Address → the revision (and MetadataInfo) it was last resolved with.
    last_good: HashMap<String, (Arc<str>, Arc<MetadataInfo>)>,
    urls: UrlCache,
    pass: u64,
    generation: u64,
    published: bool,
    fetches: JoinSet<Fetched>,
    /// The revision each fetch task is for.
    fetch_ids: HashMap<tokio::task::Id, Arc<str>>,
}

impl Task {
    async fn run(mut self) {
        let mut watch = loop {
            match self.discovery.watch(&self.app).await {
                Ok(w) => break w,
                Err(e) => {
                    tracing::warn!(app = %self.app, error = %e, "cannot watch the instances of an application; retrying");
                    tokio::select! {
                        _ = self.stop.cancelled() => return,
                        _ = tokio::time::sleep(self.options.watch_retry) => {}
                    }
                }
            }
        };
        let mut retry = tokio::time::interval(self.options.retry_interval);
        retry.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        retry.tick().await;
        loop {
            // One event, then everything else already waiting, then one rebuild: a burst of
            // registrations or of resolved revisions costs one rebuild, not one each.
            let mut dirty = tokio::select! {
                _ = self.stop.cancelled() => break,
                list = watch.next() => {
                    let Some(list) = list else { break };
                    self.instances = list;
                    self.request_missing(false);
                    true
                }
                Some(done) = self.fetches.join_next_with_id(), if !self.fetches.is_empty() => {
                    self.fetched(done);
                    true
                }
                _ = retry.tick() => self.request_missing(true),
            };
            while let Some(done) = self.fetches.try_join_next_with_id() {
                self.fetched(done);
                dirty = true;
            }
            if let Some(list) = watch.try_next() {
                self.instances = list;
                self.request_missing(false);
                dirty = true;
            }
            if dirty {
                self.rebuild();
            }
        }
        self.fetches.abort_all();
    }

    /// Records a finished fetch.
    fn fetched(&mut self, done: Result<(tokio::task::Id, Fetched), tokio::task::JoinError>) {
        let (rev, r) = match done {
            Ok((id, v)) => {
                self.fetch_ids.remove(&id);
                v
            }
            Err(e) => {
                // A fetch does not panic; should one end abnormally, its revision counts as
                // failed and is asked again by the retry.
                let Some(rev) = self.fetch_ids.remove(&e.id()) else {
                    return;
                };
                tracing::warn!(app = %self.app, revision = %rev, error = %e, "a metadata fetch task ended abnormally");
                (rev, Err(Error::Destroyed))
            }
        };
        if let Some(slot) = self.meta.get_mut(&rev) {
            *slot = match r {
                Ok(m) => Rev::Ready(m),
                Err(e) => {
                    tracing::warn!(app = %self.app, revision = %rev, error = %e,
                        "revision unresolved; its new instances wait, retried every {:?}", self.options.retry_interval);
                    Rev::Failed(e)
                }
            };
        }
    }

    /// The enabled instances with a usable revision, grouped by revision.
    fn by_revision(&self) -> BTreeMap<Arc<str>, Vec<ServiceInstance>> {
        let mut out: BTreeMap<Arc<str>, Vec<ServiceInstance>> = BTreeMap::new();
        for i in self.instances.iter().filter(|i| i.is_enabled()) {
            if let Some(r) = i.revision() {
                match out.get_mut(r) {
                    Some(v) => v.push(i.clone()),
                    None => {
                        out.insert(Arc::from(r), vec![i.clone()]);
                    }
                }
            }
        }
        out
    }

    /// Starts fetches for revisions never asked (and, with `failed`, those that failed).
    /// Returns true when something started.
    fn request_missing(&mut self, failed: bool) -> bool {
        let groups = self.by_revision();
        // Forget revisions nobody uses any more (a late answer is then ignored).
        let used: HashSet<&str> = groups.keys().map(|r| &**r).collect();
        self.meta
            .retain(|r, s| used.contains(&**r) || matches!(s, Rev::Pending));
        let mut started = false;
        for (rev, insts) in groups {
            let ask = match self.meta.get(&rev) {
                None => true,
                Some(Rev::Failed(_)) => failed,
                Some(_) => false,
            };
            if !ask {
                continue;
            }
            self.meta.insert(rev.clone(), Rev::Pending);
            let resolver = self.resolver.clone();
            let app = self.app.clone();
            let key = rev.clone();
            let h = self.fetches.spawn(async move {
                let r = resolver.resolve(&app, &rev, insts).await;
                (rev, r)
            });
            self.fetch_ids.insert(h.id(), key);
            started = true;
        }
        started
    }

    fn rebuild(&mut self) {
        self.pass += 1;
        let pass = self.pass;
        let groups = self.by_revision();
        // Which MetadataInfo each instance uses.
        let mut views: BTreeMap<Arc<str>, (Arc<MetadataInfo>, Users)> = BTreeMap::new();
        let mut unresolved: Vec<Unresolved> = Vec::new();
        let mut pending = 0usize;
        let mut failed = 0usize;
        let mut seen_addrs: HashSet<String> = HashSet::new();
        let mut ahead: Vec<Url> = Vec::new();
        let mut count = 0usize;
        for (rev, insts) in &groups {
            count += insts.len();
            match self.meta.get(rev) {
                Some(Rev::Ready(m)) => {
                    let e = views
                        .entry(rev.clone())
                        .or_insert_with(|| (m.clone(), Users::default()));
                    for i in insts {
                        let a = i.address();
                        self.last_good.insert(a.clone(), (rev.clone(), m.clone()));
                        seen_addrs.insert(a);
                        e.1.instances.push(i.clone());
                    }
                }
                state => {
                    let error = match state {
                        Some(Rev::Failed(e)) => {
                            failed += 1;
                            Some(e.clone())
                        }
                        _ => {
                            pending += 1;
                            None
                        }
                    };
                    let mut addrs = Vec::with_capacity(insts.len());
                    for i in insts {
                        let a = i.address();
                        if let Some((old_rev, old_m)) = self.last_good.get(&a) {
                            let e = views
                                .entry(old_rev.clone())
                                .or_insert_with(|| (old_m.clone(), Users::default()));
                            e.1.instances.push(i.clone());
                            e.1.stale.push(a.clone());
                        } else if error.is_none() && self.published {
                            ahead.extend(endpoint_urls(i));
                        }
                        seen_addrs.insert(a.clone());
                        addrs.push(a);
                    }
                    unresolved.push(Unresolved {
                        revision: rev.clone(),
                        instances: addrs,
                        error,
                    });
                }
            }
        }
        self.last_good.retain(|a, _| seen_addrs.contains(a));
        let settled = pending == 0;
        let mut revisions = Vec::with_capacity(views.len());
        let mut total = 0usize;
        // The previous lists by ServiceInfo (an `Arc` of one MetadataInfo, so of one revision):
        // an unchanged list keeps its allocation.
        let prev = self.snapshot.load_full();
        let previous: FxHashMap<usize, &Arc<[Url]>> = prev
            .revisions
            .iter()
            .flat_map(|r| r.services.iter())
            .map(|s| (Arc::as_ptr(&s.info) as usize, &s.urls))
            .collect();
        for (rev, (m, users)) in views {
            let Users {
                instances: mut insts,
                stale,
            } = users;
            insts.sort_by(|a, b| a.host().cmp(b.host()).then(a.port().cmp(&b.port())));
            let services: Vec<Arc<ServiceInfo>> = m.services.values().cloned().collect();
            let mut per: Vec<Vec<Url>> = vec![Vec::with_capacity(insts.len()); services.len()];
            // dubbo-go registers one instance per protocol, all announcing the same endpoints,
            // so each makes the same URLs: a URL sent to another port (`dubbo.endpoints`) that is
            // the address of another instance of this revision is that instance's own URL.
            // Java keeps one invoker per (service, address); so do we.
            let addresses: FxHashSet<(&str, i32)> = if insts.len() > 1 {
                insts.iter().map(|i| (i.host(), i.port())).collect()
            } else {
                FxHashSet::default()
            };
            for i in &insts {
                let mut iu = self.urls.instance(i, pass);
                for (k, s) in services.iter().enumerate() {
                    let u = iu.url(s);
                    if u.port() != i.port() && addresses.contains(&(i.host(), u.port())) {
                        continue;
                    }
                    per[k].push(u);
                }
            }
            total += per.iter().map(Vec::len).sum::<usize>();
            let services = services
                .into_iter()
                .zip(per)
                .map(|(info, urls)| {
                    let urls: Arc<[Url]> = match previous.get(&(Arc::as_ptr(&info) as usize)) {
                        Some(old)
                            if old.len() == urls.len()
                                && old.iter().zip(&urls).all(|(a, b)| Url::ptr_eq(a, b)) =>
                        {
                            (*old).clone()
                        }
                        _ => urls.into(),
                    };
                    ServiceUrls { info, urls }
                })
                .collect();
            revisions.push(RevisionView {
                revision: rev,
                metadata: m,
                instances: insts,
                stale,
                services,
            });
        }
        drop(previous);
        self.urls.retain_pass(pass);
        let mut by_interface: FxHashMap<Arc<str>, Vec<ServiceUrls>> = FxHashMap::default();
        for r in &revisions {
            for su in &r.services {
                match by_interface.get_mut(su.info.name.as_str()) {
                    Some(v) => v.push(su.clone()),
                    None => {
                        by_interface.insert(Arc::from(su.info.name.as_str()), vec![su.clone()]);
                    }
                }
            }
        }
        let skipped = self.instances.len() - count;
        let was_settled = self.snapshot.load().settled;
        let publish = if !self.published {
            settled && !(total == 0 && failed > 0)
        } else {
            !(total == 0 && (pending > 0 || failed > 0))
        };
        if publish {
            self.generation += 1;
            self.published = true;
        }
        ahead.sort_by(|a, b| {
            (a.protocol(), a.host(), a.port()).cmp(&(b.protocol(), b.host(), b.port()))
        });
        ahead.dedup();
        let cur = self.snapshot.load_full();
        let ahead_moved = *ahead != *cur.ahead;
        let ahead: Arc<[Url]> = if ahead_moved {
            ahead.into()
        } else {
            cur.ahead.clone()
        };
        let snap = if publish {
            AppSnapshot {
                ready: true,
                settled: settled || cur.settled,
                generation: self.generation,
                instances: count,
                skipped,
                revisions,
                by_interface,
                unresolved,
                ahead,
            }
        } else {
            // Keep the published lists; only the bookkeeping moves on.
            AppSnapshot {
                settled: settled || cur.settled,
                unresolved,
                ahead,
                ..(*cur).clone()
            }
        };
        let now_settled = snap.settled;
        tracing::debug!(app = %self.app, instances = count, urls = total, pending, failed, published = publish, "application rebuilt");
        self.snapshot.store(Arc::new(snap));
        if publish || ahead_moved {
            let mut subs = self.subscribers.lock();
            subs.retain(|w| match w.upgrade() {
                Some(n) => {
                    n.notify_one();
                    true
                }
                None => false,
            });
        }
        if now_settled && !was_settled {
            self.settled.notify_waiters();
        }
    }
}

/// `protocol://host:port` of each `dubbo.endpoints` entry of `instance`.
fn endpoint_urls(instance: &ServiceInstance) -> impl Iterator<Item = Url> + '_ {
    crate::metadata_service::endpoints(instance)
        .into_iter()
        .filter(|e| e.port > 0 && !e.protocol.is_empty())
        .map(|e| {
            Url::builder(&e.protocol)
                .host(instance.host())
                .port(e.port)
                .build()
        })
}
