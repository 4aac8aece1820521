//! The one error type of `registry-nacos`.

use thiserror::Error;

/// Everything that can go wrong talking to Nacos.
///
/// Messages never contain credentials or access tokens: request URLs are never included
/// (tokens travel in a header, passwords only in login form bodies), and server replies are
/// echoed only for non-auth endpoints, truncated.
#[derive(Debug, Clone, Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum NacosError {
    /// The registry URL is unusable (no address, bad number, ...).
    #[error("invalid nacos registry URL: {0}")]
    InvalidConfig(String),
    /// A service name that is not `category:interface:version:group`.
    #[error("invalid nacos service name: {0:?}")]
    InvalidServiceName(String),
    /// No server could be reached (connection refused, reset, DNS, ...).
    #[error("nacos server {server} unreachable: {reason}")]
    Connect {
        /// `host:port` of the last server tried.
        server: String,
        /// What failed.
        reason: String,
    },
    /// A request did not complete in time.
    #[error("nacos request {op} to {server} timed out")]
    Timeout {
        /// `host:port`.
        server: String,
        /// The operation (`instance/list`, ...).
        op: &'static str,
    },
    /// The server answered 5xx (or another status that may go away).
    #[error("nacos {op} on {server} failed: HTTP {status}: {body}")]
    Server {
        /// `host:port`.
        server: String,
        /// The operation.
        op: &'static str,
        /// HTTP status.
        status: u16,
        /// The first 200 characters of the reply.
        body: String,
    },
    /// Authentication failed or the token was refused (HTTP 401/403 after a fresh login).
    #[error("nacos {op} refused on {server}: HTTP {status} (check username/password and namespace permissions)")]
    Auth {
        /// `host:port`.
        server: String,
        /// The operation.
        op: &'static str,
        /// HTTP status.
        status: u16,
    },
    /// The server rejected the request as invalid (4xx other than auth).
    #[error("nacos {op} rejected by {server}: HTTP {status}: {body}")]
    Rejected {
        /// `host:port`.
        server: String,
        /// The operation.
        op: &'static str,
        /// HTTP status.
        status: u16,
        /// The first 200 characters of the reply.
        body: String,
    },
    /// The reply could not be understood (garbage JSON, missing fields).
    #[error("malformed nacos reply to {op} from {server}: {reason}")]
    Malformed {
        /// `host:port`.
        server: String,
        /// The operation.
        op: &'static str,
        /// The parse error.
        reason: String,
    },
    /// A gRPC reply carried an error (`ErrorResponse` or `resultCode != 200`); `code` is the
    /// Nacos errorCode (300 server starting, 301 connection unregistered, 302 unsupported
    /// request, 400 invalid parameter, 403 no right, 500 server error, 503 over threshold).
    #[error("nacos {op} refused by {server}: code {code}: {message}")]
    Grpc {
        /// `host:port` (main port).
        server: String,
        /// The operation.
        op: &'static str,
        /// The Nacos errorCode.
        code: i32,
        /// The server's message (truncated), with a hint for known limits.
        message: String,
    },
    /// The registry has been destroyed.
    #[error("nacos registry destroyed")]
    Destroyed,
}

impl NacosError {
    /// True when the same request may succeed later: connection problems, timeouts, 5xx and
    /// garbage replies (a server restarting or a proxy in trouble). Configuration, name and
    /// authentication errors are not retryable.
    pub fn is_retryable(&self) -> bool {
        match self {
            NacosError::Connect { .. }
            | NacosError::Timeout { .. }
            | NacosError::Server { .. }
            | NacosError::Malformed { .. } => true,
            NacosError::Grpc { code, .. } => matches!(code, 300 | 301 | 500 | 502 | 503),
            _ => false,
        }
    }

    /// True when the gRPC connection must be replaced (the server forgot it: errorCode 301,
    /// or the transport failed).
    pub fn needs_reconnect(&self) -> bool {
        matches!(self, NacosError::Connect { .. })
            || matches!(self, NacosError::Grpc { code: 301, .. })
    }

    /// A gRPC error reply, with a hint for the limits users hit.
    pub(crate) fn grpc(server: &str, op: &'static str, code: i32, message: &str) -> Self {
        let mut message = snippet(message);
        if code == 400 && message.to_ascii_lowercase().contains("metadata") {
            message.push_str(
                " (Nacos 2.3+ limits instance metadata to 1024 characters in total: raise \
                 nacos.naming.service.metadata.length on the server or register fewer parameters; \
                 retrying)",
            );
        }
        if code == 403 {
            message.push_str(" (check username/password and namespace permissions)");
        }
        NacosError::Grpc {
            server: server.to_owned(),
            op,
            code,
            message,
        }
    }

    /// True when another server of the list should be tried for this request.
    pub(crate) fn should_fail_over(&self) -> bool {
        matches!(
            self,
            NacosError::Connect { .. } | NacosError::Timeout { .. } | NacosError::Server { .. }
        )
    }
}

/// Truncates a server reply for an error message.
pub(crate) fn snippet(body: &str) -> String {
    match body.char_indices().nth(200) {
        Some((i, _)) => format!("{}...", &body[..i]),
        None => body.to_owned(),
    }
}

impl From<NacosError> for registry_core::Error {
    fn from(e: NacosError) -> Self {
        use registry_core::Error as E;
        match &e {
            NacosError::InvalidConfig(_) | NacosError::InvalidServiceName(_) => {
                E::InvalidAddress(e.to_string())
            }
            // A garbage reply is a server in trouble: retryable, unlike core's `Malformed`.
            NacosError::Connect { .. }
            | NacosError::Server { .. }
            | NacosError::Malformed { .. } => E::Unavailable(e.to_string()),
            NacosError::Timeout { .. } => E::Timeout(e.to_string()),
            NacosError::Auth { .. } | NacosError::Rejected { .. } => E::Refused(e.to_string()),
            NacosError::Grpc { .. } if e.is_retryable() => E::Unavailable(e.to_string()),
            NacosError::Grpc { .. } => E::Refused(e.to_string()),
            NacosError::Destroyed => E::Destroyed,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classification() {
        let t = NacosError::Timeout {
            server: "h:1".into(),
            op: "x",
        };
        assert!(t.is_retryable());
        assert!(registry_core::Error::from(t).is_retryable());
        let a = NacosError::Auth {
            server: "h:1".into(),
            op: "x",
            status: 403,
        };
        assert!(!a.is_retryable());
        assert!(!NacosError::InvalidConfig("x".into()).is_retryable());
        assert_eq!(snippet(&"a".repeat(300)).len(), 203);
    }
}
