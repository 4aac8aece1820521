//! [`ZookeeperRegistry`]: the ZooKeeper backend behind the shared failback layer.

use registry_core::{FailbackRegistry, Url};

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

registry_core::delegate_registry!(ZookeeperRegistry => inner);
