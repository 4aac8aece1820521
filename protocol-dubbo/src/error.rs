//! The crate's error type and its mapping onto Dubbo's `RpcException` codes.

use invoker::rpc::{RpcError, RpcErrorCode};

use crate::status;

/// Everything that can go wrong on a Dubbo2 call or connection.
///
/// [`DubboError::to_rpc_error`] maps it the way Java's `DefaultFuture` / `AbstractInvoker` do:
/// timeouts (status 30/31) are code 2, every other transport failure and non-OK status is a
/// network error (code 1, retried by failover), a provider exception is biz (code 3).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DubboError {
    /// The provider URL cannot be referred (wrong protocol, no host).
    #[error("invalid provider URL {url}: {reason}")]
    InvalidUrl {
        /// The URL as given (without credentials).
        url: String,
        /// What is wrong.
        reason: String,
    },
    /// TCP connect failed.
    #[error("cannot connect to {addr}: {source}")]
    Connect {
        /// `host:port`.
        addr: String,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The TLS handshake failed, or a TLS setting cannot be used.
    #[error("{0}")]
    Tls(transport_tls::TlsError),
    /// TCP connect did not finish within `connect.timeout` (or the call's deadline).
    #[error("connect to {addr} timed out after {ms} ms")]
    ConnectTimeout {
        /// `host:port`.
        addr: String,
        /// The limit that passed.
        ms: u64,
    },
    /// The connection closed while the call was pending (Java status 35 CHANNEL_INACTIVE).
    #[error("connection to {addr} lost: {reason}")]
    ConnectionLost {
        /// `host:port`.
        addr: String,
        /// Why it closed.
        reason: String,
    },
    /// A frame did not start with `0xDABB`.
    #[error("invalid magic 0x{found:04x} in frame header (expected 0xdabb)")]
    BadMagic {
        /// The two bytes found.
        found: u16,
    },
    /// A frame announced a negative body length.
    #[error("invalid body length {len} in frame header")]
    BadLength {
        /// The length field.
        len: i32,
    },
    /// A request or response body is larger than the `payload` limit (default 8 MiB).
    #[error("{what} of {len} bytes exceeds the payload limit of {limit} bytes")]
    PayloadTooLarge {
        /// "request" or "response".
        what: &'static str,
        /// The body length.
        len: u64,
        /// The limit.
        limit: u64,
    },
    /// Hessian2 encode/decode failure.
    #[error("{0}")]
    Hessian(#[from] hessian2::Error),
    /// The provider answered with a non-OK status and its message.
    #[error("provider {addr} answered status {status} ({}): {message}", status::name(*status))]
    Status {
        /// `host:port`.
        addr: String,
        /// The status byte.
        status: u8,
        /// The provider's message.
        message: String,
    },
    /// No response within the call's timeout (Java status 31 SERVER_TIMEOUT).
    #[error(
        "Invoke remote method timeout. method: {method}, provider: {addr}, cause: waiting \
         server-side response timeout, elapsed: {elapsed_ms} ms, timeout: {timeout_ms} ms"
    )]
    Timeout {
        /// The method called.
        method: String,
        /// `host:port`.
        addr: String,
        /// Time waited.
        elapsed_ms: u64,
        /// The call's timeout.
        timeout_ms: u64,
    },
    /// The response used a serialization this crate does not decode.
    #[error("unsupported serialization id {0} in response (only hessian2 = 2)")]
    UnsupportedSerialization(u8),
    /// The response body had an unexpected shape.
    #[error("bad response body: {0}")]
    BadResponse(String),
    /// The provider's code threw: the Java exception class and message.
    #[error("{class}: {message}")]
    Biz {
        /// The exception class, e.g. `java.lang.IllegalStateException`.
        class: String,
        /// Its message (`detailMessage`).
        message: String,
    },
    /// The invoker or its connection was destroyed.
    #[error("invoker for {addr} is destroyed")]
    Closed {
        /// `host:port`.
        addr: String,
    },
}

impl DubboError {
    /// True when another attempt (on this or another provider) may succeed.
    pub fn is_retryable(&self) -> bool {
        !matches!(
            self,
            DubboError::Biz { .. }
                | DubboError::InvalidUrl { .. }
                | DubboError::PayloadTooLarge {
                    what: "request",
                    ..
                }
        )
    }

    /// The Dubbo `RpcException` this error becomes.
    pub fn to_rpc_error(&self) -> RpcError {
        let code = match self {
            DubboError::Biz { class, message } => return RpcError::biz(class, message),
            DubboError::Timeout { .. } => RpcErrorCode::Timeout,
            DubboError::Status { status, .. }
                if *status == status::CLIENT_TIMEOUT || *status == status::SERVER_TIMEOUT =>
            {
                RpcErrorCode::Timeout
            }
            DubboError::Hessian(_)
            | DubboError::UnsupportedSerialization(_)
            | DubboError::PayloadTooLarge { .. } => RpcErrorCode::Serialization,
            DubboError::InvalidUrl { .. } => RpcErrorCode::Unknown,
            _ => RpcErrorCode::Network,
        };
        RpcError::new(code, self.to_string())
    }
}

impl From<DubboError> for RpcError {
    fn from(e: DubboError) -> Self {
        e.to_rpc_error()
    }
}
