//! Connections shared per provider address (Dubbo's `getSharedClient`).
//!
//! By default every invoker of one address (one per service exported there) uses the same
//! `shareconnections` connections (1 by default), reference-counted: the last invoker released
//! closes them. `connections=N` gives an invoker N connections of its own instead. TLS and
//! plaintext connections to one address are kept apart (a provider that turns TLS on is not
//! served by the old plaintext connection): TLS entries are keyed `tls:host:port`.
//!
//! Connections opened ahead ([`crate::DubboInvokerFactory`]'s `preconnect`, before any provider
//! of the address is known) are entries held by a preconnect lease only. The first invoker
//! of the address takes them over when its provider URL asks for the same connection settings
//! (count, [`ConnConfig`], serialization), which is the common case (the defaults); when it
//! asks for others they are closed and replaced, so a connection never carries settings no
//! provider URL gave it. A connection opened ahead sends one heartbeat once connected: the
//! provider has served a request on it before the first call comes (a fresh process pays its
//! first-request costs then, not during the call).
//!
//! The pool also holds the permits of background connects (at refer time and reconnects):
//! a directory that refers 10,000 providers at once opens at most
//! [`DubboOptions::max_concurrent_connects`](crate::config::DubboOptions::max_concurrent_connects)
//! connections at a time; the rest wait their turn (calls never wait for a permit).

use std::sync::Arc;

use parking_lot::Mutex;
use rustc_hash::FxHashMap;
use tokio::sync::Semaphore;

use crate::client::Client;
use crate::config::{ConnConfig, DubboOptions};
use crate::connection::TlsTarget;

#[derive(Debug)]
struct Shared {
    clients: Vec<Arc<Client>>,
    /// Invokers and preconnect leases holding the entry.
    refs: usize,
    /// Of `refs`, the preconnect leases.
    ahead: usize,
    /// What the clients were opened with.
    settings: Settings,
}

/// The connection settings of an entry: how many connections, their configuration and
/// serialization.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Settings {
    pub(crate) count: usize,
    pub(crate) cfg: ConnConfig,
    pub(crate) serialization: u8,
}

/// Who acquires an entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Holder {
    /// An invoker of a provider at the address.
    Invoker,
    /// A connection opened ahead of any provider.
    Ahead,
}

/// The shared connections of one [`crate::DubboInvokerFactory`].
#[derive(Debug)]
pub struct ConnectionPool {
    shared: Mutex<FxHashMap<Arc<str>, Shared>>,
    connects: Arc<Semaphore>,
}

impl Default for ConnectionPool {
    fn default() -> Self {
        ConnectionPool::with_connect_limit(DubboOptions::default().max_concurrent_connects)
    }
}

impl ConnectionPool {
    /// An empty pool (default connect concurrency).
    pub fn new() -> Self {
        ConnectionPool::default()
    }

    /// An empty pool whose background connects run at most `max_concurrent` at a time.
    pub fn with_connect_limit(max_concurrent: usize) -> Self {
        ConnectionPool {
            shared: Mutex::new(FxHashMap::default()),
            connects: Arc::new(Semaphore::new(
                max_concurrent.clamp(1, Semaphore::MAX_PERMITS),
            )),
        }
    }

    /// The permits of background connects.
    pub(crate) fn connect_permits(&self) -> &Arc<Semaphore> {
        &self.connects
    }

    /// Background connects that may start now (the limit minus those in progress).
    pub fn idle_connect_permits(&self) -> usize {
        self.connects.available_permits()
    }

    /// The key of the shared connections to `addr` ([`invoker::rpc::connection_key`]).
    pub(crate) fn key(addr: &Arc<str>, tls: bool) -> Arc<str> {
        match invoker::rpc::connection_key(addr, tls) {
            std::borrow::Cow::Borrowed(_) => addr.clone(),
            std::borrow::Cow::Owned(k) => k.into(),
        }
    }

    /// The shared connection slots under `key` (created with `settings.count` slots to `addr`
    /// on first use), and one more reference to them for `holder`. The first invoker of an entry only
    /// held ahead replaces its connections when it asks for other settings (module docs).
    pub(crate) fn acquire(
        &self,
        key: &Arc<str>,
        addr: &Arc<str>,
        settings: Settings,
        tls: Option<&TlsTarget>,
        holder: Holder,
    ) -> Vec<Arc<Client>> {
        let settings = Settings {
            count: settings.count.max(1),
            ..settings
        };
        // Opened ahead: probed with a heartbeat once connected (`Client::with_probe`).
        let open = |s: &Settings| -> Vec<Arc<Client>> {
            (0..s.count)
                .map(|_| {
                    Client::with_probe(
                        addr.clone(),
                        s.cfg.clone(),
                        s.serialization,
                        self.connects.clone(),
                        tls.cloned(),
                        holder == Holder::Ahead,
                    )
                })
                .collect()
        };
        let mut replaced = Vec::new();
        let clients = {
            let mut m = self.shared.lock();
            let e = m.entry(key.clone()).or_insert_with(|| Shared {
                clients: open(&settings),
                refs: 0,
                ahead: 0,
                settings: settings.clone(),
            });
            if holder == Holder::Invoker && e.refs == e.ahead && e.settings != settings {
                tracing::debug!(%addr, "the provider asks for other connection settings than those opened ahead; reconnecting");
                replaced = std::mem::replace(&mut e.clients, open(&settings));
                e.settings = settings;
            }
            e.refs += 1;
            if holder == Holder::Ahead {
                e.ahead += 1;
            }
            e.clients.clone()
        };
        for c in replaced {
            c.close();
        }
        clients
    }

    /// Drops one reference of `holder` to the connections under `key`; the last one closes
    /// them.
    pub(crate) fn release(&self, key: &str, holder: Holder) {
        let closed = {
            let mut m = self.shared.lock();
            match m.get_mut(key) {
                Some(e) if e.refs > 1 => {
                    e.refs -= 1;
                    if holder == Holder::Ahead {
                        e.ahead = e.ahead.saturating_sub(1);
                    }
                    None
                }
                Some(_) => m.remove(key),
                None => None,
            }
        };
        if let Some(e) = closed {
            for c in e.clients {
                c.close();
            }
        }
    }

    /// Keys of the shared connections (`host:port`, `tls:host:port`).
    pub fn addresses(&self) -> Vec<String> {
        self.shared.lock().keys().map(|k| k.to_string()).collect()
    }

    /// How many invokers reference the shared connections under `addr` (a key).
    pub fn ref_count(&self, addr: &str) -> usize {
        self.shared.lock().get(addr).map_or(0, |e| e.refs)
    }

    /// True when the shared connections under `addr` (a key) include a live one.
    pub fn is_connected(&self, addr: &str) -> bool {
        self.shared
            .lock()
            .get(addr)
            .is_some_and(|e| e.clients.iter().any(|c| c.is_connected()))
    }
}
