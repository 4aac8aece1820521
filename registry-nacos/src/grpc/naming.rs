//! Nacos naming over gRPC (Nacos's `NamingGrpcClientProxy` and
//! `NamingGrpcRedoService`): [`GrpcNaming`] registers and
//! deregisters instances, lists service names, queries a service, and is the push-fed
//! [`ChangeSource`] of the subscriptions.
//!
//! - **Registrations** are cached before the first request and redone (batched per service)
//!   after every reconnect. One instance of a service on the connection is an
//!   `InstanceRequest`; two or more are one `BatchInstanceRequest` with the full set (a Java
//!   server keeps one publisher per connection and service, as Dubbo 3.3 batches).
//!   Deregistering one of several sends `deregisterInstance` for it, then the remaining set
//!   (Java removes everything the connection published on deregister; rnacos batches are
//!   additive).
//! - **Persistent instances** (provider URL `ephemeral=false`) are not bound to the connection:
//!   a `PersistentInstanceRequest` when the server advertises `supportPersistentInstanceByGrpc`,
//!   else the v1 HTTP instance API, as nacos-client chooses; never redone after a reconnect.
//! - **Subscriptions**: one `SubscribeServiceRequest` per service name however many consumers
//!   watch it, seeded from its reply (rnacos sends no first push); every
//!   `NotifySubscriberRequest` and every re-subscribe reply is a full snapshot applied through
//!   the shared [`InstanceCache`] (identical snapshots publish nothing). When the last watcher
//!   goes, `subscribe=false` is sent. On disconnect nothing is cleared: the lists stay as they
//!   were until the server says otherwise.
//! - **After a reconnect** (the session moved to another server of a cluster, or the server
//!   came back), an empty instance list for a service that had providers — an interface's
//!   provider list or, at application level, an application's instances — is held for
//!   [`RECONNECT_EMPTY_GRACE`]: the providers' own sessions are re-registering on the new
//!   server at the same time, and a cluster drops a lost node's instances before they are
//!   back. A non-empty list in the meantime is applied at once; a service still empty when
//!   the grace ends is queried again and then applied, empty or not.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use parking_lot::Mutex;
use registry_core::Url;
use rustc_hash::FxHashMap;
use tokio::sync::watch;
use tracing::{debug, warn};

use super::fuzzy::{group_key_pattern, FuzzyNames};
use super::link::Link;
use super::session::{expect_type, Command, GrpcStats, Session, Shared};
use super::wire::{
    self, BatchInstanceRequest, Instance, InstanceRequest, NamingBase, QueryRequest,
    ServiceInfoHead, ServiceListRequest, ServiceListResponse, SubscribeRequest, WithServiceInfo,
};
use crate::client::{InstanceSpec, NacosClient, DEFAULT_CLUSTER};
use crate::config::NacosConfig;
use crate::convert::InstanceCache;
use crate::error::NacosError;
use crate::source::{ChangeSource, ServiceSnapshot};

/// Page size of `ServiceListRequest` scans.
const LIST_PAGE: u32 = 500;

/// How long an empty list is held after a reconnect (see the module docs).
pub(crate) const RECONNECT_EMPTY_GRACE: std::time::Duration = std::time::Duration::from_secs(5);

#[derive(Debug)]
struct Registration {
    instances: Vec<InstanceSpec>,
    /// Generation of the link it was last sent on successfully (0: pending).
    done: u64,
}

#[derive(Debug)]
struct Subscribed {
    tx: Arc<watch::Sender<ServiceSnapshot>>,
    cache: InstanceCache,
    /// Generation of the link it is subscribed on (0: pending).
    done: u64,
    /// An empty list arrived during the reconnect grace and was not published.
    held: bool,
}

