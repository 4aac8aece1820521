//! [`DubboInvokerFactory`]: refers `dubbo://` providers for the directory.

use std::sync::Arc;

use invoker::rpc::{InvokerFactory, RpcError, SharedInvoker};
use registry_core::Url;

use crate::client::Client;
use crate::config::{ConnConfig, DubboOptions};
use crate::error::DubboError;
use crate::invoker::{DubboInvoker, Lease};
use crate::pool::ConnectionPool;
use crate::serialization;

/// Dubbo's default port.
pub const DEFAULT_PORT: i32 = 20880;

/// Makes a [`DubboInvoker`] per provider URL; invokers of one address share its connections.
///
/// `refer` is synchronous and never blocks: unless the URL says `lazy=true`, the connection is
/// opened in the background (on the current tokio runtime, at most
/// [`DubboOptions::max_concurrent_connects`] at a time), and a call waits for it within its
/// timeout. What a provider URL may set for the consumer is clamped by the factory's
/// [`DubboOptions`].
#[derive(Debug, Clone)]
pub struct DubboInvokerFactory {
    pool: Arc<ConnectionPool>,
    options: Arc<DubboOptions>,
}

impl Default for DubboInvokerFactory {
    fn default() -> Self {
        DubboInvokerFactory::with_options(DubboOptions::default())
    }
}

impl DubboInvokerFactory {
    /// A factory with its own connection pool and the default [`DubboOptions`].
    pub fn new() -> Self {
        DubboInvokerFactory::default()
    }

    /// A factory with its own connection pool and the given options.
    pub fn with_options(options: DubboOptions) -> Self {
        DubboInvokerFactory {
            pool: Arc::new(ConnectionPool::with_connect_limit(
                options.max_concurrent_connects,
            )),
            options: Arc::new(options),
        }
    }

    /// The options.
    pub fn options(&self) -> &DubboOptions {
        &self.options
    }

    /// The shared connections.
    pub fn pool(&self) -> &Arc<ConnectionPool> {
        &self.pool
    }

    /// Refers one provider, keeping the concrete type (for `echo`, connection state).
    pub fn refer_dubbo(&self, provider: &Url) -> Result<Arc<DubboInvoker>, DubboError> {
        if provider.protocol() != Some("dubbo") {
            return Err(DubboError::InvalidUrl {
                url: provider.to_identity_string(),
                reason: format!(
                    "protocol {:?} is not dubbo",
                    provider.protocol().unwrap_or("")
                ),
            });
        }
        let addr: Arc<str> = match invoker::rpc::socket_address(provider, DEFAULT_PORT) {
            Some(a) => a.into(),
            None => {
                return Err(DubboError::InvalidUrl {
                    url: provider.to_identity_string(),
                    reason: "no host".into(),
                })
            }
        };
        let opts = &*self.options;
        let cfg = ConnConfig::from_url_with(provider, opts);
        let ser = serialization::choose(provider);
        let max = i64::try_from(opts.max_connections.max(1)).unwrap_or(i64::MAX);
        let exclusive = provider.param_i64("connections", 0);
        let (clients, lease) = if exclusive > 0 {
            let n = usize::try_from(exclusive.min(max)).unwrap_or(1);
            let permits = self.pool.connect_permits();
            let clients = (0..n)
                .map(|_| Client::new(addr.clone(), cfg.clone(), ser, permits.clone()))
                .collect();
            (clients, Lease::Exclusive)
        } else {
            let share = provider.param_i64("shareconnections", 1).clamp(1, max);
            let share = usize::try_from(share).unwrap_or(1);
            let clients = self.pool.acquire(&addr, share, &cfg, ser);
            (clients, Lease::Shared(self.pool.clone()))
        };
        Ok(Arc::new(DubboInvoker::new(
            provider.clone(),
            addr,
            clients,
            lease,
            ser,
            cfg.payload,
            opts.hessian,
        )))
    }
}

impl InvokerFactory for DubboInvokerFactory {
    fn refer(&self, provider: &Url) -> Result<SharedInvoker, RpcError> {
        Ok(self.refer_dubbo(provider).map_err(|e| e.to_rpc_error())? as SharedInvoker)
    }
}
