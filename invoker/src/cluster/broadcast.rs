//! Broadcast (`BroadcastClusterInvoker`): call every invoker in turn; report the last failure.

use registry_core::Url;
use tracing::warn;

use super::core::ClusterCore;
use crate::invoker_set::InvokerSet;
use crate::rpc::{Invocation, RpcError, RpcResult};

/// The highest (and default) `broadcast.fail.percent`.
pub const MAX_BROADCAST_FAIL_PERCENT: i64 = 100;

/// `broadcast.fail.percent` from the consumer URL: default 100; values outside 0..=100 are
/// reset to 100.
pub fn effective_fail_percent(consumer_url: &Url) -> i64 {
    let p = consumer_url.param_i64("broadcast.fail.percent", MAX_BROADCAST_FAIL_PERCENT);
    if (0..=MAX_BROADCAST_FAIL_PERCENT).contains(&p) {
        p
    } else {
        MAX_BROADCAST_FAIL_PERCENT
    }
}

/// The failure count at which broadcasting stops early: `size * percent / 100`.
///
/// As in Dubbo, the loop stops when the failure count *equals* this threshold, so a threshold
/// of 0 (percent 0, or a small list with a small percent) never stops early.
pub fn fail_threshold(size: usize, percent: i64) -> usize {
    let p = usize::try_from(percent.clamp(0, MAX_BROADCAST_FAIL_PERCENT)).unwrap_or(100);
    size.saturating_mul(p) / 100
}

/// Calls all invokers sequentially. Returns the last error if any call failed, else the last
/// result.
pub(crate) async fn invoke(
    core: &ClusterCore,
    invocation: &Invocation,
    set: &InvokerSet,
) -> RpcResult {
    let percent = effective_fail_percent(&core.directory().consumer_url());
    let threshold = fail_threshold(set.len(), percent);
    let mut failures = 0usize;
    let mut last_error: Option<RpcError> = None;
    let mut last_result = None;
    for invoker in set.invokers() {
        match invoker.invoke(invocation).await {
            Ok(r) => last_result = Some(r),
            Err(e) => {
                warn!(provider = %invoker.url(), error = %e, "broadcast call failed");
                last_error = Some(e);
                failures += 1;
                if failures == threshold {
                    break;
                }
            }
        }
    }
    if let Some(e) = last_error {
        return Err(e);
    }
    last_result.ok_or_else(|| core.no_provider_error(invocation))
}