/// Naming state of a session (owned by [`Shared`]).
#[derive(Debug, Default)]
pub(crate) struct NamingState {
    regs: Mutex<FxHashMap<String, Registration>>,
    /// Serialises registration sends so two full sets of one service never cross.
    reg_lock: tokio::sync::Mutex<()>,
    subs: Mutex<FxHashMap<String, Subscribed>>,
    /// Persistent instances registered (service, ip, port): not bound to the connection, so
    /// never redone; deregistered on shutdown.
    persistent: Mutex<FxHashMap<(String, String, i32), InstanceSpec>>,
    /// Until when empty lists are held after a reconnect (see the module docs).
    hold_empty_until: Mutex<Option<std::time::Instant>>,
}

fn instance<'a>(i: &'a InstanceSpec) -> Instance<'a> {
    Instance {
        ip: &i.ip,
        port: i.port,
        weight: 1.0,
        healthy: true,
        enabled: true,
        ephemeral: i.ephemeral,
        cluster_name: DEFAULT_CLUSTER,
        metadata: &i.metadata,
    }
}

impl NamingState {
    /// Sends the registration set of `service` (one instance, or a batch).
    async fn send_set(
        shared: &Shared,
        link: &Link,
        service: &str,
        set: &[InstanceSpec],
    ) -> Result<(), NacosError> {
        let cfg = &shared.cfg;
        let base = NamingBase::new(&cfg.namespace, service, &cfg.group);
        match set {
            [] => Ok(()),
            [one] => {
                let body = InstanceRequest {
                    base,
                    op: "registerInstance",
                    instance: instance(one),
                };
                shared
                    .request_on(link, "register", "InstanceRequest", &body)
                    .await
                    .map(drop)
            }
            many => {
                let body = BatchInstanceRequest {
                    base,
                    op: "batchRegisterInstance",
                    instances: many.iter().map(instance).collect(),
                };
                shared
                    .request_on(link, "batch register", "BatchInstanceRequest", &body)
                    .await
                    .map(drop)
            }
        }
    }

    /// Registrations and subscriptions not done on `link` yet: send them.
    pub(crate) async fn redo(&self, shared: &Shared, link: &Link) {
        let g = link.generation;
        {
            let _order = self.reg_lock.lock().await;
            let pending: Vec<(String, Vec<InstanceSpec>)> = self
                .regs
                .lock()
                .iter()
                .filter(|(_, r)| r.done != g)
                .map(|(s, r)| (s.clone(), r.instances.clone()))
                .collect();
            for (service, set) in pending {
                match Self::send_set(shared, link, &service, &set).await {
                    Ok(()) => {
                        if let Some(r) = self.regs.lock().get_mut(&service) {
                            r.done = g;
                        }
                        debug!(service = %service, instances = set.len(), "nacos registration redone");
                    }
                    Err(e) => {
                        warn!(service = %service, error = %e, "nacos re-registration failed; retrying in 3 s")
                    }
                }
            }
        }
        let subs: Vec<String> = self
            .subs
            .lock()
            .iter()
            .filter(|(_, s)| s.done != g)
            .map(|(k, _)| k.clone())
            .collect();
        for s in subs {
            self.subscribe_one(shared, link, &s).await;
        }
    }

    /// A connection after the first one is up: hold empty lists for a while.
    pub(crate) fn on_reconnect(&self) {
        *self.hold_empty_until.lock() = Some(std::time::Instant::now() + RECONNECT_EMPTY_GRACE);
    }

