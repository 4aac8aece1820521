//! The `Invoker` trait (the user's transport) and the factory that makes one per provider.

use std::fmt::Debug;
use std::sync::Arc;

use async_trait::async_trait;
use registry_core::Url;

use super::{Invocation, RpcError, RpcResponse};

/// The result of one call.
pub type RpcResult = Result<RpcResponse, RpcError>;

/// Something that can perform a call: a connection to one provider, or a whole cluster.
///
/// Implementations must be cheap to call concurrently. `invoke` futures may be dropped
/// (cancelled) at any await point.
#[async_trait]
pub trait Invoker: Send + Sync + Debug {
    /// The URL this invoker serves: for a provider, the merged provider URL the consumer sees.
    fn url(&self) -> &Url;

    /// For a cluster invoker (one registry of a multi-registry reference): the registry URL
    /// its directory follows. Load balancing reads such an invoker's weight from it (Dubbo's
    /// `AbstractLoadBalance#getWeight` on a `ClusterInvoker`). `None` for provider invokers.
    fn registry_url(&self) -> Option<&Url> {
        None
    }

    /// False when the invoker knows it cannot serve (connection down, destroyed).
    fn is_available(&self) -> bool {
        true
    }

    /// Performs the call.
    async fn invoke(&self, invocation: &Invocation) -> RpcResult;

    /// Releases resources; called once when the directory retires this invoker (after its
    /// in-flight calls finished or were dropped).
    fn destroy(&self) {}
}

/// A shared invoker.
pub type SharedInvoker = Arc<dyn Invoker>;

/// Turns a provider URL into an invoker: this is where the user's transport plugs in.
///
/// The directory calls `refer` once per distinct provider URL and reuses the invoker while
/// the URL is unchanged.
pub trait InvokerFactory: Send + Sync + Debug {
    /// Creates the invoker for a provider. An error skips this provider (logged), it does not
    /// fail the whole notification.
    fn refer(&self, provider: &Url) -> Result<SharedInvoker, RpcError>;

    /// Starts connecting to `endpoint` (`protocol://host:port`, no service yet) ahead of the
    /// first [`InvokerFactory::refer`] of a provider there: the directory asks when its
    /// registry expects providers at that address soon (a new application-level instance
    /// whose MetadataInfo is being fetched). The connection stays open while the returned
    /// guard lives; a `refer` meanwhile uses it when the provider URL asks for the same
    /// connection settings. `None` (the default): nothing is opened ahead.
    fn preconnect(&self, endpoint: &Url) -> Option<Preconnect> {
        let _ = endpoint;
        None
    }
}

/// What [`InvokerFactory::preconnect`] opened; dropping it lets the connection go unless an
/// invoker uses it by then.
pub struct Preconnect {
    _held: Box<dyn Send + Sync>,
}

impl Preconnect {
    /// Holds `held` (the connection, or a lease on it) until dropped.
    pub fn new<T: Send + Sync + 'static>(held: T) -> Self {
        Preconnect {
            _held: Box::new(held),
        }
    }
}

impl Debug for Preconnect {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Preconnect")
    }
}

#[doc(hidden)]
pub type __Url = Url;

/// Writes, inside an `impl Invoker for Wrapper` block, the [`Invoker`] methods a wrapper
/// (filter) hands unchanged to the invoker it wraps: `url`, `registry_url`, `is_available`
/// and `destroy`, so that no wrapper silently keeps a default method of the trait. The
/// wrapper writes its own `invoke`. `delegate_invoker!(inner => url, is_available, destroy)`
/// hands on only the methods listed (the wrapper writes the others).
///
/// ```
/// use invoker::rpc::{Invocation, Invoker, RpcResult, SharedInvoker};
///
/// /// Logs every call, then hands it on.
/// #[derive(Debug)]
/// struct Logged {
///     inner: SharedInvoker,
/// }
///
/// #[async_trait::async_trait]
/// impl Invoker for Logged {
///     invoker::delegate_invoker!(inner);
///
///     async fn invoke(&self, invocation: &Invocation) -> RpcResult {
///         tracing::info!(method = invocation.real_method(), "call");
///         self.inner.invoke(invocation).await
///     }
/// }
/// ```
#[macro_export]
macro_rules! delegate_invoker {
    ($field:ident) => {
        $crate::delegate_invoker!($field => url, registry_url, is_available, destroy);
    };
    ($field:ident => $($method:ident),+ $(,)?) => {
        $( $crate::delegate_invoker!(@ $method $field); )+
    };
    (@ url $field:ident) => {
        fn url(&self) -> &$crate::rpc::__Url {
            $crate::rpc::Invoker::url(&*self.$field)
        }
    };
    (@ registry_url $field:ident) => {
        fn registry_url(&self) -> ::std::option::Option<&$crate::rpc::__Url> {
            $crate::rpc::Invoker::registry_url(&*self.$field)
        }
    };
    (@ is_available $field:ident) => {
        fn is_available(&self) -> bool {
            $crate::rpc::Invoker::is_available(&*self.$field)
        }
    };
    (@ destroy $field:ident) => {
        fn destroy(&self) {
            $crate::rpc::Invoker::destroy(&*self.$field)
        }
    };
}
