//! `memory://` as a config centre: an in-process [`ConfigCenter`] with the same contract as the
//! ZooKeeper and Nacos ones. [`MemoryConfigCenter::new`] is isolated; [`MemoryConfigCenter::named`]
//! attaches to the process-global store of that name, so `memory://<name>` registries and
//! config centres used by a provider side and a consumer side in one process meet.

use std::collections::HashMap;
use std::sync::{Arc, LazyLock};

use async_trait::async_trait;
use parking_lot::Mutex;
use tokio::sync::watch;

use crate::config_center::{send_if_changed, ConfigCenter, ConfigValue, ConfigWatch};
use crate::error::Result;
use crate::url::Url;

type Key = (String, String);

#[derive(Debug, Default)]
struct Store {
    inner: Mutex<HashMap<Key, Entry>>,
}

#[derive(Debug)]
struct Entry {
    value: ConfigValue,
    /// Kept alive while the key has watchers or a value; watchers hold receivers.
    tx: watch::Sender<ConfigValue>,
}

static NAMED: LazyLock<Mutex<HashMap<String, Arc<Store>>>> = LazyLock::new(Default::default);

/// An in-process config centre.
#[derive(Debug, Clone, Default)]
pub struct MemoryConfigCenter {
    store: Arc<Store>,
}

impl MemoryConfigCenter {
    /// An isolated, empty config centre.
    pub fn new() -> Self {
        Self::default()
    }

    /// The process-global config centre called `name` (`memory://name`); an empty name is
    /// isolated.
    pub fn named(name: &str) -> Self {
        if name.is_empty() {
            return Self::new();
        }
        let store = NAMED.lock().entry(name.to_string()).or_default().clone();
        MemoryConfigCenter { store }
    }

    /// Opens `memory://[name]` ([`MemoryConfigCenter::named`] by the URL's host), the same way
    /// the other config centres connect.
    ///
    /// Errors: not a `memory://` URL.
    pub async fn connect(url: &Url) -> Result<Self> {
        if url.protocol() != Some("memory") {
            return Err(crate::Error::InvalidAddress(format!(
                "not a memory:// URL: {url}"
            )));
        }
        Ok(Self::named(url.host().unwrap_or("")))
    }

    fn set(&self, key: &str, group: &str, value: ConfigValue) {
        let mut map = self.store.inner.lock();
        let k = (group.to_string(), key.to_string());
        match map.get_mut(&k) {
            Some(e) => {
                e.value = value.clone();
                send_if_changed(&e.tx, value);
            }
            None => {
                let (tx, _) = watch::channel(value.clone());
                map.insert(k, Entry { value, tx });
            }
        }
    }
}

#[async_trait]
impl ConfigCenter for MemoryConfigCenter {
    async fn get(&self, key: &str, group: &str) -> Result<ConfigValue> {
        let map = self.store.inner.lock();
        Ok(map
            .get(&(group.to_string(), key.to_string()))
            .and_then(|e| e.value.clone()))
    }

    async fn watch(&self, key: &str, group: &str) -> Result<ConfigWatch> {
        let mut map = self.store.inner.lock();
        let e = map
            .entry((group.to_string(), key.to_string()))
            .or_insert_with(|| Entry {
                value: None,
                tx: watch::channel(None).0,
            });
        Ok(ConfigWatch::new(e.tx.subscribe(), None))
    }

    async fn publish(&self, key: &str, group: &str, content: &str) -> Result<()> {
        self.set(key, group, Some(Arc::from(content)));
        Ok(())
    }

    async fn remove(&self, key: &str, group: &str) -> Result<()> {
        self.set(key, group, None);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config_center::DEFAULT_CONFIG_GROUP as G;

    #[tokio::test]
    async fn watch_sees_current_then_changes_then_delete() {
        let cc = MemoryConfigCenter::new();
        cc.publish("k", G, "v1").await.unwrap();
        let mut w = cc.watch("k", G).await.unwrap();
        assert_eq!(w.next().await.unwrap().as_deref(), Some("v1"));
        cc.publish("k", G, "v2").await.unwrap();
        assert_eq!(w.next().await.unwrap().as_deref(), Some("v2"));
        // an identical rewrite is not re-delivered; a delete is
        cc.publish("k", G, "v2").await.unwrap();
        cc.remove("k", G).await.unwrap();
        assert_eq!(w.next().await.unwrap(), None);
        assert_eq!(cc.get("k", G).await.unwrap(), None);
    }

    #[tokio::test]
    async fn groups_are_separate_and_named_stores_are_shared() {
        let a = MemoryConfigCenter::named("cc-test-shared");
        let b = MemoryConfigCenter::named("cc-test-shared");
        a.publish("k", "g1", "x").await.unwrap();
        assert_eq!(b.get("k", "g1").await.unwrap().as_deref(), Some("x"));
        assert_eq!(b.get("k", "g2").await.unwrap(), None);
        let mut w = b.watch("missing", "g1").await.unwrap();
        assert_eq!(w.next().await.unwrap(), None);
    }
}
