//! [`DubboInvokerFactory`]: refers `dubbo://` providers for the directory.

use std::sync::{Arc, OnceLock};

use invoker::rpc::{InvokerFactory, Preconnect, RpcError, SharedInvoker};
use registry_core::Url;

use transport_tls::{Alpn, TlsClient, TlsConfig};

use crate::client::Client;
use crate::config::{ConnConfig, DubboOptions};
use crate::connection::TlsTarget;
use crate::error::DubboError;
use crate::invoker::{DubboInvoker, Lease};
use crate::pool::{ConnectionPool, Holder, Settings};
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
///
/// TLS: a provider whose URL says `ssl-enabled=true` (a Java provider with
/// `ProtocolConfig.sslEnabled`) is called over TLS, checked against the built-in Mozilla
/// roots unless [`DubboInvokerFactory::with_tls`] gives a configuration (a CA file, a client
/// certificate for mutual TLS, a server name, or TLS for every provider).
#[derive(Debug, Clone)]
pub struct DubboInvokerFactory {
    pool: Arc<ConnectionPool>,
    options: Arc<DubboOptions>,
    tls: Arc<OnceLock<TlsClient>>,
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
            tls: Arc::new(OnceLock::new()),
        }
    }

    /// Uses `cfg` for TLS connections (see the type's docs): its files are read now, and a
    /// file that cannot be read or used is an error here rather than at the first call.
    pub fn with_tls(self, cfg: &TlsConfig) -> Result<Self, DubboError> {
        let client = TlsClient::new(cfg, Alpn::None).map_err(DubboError::Tls)?;
        Ok(DubboInvokerFactory {
            tls: Arc::new(OnceLock::from(client)),
            ..self
        })
    }

    /// The TLS client: the configured one, else the default (built on first use).
    fn tls_client(&self) -> Result<&TlsClient, DubboError> {
        if let Some(c) = self.tls.get() {
            return Ok(c);
        }
        let c = TlsClient::new(&TlsConfig::default(), Alpn::None).map_err(DubboError::Tls)?;
        Ok(self.tls.get_or_init(|| c))
    }

    /// The TLS of a connection to `provider` at `host`, when it uses TLS.
    fn tls_for(&self, provider: &Url, host: &str) -> Result<Option<TlsTarget>, DubboError> {
        let wanted = match self.tls.get() {
            Some(c) => c.applies_to(provider),
            None => transport_tls::provider_wants_tls(provider),
        };
        if !wanted {
            return Ok(None);
        }
        Ok(Some(TlsTarget {
            client: self.tls_client()?.clone(),
            host: host.into(),
        }))
    }

    /// The options.
    pub fn options(&self) -> &DubboOptions {
        &self.options
    }

    /// The shared connections.
    pub fn pool(&self) -> &Arc<ConnectionPool> {
        &self.pool
    }

    /// The address of a `dubbo://` URL.
    fn address(provider: &Url) -> Result<Arc<str>, DubboError> {
        if provider.protocol() != Some("dubbo") {
            return Err(DubboError::InvalidUrl {
                url: provider.to_identity_string(),
                reason: format!(
                    "protocol {:?} is not dubbo",
                    provider.protocol().unwrap_or("")
                ),
            });
        }
        match invoker::rpc::socket_address(provider, DEFAULT_PORT) {
            Some(a) => Ok(a.into()),
            None => Err(DubboError::InvalidUrl {
                url: provider.to_identity_string(),
                reason: "no host".into(),
            }),
        }
    }

    /// `shareconnections` of a URL, within [`DubboOptions::max_connections`].
    fn shared_count(&self, url: &Url) -> usize {
        let max = i64::try_from(self.options.max_connections.max(1)).unwrap_or(i64::MAX);
        usize::try_from(url.param_i64("shareconnections", 1).clamp(1, max)).unwrap_or(1)
    }

    /// Opens the shared connections to the address of `endpoint` (`dubbo://host:port`) ahead
    /// of its first provider (see [`InvokerFactory::preconnect`] and the pool's docs); they
    /// close when the returned lease is dropped unless an invoker took them over. `None` for
    /// a URL of another protocol, without a host, or saying `lazy=true` or `connections=N`.
    pub fn preconnect_dubbo(&self, endpoint: &Url) -> Option<Preconnect> {
        let addr = Self::address(endpoint).ok()?;
        if endpoint.param_bool("lazy", false) || endpoint.param_i64("connections", 0) > 0 {
            return None;
        }
        let tls = self
            .tls_for(endpoint, endpoint.host().unwrap_or_default())
            .ok()?;
        let key = ConnectionPool::key(&addr, tls.is_some());
        let settings = Settings {
            count: self.shared_count(endpoint),
            cfg: ConnConfig::from_url_with(endpoint, &self.options),
            serialization: serialization::choose(endpoint),
        };
        self.pool
            .acquire(&key, &addr, settings, tls.as_ref(), Holder::Ahead);
        Some(Preconnect::new(AheadLease {
            pool: self.pool.clone(),
            key,
        }))
    }

    /// Refers one provider, keeping the concrete type (for `echo`, connection state).
    pub fn refer_dubbo(&self, provider: &Url) -> Result<Arc<DubboInvoker>, DubboError> {
        let addr = Self::address(provider)?;
        let opts = &*self.options;
        let tls = self.tls_for(provider, provider.host().unwrap_or_default())?;
        let cfg = ConnConfig::from_url_with(provider, opts);
        let ser = serialization::choose(provider);
        let max = i64::try_from(opts.max_connections.max(1)).unwrap_or(i64::MAX);
        let exclusive = provider.param_i64("connections", 0);
        let (clients, lease) = if exclusive > 0 {
            let n = usize::try_from(exclusive.min(max)).unwrap_or(1);
            let permits = self.pool.connect_permits();
            let clients = (0..n)
                .map(|_| Client::new(addr.clone(), cfg.clone(), ser, permits.clone(), tls.clone()))
                .collect();
            (clients, Lease::Exclusive)
        } else {
            let key = ConnectionPool::key(&addr, tls.is_some());
            let settings = Settings {
                count: self.shared_count(provider),
                cfg: cfg.clone(),
                serialization: ser,
            };
            let clients = self
                .pool
                .acquire(&key, &addr, settings, tls.as_ref(), Holder::Invoker);
            (clients, Lease::Shared(self.pool.clone(), key))
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

    fn preconnect(&self, endpoint: &Url) -> Option<Preconnect> {
        self.preconnect_dubbo(endpoint)
    }
}

/// A preconnect's hold on the shared connections of an address.
struct AheadLease {
    pool: Arc<ConnectionPool>,
    key: Arc<str>,
}

impl Drop for AheadLease {
    fn drop(&mut self) {
        self.pool.release(&self.key, Holder::Ahead);
    }
}
