//! [`ZkConfigCenter`]: Dubbo's ZooKeeper dynamic configuration (`ZookeeperDynamicConfiguration`,
//! a tree-path configuration) as a [`registry_core::ConfigCenter`].
//!
//! Layout: `/<namespace>/config/<group>/<key>` data nodes holding the raw rule text (UTF-8).
//! The namespace is the URL's `namespace` param, else its `group` (Dubbo sets the namespace of a
//! registry-derived config centre to the registry group), else `dubbo`:
//! `/dubbo/config/dubbo/com.foo.Svc::.condition-router`.
//!
//! Watching: one persistent (non-recursive) watch per key path, added **before** the value is
//! read, so no change between the two is lost. It works on a key that does not exist yet
//! (creation is an event). The contract of [`ConfigCenter`] holds across connection trouble:
//! - a disconnect changes nothing (the last value stays);
//! - on every reconnect (same session or a new one after expiry) the watch is added again
//!   (zookeeper-client 0.11.2 does not re-send persistent watches) and the value re-read, so
//!   changes made meanwhile are seen; ZooKeeper does not replay them (ZOOKEEPER-4698);
//! - `None` is published only after the server said the node is gone (a delete event or a
//!   read answering `NoNode`), never because a read failed.
//!
//! Reads use plain `getData` without a one-shot watch (ZOOKEEPER-4466: a one-shot and a
//! persistent watch cannot share a path).

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use futures::FutureExt;

use registry_core::config_center::send_if_changed;
use registry_core::{ConfigCenter, ConfigValue, ConfigWatch, Url};
use tokio::sync::watch;
use tokio_util::sync::{CancellationToken, DropGuard};
use zookeeper_client::{AddWatchMode, Client, CreateMode, EventType, PersistentWatcher};

use crate::config::ZkConfig;
use crate::error::ZkError;
use crate::session::{self, ConnState, Shared};

/// Delay before retrying a failed re-read while connected.
const RETRY: Duration = Duration::from_millis(500);

/// The ZooKeeper config centre: its own session (same supervisor as the registry: reconnects,
/// new session after expiry), dropped with the value.
#[derive(Debug)]
pub struct ZkConfigCenter {
    shared: Arc<Shared>,
    root: String,
    _stop: DropGuard,
}

impl ZkConfigCenter {
    /// Connects to the ensemble of `url` (a `zookeeper://` registry or config-centre URL, same
    /// parameters as the registry: `backup`, `timeout`, `session`, credentials, `check`).
    ///
    /// Errors: a bad URL; with `check=true` (default) no session within `timeout`.
    /// Must be called within a Tokio runtime.
    pub async fn connect(url: &Url) -> Result<ZkConfigCenter, ZkError> {
        Self::connect_with_root(url, &config_root(url)).await
    }

    /// Like [`ZkConfigCenter::connect`], with keys under `root` instead of
    /// `/<namespace>/config`: Dubbo's ZooKeeper metadata report keeps the same
    /// `<root>/<group>/<key>` tree at `/<group of the URL>` (`/dubbo/mapping/<interface>`,
    /// `/dubbo/metadata/<app>/<revision>`, see [`metadata_root`]).
    pub async fn connect_with_root(url: &Url, root: &str) -> Result<ZkConfigCenter, ZkError> {
        let cfg = ZkConfig::from_url(url)?;
        let (shared, stop) = session::start(cfg, "zookeeper config centre").await?;
        Ok(ZkConfigCenter {
            shared,
            root: root.trim_end_matches('/').to_owned(),
            _stop: stop,
        })
    }

    /// `/<namespace>/config`.
    pub fn root(&self) -> &str {
        &self.root
    }

    /// The znode of `key` in `group`: `<root>/<group>/<key>`.
    pub fn path(&self, key: &str, group: &str) -> String {
        format!("{}/{group}/{key}", self.root)
    }

    /// Number of (re)connects of this config centre's session (increases on every
    /// `SyncConnected`), for tests.
    pub fn connection_epoch(&self) -> u64 {
        self.shared.conn.borrow().epoch
    }

