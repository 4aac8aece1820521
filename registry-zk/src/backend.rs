//! [`ZkBackend`]: the [`RegistryBackend`] over one ZooKeeper ensemble.

use std::collections::BTreeSet;
use std::sync::Arc;

use async_trait::async_trait;

use registry_core::matching::ANY;
use registry_core::{Publisher, RegistryBackend, Url};
use tokio::sync::watch;
use tokio_util::sync::DropGuard;

use crate::aggregate::Aggregate;
use crate::children::convert_child;
use crate::children::PathKind;
use crate::config::ZkConfig;
use crate::error::ZkError;
use crate::paths;
use crate::session::{self, Registration, Shared};
use crate::watch::{sync_service, PathWatch, RootWatch, Stop};

/// The ZooKeeper backend: Dubbo's znode layout, persistent recursive watches with incremental
/// apply, reconnect re-lists and new-session recovery. Wrap it in
/// [`registry_core::FailbackRegistry`] (see [`crate::ZookeeperRegistry`]).
///
/// Dropping it stops every background task and closes the session.
#[derive(Debug)]
pub struct ZkBackend {
    url: Url,
    shared: Arc<Shared>,
    _stop: DropGuard,
}

impl ZkBackend {
    /// Parses `url` and opens the first session. With `check=true` (the default) an
    /// unreachable ensemble is an error after the `timeout` parameter (default 30 s); with
    /// `check=false` the backend starts disconnected and keeps trying in the background.
    ///
    /// Must be called within a Tokio runtime.
    pub async fn connect(url: &Url) -> Result<ZkBackend, ZkError> {
        let cfg = ZkConfig::from_url(url)?;
        let (shared, stop) = session::start(cfg, "zookeeper").await?;
        Ok(ZkBackend {
            url: url.clone(),
            shared,
            _stop: stop,
        })
    }

    /// The parsed configuration.
    pub fn config(&self) -> &ZkConfig {
        &self.shared.cfg
    }

    /// The current session id (0 without a session).
    pub fn session_id(&self) -> i64 {
        self.shared
            .conn
            .borrow()
            .client
            .as_ref()
            .map_or(0, |c| c.session_id().0)
    }

    /// The current session's id and password, for tests that force an expiry by attaching a
    /// second client to the same session ([`crate::testing::expire_session`]).
    pub fn session_info(&self) -> Option<zookeeper_client::SessionInfo> {
        self.shared
            .conn
            .borrow()
            .client
            .as_ref()
            .map(|c| c.session().clone())
    }

    /// Number of (re)connects so far; increases on every `SyncConnected`.
    pub fn connection_epoch(&self) -> u64 {
        self.shared.conn.borrow().epoch
    }

    fn stop_for(&self, publisher: &Publisher) -> Stop {
        // A child token: a failed subscribe cancels only its own tasks, never the
        // subscription itself (the failback layer retries it).
        Stop {
            backend: self.shared.cancel.clone(),
            subscription: publisher.closed_token().child_token(),
        }
    }

    async fn subscribe_service(&self, agg: Arc<Aggregate>, stop: Stop) -> Result<(), ZkError> {
        let conn = self.shared.conn.borrow().clone();
        let consumer = agg.consumer().clone();
        let mut watches = Vec::new();
        for path in paths::categories_paths(&self.shared.cfg.root, &consumer) {
            let mut w = PathWatch::new(path, consumer.clone());
            w.sync(&self.shared, &conn).await?;
            w.report(&agg);
            watches.push(w);
        }
        agg.start();
        for w in watches {
            let mut rx = self.shared.conn.subscribe();
            // Re-checks the epoch first: a reconnect may have happened since the sync.
            rx.mark_changed();
            tokio::spawn(w.run(self.shared.clone(), agg.clone(), rx, stop.clone()));
        }
        Ok(())
    }

