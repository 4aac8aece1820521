//! [`ZkServiceDiscovery`]: application-level instances in ZooKeeper, as Dubbo 3's
//! `ZookeeperServiceDiscovery` (Curator x-discovery) stores them, behind
//! [`registry_core::InstanceDiscovery`].
//!
//! Layout: `<root>/<app>/<host:port>` ephemeral nodes holding Curator JSON ([`crate::curator`]).
//! The root is the registry URL's `rootPath` (default `/services`); when that is the default,
//! the URL's `group` is used instead when present (`zookeeper://..?group=foo` → `/foo`), as
//! Java's `CuratorFrameworkUtils.getRootPath` does.
//!
//! Watching one application: a persistent **recursive** watch on `<root>/<app>`, added before
//! the children are listed and read, so both a new instance (`NodeCreated`) and a revision
//! change (`setData` → `NodeDataChanged`) are seen, and nothing between the two is lost. Events
//! of a burst are collected first and the changed nodes read concurrently, then one list is
//! published. On every reconnect the watch is added again (zookeeper-client 0.11.2 does not
//! re-send persistent watches) and everything re-read; a disconnect publishes nothing. A node
//! whose data cannot be parsed is skipped with a warning (its previous value, if any, stays).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use futures::stream::{FuturesUnordered, StreamExt};
use futures::FutureExt;
use registry_core::instance::{send_if_changed, sort_instances};
use registry_core::{InstanceDiscovery, InstanceList, InstanceWatch, ServiceInstance, Url};
use tokio::sync::watch;
use tokio_util::sync::{CancellationToken, DropGuard};
use zookeeper_client::{AddWatchMode, Client, EventType, PersistentWatcher, WatchedEvent};

use crate::config::ZkConfig;
use crate::curator;
use crate::error::ZkError;
use crate::paths::direct_child;
use crate::session::{self, ConnState, Registration, Shared};

/// Java's default root of application instances.
pub const DEFAULT_ROOT: &str = "/services";

/// Delay before retrying a failed (re)sync while connected.
const RETRY: Duration = Duration::from_millis(500);

/// Node reads in flight at once during a (re)sync.
const READ_CONCURRENCY: usize = 64;

/// Application-level instances in one ZooKeeper ensemble (its own session, dropped with it).
#[derive(Debug)]
pub struct ZkServiceDiscovery {
    url: Url,
    shared: Arc<Shared>,
    root: String,
    _stop: DropGuard,
}

/// The instance root of a registry URL (see the module docs).
pub fn instances_root(url: &Url) -> String {
    let root = url
        .param("rootPath")
        .filter(|r| !r.is_empty())
        .unwrap_or(DEFAULT_ROOT);
    let root = if root.eq_ignore_ascii_case(DEFAULT_ROOT) {
        url.param("group").filter(|g| !g.is_empty()).unwrap_or(root)
    } else {
        root
    };
    let trimmed = root.trim_end_matches('/');
    if trimmed.starts_with('/') {
        trimmed.to_owned()
    } else {
        format!("/{trimmed}")
    }
}

impl ZkServiceDiscovery {
    /// Connects to the ensemble of `url` (same parameters as the registry: `backup`,
    /// `timeout`, `session`, credentials, `check`; plus `rootPath`).
    ///
    /// Errors: a bad URL; with `check=true` (default) no session within `timeout`.
    /// Must be called within a Tokio runtime.
    pub async fn connect(url: &Url) -> Result<ZkServiceDiscovery, ZkError> {
        let cfg = ZkConfig::from_url(url)?;
        let (shared, stop) = session::start(cfg, "zookeeper service discovery").await?;
        Ok(ZkServiceDiscovery {
            url: url.clone(),
            shared,
            root: instances_root(url),
            _stop: stop,
        })
    }

    /// The instance root (`/services` by default).
    pub fn root(&self) -> &str {
        &self.root
    }

    /// `<root>/<app>`.
    pub fn app_path(&self, app: &str) -> String {
        format!("{}/{app}", self.root)
    }

