//! [`TripleInvokerFactory`]: refers `tri://` providers, one shared [`Connection`] per
//! `host:port` (kept while any invoker of that address lives; TLS and plaintext connections to
//! one address are kept apart).

use std::sync::{Arc, OnceLock, Weak};

use invoker::rpc::{InvokerFactory, Preconnect, RpcError, RpcErrorCode, SharedInvoker};
use parking_lot::Mutex;
use registry_core::Url;
use rustc_hash::FxHashMap;

use tokio::sync::Semaphore;
use transport_tls::{Alpn, TlsClient, TlsConfig};

use crate::compression::Encoding;
use crate::connection::{Connection, ConnectionOptions, TlsTarget};
use crate::invoker::{TripleInvoker, TripleLimits};
use crate::payload::PayloadMode;

/// Triple's default port.
pub const DEFAULT_PORT: i32 = 50051;

/// Makes [`TripleInvoker`]s; plug it into a `RegistryDirectory` (or a static directory).
///
/// Its connections connect at most [`ConnectionOptions::max_concurrent_connects`] at a time
/// (a directory that refers thousands of providers at once does not open thousands of
/// connects at once), and what provider URLs may set is clamped by its [`TripleLimits`].
///
/// TLS: a provider whose URL says `ssl-enabled=true` (a Java provider with
/// `ProtocolConfig.sslEnabled`; Java's consumer then calls it with `https`) is called over TLS
/// with ALPN `h2`, checked against the built-in Mozilla roots unless
/// [`TripleInvokerFactory::with_tls`] gives a configuration.
#[derive(Debug)]
pub struct TripleInvokerFactory {
    mode: PayloadMode,
    options: ConnectionOptions,
    limits: TripleLimits,
    request_encoding: Encoding,
    pool: Mutex<FxHashMap<String, Weak<Connection>>>,
    permits: Arc<Semaphore>,
    tls: OnceLock<TlsClient>,
}

impl Default for TripleInvokerFactory {
    fn default() -> Self {
        Self::with_options(PayloadMode::default(), ConnectionOptions::default())
    }
}

impl TripleInvokerFactory {
    /// A factory whose invokers use `mode` and the default connection options.
    pub fn new(mode: PayloadMode) -> Self {
        Self::with_options(mode, ConnectionOptions::default())
    }

    /// A factory with explicit connection options.
    pub fn with_options(mode: PayloadMode, options: ConnectionOptions) -> Self {
        let permits = Arc::new(Semaphore::new(
            options
                .max_concurrent_connects
                .clamp(1, Semaphore::MAX_PERMITS),
        ));
        TripleInvokerFactory {
            mode,
            options,
            limits: TripleLimits::default(),
            request_encoding: Encoding::Identity,
            pool: Mutex::new(FxHashMap::default()),
            permits,
            tls: OnceLock::new(),
        }
    }

    /// Uses `cfg` for TLS connections (see the type's docs): its files are read now.
    pub fn with_tls(self, cfg: &TlsConfig) -> Result<Self, crate::TripleError> {
        let client = TlsClient::new(cfg, Alpn::H2)
            .map_err(|e| crate::TripleError::InvalidArgument(e.to_string()))?;
        Ok(TripleInvokerFactory {
            tls: OnceLock::from(client),
            ..self
        })
    }

    /// The TLS of a connection to `provider` at `host`, when it uses TLS.
    fn tls_for(&self, provider: &Url, host: &str) -> Result<Option<TlsTarget>, crate::TripleError> {
        let wanted = match self.tls.get() {
            Some(c) => c.applies_to(provider),
            None => transport_tls::provider_wants_tls(provider),
        };
        if !wanted {
            return Ok(None);
        }
        let client = match self.tls.get() {
            Some(c) => c,
            None => {
                let c = TlsClient::new(&TlsConfig::default(), Alpn::H2)
                    .map_err(|e| crate::TripleError::InvalidArgument(e.to_string()))?;
                self.tls.get_or_init(|| c)
            }
        };
        Ok(Some(TlsTarget {
            client: client.clone(),
            host: host.into(),
        }))
    }

    /// Clamps what provider URLs may set, and bounds decoding, for every invoker made from now
    /// on (see [`TripleLimits`]).
    pub fn with_limits(mut self, limits: TripleLimits) -> Self {
        self.limits = limits;
        self
    }

    /// Connects that may start now (the limit minus those in progress).
    pub fn idle_connect_permits(&self) -> usize {
        self.permits.available_permits()
    }

    /// Compresses the requests of every invoker made from now on with `encoding` (Java's
    /// `dubbo.rpc.tri.compressor`; identity, the default, compresses nothing).
    pub fn with_request_compression(mut self, encoding: Encoding) -> Self {
        self.request_encoding = encoding;
        self
    }

    /// The shared plaintext connection to `addr`, opened when there is none alive.
    pub fn connection(&self, addr: &str) -> Result<Arc<Connection>, crate::TripleError> {
        self.shared_connection(addr, None)
    }

    /// The shared connection to `addr` (TLS when `tls` is given; keyed `tls:host:port`), opened
    /// when there is none alive.
    fn shared_connection(
        &self,
        addr: &str,
        tls: Option<TlsTarget>,
    ) -> Result<Arc<Connection>, crate::TripleError> {
        let key = invoker::rpc::connection_key(addr, tls.is_some());
        let mut pool = self.pool.lock();
        if let Some(c) = pool.get(key.as_ref()).and_then(Weak::upgrade) {
            return Ok(c);
        }
        pool.retain(|_, w| w.strong_count() > 0);
        let c = Connection::open_with_permits(
            addr,
            self.options.clone(),
            Some(self.permits.clone()),
            tls,
        )?;
        pool.insert(key.into_owned(), Arc::downgrade(&c));
        Ok(c)
    }

    /// The concrete invoker (for callers that want [`TripleInvoker::call`]).
    pub fn refer_triple(&self, provider: &Url) -> Result<Arc<TripleInvoker>, RpcError> {
        let addr = invoker::rpc::socket_address(provider, DEFAULT_PORT).ok_or_else(|| {
            RpcError::new(
                RpcErrorCode::Unknown,
                format!("provider URL {provider} has no host"),
            )
        })?;
        let host = provider.host().unwrap_or_default();
        let tls = self.tls_for(provider, host).map_err(RpcError::from)?;
        let conn = self.shared_connection(&addr, tls).map_err(RpcError::from)?;
        Ok(Arc::new(
            TripleInvoker::with_limits(provider.clone(), conn, self.mode.clone(), self.limits)
                .with_request_encoding(self.request_encoding),
        ))
    }
}

impl InvokerFactory for TripleInvokerFactory {
    fn refer(&self, provider: &Url) -> Result<SharedInvoker, RpcError> {
        Ok(self.refer_triple(provider)? as SharedInvoker)
    }

    /// Opens the shared connection to the address of `endpoint` (`tri://host:port`): the
    /// connection is per address, so every invoker referred there while the returned guard
    /// lives uses it.
    fn preconnect(&self, endpoint: &Url) -> Option<Preconnect> {
        if endpoint.protocol() != Some("tri") {
            return None;
        }
        let addr = invoker::rpc::socket_address(endpoint, DEFAULT_PORT)?;
        let tls = self
            .tls_for(endpoint, endpoint.host().unwrap_or_default())
            .ok()?;
        let conn = self.shared_connection(&addr, tls).ok()?;
        Some(Preconnect::new(conn))
    }
}
