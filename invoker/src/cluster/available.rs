//! Available (`AvailableClusterInvoker`): the first available invoker in list order, no load
//! balancing.

use super::core::ClusterCore;
use crate::invoker_set::InvokerSet;
use crate::rpc::{Invocation, RpcError, RpcErrorCode, RpcResult};

/// Calls the first `is_available()` invoker; none → "No provider available in [...]".
pub(crate) async fn invoke(
    _core: &ClusterCore,
    invocation: &Invocation,
    set: &InvokerSet,
) -> RpcResult {
    match set.invokers().iter().find(|i| i.is_available()) {
        Some(invoker) => invoker.invoke(invocation).await,
        None => {
            let urls: Vec<String> = set.invokers().iter().map(|i| i.url().to_string()).collect();
            Err(RpcError::new(
                RpcErrorCode::Unknown,
                format!("No provider available in [{}]", urls.join(", ")),
            ))
        }
    }
}
