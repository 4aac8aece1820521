//! `memory://` as an application-level registry: an in-process [`InstanceDiscovery`] with the
//! same contract as the ZooKeeper and Nacos ones. [`MemoryInstanceDiscovery::named`] attaches
//! to the process-global store of that name, so a provider side and a consumer side in one
//! process meet.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, LazyLock};

use async_trait::async_trait;
use parking_lot::Mutex;
use tokio::sync::watch;

use crate::error::Result;
use crate::instance::{
    send_if_changed, sort_instances, InstanceDiscovery, InstanceList, InstanceWatch,
    ServiceInstance,
};
use crate::url::Url;

#[derive(Debug, Default)]
struct Store {
    /// app -> (address -> instance) and the app's watch channel.
    apps: Mutex<HashMap<String, App>>,
}

#[derive(Debug)]
struct App {
    instances: BTreeMap<String, ServiceInstance>,
    tx: watch::Sender<InstanceList>,
}

impl App {
    fn new() -> Self {
        App {
            instances: BTreeMap::new(),
            tx: watch::channel(InstanceList::from(Vec::new())).0,
        }
    }

    fn publish(&self) {
        let mut list: Vec<ServiceInstance> = self.instances.values().cloned().collect();
        sort_instances(&mut list);
        send_if_changed(&self.tx, list.into());
    }
}

static NAMED: LazyLock<Mutex<HashMap<String, Arc<Store>>>> = LazyLock::new(Default::default);

/// An in-process application-level registry.
#[derive(Debug, Clone)]
pub struct MemoryInstanceDiscovery {
    url: Url,
    store: Arc<Store>,
}

impl Default for MemoryInstanceDiscovery {
    fn default() -> Self {
        Self::new()
    }
}

impl MemoryInstanceDiscovery {
    /// An isolated, empty registry.
    pub fn new() -> Self {
        MemoryInstanceDiscovery {
            url: Url::builder("memory").build(),
            store: Arc::default(),
        }
    }

    /// The process-global registry called `name` (`memory://name`); an empty name is isolated.
    pub fn named(name: &str) -> Self {
        if name.is_empty() {
            return Self::new();
        }
        let store = NAMED.lock().entry(name.to_owned()).or_default().clone();
        MemoryInstanceDiscovery {
            url: Url::builder("memory").host(name).build(),
            store,
        }
    }

    /// The registry of a `memory://name` URL.
    pub fn from_url(url: &Url) -> Self {
        let mut me = Self::named(url.host().unwrap_or(""));
        me.url = url.clone();
        me
    }
}

#[async_trait]
impl InstanceDiscovery for MemoryInstanceDiscovery {
    fn url(&self) -> &Url {
        &self.url
    }

    async fn watch(&self, app: &str) -> Result<InstanceWatch> {
        let mut apps = self.store.apps.lock();
        let a = apps.entry(app.to_owned()).or_insert_with(App::new);
        Ok(InstanceWatch::new(a.tx.subscribe(), None))
    }

    async fn applications(&self) -> Result<Vec<String>> {
        let apps = self.store.apps.lock();
        let mut names: Vec<String> = apps
            .iter()
            .filter(|(_, a)| !a.instances.is_empty())
            .map(|(n, _)| n.clone())
            .collect();
        names.sort();
        Ok(names)
    }

    async fn register(&self, instance: &ServiceInstance) -> Result<()> {
        let mut apps = self.store.apps.lock();
        let a = apps
            .entry(instance.app().to_owned())
            .or_insert_with(App::new);
        a.instances.insert(instance.address(), instance.clone());
        a.publish();
        Ok(())
    }

    async fn unregister(&self, instance: &ServiceInstance) -> Result<()> {
        let mut apps = self.store.apps.lock();
        if let Some(a) = apps.get_mut(instance.app()) {
            if a.instances.remove(&instance.address()).is_some() {
                a.publish();
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::instance::REVISION_KEY;

    fn inst(port: i32, rev: &str) -> ServiceInstance {
        let mut m = BTreeMap::new();
        m.insert(REVISION_KEY.to_owned(), rev.to_owned());
        ServiceInstance::new("shop", "10.0.0.1", port, m)
    }

    #[tokio::test]
    async fn register_update_unregister_are_seen_in_order() {
        let d = MemoryInstanceDiscovery::new();
        let mut w = d.watch("shop").await.unwrap();
        assert!(w.next().await.unwrap().is_empty());
        d.register(&inst(2, "a")).await.unwrap();
        d.register(&inst(1, "a")).await.unwrap();
        let l = w.next().await.unwrap();
        assert_eq!(
            l.iter().map(|i| i.port()).collect::<Vec<_>>(),
            vec![1, 2],
            "sorted by address"
        );
        d.register(&inst(1, "b")).await.unwrap();
        let l = w.next().await.unwrap();
        assert_eq!(l[0].revision(), Some("b"));
        d.unregister(&inst(2, "a")).await.unwrap();
        assert_eq!(w.next().await.unwrap().len(), 1);
        assert_eq!(d.applications().await.unwrap(), vec!["shop".to_owned()]);
    }

    #[tokio::test]
    async fn named_stores_are_shared() {
        let a = MemoryInstanceDiscovery::named("mem-inst-shared");
        let b = MemoryInstanceDiscovery::named("mem-inst-shared");
        a.register(&inst(7, "r")).await.unwrap();
        let w = b.watch("shop").await.unwrap();
        assert_eq!(w.current().len(), 1);
    }
}
