//! `leastactive` (`LeastActiveLoadBalance`): the invokers with the fewest active calls of this
//! method, then weighted random among them.
//!
//! From [`MIN_INDEX_THRESHOLD`] invokers on (and while no invoker warms up) the choice is made
//! through a segment tree kept current on call begin/end (`min_index`): the same rule,
//! O(log n), no allocation.

use super::min_index::KeyKind;
use super::{pick_min_weighted, with_weights, Clock, LoadBalance, Rand, MIN_INDEX_THRESHOLD};
use crate::invoker_set::InvokerSet;
use crate::rpc::Invocation;

/// Least active. Active counts come from [`crate::status::RpcStatus`] (identity + method),
/// which the counting / ActiveLimit layers maintain; the `active` URL parameter is not used.
#[derive(Debug)]
pub struct LeastActiveLoadBalance {
    rand: Rand,
    clock: Clock,
}

impl Default for LeastActiveLoadBalance {
    fn default() -> Self {
        LeastActiveLoadBalance::new()
    }
}

impl LeastActiveLoadBalance {
    /// Thread-local randomness, system clock.
    pub fn new() -> Self {
        LeastActiveLoadBalance {
            rand: Rand::Thread,
            clock: Clock::System,
        }
    }

    /// Reproducible tie-breaking from `seed`.
    pub fn seeded(seed: u64) -> Self {
        LeastActiveLoadBalance {
            rand: Rand::seeded(seed),
            clock: Clock::System,
        }
    }

    /// Uses `clock` for warm-up.
    pub fn with_clock(mut self, clock: Clock) -> Self {
        self.clock = clock;
        self
    }
}

impl LoadBalance for LeastActiveLoadBalance {
    fn select(&self, set: &InvokerSet, invocation: &Invocation) -> Option<usize> {
        let n = set.len();
        match n {
            0 => return None,
            1 => return Some(0),
            _ => {}
        }
        let method = invocation.real_method();
        if n >= MIN_INDEX_THRESHOLD && set.weights_are_static(|| self.clock.now_ms()) {
            return Some(set.min_index(method, KeyKind::Active).select(&self.rand));
        }
        Some(set.with_method_statuses(method, |st| {
            with_weights(set, method, &self.clock, |w| {
                pick_min_weighted(st.iter().map(|s| s.active()), &w, &self.rand)
            })
        }))
    }

    fn name(&self) -> &'static str {
        "leastactive"
    }
}
