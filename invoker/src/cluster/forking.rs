//! Forking (`ForkingClusterInvoker`): call several providers in parallel; the first answer wins.
//!
//! The forks are futures polled together in this call; when one answers, the others are
//! dropped, which cancels them. **Divergence** (`forking-timeout-is-error`): when no fork
//! answers within `timeout`, Dubbo returns `null`; here the call fails with a
//! [`RpcErrorCode::Timeout`] error.

use std::sync::Arc;
use std::time::Duration;

use futures::stream::{FuturesUnordered, StreamExt};
use registry_core::Url;

use super::core::{contains, ClusterCore};
use crate::invoker_set::InvokerSet;
use crate::loadbalance::LoadBalance;
use crate::rpc::{Invocation, RpcError, RpcErrorCode, RpcResult, SharedInvoker};

/// The default `forks`.
pub(crate) const DEFAULT_FORKS: i64 = 2;
/// The default `timeout` (ms) for the whole forking call.
pub(crate) const DEFAULT_TIMEOUT_MS: i64 = 1000;

/// The invokers a forking call goes to: all of them when `forks` (consumer URL, default 2)
/// is <= 0 or >= the list size, else `forks` distinct ones picked by `select`.
pub(crate) fn fork_targets(
    core: &ClusterCore,
    consumer_url: &Url,
    invocation: &Invocation,
    set: &InvokerSet,
    lb: &dyn LoadBalance,
) -> Vec<SharedInvoker> {
    let forks = consumer_url.param_i64("forks", DEFAULT_FORKS);
    let n = set.len();
    match usize::try_from(forks) {
        Ok(f) if f > 0 && f < n => {
            let mut selected: Vec<SharedInvoker> = Vec::with_capacity(f);
            for _ in 0..f {
                if let Some(i) = core.select(lb, invocation, set, &selected) {
                    if !contains(&selected, &i) {
                        selected.push(i);
                    }
                }
            }
            selected
        }
        _ => set.invokers().to_vec(),
    }
}

/// Runs the forks. A success or a biz error (a real answer from a provider) wins; an error is
/// reported only when every fork failed; no answer within `timeout` is a timeout error.
pub(crate) async fn invoke(
    core: &ClusterCore,
    invocation: &Invocation,
    set: Arc<InvokerSet>,
    lb: &dyn LoadBalance,
) -> RpcResult {
    let consumer_url = core.directory().consumer_url();
    let targets = fork_targets(core, &consumer_url, invocation, &set, lb);
    if targets.is_empty() {
        return Err(core.no_provider_error(invocation));
    }
    let timeout_ms = consumer_url.param_i64("timeout", DEFAULT_TIMEOUT_MS).max(0);
    let mut forks: FuturesUnordered<_> = targets.iter().map(|i| i.invoke(invocation)).collect();
    let race = async {
        let mut last: Option<RpcError> = None;
        while let Some(r) = forks.next().await {
            match r {
                Ok(v) => return Ok(v),
                Err(e) if e.is_biz() => return Err(e),
                Err(e) => last = Some(e),
            }
        }
        let le = last.unwrap_or_else(|| core.no_provider_error(invocation));
        Err(RpcError::new(
            le.code,
            format!(
                "Failed to forking invoke provider {}, but no luck to perform the invocation. Last error is: {}",
                urls(&targets),
                le.message
            ),
        ))
    };
    let wait = Duration::from_millis(u64::try_from(timeout_ms).unwrap_or(0));
    match tokio::time::timeout(wait, race).await {
        Ok(r) => r,
        Err(_) => Err(RpcError::new(
            RpcErrorCode::Timeout,
            format!(
                "Failed to forking invoke provider {}: no answer within {timeout_ms} ms",
                urls(&targets)
            ),
        )),
    }
}

fn urls(targets: &[SharedInvoker]) -> String {
    let v: Vec<String> = targets.iter().map(|i| i.url().to_string()).collect();
    format!("[{}]", v.join(", "))
}