    /// When the reconnect grace is over: queries every service whose empty list was held
    /// and publishes what the server says now (empty or not).
    pub(crate) async fn release_held(&self, shared: &Shared, link: &Link) {
        {
            let mut until = self.hold_empty_until.lock();
            match *until {
                Some(t) if t > std::time::Instant::now() => return,
                Some(_) => *until = None,
                None => return,
            }
        }
        let held: Vec<String> = self
            .subs
            .lock()
            .iter()
            .filter(|(_, s)| s.held)
            .map(|(k, _)| k.clone())
            .collect();
        for service in held {
            let fresh = query_raw(shared, Some(link), &service).await;
            let mut subs = self.subs.lock();
            let Some(s) = subs.get_mut(&service) else {
                continue;
            };
            if !s.held {
                continue;
            }
            s.held = false;
            if let Ok(json) = &fresh {
                if let Some(WithServiceInfo {
                    service_info: Some(info),
                    ..
                }) = std::str::from_utf8(json)
                    .ok()
                    .and_then(|t| serde_json::from_str::<WithServiceInfo<'_>>(t).ok())
                {
                    let _ = s.cache.apply(&service, info.get());
                }
            }
            debug!(service = %service, empty = s.cache.lists_nothing(), "nacos reconnect grace over; publishing the current list");
            let cache = &s.cache;
            s.tx.send_if_modified(|snap| snap.take_from(cache, true));
        }
    }

    /// Marks everything for redo (the server forgets a closed connection's state).
    pub(crate) fn on_disconnect(&self) {
        for r in self.regs.lock().values_mut() {
            r.done = 0;
        }
        for s in self.subs.lock().values_mut() {
            s.done = 0;
        }
    }

    /// Subscribes `service` on `link` and applies the reply's snapshot, unless it is already
    /// subscribed there (the redo after a connect may have done it before the command that
    /// asked for it was read).
    pub(crate) async fn subscribe_one(&self, shared: &Shared, link: &Link, service: &str) {
        if self
            .subs
            .lock()
            .get(service)
            .is_none_or(|s| s.done == link.generation)
        {
            return;
        }
        let cfg = &shared.cfg;
        let body = SubscribeRequest {
            base: NamingBase::new(&cfg.namespace, service, &cfg.group),
            subscribe: true,
            clusters: "",
        };
        shared
            .stats
            .instance_requests
            .fetch_add(1, Ordering::Relaxed);
        let r = shared
            .request_on(link, "subscribe", "SubscribeServiceRequest", &body)
            .await
            .and_then(|r| expect_type(&link.server, "subscribe", r, "SubscribeServiceResponse"));
        match r.and_then(|r| self.apply_reply(&link.server, "subscribe", service, &r.json)) {
            Ok(()) => {
                if let Some(s) = self.subs.lock().get_mut(service) {
                    s.done = link.generation;
                }
            }
            Err(e) => {
                warn!(service = %service, error = %e, "nacos subscribe failed; keeping the last list and retrying in 3 s");
                self.set_error(service, e);
            }
        }
    }

    /// Opt-in periodic `ServiceQueryRequest` of every subscribed service.
    pub(crate) async fn query_all(&self, shared: &Shared, link: &Link) {
        let names: Vec<String> = self.subs.lock().keys().cloned().collect();
        for service in names {
            match query_raw(shared, Some(link), &service).await {
                Ok(json) => {
                    if let Err(e) = self.apply_reply(&link.server, "query", &service, &json) {
                        debug!(service = %service, error = %e, "nacos service query unusable");
                    }
                }
                Err(e) => debug!(service = %service, error = %e, "nacos service query failed"),
            }
        }
    }

    /// Drops services nobody watches any more and unsubscribes them.
    pub(crate) async fn sweep(&self, shared: &Shared, link: &Link) {
        let gone: Vec<(String, bool)> = {
            let mut subs = self.subs.lock();
            let names: Vec<String> = subs
                .iter()
                .filter(|(_, s)| s.tx.receiver_count() == 0)
                .map(|(k, _)| k.clone())
                .collect();
            names
                .into_iter()
                .filter_map(|n| subs.remove(&n).map(|s| (n, s.done == link.generation)))
                .collect()
        };
        for (service, subscribed) in gone {
            if !subscribed {
                continue;
            }
            let cfg = &shared.cfg;
            let body = SubscribeRequest {
                base: NamingBase::new(&cfg.namespace, &service, &cfg.group),
                subscribe: false,
                clusters: "",
            };
            if let Err(e) = shared
                .request_on(link, "unsubscribe", "SubscribeServiceRequest", &body)
                .await
            {
                debug!(service = %service, error = %e, "nacos unsubscribe failed");
            }
        }
    }

    /// A `NotifySubscriberRequest`: applies its snapshot to the service it names.
    pub(crate) fn on_push(&self, group: &str, json: &[u8]) {
        let parsed = std::str::from_utf8(json)
            .map_err(|e| e.to_string())
            .and_then(|s| {
                serde_json::from_str::<WithServiceInfo<'_>>(s).map_err(|e| e.to_string())
            });
        let info = match parsed {
            Ok(WithServiceInfo {
                service_info: Some(i),
                ..
            }) => i,
            Ok(_) => {
                warn!("nacos push without serviceInfo; ignored");
                return;
            }
            Err(e) => {
                warn!(error = %e, "nacos push is not valid JSON; ignored (lists kept)");
                return;
            }
        };
        let head: ServiceInfoHead<'_> = serde_json::from_str(info.get()).unwrap_or_default();
        let Some(name) = head.name.as_deref() else {
            warn!("nacos push without a service name; ignored");
            return;
        };
        let (prefix, name) = wire::split_grouped(name);
        let push_group = head.group_name.as_deref().or(prefix);
        if push_group.is_some_and(|g| g != group) {
            debug!(group = ?push_group, service = %name, "nacos push for another group; ignored");
            return;
        }
        if let Err(e) = self.apply_info(name, info.get()) {
            warn!(service = %name, error = %e, "nacos push has an unusable instance list; ignored (list kept)");
        }
    }

    /// Applies the `serviceInfo` of a reply to `service`.
    fn apply_reply(
        &self,
        server: &str,
        op: &'static str,
        service: &str,
        json: &[u8],
    ) -> Result<(), NacosError> {
        let malformed = |reason: String| NacosError::Malformed {
            server: server.to_owned(),
            op,
            reason,
        };
        let text = std::str::from_utf8(json).map_err(|e| malformed(e.to_string()))?;
        let r: WithServiceInfo<'_> =
            serde_json::from_str(text).map_err(|e| malformed(e.to_string()))?;
        let info = r
            .service_info
            .ok_or_else(|| malformed("no serviceInfo".into()))?;
        self.apply_info(service, info.get())
            .map_err(|e| malformed(e.to_string()))
    }

    fn apply_info(&self, service: &str, info: &str) -> Result<(), serde_json::Error> {
        let mut subs = self.subs.lock();
        let Some(s) = subs.get_mut(service) else {
            return Ok(());
        };
        let changed = s.cache.apply(service, info)?;
        // Both levels: a provider list (interface level) and an application's instances.
        let empty = s.cache.lists_nothing();
        if !empty {
            s.held = false;
        } else if changed
            && self
                .hold_empty_until
                .lock()
                .is_some_and(|t| t > std::time::Instant::now())
            && s.tx.borrow().lists_something()
        {
            debug!(service = %service, "nacos: empty list right after a reconnect; held for the grace period");
            s.held = true;
            return Ok(());
        }
        let cache = &s.cache;
        s.tx.send_if_modified(|snap| snap.take_from(cache, changed));
        Ok(())
    }

    fn set_error(&self, service: &str, e: NacosError) {
        if let Some(s) = self.subs.lock().get(service) {
            s.tx.send_if_modified(|snap| {
                let changed = snap.error.as_ref() != Some(&e);
                snap.error = Some(e);
                changed
            });
        }
    }
}

/// A `ServiceQueryRequest`: the raw reply JSON.
async fn query_raw(
    shared: &Shared,
    link: Option<&Link>,
    service: &str,
) -> Result<Vec<u8>, NacosError> {
    let cfg = &shared.cfg;
    let body = QueryRequest {
        base: NamingBase::new(&cfg.namespace, service, &cfg.group),
        cluster: "",
        healthy_only: false,
        udp_port: 0,
    };
    shared
        .stats
        .instance_requests
        .fetch_add(1, Ordering::Relaxed);
    let r = match link {
        Some(l) => {
            let r = shared
                .request_on(l, "query", "ServiceQueryRequest", &body)
                .await?;
            expect_type(&l.server, "query", r, "QueryServiceResponse")?
        }
        None => {
            shared
                .request_expect(
                    "query",
                    "ServiceQueryRequest",
                    &body,
                    "QueryServiceResponse",
                )
                .await?
        }
    };
    Ok(r.json)
}

/// Naming over one gRPC connection (see the module docs).
#[derive(Debug)]
pub struct GrpcNaming {
    session: Session,
}

impl GrpcNaming {
    /// Starts the session (connecting in the background); fails outside a tokio runtime.
    pub fn start(cfg: &NacosConfig, http: Arc<NacosClient>) -> Result<Self, NacosError> {
        Ok(GrpcNaming {
            session: Session::start(cfg, http, "naming")?,
        })
    }

