//! The one error type of `registry-zk`.

use thiserror::Error;

/// Errors raised by the ZooKeeper backend. They convert into [`registry_core::Error`] at the
/// [`registry_core::RegistryBackend`] boundary; messages never contain credentials.
#[derive(Debug, Clone, Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum ZkError {
    /// The registry URL cannot be used (anyhost address, bad parameter).
    #[error("invalid zookeeper registry URL: {0}")]
    InvalidUrl(String),
    /// No session could be established in time.
    #[error("zookeeper not connected within {timeout_ms} ms: {address}")]
    NotConnected {
        /// The connect string (host:port list, no credentials).
        address: String,
        /// The connect timeout that elapsed.
        timeout_ms: u64,
    },
    /// The session exists but the connection is currently down (or no session yet).
    #[error("zookeeper not connected: {address}")]
    Disconnected {
        /// The connect string (host:port list, no credentials).
        address: String,
    },
    /// A ZooKeeper operation failed.
    #[error("zookeeper {op} {path}: {source}")]
    Operation {
        /// The operation (`create`, `delete`, `list`, `watch`).
        op: &'static str,
        /// The znode path.
        path: String,
        /// The client error.
        source: zookeeper_client::Error,
    },
    /// TLS to the ensemble cannot be set up (a file, the server's certificate, a refusal).
    #[error("zookeeper {address}: {reason}")]
    Tls {
        /// The connect string (host:port list, no credentials).
        address: String,
        /// What went wrong (the TLS error's message: peer, file, name; never key material).
        reason: String,
        /// True when a new attempt may succeed without changing the configuration.
        retryable: bool,
    },
    /// The backend has been destroyed.
    #[error("zookeeper registry destroyed")]
    Destroyed,
}

impl ZkError {
    pub(crate) fn op(op: &'static str, path: &str, source: zookeeper_client::Error) -> Self {
        ZkError::Operation {
            op,
            path: path.to_owned(),
            source,
        }
    }

    /// True when the same operation may succeed later (connection loss, timeouts, expiry).
    pub fn is_retryable(&self) -> bool {
        use zookeeper_client::Error as E;
        match self {
            ZkError::NotConnected { .. } | ZkError::Disconnected { .. } => true,
            ZkError::Operation { source, .. } => matches!(
                source,
                E::ConnectionLoss
                    | E::SessionExpired
                    | E::Timeout
                    | E::NoHosts
                    | E::Throttled
                    | E::ClientClosed
                    | E::SessionMoved
                    | E::NotReadOnly
            ),
            ZkError::Tls { retryable, .. } => *retryable,
            ZkError::InvalidUrl(_) | ZkError::Destroyed => false,
        }
    }

    /// True for authentication and permission failures.
    pub fn is_refused(&self) -> bool {
        matches!(
            self,
            ZkError::Operation {
                source: zookeeper_client::Error::NoAuth | zookeeper_client::Error::AuthFailed,
                ..
            }
        )
    }
}

impl From<ZkError> for registry_core::Error {
    fn from(e: ZkError) -> Self {
        use registry_core::Error as C;
        match &e {
            ZkError::InvalidUrl(m) => C::InvalidAddress(m.clone()),
            ZkError::Destroyed => C::Destroyed,
            ZkError::NotConnected { .. } | ZkError::Disconnected { .. } => {
                C::Unavailable(e.to_string())
            }
            ZkError::Operation {
                source: zookeeper_client::Error::Timeout,
                ..
            } => C::Timeout(e.to_string()),
            _ if e.is_refused() => C::Refused(e.to_string()),
            _ => C::Unavailable(e.to_string()),
        }
    }
}

/// Result alias of this crate.
pub type Result<T, E = ZkError> = std::result::Result<T, E>;
