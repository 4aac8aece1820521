//! Failsafe (`FailsafeClusterInvoker`): failures are logged and an empty result is returned.

use tracing::error;

use super::core::ClusterCore;
use crate::invoker_set::InvokerSet;
use crate::loadbalance::LoadBalance;
use crate::rpc::{Invocation, RpcResponse, RpcResult};

/// One `select`, one call; an error (biz or not) becomes the empty result (`null` value).
pub(crate) async fn invoke(
    core: &ClusterCore,
    invocation: &Invocation,
    set: &InvokerSet,
    lb: &dyn LoadBalance,
) -> RpcResult {
    let result = match core.select(lb, invocation, set, &[]) {
        Some(invoker) => invoker.invoke(invocation).await,
        None => Err(core.no_provider_error(invocation)),
    };
    match result {
        Ok(r) => Ok(r),
        Err(e) => {
            error!(
                method = invocation.real_method(),
                service = core.interface(),
                error = %e,
                "Failsafe ignore exception"
            );
            Ok(RpcResponse::empty())
        }
    }
}