    fn shared(&self) -> &Arc<Shared> {
        &self.session.shared
    }

    /// True while connected.
    pub fn is_connected(&self) -> bool {
        self.shared().is_connected()
    }

    /// The connection's health (see [`registry_core::health`]).
    pub fn health(&self) -> tokio::sync::watch::Receiver<registry_core::RegistryHealth> {
        self.shared().health.subscribe()
    }

    /// Request counters.
    pub fn stats(&self) -> &GrpcStats {
        &self.shared().stats
    }

    /// Registers `inst` (cached first, so a failure is redone after the next reconnect and
    /// retried by failback). A persistent instance (`ephemeral == false`) goes through
    /// a `PersistentInstanceRequest` or the v1 HTTP API instead (see the module docs).
    pub async fn register(&self, inst: &InstanceSpec) -> Result<(), NacosError> {
        if !inst.ephemeral {
            return self.persistent(inst, true).await;
        }
        let sh = self.shared();
        let _order = sh.naming.reg_lock.lock().await;
        let set = {
            let mut regs = sh.naming.regs.lock();
            let r = regs
                .entry(inst.service.clone())
                .or_insert_with(|| Registration {
                    instances: Vec::new(),
                    done: 0,
                });
            r.instances
                .retain(|i| !(i.ip == inst.ip && i.port == inst.port));
            r.instances.push(inst.clone());
            r.done = 0;
            r.instances.clone()
        };
        let link = sh.current_link("register").await?;
        NamingState::send_set(sh, &link, &inst.service, &set).await?;
        if let Some(r) = sh.naming.regs.lock().get_mut(&inst.service) {
            if sh.is_current(&link) {
                r.done = link.generation;
            }
        }
        Ok(())
    }