    async fn subscribe_any(&self, agg: Arc<Aggregate>, stop: Stop) -> Result<(), ZkError> {
        let conn = self.shared.conn.borrow().clone();
        let mut root = RootWatch {
            root: self.shared.cfg.root.clone(),
            known: BTreeSet::new(),
            watcher: None,
            epoch: 0,
        };
        let services = root.sync(&self.shared, &conn).await?;
        let mut watches = Vec::new();
        for s in &services {
            watches.extend(sync_service(&self.shared, &conn, &agg, s).await?);
        }
        agg.start();
        for w in watches {
            let mut rx = self.shared.conn.subscribe();
            // Re-checks the epoch first: a reconnect may have happened since the sync.
            rx.mark_changed();
            tokio::spawn(w.run(self.shared.clone(), agg.clone(), rx, stop.clone()));
        }
        let mut rx = self.shared.conn.subscribe();
        rx.mark_changed();
        tokio::spawn(root.run(self.shared.clone(), agg, rx, stop));
        Ok(())
    }
}

impl Drop for ZkBackend {
    fn drop(&mut self) {
        self.shared.cancel.cancel();
        self.shared.health.closed();
        self.shared.conn.send_modify(|s| {
            s.client = None;
            s.connected = false;
        });
    }
}

#[async_trait]
impl RegistryBackend for ZkBackend {
    fn url(&self) -> &Url {
        &self.url
    }

    fn is_available(&self) -> bool {
        !self.shared.cancel.is_cancelled() && self.shared.conn.borrow().connected
    }

    fn health(&self) -> Option<watch::Receiver<registry_core::RegistryHealth>> {
        Some(self.shared.health.subscribe())
    }

    async fn do_register(&self, url: &Url) -> registry_core::Result<()> {
        let path = paths::url_path(&self.shared.cfg.root, url);
        let reg = Registration::empty(url.param_bool("dynamic", true));
        self.shared
            .registered
            .lock()
            .insert(path.clone(), reg.clone());
        session::create_node(&self.shared, &path, &reg)
            .await
            .map_err(Into::into)
    }

    async fn do_unregister(&self, url: &Url) -> registry_core::Result<()> {
        let path = paths::url_path(&self.shared.cfg.root, url);
        self.shared.registered.lock().remove(&path);
        let client = self.shared.client()?;
        match client.delete(&path, None).await {
            Ok(()) | Err(zookeeper_client::Error::NoNode) => Ok(()),
            Err(e) => Err(ZkError::op("delete", &path, e).into()),
        }
    }

    async fn do_subscribe(&self, publisher: Publisher) -> registry_core::Result<()> {
        self.shared.client()?;
        let stop = self.stop_for(&publisher);
        let any = publisher.consumer().service_interface() == Some(ANY);
        let agg = Arc::new(Aggregate::new(publisher, self.shared.cfg.empty_protection));
        let r = if any {
            self.subscribe_any(agg, stop.clone()).await
        } else {
            self.subscribe_service(agg, stop.clone()).await
        };
        if r.is_err() {
            // Nothing may keep running after a failed subscribe.
            stop.subscription.cancel();
        }
        r.map_err(Into::into)
    }

    async fn do_lookup(&self, consumer: &Url) -> registry_core::Result<Vec<Url>> {
        let client = self.shared.client()?;
        let mut out = Vec::new();
        for path in paths::categories_paths(&self.shared.cfg.root, consumer) {
            let children = match client.list_children(&path).await {
                Ok(c) => c,
                Err(zookeeper_client::Error::NoNode) => continue,
                Err(e) => return Err(ZkError::op("list", &path, e).into()),
            };
            let kind = PathKind::of(&path);
            out.extend(
                children
                    .iter()
                    .filter_map(|c| convert_child(kind, consumer, c)),
            );
        }
        Ok(out)
    }

    fn session_generation(&self) -> Option<watch::Receiver<u64>> {
        Some(self.shared.generation.subscribe())
    }

    async fn do_destroy(&self) {
        let ephemeral: Vec<String> = {
            let mut r = self.shared.registered.lock();
            let paths = r
                .iter()
                .filter(|(_, reg)| reg.ephemeral)
                .map(|(p, _)| p.clone())
                .collect();
            r.retain(|_, reg| !reg.ephemeral);
            paths
        };
        if let Ok(client) = self.shared.client() {
            for p in ephemeral {
                if let Err(e) = client.delete(&p, None).await {
                    tracing::debug!(error = %e, "unregister on destroy failed");
                }
            }
        }
        self.shared.cancel.cancel();
        self.shared.health.closed();
        self.shared.conn.send_modify(|s| {
            s.client = None;
            s.connected = false;
        });
    }
}
