//! Mergeable: the top-level cluster of a multi-group reference (`group=*` or a
//! list of more than one name), Dubbo's `MergeableClusterInvoker`. The directory hands it one
//! invoker per group (each a cluster of the consumer's own strategy over that group's
//! providers), or the bare providers when only one group is present.
//!
//! Without a merger for the method (`method_param(method, "merger")` empty, `false`, `0`,
//! `null` or `N/A`): the **first available** invoker in list order is called; a code-6 error
//! ("no provider available after filter") moves on to the next available one; any other
//! error, and a business error, is returned as is. When no invoker answered, the first one
//! is called once more and its outcome returned. There is no load balancing between groups.
//!
//! With a merger, **every** invoker is called, concurrently, availability not consulted:
//! - each call is polled once as it is issued; one that fails at once (Java: `invoke()`
//!   throws) with code 6 is skipped, with any other code aborts the whole call with that
//!   error (later groups are not called);
//! - the others are awaited together; a business error is logged and left out, any other
//!   failure aborts with code 0 `"Failed to invoke service <service key>: <message>"` (Java: the
//!   group's future completed exceptionally);
//! - results are kept per service key of the invoker URL (a later one with the same key
//!   replaces the earlier, in its place), merged in invoker list order (Java's order is
//!   `HashMap` iteration, unspecified);
//! - none → empty result; one → it, unmerged; a `void` method → empty result;
//! - `.name` → the [`MethodMerger`](crate::merger::MethodMerger) of the declared return type;
//!   `true`/`default` → the merger for the declared return type
//!   ([`MergerRegistry::merger_for_type`]; "There is no merger to merge result." when none);
//!   any other name → that extension ("No such extension ..." when unknown). When the
//!   invocation declares no return type, the first result's shape stands for it.

use std::task::Poll;

use futures::future::{join_all, BoxFuture};
use registry_core::url::comma_split;
use registry_core::Url;
use serde_json::Value;
use tracing::{debug, error, warn};

use super::core::ClusterCore;
use crate::invoker_set::InvokerSet;
use crate::merger::{self, MergerRegistry};
use crate::mock::{is_config_default, is_config_empty};
use crate::rpc::{Invocation, RpcError, RpcErrorCode, RpcResponse, RpcResult};

/// True when a reference with this consumer URL is joined with the mergeable cluster
/// (`RegistryProtocol#refer`): `group` is exactly `*` or splits (COMMA_SPLIT) into more than
/// one name. `a,` is not (one name), although the directory still treats it as multi-group.
pub fn is_mergeable(consumer: &Url) -> bool {
    consumer
        .param("group")
        .is_some_and(|g| g == "*" || comma_split(g).len() > 1)
}

fn is_no_provider(e: &RpcError) -> bool {
    e.code == RpcErrorCode::NoInvokerAvailableAfterFilter
}

