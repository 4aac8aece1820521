//! Nacos config over gRPC: the state behind [`crate::NacosConfigCenter`].
//!
//! - `ConfigQueryRequest{dataId, group, tenant}` reads a value (errorCode 300 = not found);
//! - a watched key is listened to with `ConfigBatchListenRequest{listen, configListenContexts:
//!   [{dataId, group, tenant, md5}]}` carrying the md5 of the value we hold, so a change made
//!   between our read and the listen is reported at once (`changedConfigs`);
//! - the server pushes `ConfigChangeNotifyRequest{dataId, group, tenant}`: acked with its
//!   requestId, then the key is read again and the new value published (only if it differs);
//! - after a reconnect every watched key is read and listened to again; errors never publish
//!   `None` (only a successful "not found" does).
//!
//! The tenant is the namespace, with `public` sent as `""` (Nacos config's public namespace).

use std::sync::Arc;

use md5::{Digest, Md5};
use parking_lot::Mutex;
use registry_core::config_center::{send_if_changed, ConfigValue};
use rustc_hash::FxHashMap;
use serde::{Deserialize, Serialize};
use tokio::sync::watch;
use tracing::{debug, warn};

use super::link::Link;
use super::session::{expect_type, Command, Session, Shared};
use super::wire::Base;
use crate::error::NacosError;

/// errorCode of a ConfigQueryResponse for a key that does not exist.
const CONFIG_NOT_FOUND: i32 = 300;

/// A config key: (dataId, group).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct ConfigKey {
    pub data_id: String,
    pub group: String,
}

#[derive(Debug)]
struct Watched {
    tx: Arc<watch::Sender<ConfigValue>>,
    /// md5 of the value held ("" for none).
    md5: String,
    /// Link generation it is listened on (0: pending).
    done: u64,
}

