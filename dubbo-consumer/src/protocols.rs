//! [`Protocols`]: refers each provider through the invoker factory of its URL's protocol.

use std::collections::BTreeMap;
use std::sync::Arc;

use invoker::rpc::{InvokerFactory, RpcError, RpcErrorCode, SharedInvoker};
use registry_core::Url;

/// A `protocol -> InvokerFactory` table, itself an [`InvokerFactory`]: a provider URL
/// `dubbo://...` is referred by the `dubbo` entry, `tri://...` by the `tri` entry, and a
/// protocol of your own by the factory you add with [`Protocols::with`].
///
/// [`Protocols::new`] holds the protocols this build has: `dubbo` (feature `dubbo`,
/// `protocol_dubbo::DubboInvokerFactory`: shared connections, heartbeats) and `tri`
/// (feature `triple`, `protocol_triple::TripleInvokerFactory` in wrapper mode, as a Java
/// consumer of a plain interface calls).
///
/// ```
/// use std::sync::Arc;
/// use dubbo_consumer::{Invocation, Invoker, InvokerFactory, Protocols, RpcResponse, RpcResult, Url};
///
/// #[derive(Debug)]
/// struct Echo(Url);
///
/// #[async_trait::async_trait]
/// impl Invoker for Echo {
///     fn url(&self) -> &Url { &self.0 }
///     async fn invoke(&self, inv: &Invocation) -> RpcResult {
///         Ok(RpcResponse::new(inv.method().into()))
///     }
/// }
///
/// #[derive(Debug)]
/// struct EchoFactory;
///
/// impl InvokerFactory for EchoFactory {
///     fn refer(&self, provider: &Url) -> Result<dubbo_consumer::SharedInvoker, dubbo_consumer::RpcError> {
///         Ok(Arc::new(Echo(provider.clone())))
///     }
/// }
///
/// let protocols = Protocols::new().with("echo", Arc::new(EchoFactory));
/// assert!(protocols.names().contains(&"echo"));
/// let provider = Url::parse("echo://10.0.0.1:7000/com.foo.Bar").unwrap();
/// assert!(protocols.refer(&provider).is_ok());
/// assert!(protocols.refer(&Url::parse("rmi://10.0.0.1:1099/com.foo.Bar").unwrap()).is_err());
/// ```
#[derive(Debug, Clone)]
pub struct Protocols {
    factories: BTreeMap<String, Arc<dyn InvokerFactory>>,
}

impl Protocols {
    /// The protocols of this build (see the type's docs).
    pub fn new() -> Self {
        #[allow(unused_mut)]
        let mut p = Protocols::empty();
        #[cfg(feature = "dubbo")]
        {
            p = p.with(
                "dubbo",
                Arc::new(protocol_dubbo::DubboInvokerFactory::new()),
            );
        }
        #[cfg(feature = "triple")]
        {
            p = p.with(
                "tri",
                Arc::new(protocol_triple::TripleInvokerFactory::new(
                    protocol_triple::PayloadMode::Wrapper,
                )),
            );
        }
        p
    }

    /// A table with no protocol.
    pub fn empty() -> Self {
        Protocols {
            factories: BTreeMap::new(),
        }
    }

    /// Serves providers of `protocol` with `factory` (replacing the entry of that name).
    pub fn with(mut self, protocol: &str, factory: Arc<dyn InvokerFactory>) -> Self {
        self.factories.insert(protocol.to_owned(), factory);
        self
    }

    /// Serves no providers of `protocol`.
    pub fn without(mut self, protocol: &str) -> Self {
        self.factories.remove(protocol);
        self
    }

    /// The factory of `protocol`.
    pub fn get(&self, protocol: &str) -> Option<&Arc<dyn InvokerFactory>> {
        self.factories.get(protocol)
    }

    /// The protocol names served, sorted.
    pub fn names(&self) -> Vec<&str> {
        self.factories.keys().map(String::as_str).collect()
    }
}

impl Default for Protocols {
    fn default() -> Self {
        Protocols::new()
    }
}

impl InvokerFactory for Protocols {
    fn refer(&self, provider: &Url) -> Result<SharedInvoker, RpcError> {
        let p = provider.protocol().unwrap_or("");
        match self.factories.get(p) {
            Some(f) => f.refer(provider),
            None => Err(RpcError::new(
                RpcErrorCode::Unknown,
                format!(
                    "unsupported protocol {p:?} of provider {} (supported: {})",
                    provider.to_masked_identity_string(),
                    self.names().join(", ")
                ),
            )),
        }
    }
    /// Hands `endpoint` to the factory of its protocol.
    fn preconnect(&self, endpoint: &Url) -> Option<invoker::rpc::Preconnect> {
        self.factories
            .get(endpoint.protocol().unwrap_or(""))?
            .preconnect(endpoint)
    }
}
