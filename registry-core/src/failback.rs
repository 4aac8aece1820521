//! Failback (§3.3): the wrapper every backend uses. Failed register/unregister/subscribe are
//! retried in the background; `recover()` re-registers everything after a new session.
//!
//! (Initial pass-through version; retries land with the core issue.)

use std::sync::Arc;

use async_trait::async_trait;

use crate::error::Result;
use crate::registry::{Registry, RegistryBackend};
use crate::subscription::{channel, Subscription};
use crate::url::Url;

/// Wraps a [`RegistryBackend`] into a [`Registry`] with failback semantics.
#[derive(Debug)]
pub struct FailbackRegistry<B: RegistryBackend> {
    backend: Arc<B>,
}

impl<B: RegistryBackend> FailbackRegistry<B> {
    /// Wraps `backend`.
    pub fn new(backend: B) -> Self {
        FailbackRegistry { backend: Arc::new(backend) }
    }

    /// The wrapped backend.
    pub fn backend(&self) -> &B {
        &self.backend
    }
}

#[async_trait]
impl<B: RegistryBackend> Registry for FailbackRegistry<B> {
    fn url(&self) -> &Url {
        self.backend.url()
    }
    fn is_available(&self) -> bool {
        self.backend.is_available()
    }
    async fn register(&self, url: &Url) -> Result<()> {
        self.backend.do_register(url).await
    }
    async fn unregister(&self, url: &Url) -> Result<()> {
        self.backend.do_unregister(url).await
    }
    async fn subscribe(&self, consumer: &Url) -> Result<Subscription> {
        let (p, s) = channel(consumer.clone());
        self.backend.do_subscribe(p).await?;
        Ok(s)
    }
    async fn lookup(&self, consumer: &Url) -> Result<Vec<Url>> {
        self.backend.do_lookup(consumer).await
    }
    async fn destroy(&self) {
        self.backend.do_destroy().await
    }
}
