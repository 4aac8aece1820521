//! The health of a registry connection, as a watchable value.
//!
//! [`Registry::health`](crate::Registry::health) returns a `tokio::sync::watch::Receiver` of
//! [`RegistryHealth`]: the current state (connecting, connected, degraded with a reason,
//! reconnecting with a reason, closed), the server in use, when the state began, how many
//! times the connection came back after a loss, the last error, and how many registry
//! operations wait for a background retry. Backends publish their connection state through a
//! [`HealthReporter`]; the failback layer adds its pending retries (connected but with
//! operations failing is *degraded*).
//!
//! ```
//! # async fn demo(registry: std::sync::Arc<dyn registry_core::Registry>) {
//! let mut health = registry.health();
//! println!("{:?}", health.borrow().state);
//! while health.changed().await.is_ok() {
//!     let h = health.borrow_and_update().clone();
//!     println!("{} since {} ms", h.state, h.since_unix_ms);
//! }
//! # }
//! ```

use std::fmt;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use serde::Serialize;
use tokio::sync::watch;

/// The state of a registry connection.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum RegistryState {
    /// The first connection is being made.
    Connecting,
    /// Connected, and every operation went through.
    Connected,
    /// Connected, but something does not work (a read-only ZooKeeper server, operations
    /// waiting for retry, refused credentials).
    Degraded {
        /// What does not work.
        reason: String,
    },
    /// The connection was lost and is being re-made (the last lists are kept meanwhile).
    Reconnecting {
        /// Why it was lost.
        reason: String,
    },
    /// Destroyed.
    Closed,
}

impl RegistryState {
    /// The state's name: `connecting`, `connected`, `degraded`, `reconnecting`, `closed`.
    pub fn name(&self) -> &'static str {
        match self {
            RegistryState::Connecting => "connecting",
            RegistryState::Connected => "connected",
            RegistryState::Degraded { .. } => "degraded",
            RegistryState::Reconnecting { .. } => "reconnecting",
            RegistryState::Closed => "closed",
        }
    }

    /// True for connected and degraded (requests reach a server).
    pub fn is_connected(&self) -> bool {
        matches!(
            self,
            RegistryState::Connected | RegistryState::Degraded { .. }
        )
    }
}

impl fmt::Display for RegistryState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RegistryState::Degraded { reason } | RegistryState::Reconnecting { reason } => {
                write!(f, "{} ({reason})", self.name())
            }
            _ => f.write_str(self.name()),
        }
    }
}

/// A registry's health at one moment.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RegistryHealth {
    /// The state (serialized flat: `"state": "degraded", "reason": ".."`).
    #[serde(flatten)]
    pub state: RegistryState,
    /// The server in use (`host:port`), or the configured address while none is.
    pub server: Option<String>,
    /// When the state began (ms since the Unix epoch).
    pub since_unix_ms: u64,
    /// Times the connection came back after a loss (a move to another server included).
    pub reconnects: u64,
    /// The last connection or operation error (never a secret), if any.
    pub last_error: Option<String>,
    /// Registry operations (register, unregister, subscribe) waiting for a background retry.
    pub pending_retries: usize,
}

impl RegistryHealth {
    /// The health of a registry that is making its first connection to `server`.
    pub fn connecting(server: Option<String>) -> Self {
        RegistryHealth {
            state: RegistryState::Connecting,
            server,
            since_unix_ms: now_ms(),
            reconnects: 0,
            last_error: None,
            pending_retries: 0,
        }
    }

    /// The health of a registry connected to `server`.
    pub fn connected(server: Option<String>) -> Self {
        RegistryHealth {
            state: RegistryState::Connected,
            ..RegistryHealth::connecting(server)
        }
    }
}

/// Milliseconds since the Unix epoch now.
pub fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// The writing side of a registry's health: backends report their connection through it.
/// Cheap to clone; every clone writes the same value.
#[derive(Debug, Clone)]
pub struct HealthReporter {
    tx: Arc<watch::Sender<RegistryHealth>>,
}

