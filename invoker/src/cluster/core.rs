//! [`ClusterCore`]: what every cluster strategy shares (Dubbo's `AbstractClusterInvoker`):
//! the destroyed check, listing and checking invokers, choosing the load balancer, and
//! `select` / `doSelect` / `reselect` with sticky and availablecheck.
//!
//! Hot path: on the common path (no retry, not sticky) `select` takes no lock and allocates
//! nothing; the `selected` slice is empty and only retries build one. `reselect` (a rare
//! path) allocates its candidate list and runs the balancer over it with
//! [`LoadBalance::select_excluding`].

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use parking_lot::{Mutex, RwLock};
use registry_core::Url;

use crate::directory::Directory;
use crate::invoker_set::InvokerSet;
use crate::loadbalance::{self, LoadBalance};
use crate::rpc::{Invocation, RpcError, RpcErrorCode, SharedInvoker};

/// `dubbo.reselect.count`: how many random candidates `reselect` considers at most.
pub const DEFAULT_RESELECT_COUNT: usize = 10;

/// The load balancer used when the first invoker's URL names none.
pub const DEFAULT_LOADBALANCE: &str = "random";

/// A cached load balancer by `loadbalance` name.
type NamedBalancer = (Box<str>, Arc<dyn LoadBalance>);

/// Shared state and helpers of one cluster invoker.
#[derive(Debug)]
pub struct ClusterCore {
    directory: Arc<dyn Directory>,
    url: Url,
    destroyed: AtomicBool,
    /// The sticky invoker and its index in the last list (a lookup hint).
    sticky: Mutex<Option<(SharedInvoker, usize)>>,
    lb_override: Option<Arc<dyn LoadBalance>>,
    lb_cache: RwLock<Vec<NamedBalancer>>,
    reselect_count: usize,
}

impl ClusterCore {
    /// A core over `directory`. `loadbalance` overrides the per-call `loadbalance` parameter.
    pub fn new(
        directory: Arc<dyn Directory>,
        loadbalance: Option<Arc<dyn LoadBalance>>,
        reselect_count: usize,
    ) -> Self {
        let url = directory.consumer_url();
        ClusterCore {
            directory,
            url,
            destroyed: AtomicBool::new(false),
            sticky: Mutex::new(None),
            lb_override: loadbalance,
            lb_cache: RwLock::new(Vec::new()),
            reselect_count: reselect_count.max(1),
        }
    }

    /// The directory.
    pub fn directory(&self) -> &Arc<dyn Directory> {
        &self.directory
    }

    /// The consumer URL captured when the cluster was built (the invoker's `url()`).
    pub fn url(&self) -> &Url {
        &self.url
    }

    /// The service interface name (for messages).
    pub fn interface(&self) -> &str {
        self.url.service_interface().unwrap_or("")
    }

    /// Marks the cluster destroyed: every later call fails.
    pub fn destroy(&self) {
        self.destroyed.store(true, Ordering::Release);
        *self.sticky.lock() = None;
    }

    /// True once destroyed.
    pub fn is_destroyed(&self) -> bool {
        self.destroyed.load(Ordering::Acquire)
    }

    /// Step 1 of `invoke`: fails when destroyed.
    pub fn check_whether_destroyed(&self) -> Result<(), RpcError> {
        if self.is_destroyed() {
            return Err(RpcError::new(
                RpcErrorCode::Unknown,
                format!(
                    "Rpc cluster invoker for {} on consumer {} is now destroyed! Can not invoke any more.",
                    self.interface(),
                    self.url.host().unwrap_or("")
                ),
            ));
        }
        Ok(())
    }

    /// Steps 2-3 of `invoke`: lists the directory and fails with code 6 ("No provider
    /// available for the service ...") when the list is empty.
    pub fn list_checked(&self, invocation: &Invocation) -> Result<Arc<InvokerSet>, RpcError> {
        let set = self.directory.list(invocation)?;
        if set.is_empty() {
            return Err(self.no_provider_error(invocation));
        }
        Ok(set)
    }

    /// The `NO_INVOKER_AVAILABLE_AFTER_FILTER` error for an empty list.
    pub fn no_provider_error(&self, invocation: &Invocation) -> RpcError {
        let consumer = self.directory.consumer_url();
        let registry = self.directory.registry_url();
        RpcError::new(
            RpcErrorCode::NoInvokerAvailableAfterFilter,
            format!(
                "Failed to invoke the method {} in the service {}. No provider available for the service {} from registry {} on the consumer {}. Please check if the providers have been started and registered.",
                invocation.real_method(),
                self.interface(),
                consumer.service_key().unwrap_or_default(),
                registry.address().unwrap_or_default(),
                consumer.host().unwrap_or(""),
            ),
        )
    }

    /// Step 4 of `invoke`: the load balancer named by the first invoker URL's method
    /// parameter `loadbalance` (default `random`), unless the options fixed one. Cached by
    /// name: no allocation in steady state.
    pub fn load_balance(&self, set: &InvokerSet, invocation: &Invocation) -> Arc<dyn LoadBalance> {
        if let Some(lb) = &self.lb_override {
            return lb.clone();
        }
        let name = set
            .get(0)
            .map(|i| {
                i.url().method_param_or(
                    invocation.real_method(),
                    "loadbalance",
                    DEFAULT_LOADBALANCE,
                )
            })
            .unwrap_or(DEFAULT_LOADBALANCE);
        if let Some((_, lb)) = self.lb_cache.read().iter().find(|(n, _)| &**n == name) {
            return lb.clone();
        }
        let lb = loadbalance::by_name(name);
        let mut cache = self.lb_cache.write();
        if !cache.iter().any(|(n, _)| &**n == name) {
            cache.push((name.into(), lb.clone()));
        }
        lb
    }