    /// A persistent instance, registered or deregistered as nacos-client does it: a
    /// `PersistentInstanceRequest` when the server advertises `supportPersistentInstanceByGrpc`
    /// (Java 2.3+), else the v1 HTTP instance API (rnacos, older servers). The server keeps
    /// it whatever happens to the connection, so nothing is redone after a reconnect.
    async fn persistent(&self, inst: &InstanceSpec, register: bool) -> Result<(), NacosError> {
        let sh = self.shared();
        let key = (inst.service.clone(), inst.ip.clone(), inst.port);
        if register {
            sh.naming.persistent.lock().insert(key, inst.clone());
        } else {
            sh.naming.persistent.lock().remove(&key);
        }
        let op = if register { "register" } else { "deregister" };
        let link = sh.current_link(op).await?;
        if link.abilities.persistent_instance {
            let cfg = &sh.cfg;
            let body = InstanceRequest {
                base: NamingBase::new(&cfg.namespace, &inst.service, &cfg.group),
                op: if register {
                    "registerInstance"
                } else {
                    "deregisterInstance"
                },
                instance: instance(inst),
            };
            let r = sh
                .request_on(&link, op, "PersistentInstanceRequest", &body)
                .await?;
            expect_type(&link.server, op, r, "InstanceResponse").map(drop)
        } else {
            debug!(service = %inst.service, "nacos server cannot handle persistent instances over grpc; using the v1 HTTP API");
            let r = if register {
                sh.http.register_instance(inst).await
            } else {
                sh.http
                    .deregister_instance(&inst.service, &inst.ip, inst.port, false)
                    .await
            };
            if let Err(e) = &r {
                warn!(service = %inst.service, server = %link.server, error = %e,
                    "a persistent instance (ephemeral=false) needs the server's v1 HTTP API, because it does not advertise supportPersistentInstanceByGrpc");
            }
            r
        }
    }

