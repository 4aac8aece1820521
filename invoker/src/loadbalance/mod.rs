//! Load balancers (§10): pure, seedable pickers over an [`InvokerSet`].

use std::fmt::Debug;
use std::sync::Arc;

use crate::invoker_set::InvokerSet;
use crate::rpc::Invocation;

/// Picks one invoker of a set. Must not allocate in steady state.
pub trait LoadBalance: Send + Sync + Debug {
    /// The index of the chosen invoker; `None` only for an empty set. A set of one returns 0
    /// without running the algorithm.
    fn select(&self, set: &InvokerSet, invocation: &Invocation) -> Option<usize>;
}

/// The load balancer for a `loadbalance` name (`random` when unknown).
///
/// (Initial uniform picker; the real balancers land with the invoker issue.)
pub fn by_name(_name: &str) -> Arc<dyn LoadBalance> {
    Arc::new(Uniform)
}

#[derive(Debug)]
struct Uniform;

impl LoadBalance for Uniform {
    fn select(&self, set: &InvokerSet, _invocation: &Invocation) -> Option<usize> {
        match set.len() {
            0 => None,
            1 => Some(0),
            n => Some(fastrand::usize(..n)),
        }
    }
}