/// Runs one mergeable call over the listed (group) invokers.
pub(crate) async fn invoke(
    core: &ClusterCore,
    invocation: &Invocation,
    set: &InvokerSet,
    mergers: &MergerRegistry,
) -> RpcResult {
    let method = invocation.real_method();
    let consumer = core.directory().consumer_url();
    let merger = consumer.method_param(method, "merger").map(str::trim);
    let invokers = set.invokers();
    let Some(first) = invokers.first() else {
        return Err(core.no_provider_error(invocation));
    };
    let Some(merger) = merger.filter(|m| !is_config_empty(Some(m))) else {
        for inv in invokers.iter().filter(|i| i.is_available()) {
            match inv.invoke(invocation).await {
                Err(e) if is_no_provider(&e) => {
                    debug!(group = inv.url().group().unwrap_or(""), error = %e, "group has no provider, trying the next");
                }
                r => return r,
            }
        }
        return first.invoke(invocation).await;
    };

    // Issue every call (polled once each, in order), as Java issues async sub-invocations.
    let mut slots: Vec<Option<RpcResult>> = Vec::with_capacity(invokers.len());
    let mut pending: Vec<(usize, BoxFuture<'_, RpcResult>)> = Vec::new();
    for (idx, inv) in invokers.iter().enumerate() {
        let mut fut = inv.invoke(invocation);
        match futures::poll!(fut.as_mut()) {
            Poll::Ready(Err(e)) if is_no_provider(&e) => {
                warn!(group = inv.url().group().unwrap_or(""), error = %e, "merge: group has no provider, skipped");
                slots.push(None);
            }
            Poll::Ready(Err(e)) if !e.is_biz() => return Err(e),
            Poll::Ready(r) => slots.push(Some(r)),
            Poll::Pending => {
                slots.push(None);
                pending.push((idx, fut));
            }
        }
    }
    let (idxs, futs): (Vec<usize>, Vec<_>) = pending.into_iter().unzip();
    for (idx, r) in idxs.into_iter().zip(join_all(futs).await) {
        slots[idx] = Some(r);
    }
    // Kept per service key in list order; a later answer for the same key replaces it.
    let mut results: Vec<(String, RpcResponse)> = Vec::with_capacity(invokers.len());
    for (inv, slot) in invokers.iter().zip(slots) {
        let Some(r) = slot else { continue };
        let key = inv.url().service_key().unwrap_or_default();
        match r {
            Ok(resp) => match results.iter_mut().find(|(k, _)| *k == key) {
                Some(entry) => entry.1 = resp,
                None => results.push((key, resp)),
            },
            Err(e) if e.is_biz() => {
                error!(service = %key, error = %e, "merge: a group answered with an exception, left out");
            }
            Err(e) => {
                return Err(RpcError::new(
                    RpcErrorCode::Unknown,
                    format!("Failed to invoke service {key}: {}", e.message),
                ));
            }
        }
    }
    match results.len() {
        0 => return Ok(RpcResponse::empty()),
        1 => return Ok(results.remove(0).1),
        _ => {}
    }
    let return_type = invocation.return_type().map(merger::java_class);
    if return_type.as_deref() == Some("void") {
        return Ok(RpcResponse::empty());
    }
    let values: Vec<Value> = results.into_iter().map(|(_, r)| r.value).collect();
    merge_values(mergers, merger, return_type.as_deref(), values).map(RpcResponse::new)
}

/// Merges two or more group results (in merge order) as the mergeable cluster does for a
/// non-void method: `merger` is the method's `merger` value (`.name`, `true`/`default`, or an
/// extension name), `return_type` the declared return type (`None`: the first result's shape
/// stands for it, [`merger::type_of_value`]).
pub fn merge_values(
    mergers: &MergerRegistry,
    merger: &str,
    return_type: Option<&str>,
    values: Vec<Value>,
) -> Result<Value, RpcError> {
    let ty: Option<String> = return_type.map(merger::java_class).or_else(|| {
        values
            .iter()
            .find_map(merger::type_of_value)
            .map(str::to_owned)
    });
    if let Some(name) = merger.strip_prefix('.') {
        let m = ty
            .as_deref()
            .and_then(|t| mergers.method_merger(t, name))
            .ok_or_else(|| {
                RpcError::new(
                    RpcErrorCode::Unknown,
                    format!(
                        "Can not merge result because missing method [ {name} ] in class [ {} ]",
                        ty.as_deref().unwrap_or("null")
                    ),
                )
            })?;
        return merger::method::apply(&*m, values);
    }
    let entry = if is_config_default(merger) {
        mergers.merger_for_type(ty.as_deref())?
    } else {
        Some(mergers.by_name(merger)?)
    };
    match entry {
        Some(e) => e.merger.merge(&values),
        None => Err(RpcError::new(
            RpcErrorCode::Unknown,
            "There is no merger to merge result.",
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mergeable_groups() {
        let u = |g: &str| Url::builder("consumer").param("group", g).build();
        assert!(is_mergeable(&u("*")));
        assert!(is_mergeable(&u("a,b")));
        assert!(is_mergeable(&u(",a")));
        assert!(!is_mergeable(&u("a,")));
        assert!(!is_mergeable(&u("a")));
        assert!(!is_mergeable(&Url::builder("consumer").build()));
    }
}
