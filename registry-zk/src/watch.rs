//! Watch tasks: one per watched category path (persistent recursive watch, incremental apply)
//! and one per interface-`*` subscription (the root's service names).

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use futures::FutureExt;
use registry_core::codec::decode;
use registry_core::Url;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;
use zookeeper_client::{
    AddWatchMode, Client, CreateMode, EventType, PersistentWatcher, WatchedEvent,
};

use crate::aggregate::Aggregate;
use crate::children::ChildSet;
use crate::error::{Result, ZkError};
use crate::paths::{self, direct_child, last_segment};
use crate::session::{ConnState, Shared};

/// Delay before retrying a failed (re)sync while connected.
const RETRY: Duration = Duration::from_millis(500);

/// Where a task stops: the backend is destroyed or the subscription dropped.
#[derive(Clone, Debug)]
pub(crate) struct Stop {
    pub backend: CancellationToken,
    pub subscription: CancellationToken,
}

impl Stop {
    async fn stopped(&self) {
        tokio::select! {
            _ = self.backend.cancelled() => {}
            _ = self.subscription.cancelled() => {}
        }
    }

    fn is_stopped(&self) -> bool {
        self.backend.is_cancelled() || self.subscription.is_cancelled()
    }
}

/// The next event of `w`; pending forever without a watcher.
///
/// zookeeper-client panics when a persistent watcher is polled after its session ended; that
/// only happens after a terminal session event (which drops the watcher here), but a panic is
/// turned into a synthetic `Closed` event anyway so the task survives and re-syncs.
async fn next_event(w: &mut Option<PersistentWatcher>) -> WatchedEvent {
    match w {
        Some(w) => guarded(w.changed()).await,
        None => std::future::pending().await,
    }
}

async fn guarded(f: impl std::future::Future<Output = WatchedEvent>) -> WatchedEvent {
    match std::panic::AssertUnwindSafe(f).catch_unwind().await {
        Ok(ev) => ev,
        Err(_) => closed_event(),
    }
}

fn closed_event() -> WatchedEvent {
    let mut ev = WatchedEvent::new(EventType::NodeDataChanged, "");
    ev.event_type = EventType::Session;
    ev.session_state = zookeeper_client::SessionState::Closed;
    ev
}

/// One watched category path.
#[derive(Debug)]
pub(crate) struct PathWatch {
    path: String,
    category: String,
    set: ChildSet,
    watcher: Option<PersistentWatcher>,
    /// Connection epoch of the last successful sync.
    epoch: u64,
}

impl PathWatch {
    pub(crate) fn new(path: String, consumer: Url) -> PathWatch {
        let category = last_segment(&path).to_owned();
        let set = ChildSet::new(&path, consumer);
        PathWatch {
            path,
            category,
            set,
            watcher: None,
            epoch: 0,
        }
    }

    /// Ensures the directory, (re-)adds the persistent recursive watch **before** listing,
    /// re-lists with a plain getChildren (ZOOKEEPER-4466) and applies the events that arrived
    /// meanwhile. Returns whether the visible list changed.
    pub(crate) async fn sync(&mut self, shared: &Shared, conn: &ConnState) -> Result<bool> {
        let client = connected(shared, conn)?;
        let w = dir_and_watch(
            client,
            shared,
            &self.path,
            AddWatchMode::PersistentRecursive,
        )
        .await?;
        // The new watcher is registered before the old one is dropped, so the client keeps the
        // server-side watch.
        self.watcher = Some(w);
        let children = match client.list_children(&self.path).await {
            Ok(c) => c,
            Err(zookeeper_client::Error::NoNode) => Vec::new(),
            Err(e) => return Err(ZkError::op("list", &self.path, e)),
        };
        let mut changed = self.set.replace_all(children);
        changed |= self.drain();
        self.epoch = conn.epoch;
        Ok(changed)
    }

    /// Applies one event; true when the visible list changed.
    fn apply(&mut self, ev: WatchedEvent) -> bool {
        match ev.event_type {
            EventType::Session => {
                if ev.session_state.is_terminated() {
                    // The watcher yields nothing after a terminal state.
                    self.watcher = None;
                }
                false
            }
            EventType::NodeCreated => match direct_child(&self.path, &ev.path) {
                Some(c) => self.set.insert(c),
                None => false,
            },
            EventType::NodeDeleted => {
                if ev.path == self.path {
                    self.set.clear()
                } else {
                    match direct_child(&self.path, &ev.path) {
                        Some(c) => self.set.remove(c),
                        None => false,
                    }
                }
            }
            _ => false,
        }
    }