    /// `cluster.availablecheck` on the directory's registry URL (default true).
    pub fn available_check(&self) -> bool {
        self.directory
            .registry_url()
            .param_bool("cluster.availablecheck", true)
    }

    /// Dubbo's `AbstractClusterInvoker.select`: sticky reuse, else `do_select`. `None` only for an
    /// empty set.
    ///
    /// `selected` holds the invokers already tried in this call (compared by identity).
    pub fn select(
        &self,
        lb: &dyn LoadBalance,
        invocation: &Invocation,
        set: &InvokerSet,
        selected: &[SharedInvoker],
    ) -> Option<SharedInvoker> {
        let _span = tracing::trace_span!(
            "select",
            service = self.interface(),
            method = invocation.real_method(),
            count = set.len(),
            excluded = selected.len(),
        )
        .entered();
        let first = set.get(0)?;
        let sticky = first
            .url()
            .method_param_bool(invocation.real_method(), "sticky", false);
        let available_check = self.available_check();
        if sticky {
            let mut guard = self.sticky.lock();
            if let Some((s, hint)) = guard.as_mut() {
                // O(1) when the sticky invoker kept its index; else one scan.
                let still_listed = set.get(*hint).is_some_and(|i| Arc::ptr_eq(i, s))
                    || match set.invokers().iter().position(|i| Arc::ptr_eq(i, s)) {
                        Some(p) => {
                            *hint = p;
                            true
                        }
                        None => false,
                    };
                if !still_listed {
                    *guard = None;
                }
            }
            if let Some((s, _)) = guard.as_ref() {
                if !contains(selected, s) && available_check && s.is_available() {
                    return Some(s.clone());
                }
            }
            drop(guard);
            let chosen = self.do_select(lb, invocation, set, selected, available_check);
            *self.sticky.lock() = chosen.as_ref().map(|c| {
                let hint = set
                    .invokers()
                    .iter()
                    .position(|i| Arc::ptr_eq(i, c))
                    .unwrap_or(0);
                (c.clone(), hint)
            });
            return chosen;
        }
        self.do_select(lb, invocation, set, selected, available_check)
    }

    /// Dubbo's `doSelect`: one invoker is returned as is; otherwise the load balancer's pick,
    /// re-selected when it was already tried or (with availablecheck) is unavailable, falling
    /// back to the next index.
    pub fn do_select(
        &self,
        lb: &dyn LoadBalance,
        invocation: &Invocation,
        set: &InvokerSet,
        selected: &[SharedInvoker],
        available_check: bool,
    ) -> Option<SharedInvoker> {
        let invokers = set.invokers();
        match invokers.len() {
            0 => return None,
            1 => return Some(invokers[0].clone()),
            _ => {}
        }
        let idx = lb
            .select(set, invocation)
            .unwrap_or(0)
            .min(invokers.len() - 1);
        let picked = &invokers[idx];
        let is_selected = contains(selected, picked);
        let is_unavailable = available_check && !picked.is_available();
        if !is_selected && !is_unavailable {
            return Some(picked.clone());
        }
        if let Some(r) = self.reselect(lb, invocation, set, selected, available_check) {
            return Some(r);
        }
        Some(invokers[(idx + 1) % invokers.len()].clone())
    }

    /// Dubbo's `reselect`: the load balancer over the invokers not yet tried (and available
    /// when checking), sampling at most `dubbo.reselect.count` of a larger list; else over the
    /// available members of `selected`; else `None`.
    pub fn reselect(
        &self,
        lb: &dyn LoadBalance,
        invocation: &Invocation,
        set: &InvokerSet,
        selected: &[SharedInvoker],
        available_check: bool,
    ) -> Option<SharedInvoker> {
        let invokers = set.invokers();
        let eligible = |i: &SharedInvoker| -> bool {
            (!available_check || i.is_available()) && !contains(selected, i)
        };
        let mut candidates: Vec<usize> =
            Vec::with_capacity(invokers.len().min(self.reselect_count));
        if self.reselect_count >= invokers.len() {
            candidates.extend((0..invokers.len()).filter(|&i| eligible(&invokers[i])));
        } else {
            for _ in 0..self.reselect_count {
                let i = fastrand::usize(..invokers.len());
                if eligible(&invokers[i]) && !candidates.contains(&i) {
                    candidates.push(i);
                }
            }
        }
        if !candidates.is_empty() {
            // The balancer over the candidates (Dubbo runs it on the sub-list): round robin
            // keeps its per-identity state in place, consistent hash walks on from the key
            // on the ring it already has (no rebuild), the others run on the sub-list.
            let k = if candidates.len() == 1 {
                candidates[0]
            } else {
                lb.select_excluding(set, invocation, &|i| !candidates.contains(&i))
                    .filter(|i| candidates.contains(i))
                    .unwrap_or(candidates[0])
            };
            return invokers.get(k).cloned();
        }
        let mut retry: Vec<SharedInvoker> = Vec::new();
        for i in selected {
            if i.is_available() && !contains(&retry, i) {
                retry.push(i.clone());
            }
        }
        if retry.is_empty() {
            return None;
        }
        let sub = InvokerSet::new(retry);
        let k = lb.select(&sub, invocation).unwrap_or(0).min(sub.len() - 1);
        sub.get(k).cloned()
    }
}

/// Identity membership test.
pub(crate) fn contains(list: &[SharedInvoker], invoker: &SharedInvoker) -> bool {
    list.iter().any(|i| Arc::ptr_eq(i, invoker))
}

/// The `host:port` address of an invoker (for messages).
pub(crate) fn address_of(invoker: &SharedInvoker) -> String {
    invoker.url().address().unwrap_or_default()
}