    /// The current session's id and password, for tests that force an expiry.
    pub fn session_info(&self) -> Option<zookeeper_client::SessionInfo> {
        self.shared
            .conn
            .borrow()
            .client
            .as_ref()
            .map(|c| c.session().clone())
    }

    /// Number of (re)connects so far.
    pub fn connection_epoch(&self) -> u64 {
        self.shared.conn.borrow().epoch
    }
}

fn check_app(app: &str) -> Result<(), ZkError> {
    if app.is_empty() || app.contains('/') || app == "." || app == ".." {
        return Err(ZkError::InvalidUrl(format!(
            "invalid application name {app:?}"
        )));
    }
    Ok(())
}

#[async_trait]
impl InstanceDiscovery for ZkServiceDiscovery {
    fn url(&self) -> &Url {
        &self.url
    }

    async fn watch(&self, app: &str) -> registry_core::Result<InstanceWatch> {
        check_app(app)?;
        let conn = self.shared.conn.borrow().clone();
        self.shared.client()?;
        let stop = self.shared.cancel.child_token();
        let (tx, rx) = watch::channel(InstanceList::from(Vec::new()));
        let mut task = AppWatch {
            shared: self.shared.clone(),
            app: app.to_owned(),
            path: self.app_path(app),
            tx,
            nodes: BTreeMap::new(),
            watcher: None,
            epoch: 0,
            stop: stop.clone(),
        };
        // The first list is read before returning, as the contract asks.
        task.sync(&conn).await?;
        tokio::spawn(task.run());
        Ok(InstanceWatch::new(rx, Some(Box::new(stop.drop_guard()))))
    }

    /// The children of the root holding at least one `host:port` node (with a registry
    /// `group` the root is shared with interface-level services, the mapping and the metadata
    /// report, which are left out this way).
    async fn applications(&self) -> registry_core::Result<Vec<String>> {
        let client = self.shared.client()?;
        let mut names = match client.list_children(&self.root).await {
            Ok(c) => c,
            Err(zookeeper_client::Error::NoNode) => return Ok(Vec::new()),
            Err(e) => return Err(ZkError::op("list", &self.root, e).into()),
        };
        names.sort();
        let mut apps = Vec::with_capacity(names.len());
        for n in names {
            let path = self.app_path(&n);
            match client.list_children(&path).await {
                Ok(c) if c.iter().any(|c| c.contains(':')) => apps.push(n),
                Ok(_) | Err(zookeeper_client::Error::NoNode) => {}
                Err(e) => return Err(ZkError::op("list", &path, e).into()),
            }
        }
        Ok(apps)
    }

    async fn register(&self, instance: &ServiceInstance) -> registry_core::Result<()> {
        check_app(instance.app())?;
        let path = format!("{}/{}", self.app_path(instance.app()), instance.address());
        let reg = Registration {
            ephemeral: true,
            data: Arc::from(curator::to_json(instance)),
        };
        self.shared
            .registered
            .lock()
            .insert(path.clone(), reg.clone());
        session::create_node(&self.shared, &path, &reg)
            .await
            .map_err(Into::into)
    }

    async fn unregister(&self, instance: &ServiceInstance) -> registry_core::Result<()> {
        let path = format!("{}/{}", self.app_path(instance.app()), instance.address());
        self.shared.registered.lock().remove(&path);
        let client = self.shared.client()?;
        match client.delete(&path, None).await {
            Ok(()) | Err(zookeeper_client::Error::NoNode) => Ok(()),
            Err(e) => Err(ZkError::op("delete", &path, e).into()),
        }
    }
}

impl Drop for ZkServiceDiscovery {
    fn drop(&mut self) {
        self.shared.cancel.cancel();
    }
}

/// Follows one application until its watch or the discovery is dropped.
struct AppWatch {
    shared: Arc<Shared>,
    app: String,
    path: String,
    tx: watch::Sender<InstanceList>,
    /// Node name → its last parsed instance.
    nodes: BTreeMap<String, ServiceInstance>,
    watcher: Option<PersistentWatcher>,
    epoch: u64,
    stop: CancellationToken,
}

