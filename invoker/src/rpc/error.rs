//! `RpcException` with Dubbo's codes.

use std::fmt;

/// Dubbo's `RpcException` codes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum RpcErrorCode {
    /// 0: unknown.
    Unknown,
    /// 1: network.
    Network,
    /// 2: timeout.
    Timeout,
    /// 3: business exception (thrown by the provider's code).
    Biz,
    /// 4: forbidden (no provider from the registry, or disabled).
    Forbidden,
    /// 5: serialization.
    Serialization,
    /// 6: no invoker available after routing/filtering.
    NoInvokerAvailableAfterFilter,
    /// 7: concurrency limit exceeded (ActiveLimit).
    LimitExceeded,
    /// 8: the propagated timeout had already expired.
    TimeoutTerminate,
    /// 11: the provider has no such service or method (Triple's `UNIMPLEMENTED`,
    /// `TriRpcStatus.triCodeToDubboCode`).
    MethodNotFound,
}

impl RpcErrorCode {
    /// The numeric code Dubbo uses.
    pub fn as_i32(self) -> i32 {
        match self {
            RpcErrorCode::Unknown => 0,
            RpcErrorCode::Network => 1,
            RpcErrorCode::Timeout => 2,
            RpcErrorCode::Biz => 3,
            RpcErrorCode::Forbidden => 4,
            RpcErrorCode::Serialization => 5,
            RpcErrorCode::NoInvokerAvailableAfterFilter => 6,
            RpcErrorCode::LimitExceeded => 7,
            RpcErrorCode::TimeoutTerminate => 8,
            RpcErrorCode::MethodNotFound => 11,
        }
    }

    /// The code for a numeric value (unknown values map to `Unknown`).
    pub fn from_i32(v: i32) -> Self {
        match v {
            1 => RpcErrorCode::Network,
            2 => RpcErrorCode::Timeout,
            3 => RpcErrorCode::Biz,
            4 => RpcErrorCode::Forbidden,
            5 => RpcErrorCode::Serialization,
            6 => RpcErrorCode::NoInvokerAvailableAfterFilter,
            7 => RpcErrorCode::LimitExceeded,
            8 => RpcErrorCode::TimeoutTerminate,
            11 => RpcErrorCode::MethodNotFound,
            _ => RpcErrorCode::Unknown,
        }
    }
}

/// An RPC failure: Dubbo's `RpcException`.
///
/// A *biz* error is one the provider's business code raised (it carries the exception class
/// name); it is never retried or mocked. Everything else is a transport/cluster failure.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct RpcError {
    /// The code.
    pub code: RpcErrorCode,
    /// The message (never contains credentials).
    pub message: String,
    /// For biz errors: the exception class name, e.g. `java.lang.IllegalStateException`.
    pub exception_class: Option<String>,
}

impl RpcError {
    /// A new error with a code and a message.
    pub fn new(code: RpcErrorCode, message: impl Into<String>) -> Self {
        RpcError {
            code,
            message: message.into(),
            exception_class: None,
        }
    }

    /// A biz error carrying the exception class name.
    pub fn biz(exception_class: impl Into<String>, message: impl Into<String>) -> Self {
        RpcError {
            code: RpcErrorCode::Biz,
            message: message.into(),
            exception_class: Some(exception_class.into()),
        }
    }

    /// True for a business exception (never retried, never mocked).
    pub fn is_biz(&self) -> bool {
        self.code == RpcErrorCode::Biz
    }

    /// True for a timeout.
    pub fn is_timeout(&self) -> bool {
        matches!(
            self.code,
            RpcErrorCode::Timeout | RpcErrorCode::TimeoutTerminate
        )
    }

    /// True for a network error.
    pub fn is_network(&self) -> bool {
        self.code == RpcErrorCode::Network
    }

    /// True for "forbidden" (no provider from the registry).
    pub fn is_forbidden(&self) -> bool {
        self.code == RpcErrorCode::Forbidden
    }

    /// True when ActiveLimit rejected the call.
    pub fn is_limit_exceeded(&self) -> bool {
        self.code == RpcErrorCode::LimitExceeded
    }

    /// True when another provider or a later attempt may succeed (not biz, not forbidden).
    pub fn is_retryable(&self) -> bool {
        !matches!(self.code, RpcErrorCode::Biz | RpcErrorCode::Forbidden)
    }
}

impl fmt::Display for RpcError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.exception_class {
            Some(c) => write!(f, "{c}: {} (code {})", self.message, self.code.as_i32()),
            None => write!(f, "{} (code {})", self.message, self.code.as_i32()),
        }
    }
}
