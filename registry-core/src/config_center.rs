//! The dynamic-configuration contract (Dubbo's `DynamicConfiguration`): rules and overrides that
//! operators publish under a key in a group, read once or watched.
//!
//! ```text
//! config centre (zk | nacos | memory) --watch--> ConfigWatch (latest value, in order)
//!   --> invoker::RegistryDirectory (routers, configurators)
//! ```
//!
//! Rules of the contract, which every backend keeps:
//! - a key lives in a group (Dubbo's default group is [`DEFAULT_CONFIG_GROUP`], `dubbo`);
//! - [`ConfigCenter::watch`] yields the **current** value first (`None` when the key does not
//!   exist), then every later value in order; a watcher that falls behind sees the latest value
//!   (intermediate values may be skipped, never reordered);
//! - connection trouble never yields a spurious `None`: the last known value stays until the
//!   backend has really seen the key deleted;
//! - dropping the [`ConfigWatch`] stops watching (the backend's task ends with its owner).

use std::fmt;
use std::sync::Arc;

use async_trait::async_trait;
use tokio::sync::watch;

use crate::Result;

/// Dubbo's default configuration group.
pub const DEFAULT_CONFIG_GROUP: &str = "dubbo";

/// A key's content: `None` when the key does not exist (or was deleted).
pub type ConfigValue = Option<Arc<str>>;

/// A key's content as seen by a watcher, in order; the latest value wins.
pub struct ConfigWatch {
    rx: watch::Receiver<ConfigValue>,
    seen_first: bool,
    _guard: Option<Box<dyn Send + Sync>>,
}

impl fmt::Debug for ConfigWatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ConfigWatch")
            .field("seen_first", &self.seen_first)
            .finish_non_exhaustive()
    }
}

impl ConfigWatch {
    /// A watch over `rx`; `guard` is dropped with the watch (use it to stop the backend's
    /// watching, e.g. a cancellation token's drop guard).
    pub fn new(rx: watch::Receiver<ConfigValue>, guard: Option<Box<dyn Send + Sync>>) -> Self {
        ConfigWatch {
            rx,
            seen_first: false,
            _guard: guard,
        }
    }

    /// A watch and the sender a backend feeds: `initial` is the value the watcher sees first.
    pub fn channel(
        initial: ConfigValue,
        guard: Option<Box<dyn Send + Sync>>,
    ) -> (watch::Sender<ConfigValue>, Self) {
        let (tx, rx) = watch::channel(initial);
        (tx, ConfigWatch::new(rx, guard))
    }

    /// The next value: the current one on the first call, then each change. `None` when the
    /// backend is gone (destroyed); a deleted key is `Some(None)`.
    pub async fn next(&mut self) -> Option<ConfigValue> {
        if !self.seen_first {
            self.seen_first = true;
            self.rx.mark_unchanged();
            return Some(self.rx.borrow().clone());
        }
        self.rx.changed().await.ok()?;
        Some(self.rx.borrow_and_update().clone())
    }

    /// The latest value, without waiting.
    pub fn current(&self) -> ConfigValue {
        self.rx.borrow().clone()
    }
}

/// Publishes a value to a watch only when it differs from the last one (so identical rewrites
/// are not re-delivered). Returns whether it was sent.
pub fn send_if_changed(tx: &watch::Sender<ConfigValue>, value: ConfigValue) -> bool {
    tx.send_if_modified(|cur| {
        if *cur == value {
            false
        } else {
            *cur = value;
            true
        }
    })
}

/// A dynamic-configuration source: ZooKeeper (`/dubbo/config/<group>/<key>`), Nacos config
/// (data id = key, group = group) or memory.
#[async_trait]
pub trait ConfigCenter: Send + Sync + fmt::Debug {
    /// The current content of `key` in `group`, `None` when it does not exist.
    async fn get(&self, key: &str, group: &str) -> Result<ConfigValue>;

    /// Watches `key` in `group`: the current value first, then every change (see the module
    /// rules). Fails only when the watch cannot be set up at all.
    async fn watch(&self, key: &str, group: &str) -> Result<ConfigWatch>;

    /// Writes `content` under `key` in `group` (creating it).
    async fn publish(&self, key: &str, group: &str, content: &str) -> Result<()>;

    /// Deletes `key` in `group`; deleting a missing key is not an error.
    async fn remove(&self, key: &str, group: &str) -> Result<()>;
}

/// A shared config centre.
pub type SharedConfigCenter = Arc<dyn ConfigCenter>;