impl HealthReporter {
    /// A reporter starting at `initial`.
    pub fn new(initial: RegistryHealth) -> Self {
        HealthReporter {
            tx: Arc::new(watch::Sender::new(initial)),
        }
    }

    /// A receiver of every change.
    pub fn subscribe(&self) -> watch::Receiver<RegistryHealth> {
        self.tx.subscribe()
    }

    /// The value now.
    pub fn current(&self) -> RegistryHealth {
        self.tx.borrow().clone()
    }

    /// Connected to `server` (nothing once closed). Coming back from [`HealthReporter::reconnecting`] counts a
    /// reconnect; a repeated call with the same server changes nothing.
    pub fn connected(&self, server: &str) {
        self.tx.send_if_modified(|h| {
            let same_server = h.server.as_deref() == Some(server);
            if (h.state == RegistryState::Connected && same_server)
                || h.state == RegistryState::Closed
            {
                return false;
            }
            if matches!(h.state, RegistryState::Reconnecting { .. }) {
                h.reconnects += 1;
            }
            if h.state != RegistryState::Connected {
                h.since_unix_ms = now_ms();
            }
            h.state = RegistryState::Connected;
            h.server = Some(server.to_owned());
            true
        });
    }

    /// Lost the connection (`reason`); the backend is making a new one.
    pub fn reconnecting(&self, reason: &str) {
        self.transition(RegistryState::Reconnecting {
            reason: reason.to_owned(),
        });
    }

    /// Connected but impaired (`reason`).
    pub fn degraded(&self, reason: &str) {
        self.transition(RegistryState::Degraded {
            reason: reason.to_owned(),
        });
    }

    /// Destroyed.
    pub fn closed(&self) {
        self.transition(RegistryState::Closed);
    }

    /// Records an error without changing the state (e.g. a failed connection attempt while
    /// connecting or reconnecting).
    pub fn error(&self, error: &str) {
        self.tx.send_if_modified(|h| {
            if h.last_error.as_deref() == Some(error) {
                return false;
            }
            h.last_error = Some(error.to_owned());
            true
        });
    }

    fn transition(&self, to: RegistryState) {
        self.tx.send_if_modified(|h| {
            if h.state == to || h.state == RegistryState::Closed {
                return false;
            }
            if let RegistryState::Reconnecting { reason } | RegistryState::Degraded { reason } = &to
            {
                h.last_error = Some(reason.clone());
            }
            // Reconnecting before ever connecting is still the first connection.
            let to = match (&h.state, to) {
                (RegistryState::Connecting, RegistryState::Reconnecting { .. }) => {
                    RegistryState::Connecting
                }
                (_, to) => to,
            };
            if h.state == to {
                return true;
            }
            h.state = to;
            h.since_unix_ms = now_ms();
            true
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reconnect_is_counted_once_per_loss() {
        let r = HealthReporter::new(RegistryHealth::connecting(Some("a:1".into())));
        let rx = r.subscribe();
        r.reconnecting("refused");
        assert_eq!(rx.borrow().state, RegistryState::Connecting);
        assert_eq!(rx.borrow().last_error.as_deref(), Some("refused"));
        r.connected("a:1");
        assert_eq!(
            rx.borrow().reconnects,
            0,
            "the first connection is no reconnect"
        );
        r.reconnecting("connection reset");
        r.reconnecting("connection reset");
        r.connected("b:2");
        r.connected("b:2");
        let h = rx.borrow().clone();
        assert_eq!(h.state, RegistryState::Connected);
        assert_eq!(h.server.as_deref(), Some("b:2"));
        assert_eq!(h.reconnects, 1);
        r.closed();
        r.connected("b:2");
        r.reconnecting("late");
        assert_eq!(rx.borrow().state, RegistryState::Closed, "closed is final");
    }

    #[test]
    fn serializes_flat() {
        let mut h = RegistryHealth::connected(Some("a:1".into()));
        h.state = RegistryState::Degraded {
            reason: "read-only".into(),
        };
        let v = serde_json::to_value(&h).unwrap();
        assert_eq!(v["state"], "degraded");
        assert_eq!(v["reason"], "read-only");
        assert_eq!(v["server"], "a:1");
    }
}