/// Config state of a session.
#[derive(Debug, Default)]
pub(crate) struct ConfigState {
    watched: Mutex<FxHashMap<ConfigKey, Watched>>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct KeyRequest<'a> {
    #[serde(flatten)]
    base: Base,
    data_id: &'a str,
    group: &'a str,
    tenant: &'a str,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct PublishRequest<'a> {
    #[serde(flatten)]
    key: KeyRequest<'a>,
    content: &'a str,
    addition_map: FxHashMap<String, String>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct ListenContext<'a> {
    data_id: &'a str,
    group: &'a str,
    tenant: &'a str,
    md5: &'a str,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct BatchListenRequest<'a> {
    #[serde(flatten)]
    base: Base,
    listen: bool,
    config_listen_contexts: Vec<ListenContext<'a>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
struct QueryResponse {
    content: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
struct ChangedKey {
    data_id: Option<String>,
    group: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
struct BatchListenResponse {
    changed_configs: Vec<ChangedKey>,
}

/// md5 (lower-case hex) of a value, `""` for none.
pub(crate) fn md5_hex(v: &ConfigValue) -> String {
    match v {
        None => String::new(),
        Some(s) => {
            let d = Md5::digest(s.as_bytes());
            d.iter().map(|b| format!("{b:02x}")).collect()
        }
    }
}

fn tenant(shared: &Shared) -> &str {
    let ns = shared.cfg.namespace.as_str();
    if ns == crate::config::DEFAULT_NAMESPACE {
        ""
    } else {
        ns
    }
}

/// Reads one key.
async fn query(
    shared: &Shared,
    link: Option<&Link>,
    key: &ConfigKey,
) -> Result<ConfigValue, NacosError> {
    let body = KeyRequest {
        base: Base::of("config"),
        data_id: &key.data_id,
        group: &key.group,
        tenant: tenant(shared),
    };
    let r = match link {
        Some(l) => shared
            .request_on(l, "config query", "ConfigQueryRequest", &body)
            .await
            .and_then(|r| expect_type(&l.server, "config query", r, "ConfigQueryResponse")),
        None => {
            shared
                .request_expect(
                    "config query",
                    "ConfigQueryRequest",
                    &body,
                    "ConfigQueryResponse",
                )
                .await
        }
    };
    match r {
        Ok(r) => {
            let q: QueryResponse =
                serde_json::from_slice(&r.json).map_err(|e| NacosError::Malformed {
                    server: shared.cfg.servers.join(","),
                    op: "config query",
                    reason: e.to_string(),
                })?;
            Ok(q.content.map(Arc::from))
        }
        Err(NacosError::Grpc { code, .. }) if code == CONFIG_NOT_FOUND => Ok(None),
        Err(e) => Err(e),
    }
}

impl ConfigState {
    /// Publishes `v` to the watchers of `key` (when it differs) and remembers its md5.
    fn store(&self, key: &ConfigKey, v: ConfigValue) {
        let mut w = self.watched.lock();
        if let Some(x) = w.get_mut(key) {
            x.md5 = md5_hex(&v);
            send_if_changed(&x.tx, v);
        }
    }

    /// Reads `key` and listens to it on `link`.
    pub(crate) async fn listen_one(&self, shared: &Shared, link: &Link, key: &ConfigKey) {
        if !self.watched.lock().contains_key(key) {
            return;
        }
        match query(shared, Some(link), key).await {
            Ok(v) => self.store(key, v),
            Err(e) => {
                warn!(data_id = %key.data_id, group = %key.group, error = %e, "nacos config read failed; keeping the last value and retrying in 3 s");
                return;
            }
        }
        let md5 = match self.watched.lock().get(key) {
            Some(w) => w.md5.clone(),
            None => return,
        };
        let t = tenant(shared);
        let body = BatchListenRequest {
            base: Base::of("config"),
            listen: true,
            config_listen_contexts: vec![ListenContext {
                data_id: &key.data_id,
                group: &key.group,
                tenant: t,
                md5: &md5,
            }],
        };
        let r = shared
            .request_on(link, "config listen", "ConfigBatchListenRequest", &body)
            .await
            .and_then(|r| {
                expect_type(
                    &link.server,
                    "config listen",
                    r,
                    "ConfigChangeBatchListenResponse",
                )
            });
        match r {
            Ok(r) => {
                if let Some(w) = self.watched.lock().get_mut(key) {
                    w.done = link.generation;
                }
                let changed: BatchListenResponse =
                    serde_json::from_slice(&r.json).unwrap_or_default();
                if !changed.changed_configs.is_empty() {
                    match query(shared, Some(link), key).await {
                        Ok(v) => self.store(key, v),
                        Err(e) => debug!(error = %e, "nacos config re-read failed"),
                    }
                }
            }
            Err(e) => {
                warn!(data_id = %key.data_id, group = %key.group, error = %e, "nacos config listen failed; retrying in 3 s")
            }
        }
    }

    /// Listens again to every key not listened to on `link`.
    pub(crate) async fn redo(&self, shared: &Shared, link: &Link) {
        let keys: Vec<ConfigKey> = self
            .watched
            .lock()
            .iter()
            .filter(|(_, w)| w.done != link.generation)
            .map(|(k, _)| k.clone())
            .collect();
        for k in keys {
            self.listen_one(shared, link, &k).await;
        }
    }

    /// Stops listening to keys nobody watches.
    pub(crate) async fn sweep(&self, shared: &Shared, link: &Link) {
        let gone: Vec<ConfigKey> = {
            let mut w = self.watched.lock();
            let keys: Vec<ConfigKey> = w
                .iter()
                .filter(|(_, x)| x.tx.receiver_count() == 0)
                .map(|(k, _)| k.clone())
                .collect();
            for k in &keys {
                w.remove(k);
            }
            keys
        };
        let t = tenant(shared);
        for k in gone {
            let body = BatchListenRequest {
                base: Base::of("config"),
                listen: false,
                config_listen_contexts: vec![ListenContext {
                    data_id: &k.data_id,
                    group: &k.group,
                    tenant: t,
                    md5: "",
                }],
            };
            if let Err(e) = shared
                .request_on(link, "config unlisten", "ConfigBatchListenRequest", &body)
                .await
            {
                debug!(error = %e, "nacos config unlisten failed");
            }
        }
    }

    /// Marks every key for a new listen.
    pub(crate) fn on_disconnect(&self) {
        for w in self.watched.lock().values_mut() {
            w.done = 0;
        }
    }

    /// A `ConfigChangeNotifyRequest` (already acked): reads the key again.
    pub(crate) async fn on_notify(&self, shared: &Shared, link: &Link, json: &[u8]) {
        let k: ChangedKey = match serde_json::from_slice(json) {
            Ok(k) => k,
            Err(e) => {
                warn!(error = %e, "nacos config change notification is not JSON; ignored");
                return;
            }
        };
        let (Some(data_id), Some(group)) = (k.data_id, k.group) else {
            warn!("nacos config change notification without dataId/group; ignored");
            return;
        };
        let key = ConfigKey { data_id, group };
        if !self.watched.lock().contains_key(&key) {
            return;
        }
        match query(shared, Some(link), &key).await {
            Ok(None) => {
                // Removed. rnacos forgets the listeners of a removed key: listen again, so a
                // later publish is still notified.
                self.store(&key, None);
                self.listen_one(shared, link, &key).await;
            }
            Ok(v) => self.store(&key, v),
            Err(e) => {
                warn!(data_id = %key.data_id, error = %e, "nacos config re-read after a change failed; retrying");
                if let Some(w) = self.watched.lock().get_mut(&key) {
                    w.done = 0;
                }
            }
        }
    }
}

/// The config side of a session (used by [`crate::NacosConfigCenter`]).
#[derive(Debug)]
pub(crate) struct GrpcConfig {
    session: Session,
}

impl GrpcConfig {
    pub(crate) fn start(
        cfg: &crate::config::NacosConfig,
        http: Arc<crate::client::NacosClient>,
    ) -> Result<Self, NacosError> {
        Ok(GrpcConfig {
            session: Session::start(cfg, http, "config")?,
        })
    }

    fn shared(&self) -> &Arc<Shared> {
        &self.session.shared
    }

    /// Waits for the first connection (up to the request timeout).
    pub(crate) async fn wait_connected(&self) -> Result<(), NacosError> {
        self.shared().current_link("connect").await.map(drop)
    }

    pub(crate) async fn get(&self, key: &ConfigKey) -> Result<ConfigValue, NacosError> {
        query(self.shared(), None, key).await
    }

    /// The receiver of `key`'s value, current value first.
    pub(crate) async fn watch(
        &self,
        key: ConfigKey,
    ) -> Result<watch::Receiver<ConfigValue>, NacosError> {
        let sh = self.shared();
        if let Some(w) = sh.config.watched.lock().get(&key) {
            return Ok(w.tx.subscribe());
        }
        let current = query(sh, None, &key).await?;
        let mut map = sh.config.watched.lock();
        if let Some(w) = map.get(&key) {
            return Ok(w.tx.subscribe());
        }
        let md5 = md5_hex(&current);
        let (tx, rx) = watch::channel(current);
        map.insert(
            key.clone(),
            Watched {
                tx: Arc::new(tx),
                md5,
                done: 0,
            },
        );
        drop(map);
        sh.command(Command::Listen(key));
        Ok(rx)
    }

    pub(crate) async fn publish(&self, key: &ConfigKey, content: &str) -> Result<(), NacosError> {
        let sh = self.shared();
        let body = PublishRequest {
            key: KeyRequest {
                base: Base::of("config"),
                data_id: &key.data_id,
                group: &key.group,
                tenant: tenant(sh),
            },
            content,
            addition_map: FxHashMap::default(),
        };
        sh.request_expect(
            "config publish",
            "ConfigPublishRequest",
            &body,
            "ConfigPublishResponse",
        )
        .await
        .map(drop)
    }

    pub(crate) async fn remove(&self, key: &ConfigKey) -> Result<(), NacosError> {
        let sh = self.shared();
        let body = KeyRequest {
            base: Base::of("config"),
            data_id: &key.data_id,
            group: &key.group,
            tenant: tenant(sh),
        };
        sh.request_expect(
            "config remove",
            "ConfigRemoveRequest",
            &body,
            "ConfigRemoveResponse",
        )
        .await
        .map(drop)
    }

    pub(crate) fn close(&self) {
        self.shared().cancel.cancel();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn md5_of_values() {
        assert_eq!(md5_hex(&None), "");
        assert_eq!(
            md5_hex(&Some(Arc::from("abc"))),
            "900150983cd24fb0d6963f7d28e17f72"
        );
    }
}
