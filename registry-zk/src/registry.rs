//! [`ZookeeperRegistry`]: the ZooKeeper backend behind the shared failback layer.

use async_trait::async_trait;
use registry_core::{FailbackRegistry, Registry, Subscription, Url};

use crate::backend::ZkBackend;
use crate::error::ZkError;

/// A `zookeeper://` registry: [`ZkBackend`] wrapped in [`FailbackRegistry`] (retries, `check`
/// semantics, re-registration after a new session).
#[derive(Debug)]
pub struct ZookeeperRegistry {
    inner: FailbackRegistry<ZkBackend>,
}

impl ZookeeperRegistry {
    /// Connects to the ensemble named by `url` (see [`ZkBackend::connect`]).
    ///
    /// Errors: a bad URL ([`ZkError::InvalidUrl`]); with `check` (default true) no session
    /// within the URL's `timeout` ([`ZkError::NotConnected`]).
    /// Must be called within a Tokio runtime.
    pub async fn connect(url: &Url) -> Result<ZookeeperRegistry, ZkError> {
        let backend = ZkBackend::connect(url).await?;
        Ok(ZookeeperRegistry {
            inner: FailbackRegistry::new(backend),
        })
    }

    /// The backend (session details, configuration).
    pub fn backend(&self) -> &ZkBackend {
        self.inner.backend()
    }
}

#[async_trait]
impl Registry for ZookeeperRegistry {
    fn url(&self) -> &Url {
        self.inner.url()
    }
    fn is_available(&self) -> bool {
        self.inner.is_available()
    }
    fn health(&self) -> tokio::sync::watch::Receiver<registry_core::RegistryHealth> {
        self.inner.health()
    }
    async fn register(&self, url: &Url) -> registry_core::Result<()> {
        self.inner.register(url).await
    }
    async fn unregister(&self, url: &Url) -> registry_core::Result<()> {
        self.inner.unregister(url).await
    }
    async fn subscribe(&self, consumer: &Url) -> registry_core::Result<Subscription> {
        self.inner.subscribe(consumer).await
    }
    async fn lookup(&self, consumer: &Url) -> registry_core::Result<Vec<Url>> {
        self.inner.lookup(consumer).await
    }
    async fn destroy(&self) {
        self.inner.destroy().await
    }
}
