//! The subscription contract: the [`Registry`] trait every backend offers to consumers, and the
//! lower-level [`RegistryBackend`] a backend implements so the shared failback layer
//! ([`crate::failback::FailbackRegistry`]) can wrap it.

use std::fmt::Debug;
use std::sync::Arc;

use async_trait::async_trait;

use tokio::sync::watch;

use crate::error::Result;
use crate::health::{RegistryHealth, RegistryState};
use crate::subscription::{Publisher, Subscription};
use crate::url::Url;

/// A service registry as a consumer or provider sees it.
///
/// # Ordering and delivery
/// [`Registry::subscribe`] returns a [`Subscription`]: an ordered stream with one
/// [`crate::Notification`] per category, each the **complete** current list (see
/// [`crate::subscription`] for the coalescing rules). The first notifications (one per
/// subscribed category) are queued before `subscribe` returns when the registry is reachable.
/// "No providers" is an explicit `empty://` URL, never an empty list. A connection
/// problem never produces an empty notification: the last good list stays until the registry
/// says otherwise.
///
/// # Errors
/// `register`/`unregister`/`subscribe` fail only when `check=true` holds on both the registry
/// URL and the operation's URL and there is no fallback; otherwise the operation is retried in
/// the background (failback, as Dubbo's `FailbackRegistry`) and `Ok` is returned. Errors classify
/// themselves with [`crate::Error::is_retryable`].
///
/// # Lifetime
/// Dropping a [`Subscription`] unsubscribes. [`Registry::destroy`] unregisters dynamic URLs,
/// ends every subscription stream and stops background tasks.
#[async_trait]
pub trait Registry: Send + Sync + Debug {
    /// The registry URL (credentials are never shown by its `Display`).
    fn url(&self) -> &Url;

    /// True while the registry is connected and usable.
    fn is_available(&self) -> bool;

    /// The connection's health, as a receiver that sees every change (see
    /// [`crate::health`]). The default is a fixed value from [`Registry::is_available`] that
    /// never changes; the registries of this workspace report every change.
    fn health(&self) -> watch::Receiver<RegistryHealth> {
        let mut h = RegistryHealth::connected(self.url().address());
        if !self.is_available() {
            h.state = RegistryState::Reconnecting {
                reason: "not available".to_owned(),
            };
        }
        watch::channel(h).1
    }

    /// Registers a URL (a provider, or a consumer with `category=consumers`).
    async fn register(&self, url: &Url) -> Result<()>;

    /// Removes a registration.
    async fn unregister(&self, url: &Url) -> Result<()>;

    /// Subscribes to the categories of `consumer` (`category` param, default providers).
    async fn subscribe(&self, consumer: &Url) -> Result<Subscription>;

    /// The current matching URLs of every subscribed category (one-off, no watch).
    async fn lookup(&self, consumer: &Url) -> Result<Vec<Url>>;

    /// Unregisters dynamic URLs, ends all subscriptions and stops background work.
    async fn destroy(&self);
}

#[async_trait]
impl<R: Registry + ?Sized> Registry for Arc<R> {
    fn url(&self) -> &Url {
        (**self).url()
    }
    fn is_available(&self) -> bool {
        (**self).is_available()
    }
    fn health(&self) -> watch::Receiver<RegistryHealth> {
        (**self).health()
    }
    async fn register(&self, url: &Url) -> Result<()> {
        (**self).register(url).await
    }
    async fn unregister(&self, url: &Url) -> Result<()> {
        (**self).unregister(url).await
    }
    async fn subscribe(&self, consumer: &Url) -> Result<Subscription> {
        (**self).subscribe(consumer).await
    }
    async fn lookup(&self, consumer: &Url) -> Result<Vec<Url>> {
        (**self).lookup(consumer).await
    }
    async fn destroy(&self) {
        (**self).destroy().await
    }
}

