//! Load balancers (§10): pure, seedable pickers over an [`InvokerSet`].

use std::fmt::Debug;

use crate::invoker_set::InvokerSet;
use crate::rpc::Invocation;

/// Picks one invoker of a set. Must not allocate in steady state.
pub trait LoadBalance: Send + Sync + Debug {
    /// The index of the chosen invoker; `None` only for an empty set. A set of one returns 0
    /// without running the algorithm.
    fn select(&self, set: &InvokerSet, invocation: &Invocation) -> Option<usize>;
}