    /// Applies every event already queued (bursts coalesce into one publish).
    fn drain(&mut self) -> bool {
        let mut changed = false;
        while let Some(w) = self.watcher.as_mut() {
            match guarded(w.changed()).now_or_never() {
                Some(ev) => changed |= self.apply(ev),
                None => break,
            }
        }
        changed
    }

    fn publish(&mut self, agg: &Aggregate) {
        agg.update(&self.category, &self.path, self.set.list());
    }

    /// Stores the current list without checking for changes (initial sync).
    pub(crate) fn report(&mut self, agg: &Aggregate) {
        self.publish(agg);
    }

    /// Follows events and reconnects until stopped.
    pub(crate) async fn run(
        mut self,
        shared: Arc<Shared>,
        agg: Arc<Aggregate>,
        mut conn_rx: watch::Receiver<ConnState>,
        stop: Stop,
    ) {
        let mut retry_at: Option<tokio::time::Instant> = None;
        loop {
            let resync = tokio::select! {
                biased;
                _ = stop.stopped() => return,
                r = conn_rx.changed() => {
                    if r.is_err() {
                        return;
                    }
                    let st = conn_rx.borrow_and_update();
                    st.connected && st.epoch != self.epoch
                }
                ev = next_event(&mut self.watcher) => {
                    let mut changed = self.apply(ev);
                    changed |= self.drain();
                    if changed {
                        self.publish(&agg);
                    }
                    false
                }
                _ = sleep_until(retry_at) => {
                    retry_at = None;
                    true
                }
            };
            if !resync || stop.is_stopped() {
                continue;
            }
            let conn = conn_rx.borrow().clone();
            if !conn.connected {
                continue;
            }
            match self.sync(&shared, &conn).await {
                Ok(changed) => {
                    retry_at = None;
                    if changed {
                        self.publish(&agg);
                    }
                }
                Err(e) => {
                    tracing::warn!(path = %self.path, error = %e, "re-list failed; keeping the last list");
                    retry_at = Some(tokio::time::Instant::now() + RETRY);
                }
            }
        }
    }
}

async fn sleep_until(at: Option<tokio::time::Instant>) {
    match at {
        Some(t) => tokio::time::sleep_until(t).await,
        None => std::future::pending().await,
    }
}

fn not_connected(shared: &Shared) -> ZkError {
    ZkError::Disconnected {
        address: shared.cfg.connect_string.clone(),
    }
}

/// The consumer URL used for one service of an interface-`*` subscription.
pub(crate) fn service_consumer(any: &Url, service: &str) -> Url {
    let check = if any.param_bool("check", false) {
        "true"
    } else {
        "false"
    };
    any.with_path(service)
        .with_params([("interface", service), ("check", check)])
}

/// Syncs the category paths of one service for an interface-`*` subscription.
pub(crate) async fn sync_service(
    shared: &Shared,
    conn: &ConnState,
    agg: &Aggregate,
    service: &str,
) -> Result<Vec<PathWatch>> {
    let consumer = service_consumer(agg.consumer(), service);
    let mut out = Vec::new();
    for path in paths::categories_paths(&shared.cfg.root, &consumer) {
        let mut w = PathWatch::new(path, consumer.clone());
        w.sync(shared, conn).await?;
        w.report(agg);
        out.push(w);
    }
    Ok(out)
}

/// Watches the root of an interface-`*` subscription: each service name seen for the first
/// time gets its category paths watched.
#[derive(Debug)]
pub(crate) struct RootWatch {
    pub root: String,
    pub known: BTreeSet<String>,
    pub watcher: Option<PersistentWatcher>,
    pub epoch: u64,
}

impl RootWatch {
    /// Adds the (non-recursive) persistent watch on the root and lists the service names
    /// (URL-decoded) not seen before.
    pub(crate) async fn sync(&mut self, shared: &Shared, conn: &ConnState) -> Result<Vec<String>> {
        let client = connected(shared, conn)?;
        let w = dir_and_watch(client, shared, &self.root, AddWatchMode::Persistent).await?;
        self.watcher = Some(w);
        self.epoch = conn.epoch;
        self.relist(client).await
    }

