//! Failfast (`FailfastClusterInvoker`): one attempt; any failure is reported at once.

use super::core::ClusterCore;
use crate::invoker_set::InvokerSet;
use crate::loadbalance::LoadBalance;
use crate::rpc::{Invocation, RpcError, RpcResult};

/// One `select`, one call. A biz error is returned as is; any other error keeps its code and
/// gets the "Failfast invoke providers ..." message.
pub(crate) async fn invoke(
    core: &ClusterCore,
    invocation: &Invocation,
    set: &InvokerSet,
    lb: &dyn LoadBalance,
) -> RpcResult {
    let Some(invoker) = core.select(lb, invocation, set, &[]) else {
        return Err(core.no_provider_error(invocation));
    };
    match invoker.invoke(invocation).await {
        Ok(r) => Ok(r),
        Err(e) if e.is_biz() => Err(e),
        Err(e) => Err(RpcError::new(
            e.code,
            format!(
                "Failfast invoke providers {} for service {} method {} on consumer {}, but no luck to perform the invocation. Last error is: {}",
                invoker.url(),
                core.interface(),
                invocation.real_method(),
                core.url().host().unwrap_or(""),
                e.message
            ),
        )),
    }
}