    /// The current session's id and password, for tests that force an expiry
    /// ([`crate::testing::expire_session`]).
    pub fn session_info(&self) -> Option<zookeeper_client::SessionInfo> {
        self.shared
            .conn
            .borrow()
            .client
            .as_ref()
            .map(|c| c.session().clone())
    }
}

/// `/<namespace>/config` for `url` (`namespace`, else `group`, else `dubbo`).
pub fn config_root(url: &Url) -> String {
    let ns = url
        .param("namespace")
        .or_else(|| url.param("group"))
        .filter(|s| !s.is_empty())
        .unwrap_or("dubbo");
    let ns = ns.trim_matches('/');
    if ns.is_empty() {
        "/config".to_owned()
    } else {
        format!("/{ns}/config")
    }
}

/// The root of Dubbo's ZooKeeper metadata report for `url`: `/` + its `group` (default
/// `dubbo`), as `ZookeeperMetadataReport` computes it.
pub fn metadata_root(url: &Url) -> String {
    let g = url
        .param("group")
        .filter(|g| !g.is_empty())
        .unwrap_or("dubbo");
    if g.starts_with('/') {
        g.to_owned()
    } else {
        format!("/{g}")
    }
}

/// Reads a node: `Ok(None)` only for `NoNode`.
async fn read(client: &Client, path: &str) -> Result<ConfigValue, ZkError> {
    match client.get_data(path).await {
        Ok((data, _)) => Ok(Some(Arc::from(String::from_utf8_lossy(&data).as_ref()))),
        Err(zookeeper_client::Error::NoNode) => Ok(None),
        Err(e) => Err(ZkError::op("get", path, e)),
    }
}

async fn add_watch(client: &Client, path: &str) -> Result<PersistentWatcher, ZkError> {
    client
        .watch(path, AddWatchMode::Persistent)
        .await
        .map_err(|e| ZkError::op("watch", path, e))
}

/// Follows one key until the watch or the config centre is dropped.
struct KeyWatch {
    shared: Arc<Shared>,
    path: String,
    tx: watch::Sender<ConfigValue>,
    watcher: Option<PersistentWatcher>,
    epoch: u64,
    stop: CancellationToken,
}

impl KeyWatch {
    /// Re-adds the watch, then re-reads. Errors leave the value as it was.
    async fn resync(&mut self, conn: &ConnState) -> Result<(), ZkError> {
        let client = match (&conn.client, conn.connected) {
            (Some(c), true) => c.clone(),
            _ => {
                return Err(ZkError::Disconnected {
                    address: self.shared.cfg.connect_string.clone(),
                })
            }
        };
        let w = add_watch(&client, &self.path).await?;
        self.watcher = Some(w);
        let v = read(&client, &self.path).await?;
        send_if_changed(&self.tx, v);
        self.epoch = conn.epoch;
        Ok(())
    }

