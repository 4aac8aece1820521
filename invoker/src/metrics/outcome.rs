//! How a finished call counts (Dubbo's `MetricsSupport#getMetricsKey` and
//! `MetricsClusterFilter`).

use crate::rpc::{RpcErrorCode, RpcResult};

/// What a finished call was, for the request counters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// A result.
    Succeed,
    /// The provider's code threw (a business exception).
    Business,
    /// Timed out (code 2).
    Timeout,
    /// A concurrency limit refused it (code 7).
    Limit,
    /// Could not be (de)serialized (code 5).
    Codec,
    /// A network failure (code 1).
    Network,
    /// The registry forbids the service (code 4): counted as unknown *and* service
    /// unavailable, as Java's two filters do.
    Forbidden,
    /// Any other failure (no provider after routing, unknown, expired deadline, ...).
    Unknown,
}

impl Outcome {
    /// The outcome of `r`.
    pub fn of(r: &RpcResult) -> Outcome {
        let Err(e) = r else {
            return Outcome::Succeed;
        };
        // Java tests the exact codes (`RpcException#isTimeout` is code 2 only).
        match e.code {
            RpcErrorCode::Biz => Outcome::Business,
            RpcErrorCode::Timeout => Outcome::Timeout,
            RpcErrorCode::LimitExceeded => Outcome::Limit,
            RpcErrorCode::Serialization => Outcome::Codec,
            RpcErrorCode::Network => Outcome::Network,
            RpcErrorCode::Forbidden => Outcome::Forbidden,
            _ => Outcome::Unknown,
        }
    }

    /// True for every outcome but [`Outcome::Succeed`].
    pub fn is_failure(self) -> bool {
        self != Outcome::Succeed
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rpc::{RpcError, RpcResponse};

    #[test]
    fn codes_map_as_in_java() {
        let e = |c| Outcome::of(&Err(RpcError::new(c, "x")));
        assert_eq!(Outcome::of(&Ok(RpcResponse::empty())), Outcome::Succeed);
        assert_eq!(
            Outcome::of(&Err(RpcError::biz("E", "m"))),
            Outcome::Business
        );
        assert_eq!(e(RpcErrorCode::Timeout), Outcome::Timeout);
        assert_eq!(e(RpcErrorCode::TimeoutTerminate), Outcome::Unknown);
        assert_eq!(e(RpcErrorCode::LimitExceeded), Outcome::Limit);
        assert_eq!(e(RpcErrorCode::Serialization), Outcome::Codec);
        assert_eq!(e(RpcErrorCode::Network), Outcome::Network);
        assert_eq!(e(RpcErrorCode::Forbidden), Outcome::Forbidden);
        assert_eq!(
            e(RpcErrorCode::NoInvokerAvailableAfterFilter),
            Outcome::Unknown
        );
        assert_eq!(e(RpcErrorCode::MethodNotFound), Outcome::Unknown);
    }
}
