//! Connections shared per provider address (Dubbo's `getSharedClient`).
//!
//! By default every invoker of one address (one per service exported there) uses the same
//! `shareconnections` connections (1 by default), reference-counted: the last invoker released
//! closes them. `connections=N` gives an invoker N connections of its own instead.

use std::sync::Arc;

use parking_lot::Mutex;
use rustc_hash::FxHashMap;

use crate::client::Client;
use crate::config::ConnConfig;

#[derive(Debug)]
struct Shared {
    clients: Vec<Arc<Client>>,
    refs: usize,
}

/// The shared connections of one [`crate::DubboInvokerFactory`].
#[derive(Debug, Default)]
pub struct ConnectionPool {
    shared: Mutex<FxHashMap<Arc<str>, Shared>>,
}

impl ConnectionPool {
    /// An empty pool.
    pub fn new() -> Self {
        ConnectionPool::default()
    }

    /// The shared connection slots of `addr` (created with `count` slots on first use), and one
    /// more reference to them.
    pub(crate) fn acquire(
        &self,
        addr: &Arc<str>,
        count: usize,
        cfg: &ConnConfig,
        serialization: u8,
    ) -> Vec<Arc<Client>> {
        let mut m = self.shared.lock();
        let e = m.entry(addr.clone()).or_insert_with(|| Shared {
            clients: (0..count.max(1))
                .map(|_| Client::new(addr.clone(), cfg.clone(), serialization))
                .collect(),
            refs: 0,
        });
        e.refs += 1;
        e.clients.clone()
    }

    /// Drops one reference; the last one closes the address's shared connections.
    pub(crate) fn release(&self, addr: &str) {
        let closed = {
            let mut m = self.shared.lock();
            match m.get_mut(addr) {
                Some(e) if e.refs > 1 => {
                    e.refs -= 1;
                    None
                }
                Some(_) => m.remove(addr),
                None => None,
            }
        };
        if let Some(e) = closed {
            for c in e.clients {
                c.close();
            }
        }
    }

    /// Addresses with shared connections.
    pub fn addresses(&self) -> Vec<String> {
        self.shared.lock().keys().map(|k| k.to_string()).collect()
    }

    /// How many invokers reference the shared connections of `addr`.
    pub fn ref_count(&self, addr: &str) -> usize {
        self.shared.lock().get(addr).map_or(0, |e| e.refs)
    }

    /// True when `addr` has a live shared connection.
    pub fn is_connected(&self, addr: &str) -> bool {
        self.shared
            .lock()
            .get(addr)
            .is_some_and(|e| e.clients.iter().any(|c| c.is_connected()))
    }
}
