//! `p2c`: power of two choices (Dubbo 3.2+'s `p2c`, in spirit).
//!
//! Two distinct invokers are drawn uniformly; the one with the lower load wins, where
//! load = (active + 1) × max(average succeeded latency µs, 1) / weight (compared by
//! cross-multiplication, no division). A weight of 0 means "never, unless both are 0"; ties are
//! broken at random. O(1) per select whatever the set size.

use super::{with_weights, Clock, LoadBalance, Rand};
use crate::invoker_set::InvokerSet;
use crate::rpc::Invocation;
use crate::status::RpcStatus;
use std::sync::Arc;

/// Power of two choices.
#[derive(Debug)]
pub struct P2cLoadBalance {
    rand: Rand,
    clock: Clock,
}

impl Default for P2cLoadBalance {
    fn default() -> Self {
        P2cLoadBalance::new()
    }
}

impl P2cLoadBalance {
    /// Thread-local randomness, system clock.
    pub fn new() -> Self {
        P2cLoadBalance {
            rand: Rand::Thread,
            clock: Clock::System,
        }
    }

    /// Reproducible choices from `seed`.
    pub fn seeded(seed: u64) -> Self {
        P2cLoadBalance {
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

fn load(s: Option<&Arc<RpcStatus>>) -> u128 {
    s.map_or(1, |s| {
        let active = u128::from(u32::try_from(s.active().max(0)).unwrap_or(0)) + 1;
        active * u128::from(s.succeeded_average_us().max(1))
    })
}

impl LoadBalance for P2cLoadBalance {
    fn select(&self, set: &InvokerSet, invocation: &Invocation) -> Option<usize> {
        let n = set.len();
        let (a, b) = match n {
            0 => return None,
            1 => return Some(0),
            2 => (0, 1),
            _ => {
                let a = self.rand.below(n);
                let mut b = self.rand.below(n - 1);
                if b >= a {
                    b += 1;
                }
                (a, b)
            }
        };
        let method = invocation.real_method();
        let (la, lb) = set.with_method_statuses(method, |st| (load(st.get(a)), load(st.get(b))));
        let (wa, wb) = with_weights(set, method, &self.clock, |w| (w.get(a), w.get(b)));
        let (wa, wb) = (
            u128::from(wa.max(0).unsigned_abs()),
            u128::from(wb.max(0).unsigned_abs()),
        );
        // la / wa vs lb / wb, with weight 0 as infinite load.
        let ord = match (wa, wb) {
            (0, 0) => std::cmp::Ordering::Equal,
            (0, _) => std::cmp::Ordering::Greater,
            (_, 0) => std::cmp::Ordering::Less,
            _ => (la * wb).cmp(&(lb * wa)),
        };
        Some(match ord {
            std::cmp::Ordering::Less => a,
            std::cmp::Ordering::Greater => b,
            std::cmp::Ordering::Equal => {
                if self.rand.below(2) == 0 {
                    a
                } else {
                    b
                }
            }
        })
    }

    fn name(&self) -> &'static str {
        "p2c"
    }
}