    /// Deregisters `inst` (then re-sends the remaining instances of its service, if any).
    pub async fn deregister(&self, inst: &InstanceSpec) -> Result<(), NacosError> {
        if !inst.ephemeral {
            return self.persistent(inst, false).await;
        }
        let sh = self.shared();
        let _order = sh.naming.reg_lock.lock().await;
        let remaining = {
            let mut regs = sh.naming.regs.lock();
            let rest = regs.get_mut(&inst.service).map(|r| {
                r.instances
                    .retain(|i| !(i.ip == inst.ip && i.port == inst.port));
                r.instances.clone()
            });
            if rest.as_ref().is_some_and(Vec::is_empty) {
                regs.remove(&inst.service);
            }
            rest.unwrap_or_default()
        };
        let cfg = &sh.cfg;
        let body = InstanceRequest {
            base: NamingBase::new(&cfg.namespace, &inst.service, &cfg.group),
            op: "deregisterInstance",
            instance: instance(inst),
        };
        let link = sh.current_link("deregister").await?;
        sh.request_on(&link, "deregister", "InstanceRequest", &body)
            .await?;
        NamingState::send_set(sh, &link, &inst.service, &remaining).await
    }

    /// Deregisters everything (best effort), then closes the connection (which removes
    /// whatever is left on the server).
    pub async fn shutdown(&self) {
        self.deregister_all().await;
        self.shared().cancel.cancel();
    }

    /// Deregisters everything (best effort; closing the connection removes it anyway).
    pub async fn deregister_all(&self) {
        let naming = &self.shared().naming;
        let mut all: Vec<InstanceSpec> = naming
            .regs
            .lock()
            .values()
            .flat_map(|r| r.instances.clone())
            .collect();
        all.extend(naming.persistent.lock().values().cloned());
        for inst in all {
            if let Err(e) = self.deregister(&inst).await {
                debug!(service = %inst.service, error = %e, "nacos deregistration on destroy failed; closing the connection removes it");
            }
        }
    }

    /// Every service name of the group (`ServiceListRequest`, paged).
    pub async fn list_services(&self) -> Result<Vec<String>, NacosError> {
        let sh = self.shared();
        let cfg = &sh.cfg;
        let mut out = Vec::new();
        for page in 1u32.. {
            let body = ServiceListRequest {
                base: NamingBase::new(&cfg.namespace, "", &cfg.group),
                page_no: page,
                page_size: LIST_PAGE,
                selector: "",
            };
            let r = sh
                .request_expect(
                    "service list",
                    "ServiceListRequest",
                    &body,
                    "ServiceListResponse",
                )
                .await?;
            let list: ServiceListResponse =
                serde_json::from_slice(&r.json).map_err(|e| NacosError::Malformed {
                    server: cfg.servers.join(","),
                    op: "service list",
                    reason: e.to_string(),
                })?;
            let got = list.service_names.len();
            out.extend(list.service_names);
            if got == 0 || out.len() >= list.count || got < LIST_PAGE as usize {
                break;
            }
        }
        Ok(out)
    }