/// What the events of a burst ask for.
#[derive(Default)]
struct Dirty {
    /// Nodes to read again (created or changed).
    read: Vec<String>,
    /// Nodes deleted.
    gone: Vec<String>,
    /// The application node itself was deleted.
    cleared: bool,
    /// The watcher ended (session closed): re-sync when connected.
    lost: bool,
}

impl AppWatch {
    fn connected<'a>(&self, conn: &'a ConnState) -> Result<&'a Client, ZkError> {
        match (&conn.client, conn.connected) {
            (Some(c), true) => Ok(c),
            _ => Err(ZkError::Disconnected {
                address: self.shared.cfg.connect_string.clone(),
            }),
        }
    }

    /// Adds the watch, then lists and reads every node; publishes the result.
    async fn sync(&mut self, conn: &ConnState) -> Result<(), ZkError> {
        let client = self.connected(conn)?.clone();
        let w = client
            .watch(&self.path, AddWatchMode::PersistentRecursive)
            .await
            .map_err(|e| ZkError::op("watch", &self.path, e))?;
        self.watcher = Some(w);
        let children = match client.list_children(&self.path).await {
            Ok(c) => c,
            Err(zookeeper_client::Error::NoNode) => Vec::new(),
            Err(e) => return Err(ZkError::op("list", &self.path, e)),
        };
        let read = self.read_all(&client, children.clone()).await?;
        let mut nodes = BTreeMap::new();
        for (node, inst) in read {
            match inst {
                Some(i) => {
                    nodes.insert(node, i);
                }
                None => {
                    if let Some(old) = self.nodes.get(&node) {
                        nodes.insert(node, old.clone());
                    }
                }
            }
        }
        self.nodes = nodes;
        self.epoch = conn.epoch;
        // Events that arrived meanwhile.
        let d = self.drain(Dirty::default());
        self.apply(&client, d).await?;
        self.publish();
        Ok(())
    }

    /// Reads `nodes` concurrently: `(node, Some(instance))`, `(node, None)` for unparsable
    /// data; deleted nodes are left out.
    async fn read_all(
        &self,
        client: &Client,
        nodes: Vec<String>,
    ) -> Result<Vec<(String, Option<ServiceInstance>)>, ZkError> {
        let mut out = Vec::with_capacity(nodes.len());
        let mut pending = nodes.into_iter();
        let mut inflight = FuturesUnordered::new();
        loop {
            while inflight.len() < READ_CONCURRENCY {
                let Some(node) = pending.next() else { break };
                let path = format!("{}/{node}", self.path);
                let c = client.clone();
                inflight.push(async move {
                    let r = c.get_data(&path).await;
                    (node, path, r)
                });
            }
            let Some((node, path, r)) = inflight.next().await else {
                break;
            };
            match r {
                Ok((data, _)) => match curator::parse_instance(&self.app, &node, &data) {
                    Ok(i) => out.push((node, Some(i))),
                    Err(e) => {
                        tracing::warn!(path = %path, error = %e, "skipping an instance node that cannot be parsed");
                        out.push((node, None));
                    }
                },
                Err(zookeeper_client::Error::NoNode) => {}
                Err(e) => return Err(ZkError::op("get", &path, e)),
            }
        }
        Ok(out)
    }

    /// Folds every event already queued into `d`.
    fn drain(&mut self, mut d: Dirty) -> Dirty {
        while let Some(w) = self.watcher.as_mut() {
            match guarded(w.changed()).now_or_never() {
                Some(ev) => self.note(ev, &mut d),
                None => break,
            }
        }
        d
    }

    fn note(&mut self, ev: WatchedEvent, d: &mut Dirty) {
        tracing::trace!(app = %self.app, event = ?ev.event_type, path = %ev.path, "instance event");
        match ev.event_type {
            EventType::Session if ev.session_state.is_terminated() => {
                self.watcher = None;
                d.lost = true;
            }
            EventType::NodeCreated | EventType::NodeDataChanged => {
                if let Some(c) = direct_child(&self.path, &ev.path) {
                    d.read.push(c.to_owned());
                }
            }
            EventType::NodeDeleted => {
                if ev.path == self.path {
                    d.cleared = true;
                } else if let Some(c) = direct_child(&self.path, &ev.path) {
                    d.gone.push(c.to_owned());
                }
            }
            _ => {}
        }
    }

    /// Applies a burst: removals, then fresh reads of created/changed nodes.
    async fn apply(&mut self, client: &Client, d: Dirty) -> Result<(), ZkError> {
        if d.cleared {
            self.nodes.clear();
        }
        for g in &d.gone {
            self.nodes.remove(g);
        }
        let mut read = d.read;
        read.sort();
        read.dedup();
        if read.is_empty() {
            return Ok(());
        }
        // A node read as deleted (created and removed within the burst) is left out; its
        // NodeDeleted event removes an older value.
        for (node, inst) in self.read_all(client, read).await? {
            if let Some(i) = inst {
                self.nodes.insert(node, i);
            }
        }
        Ok(())
    }

    fn publish(&self) -> bool {
        let mut list: Vec<ServiceInstance> = self.nodes.values().cloned().collect();
        sort_instances(&mut list);
        let changed = send_if_changed(&self.tx, list.into());
        if changed {
            tracing::debug!(app = %self.app, instances = self.nodes.len(), "instances changed");
        }
        changed
    }

    async fn run(mut self) {
        let mut conn_rx = self.shared.conn.subscribe();
        conn_rx.mark_changed();
        let mut retry_at: Option<tokio::time::Instant> = None;
        loop {
            let resync = tokio::select! {
                biased;
                _ = self.stop.cancelled() => return,
                _ = self.tx.closed() => return,
                r = conn_rx.changed() => {
                    if r.is_err() {
                        return;
                    }
                    let st = conn_rx.borrow_and_update();
                    st.connected && st.epoch != self.epoch
                }
                ev = next_event(&mut self.watcher) => {
                    let mut d = Dirty::default();
                    self.note(ev, &mut d);
                    let d = self.drain(d);
                    if d.lost {
                        self.epoch = 0;
                    }
                    let conn = conn_rx.borrow().clone();
                    let applied = match self.connected(&conn) {
                        Ok(c) => {
                            let c = c.clone();
                            self.apply(&c, d).await
                        }
                        Err(e) => Err(e),
                    };
                    match applied {
                        Ok(()) => {
                            self.publish();
                            false
                        }
                        Err(e) => {
                            tracing::warn!(app = %self.app, error = %e, "instance read failed; re-syncing");
                            true
                        }
                    }
                }
                _ = sleep_until(retry_at) => true,
            };
            if !resync {
                continue;
            }
            let conn = conn_rx.borrow().clone();
            if !conn.connected {
                continue;
            }
            match self.sync(&conn).await {
                Ok(()) => retry_at = None,
                Err(e) => {
                    tracing::warn!(app = %self.app, error = %e, "instance re-list failed; keeping the last list");
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

/// The next event of `w`; pending forever without a watcher.
async fn next_event(w: &mut Option<PersistentWatcher>) -> WatchedEvent {
    match w {
        Some(w) => guarded(w.changed()).await,
        None => std::future::pending().await,
    }
}

/// A panic of the client (polling a watcher after its session ended) becomes a terminal
/// session event, so the task survives and re-syncs.
async fn guarded(f: impl std::future::Future<Output = WatchedEvent>) -> WatchedEvent {
    match std::panic::AssertUnwindSafe(f).catch_unwind().await {
        Ok(ev) => ev,
        Err(_) => {
            let mut ev = WatchedEvent::new(EventType::NodeDataChanged, "");
            ev.event_type = EventType::Session;
            ev.session_state = zookeeper_client::SessionState::Closed;
            ev
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roots() {
        let u = |s: &str| Url::parse(s).unwrap();
        assert_eq!(instances_root(&u("zookeeper://h:2181")), "/services");
        assert_eq!(instances_root(&u("zookeeper://h:2181?group=foo")), "/foo");
        assert_eq!(instances_root(&u("zookeeper://h:2181?group=/foo/")), "/foo");
        assert_eq!(
            instances_root(&u("zookeeper://h:2181?group=foo&rootPath=/apps")),
            "/apps"
        );
        assert!(check_app("a/b").is_err());
        assert!(check_app("").is_err());
        assert!(check_app("shop-app").is_ok());
    }
}