#[doc(hidden)]
pub use async_trait::async_trait as __async_trait;
#[doc(hidden)]
pub type __HealthWatch = watch::Receiver<RegistryHealth>;

/// Implements [`Registry`] for a wrapper type by handing every method, `health` included, to
/// one of its fields (as a rule a [`FailbackRegistry`](crate::FailbackRegistry)), so that no
/// wrapper silently keeps a default method of the trait.
///
/// ```
/// use registry_core::{delegate_registry, FailbackRegistry};
/// use registry_core::memory::MemoryBackend;
///
/// /// A registry of one's own over the in-process backend.
/// #[derive(Debug)]
/// struct Mine {
///     inner: FailbackRegistry<MemoryBackend>,
/// }
/// delegate_registry!(Mine => inner);
/// ```
#[macro_export]
macro_rules! delegate_registry {
    ($ty:ty => $field:ident) => {
        #[$crate::registry::__async_trait]
        impl $crate::Registry for $ty {
            fn url(&self) -> &$crate::Url {
                $crate::Registry::url(&self.$field)
            }
            fn is_available(&self) -> bool {
                $crate::Registry::is_available(&self.$field)
            }
            fn health(&self) -> $crate::registry::__HealthWatch {
                $crate::Registry::health(&self.$field)
            }
            async fn register(&self, url: &$crate::Url) -> $crate::Result<()> {
                $crate::Registry::register(&self.$field, url).await
            }
            async fn unregister(&self, url: &$crate::Url) -> $crate::Result<()> {
                $crate::Registry::unregister(&self.$field, url).await
            }
            async fn subscribe(
                &self,
                consumer: &$crate::Url,
            ) -> $crate::Result<$crate::Subscription> {
                $crate::Registry::subscribe(&self.$field, consumer).await
            }
            async fn lookup(&self, consumer: &$crate::Url) -> $crate::Result<Vec<$crate::Url>> {
                $crate::Registry::lookup(&self.$field, consumer).await
            }
            async fn destroy(&self) {
                $crate::Registry::destroy(&self.$field).await
            }
        }
    };
}

/// What a backend (ZooKeeper, Nacos, memory) implements; [`crate::failback::FailbackRegistry`]
/// turns it into a [`Registry`] with retries, `check` semantics, the cache file and recovery.
#[async_trait]
pub trait RegistryBackend: Send + Sync + Debug + 'static {
    /// The registry URL.
    fn url(&self) -> &Url;

    /// True while connected.
    fn is_available(&self) -> bool;

    /// The connection's state as the backend sees it (see [`crate::health`]); the failback
    /// layer adds its pending retries. `None`: derived from [`RegistryBackend::is_available`].
    fn health(&self) -> Option<watch::Receiver<RegistryHealth>> {
        None
    }

    /// Creates the registration once. Must be idempotent (an existing node is replaced).
    async fn do_register(&self, url: &Url) -> Result<()>;

    /// Removes the registration once. Removing an absent registration is `Ok`.
    async fn do_unregister(&self, url: &Url) -> Result<()>;

    /// Starts watching for `publisher.consumer()`: publishes the current list of every
    /// subscribed category before returning, then keeps publishing changes until
    /// `publisher.is_closed()`. The backend owns the watch from then on, including its
    /// recovery after reconnects and session loss. On error nothing must keep running.
    async fn do_subscribe(&self, publisher: Publisher) -> Result<()>;

    /// One-off read of the current matching URLs of every subscribed category.
    async fn do_lookup(&self, consumer: &Url) -> Result<Vec<Url>>;

    /// A receiver whose value increases each time the backend starts a **new session** (its
    /// ephemeral registrations are gone): the failback layer then re-registers everything.
    /// `None` for backends without sessions.
    fn session_generation(&self) -> Option<tokio::sync::watch::Receiver<u64>> {
        None
    }

    /// Closes connections and stops every task.
    async fn do_destroy(&self);
}
