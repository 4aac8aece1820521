//! Failover (`FailoverClusterInvoker`, the default): try another provider on a non-biz failure, up
//! to `retries + 1` attempts.

use std::sync::Arc;

use registry_core::Url;
use tracing::warn;

use super::core::{address_of, ClusterCore};
use crate::invoker_set::InvokerSet;
use crate::loadbalance::LoadBalance;
use crate::rpc::{Invocation, RpcError, RpcResult, SharedInvoker};

/// The default `retries`.
pub(crate) const DEFAULT_RETRIES: i64 = 2;

/// How many attempts one call gets: the consumer URL's method-level `retries` (default 2)
/// plus one; an integer attachment `retries` on the invocation overrides the URL for this
/// call; values <= 0 give one attempt.
pub(crate) fn invoke_times(consumer_url: &Url, invocation: &Invocation) -> usize {
    let method = invocation.real_method();
    let mut retries = consumer_url.method_param_i64(method, "retries", DEFAULT_RETRIES);
    if let Some(r) = invocation
        .attachment("retries")
        .and_then(|v| v.trim().parse::<i64>().ok())
    {
        retries = r;
    }
    let len = retries.saturating_add(1);
    if len <= 0 {
        1
    } else {
        usize::try_from(len).unwrap_or(usize::MAX)
    }
}

/// Runs the failover loop. Before each retry the directory is listed and checked again; the
/// invokers already tried are avoided by `select`. A biz error is returned at once.
pub(crate) async fn invoke(
    core: &ClusterCore,
    invocation: &Invocation,
    set: Arc<InvokerSet>,
    lb: &dyn LoadBalance,
) -> RpcResult {
    let attempts = invoke_times(&core.directory().consumer_url(), invocation);
    let mut set = set;
    // Empty until the first failure: the no-retry path allocates nothing here.
    let mut invoked: Vec<SharedInvoker> = Vec::new();
    let mut providers: Vec<String> = Vec::new();
    let mut last: Option<RpcError> = None;
    for i in 0..attempts {
        if i > 0 {
            crate::metrics::retry();
            core.check_whether_destroyed()?;
            set = core.list_checked(invocation)?;
        }
        let Some(invoker) = core.select(lb, invocation, &set, &invoked) else {
            return Err(core.no_provider_error(invocation));
        };
        match invoker.invoke(invocation).await {
            Ok(r) => {
                if let Some(e) = &last {
                    warn!(
                        method = invocation.real_method(),
                        service = core.interface(),
                        tried = ?providers,
                        last_error = %e,
                        "Although retry the method succeeded, there were failed providers before"
                    );
                }
                return Ok(r);
            }
            Err(e) if e.is_biz() => return Err(e),
            Err(e) => {
                let addr = address_of(&invoker);
                if !providers.contains(&addr) {
                    providers.push(addr);
                }
                last = Some(e);
            }
        }
        invoked.push(invoker);
    }
    let le = last.unwrap_or_else(|| core.no_provider_error(invocation));
    let consumer = core.directory().consumer_url();
    Err(RpcError::new(
        le.code,
        format!(
            "Failed to invoke the method {} in the service {}. Tried {} times of the providers {:?} ({}/{}) from the registry {} on the consumer {}. Last error is: {}",
            invocation.real_method(),
            core.interface(),
            attempts,
            providers,
            providers.len(),
            set.len(),
            core.directory().registry_url().address().unwrap_or_default(),
            consumer.host().unwrap_or(""),
            le.message
        ),
    ))
}