    async fn relist(&mut self, client: &Client) -> Result<Vec<String>> {
        let children = match client.list_children(&self.root).await {
            Ok(c) => c,
            Err(zookeeper_client::Error::NoNode) => Vec::new(),
            Err(e) => return Err(ZkError::op("list", &self.root, e)),
        };
        let mut fresh = Vec::new();
        for raw in children {
            if self.root == "/" && raw == "zookeeper" {
                continue;
            }
            let name = match decode(&raw) {
                Ok(n) => n,
                Err(_) => {
                    tracing::warn!(child = %raw, "skipping malformed service name");
                    continue;
                }
            };
            if self.known.insert(name.clone()) {
                fresh.push(name);
            }
        }
        Ok(fresh)
    }

    /// Follows the root until stopped, starting a [`PathWatch`] task per new service.
    pub(crate) async fn run(
        mut self,
        shared: Arc<Shared>,
        agg: Arc<Aggregate>,
        mut conn_rx: watch::Receiver<ConnState>,
        stop: Stop,
    ) {
        let mut retry_at: Option<tokio::time::Instant> = None;
        loop {
            enum Next {
                Idle,
                Relist,
                Resync,
            }
            let next = tokio::select! {
                biased;
                _ = stop.stopped() => return,
                r = conn_rx.changed() => {
                    if r.is_err() {
                        return;
                    }
                    let st = conn_rx.borrow_and_update();
                    if st.connected && st.epoch != self.epoch { Next::Resync } else { Next::Idle }
                }
                ev = next_event(&mut self.watcher) => match ev.event_type {
                    EventType::Session => {
                        if ev.session_state.is_terminated() {
                            self.watcher = None;
                        }
                        Next::Idle
                    }
                    EventType::NodeChildrenChanged | EventType::NodeCreated => Next::Relist,
                    _ => Next::Idle,
                },
                _ = sleep_until(retry_at) => Next::Resync,
            };
            let conn = conn_rx.borrow().clone();
            let fresh = match next {
                Next::Idle => continue,
                Next::Resync => self.sync(&shared, &conn).await,
                Next::Relist => match conn.client.as_ref() {
                    Some(c) if conn.connected => self.relist(c).await,
                    _ => continue,
                },
            };
            let fresh = match fresh {
                Ok(f) => {
                    retry_at = None;
                    f
                }
                Err(e) => {
                    tracing::warn!(root = %self.root, error = %e, "root re-list failed");
                    retry_at = Some(tokio::time::Instant::now() + RETRY);
                    continue;
                }
            };
            for service in fresh {
                let consumer = service_consumer(agg.consumer(), &service);
                for path in paths::categories_paths(&shared.cfg.root, &consumer) {
                    let w = PathWatch::new(path, consumer.clone());
                    // epoch 0 never matches: the task syncs on its first connection change,
                    // so kick it by spawning with a receiver marked as changed.
                    let mut rx = conn_rx.clone();
                    rx.mark_changed();
                    tokio::spawn(w.run(shared.clone(), agg.clone(), rx, stop.clone()));
                }
            }
        }
    }
}

/// The live client of `conn`, or the "not connected" error.
fn connected<'a>(shared: &Shared, conn: &'a ConnState) -> Result<&'a Client> {
    match (&conn.client, conn.connected) {
        (Some(c), true) => Ok(c),
        _ => Err(not_connected(shared)),
    }
}

/// Ensures the persistent directory `path` exists (`/` always does; not with
/// `subscribe.create-paths=false`, which writes nothing), then adds a persistent watch of
/// `mode` on it: the step before every (re-)list.
async fn dir_and_watch(
    client: &Client,
    shared: &Shared,
    path: &str,
    mode: AddWatchMode,
) -> Result<PersistentWatcher> {
    if path != "/" && shared.cfg.create_paths {
        client
            .mkdir(path, &CreateMode::Persistent.with_acls(shared.acls()))
            .await
            .map_err(|e| ZkError::op("mkdir", path, e))?;
    }
    client
        .watch(path, mode)
        .await
        .map_err(|e| ZkError::op("watch", path, e))
}