    async fn run(mut self) {
        let mut conn_rx = self.shared.conn.subscribe();
        let mut retry_at: Option<tokio::time::Instant> = None;
        loop {
            let conn = conn_rx.borrow_and_update().clone();
            if conn.connected
                && (conn.epoch != self.epoch
                    || retry_at.is_some_and(|t| t <= tokio::time::Instant::now()))
            {
                retry_at = None;
                if let Err(e) = self.resync(&conn).await {
                    tracing::debug!(path = %self.path, error = %e, "config re-read failed; retrying");
                    retry_at = Some(tokio::time::Instant::now() + RETRY);
                }
                continue;
            }
            tokio::select! {
                _ = self.stop.cancelled() => return,
                _ = self.tx.closed() => return,
                r = conn_rx.changed() => if r.is_err() { return },
                _ = sleep_until(retry_at) => {}
                ev = next_event(&mut self.watcher) => {
                    match ev.event_type {
                        EventType::Session if ev.session_state.is_terminated() => {
                            self.watcher = None;
                        }
                        EventType::NodeDeleted => {
                            send_if_changed(&self.tx, None);
                        }
                        EventType::NodeCreated | EventType::NodeDataChanged => {
                            let client = conn.client.clone();
                            let r = match client {
                                Some(c) => read(&c, &self.path).await,
                                None => Err(ZkError::Destroyed),
                            };
                            match r {
                                Ok(v) => {
                                    send_if_changed(&self.tx, v);
                                }
                                Err(e) => {
                                    tracing::debug!(path = %self.path, error = %e, "config read failed; retrying");
                                    retry_at = Some(tokio::time::Instant::now() + RETRY);
                                }
                            }
                        }
                        _ => {}
                    }
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

/// The next event of `w`; pending forever without a watcher. A panic of the client (polling
/// a watcher after its session ended) becomes a terminal session event.
async fn next_event(w: &mut Option<PersistentWatcher>) -> zookeeper_client::WatchedEvent {
    let Some(w) = w else {
        return std::future::pending().await;
    };
    match std::panic::AssertUnwindSafe(w.changed())
        .catch_unwind()
        .await
    {
        Ok(ev) => ev,
        Err(_) => {
            let mut ev = zookeeper_client::WatchedEvent::new(EventType::NodeDataChanged, "");
            ev.event_type = EventType::Session;
            ev.session_state = zookeeper_client::SessionState::Closed;
            ev
        }
    }
}

#[async_trait]
impl ConfigCenter for ZkConfigCenter {
    async fn get(&self, key: &str, group: &str) -> registry_core::Result<ConfigValue> {
        let client = self.shared.client()?;
        Ok(read(&client, &self.path(key, group)).await?)
    }

    async fn watch(&self, key: &str, group: &str) -> registry_core::Result<ConfigWatch> {
        let path = self.path(key, group);
        let conn = self.shared.conn.borrow().clone();
        let client = self.shared.client()?;
        // The watch first, then the read: nothing between the two is lost.
        let watcher = add_watch(&client, &path).await?;
        let initial = read(&client, &path).await?;
        let stop = self.shared.cancel.child_token();
        let (tx, w) = ConfigWatch::channel(initial, Some(Box::new(stop.clone().drop_guard())));
        let task = KeyWatch {
            shared: self.shared.clone(),
            path,
            tx,
            watcher: Some(watcher),
            epoch: conn.epoch,
            stop,
        };
        tokio::spawn(task.run());
        Ok(w)
    }

    async fn publish(&self, key: &str, group: &str, content: &str) -> registry_core::Result<()> {
        let path = self.path(key, group);
        let client = self.shared.client()?;
        let opts = CreateMode::Persistent.with_acls(self.shared.acls());
        for _ in 0..3 {
            match client.set_data(&path, content.as_bytes(), None).await {
                Ok(_) => return Ok(()),
                Err(zookeeper_client::Error::NoNode) => {}
                Err(e) => return Err(ZkError::op("set", &path, e).into()),
            }
            match client.create(&path, content.as_bytes(), &opts).await {
                Ok(_) => return Ok(()),
                Err(zookeeper_client::Error::NodeExists) => continue,
                Err(zookeeper_client::Error::NoNode) => {
                    let parent = &path[..path.rfind('/').unwrap_or(0)];
                    client
                        .mkdir(parent, &opts)
                        .await
                        .map_err(|e| ZkError::op("mkdir", parent, e))?;
                }
                Err(e) => return Err(ZkError::op("create", &path, e).into()),
            }
        }
        Err(ZkError::op("create", &path, zookeeper_client::Error::NodeExists).into())
    }

    async fn remove(&self, key: &str, group: &str) -> registry_core::Result<()> {
        let path = self.path(key, group);
        let client = self.shared.client()?;
        match client.delete(&path, None).await {
            Ok(()) | Err(zookeeper_client::Error::NoNode) => Ok(()),
            Err(e) => Err(ZkError::op("delete", &path, e).into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roots() {
        let u = |s: &str| Url::parse(s).unwrap();
        assert_eq!(
            config_root(&u("zookeeper://127.0.0.1:2181")),
            "/dubbo/config"
        );
        assert_eq!(
            config_root(&u("zookeeper://127.0.0.1:2181?group=g1")),
            "/g1/config"
        );
        assert_eq!(
            config_root(&u("zookeeper://127.0.0.1:2181?group=g1&namespace=ns")),
            "/ns/config"
        );
        assert_eq!(metadata_root(&u("zookeeper://127.0.0.1:2181")), "/dubbo");
        assert_eq!(
            metadata_root(&u("zookeeper://127.0.0.1:2181?group=g1")),
            "/g1"
        );
    }
}
