//! [`DubboInvokerFactory`]: refers `dubbo://` providers for the directory.

use std::sync::Arc;

use invoker::rpc::{InvokerFactory, RpcError, SharedInvoker};
use registry_core::Url;

use crate::client::Client;
use crate::config::ConnConfig;
use crate::error::DubboError;
use crate::invoker::{DubboInvoker, Lease};
use crate::pool::ConnectionPool;
use crate::serialization;

/// Dubbo's default port.
pub const DEFAULT_PORT: i32 = 20880;

/// Makes a [`DubboInvoker`] per provider URL; invokers of one address share its connections.
///
/// `refer` is synchronous and never blocks: unless the URL says `lazy=true`, the connection is
/// opened in the background (on the current tokio runtime), and a call waits for it within its
/// timeout.
#[derive(Debug, Clone, Default)]
pub struct DubboInvokerFactory {
    pool: Arc<ConnectionPool>,
}

impl DubboInvokerFactory {
    /// A factory with its own connection pool.
    pub fn new() -> Self {
        DubboInvokerFactory::default()
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
        let host = match provider.host() {
            Some(h) if !h.is_empty() => h,
            _ => {
                return Err(DubboError::InvalidUrl {
                    url: provider.to_identity_string(),
                    reason: "no host".into(),
                })
            }
        };
        let port = match provider.port() {
            p if p > 0 && p <= 65535 => p,
            _ => DEFAULT_PORT,
        };
        let addr: Arc<str> = if host.contains(':') && !host.starts_with('[') {
            format!("[{host}]:{port}").into()
        } else {
            format!("{host}:{port}").into()
        };
        let cfg = ConnConfig::from_url(provider);
        let ser = serialization::choose(provider);
        let exclusive = provider.param_i64("connections", 0);
        let (clients, lease) = if exclusive > 0 {
            let n = exclusive.min(64) as usize;
            let clients = (0..n)
                .map(|_| Client::new(addr.clone(), cfg.clone(), ser))
                .collect();
            (clients, Lease::Exclusive)
        } else {
            let share = provider.param_i64("shareconnections", 1).clamp(1, 64) as usize;
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
        )))
    }
}

impl InvokerFactory for DubboInvokerFactory {
    fn refer(&self, provider: &Url) -> Result<SharedInvoker, RpcError> {
        Ok(self.refer_dubbo(provider).map_err(|e| e.to_rpc_error())? as SharedInvoker)
    }
}