    /// One `ServiceList` request for one name: checks that the server answers and accepts
    /// the credentials and namespace.
    pub async fn probe(&self) -> Result<(), NacosError> {
        let cfg = &self.shared().cfg;
        let body = ServiceListRequest {
            base: NamingBase::new(&cfg.namespace, "", &cfg.group),
            page_no: 1,
            page_size: 1,
            selector: "",
        };
        self.shared()
            .request_expect(
                "service list",
                "ServiceListRequest",
                &body,
                "ServiceListResponse",
            )
            .await
            .map(drop)
    }

    /// The enabled instances of `service` as provider URLs (`ServiceQueryRequest`).
    pub async fn query(&self, service: &str) -> Result<Option<Arc<[Url]>>, NacosError> {
        let json = query_raw(self.shared(), None, service).await?;
        let text = std::str::from_utf8(&json).map_err(|e| self.malformed(e.to_string()))?;
        let r: WithServiceInfo<'_> =
            serde_json::from_str(text).map_err(|e| self.malformed(e.to_string()))?;
        let Some(info) = r.service_info else {
            return Err(self.malformed("no serviceInfo".into()));
        };
        let mut cache = InstanceCache::new();
        cache
            .apply(service, info.get())
            .map_err(|e| self.malformed(e.to_string()))?;
        Ok(cache.urls().cloned())
    }

    fn malformed(&self, reason: String) -> NacosError {
        NacosError::Malformed {
            server: self.shared().cfg.servers.join(","),
            op: "query",
            reason,
        }
    }

    /// The [`ChangeSource`] of this connection's subscriptions.
    pub fn source(&self) -> Arc<dyn ChangeSource> {
        Arc::new(GrpcSource {
            shared: self.shared().clone(),
        })
    }

    /// Fuzzy-watches the service names of the group matching `service_pattern` (`*`,
    /// `prefix*`, ...): `None` when the server cannot (no `fuzzyWatch` ability: rnacos, Java
    /// 2.x), then callers scan the service list instead. Waits for a connection up to the
    /// request timeout.
    pub async fn fuzzy_watch(
        &self,
        service_pattern: &str,
    ) -> Result<Option<watch::Receiver<FuzzyNames>>, NacosError> {
        let sh = self.shared();
        let link = sh.current_link("fuzzy watch").await?;
        if !link.abilities.fuzzy_watch {
            return Ok(None);
        }
        let pattern = group_key_pattern(&sh.cfg.namespace, &sh.cfg.group, service_pattern);
        let (rx, new) = sh.fuzzy.watch(&pattern);
        if new {
            sh.command(Command::FuzzyWatch(pattern));
        }
        Ok(Some(rx))
    }

    /// Number of services subscribed on the connection.
    pub fn subscribed_services(&self) -> usize {
        self.shared().naming.subs.lock().len()
    }
}

/// The push-fed [`ChangeSource`].
#[derive(Debug)]
struct GrpcSource {
    shared: Arc<Shared>,
}

impl ChangeSource for GrpcSource {
    fn watch(&self, service: &str) -> watch::Receiver<ServiceSnapshot> {
        self.watch_mode(service, false)
    }

    fn watch_instances(&self, service: &str) -> watch::Receiver<ServiceSnapshot> {
        self.watch_mode(service, true)
    }
}

impl GrpcSource {
    fn watch_mode(&self, service: &str, instances: bool) -> watch::Receiver<ServiceSnapshot> {
        let mut subs = self.shared.naming.subs.lock();
        if let Some(s) = subs.get(service) {
            if s.cache.is_instances_mode() != instances {
                warn!(service = %service, "nacos service watched both as an application and as an interface-level name; the second watch sees the first one's form");
            }
            return s.tx.subscribe();
        }
        let (tx, rx) = watch::channel(ServiceSnapshot::default());
        subs.insert(
            service.to_owned(),
            Subscribed {
                tx: Arc::new(tx),
                cache: if instances {
                    InstanceCache::for_instances()
                } else {
                    InstanceCache::new()
                },
                done: 0,
                held: false,
            },
        );
        drop(subs);
        self.shared.command(Command::Subscribe(service.to_owned()));
        rx
    }
}
