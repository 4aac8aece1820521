//! [`TripleError`]: every way a Triple call can fail, and its mapping to Dubbo's [`RpcError`].

use std::time::Duration;

use invoker::rpc::{RpcError, RpcErrorCode};

use crate::status::Code;

/// A failed Triple call or a bad configuration.
///
/// Messages name what was wrong (address, status, sizes) and never carry credentials.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TripleError {
    /// The TCP connect or the HTTP/2 handshake failed.
    #[error("connect to {addr} failed: {reason}")]
    Connect {
        /// `host:port`.
        addr: String,
        /// What went wrong.
        reason: String,
    },
    /// The connection is down (and being re-established in the background).
    #[error("connection to {addr} is not available: {reason}")]
    Unavailable {
        /// `host:port`.
        addr: String,
        /// The last connection error.
        reason: String,
    },
    /// The connection's owner was destroyed.
    #[error("the Triple invoker for {0} is destroyed")]
    Destroyed(String),
    /// An HTTP/2 level failure of the stream or connection (RST_STREAM, GOAWAY, I/O).
    #[error("HTTP/2 error talking to {addr}: {reason}")]
    Http2 {
        /// `host:port`.
        addr: String,
        /// h2's description (reason code, GOAWAY, I/O error).
        reason: String,
    },
    /// No complete answer within the call timeout.
    #[error("Triple call timed out after {0:?} (grpc-timeout sent)")]
    Timeout(Duration),
    /// The server answered with a non-OK `grpc-status` (or an HTTP status mapped to one).
    #[error("gRPC status {} {}: {message}", code.as_u32(), code.name())]
    Status {
        /// The gRPC status code.
        code: Code,
        /// The percent-decoded `grpc-message` (or a description of the HTTP failure).
        message: String,
    },
    /// The provider's business code threw (`tri-exception-code: 3` with a wrapped Throwable).
    #[error("business exception {class}: {message}")]
    Biz {
        /// The Java exception class.
        class: String,
        /// Its `detailMessage`.
        message: String,
    },
    /// The peer broke the gRPC framing or HTTP rules (garbage, wrong content type, truncation).
    #[error("protocol violation from {addr}: {reason}")]
    Protocol {
        /// `host:port`.
        addr: String,
        /// What was wrong.
        reason: String,
    },
    /// A message is larger than the configured limit.
    #[error("{direction} message of {size} bytes exceeds the limit of {limit} bytes")]
    TooLarge {
        /// `request` or `response`.
        direction: &'static str,
        /// The announced or actual size.
        size: usize,
        /// The limit.
        limit: usize,
    },
    /// A payload could not be encoded or decoded (protobuf, Hessian2, JSON).
    #[error("serialization: {0}")]
    Codec(String),
    /// Bad arguments or configuration from the caller (unknown service, bad URL, bad JSON).
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
}

impl TripleError {
    /// True when another attempt (or another provider) may succeed: connection and
    /// stream failures, timeouts and retryable statuses; false for business exceptions, bad
    /// arguments and codec errors.
    pub fn is_retryable(&self) -> bool {
        match self {
            TripleError::Connect { .. }
            | TripleError::Unavailable { .. }
            | TripleError::Http2 { .. }
            | TripleError::Timeout(_)
            | TripleError::Protocol { .. } => true,
            TripleError::Status { code, .. } => !matches!(
                code,
                Code::InvalidArgument | Code::Unauthenticated | Code::PermissionDenied
            ),
            TripleError::Destroyed(_)
            | TripleError::Biz { .. }
            | TripleError::TooLarge { .. }
            | TripleError::Codec(_)
            | TripleError::InvalidArgument(_) => false,
        }
    }

    /// True for a timeout (ours, or `DEADLINE_EXCEEDED` from the server).
    pub fn is_timeout(&self) -> bool {
        matches!(
            self,
            TripleError::Timeout(_)
                | TripleError::Status {
                    code: Code::DeadlineExceeded,
                    ..
                }
        )
    }

    /// The Dubbo `RpcException` code (`TriRpcStatus.triCodeToDubboCode` for statuses).
    pub fn rpc_code(&self) -> RpcErrorCode {
        match self {
            TripleError::Connect { .. }
            | TripleError::Unavailable { .. }
            | TripleError::Http2 { .. }
            | TripleError::Protocol { .. }
            | TripleError::Destroyed(_) => RpcErrorCode::Network,
            TripleError::Timeout(_) => RpcErrorCode::Timeout,
            TripleError::Status { code, .. } => match code {
                Code::DeadlineExceeded => RpcErrorCode::Timeout,
                Code::PermissionDenied => RpcErrorCode::Forbidden,
                Code::Unavailable => RpcErrorCode::Network,
                Code::Unimplemented => RpcErrorCode::MethodNotFound,
                _ => RpcErrorCode::Unknown,
            },
            TripleError::Biz { .. } => RpcErrorCode::Biz,
            TripleError::TooLarge { .. } | TripleError::Codec(_) => RpcErrorCode::Serialization,
            TripleError::InvalidArgument(_) => RpcErrorCode::Unknown,
        }
    }
}

impl From<TripleError> for RpcError {
    fn from(e: TripleError) -> Self {
        match e {
            TripleError::Biz { class, message } => RpcError::biz(class, message),
            other => RpcError::new(other.rpc_code(), other.to_string()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status(code: Code) -> RpcErrorCode {
        TripleError::Status {
            code,
            message: String::new(),
        }
        .rpc_code()
    }

    /// `TriRpcStatus.triCodeToDubboCode`: 4, 7, 14 and 12 have their own Dubbo codes,
    /// everything else is UNKNOWN.
    #[test]
    fn grpc_statuses_map_to_dubbo_codes_as_java() {
        assert_eq!(status(Code::DeadlineExceeded), RpcErrorCode::Timeout);
        assert_eq!(status(Code::PermissionDenied), RpcErrorCode::Forbidden);
        assert_eq!(status(Code::Unavailable), RpcErrorCode::Network);
        assert_eq!(status(Code::Unimplemented), RpcErrorCode::MethodNotFound);
        assert_eq!(RpcErrorCode::MethodNotFound.as_i32(), 11);
        assert_eq!(RpcErrorCode::from_i32(11), RpcErrorCode::MethodNotFound);
        for other in [
            Code::Unknown,
            Code::Internal,
            Code::NotFound,
            Code::InvalidArgument,
        ] {
            assert_eq!(status(other), RpcErrorCode::Unknown, "{other:?}");
        }
    }
}
