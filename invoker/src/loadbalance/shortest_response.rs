//! `shortestresponse` (`ShortestResponseLoadBalance`): the invokers with the lowest estimated
//! response time in the current sliding window, then weighted random among them.
//!
//! From [`MIN_INDEX_THRESHOLD`] invokers on (and while no invoker warms up) the choice is made
//! through a segment tree kept current on call begin/end and rebuilt once per window
//! (`min_index`): the same rule, O(log n), no allocation.

use super::min_index::KeyKind;
use super::{pick_min_weighted, with_weights, Clock, LoadBalance, Rand, MIN_INDEX_THRESHOLD};
use crate::invoker_set::InvokerSet;
use crate::rpc::Invocation;

/// Dubbo's default `shortestResponseSlidePeriod` (ms).
pub const DEFAULT_SLIDE_PERIOD_MS: i64 = 30_000;

/// Shortest response: estimate = average succeeded elapsed time since the window start ×
/// (active + 1), 0 without successes.
///
/// Dubbo resets every window asynchronously every `shortestResponseSlidePeriod`; here each
/// counter moves its window start lazily the first time it is read in a new period
/// (periods aligned on the epoch): no background task, same statistics.
#[derive(Debug)]
pub struct ShortestResponseLoadBalance {
    rand: Rand,
    clock: Clock,
    slide_period_ms: i64,
}

impl Default for ShortestResponseLoadBalance {
    fn default() -> Self {
        ShortestResponseLoadBalance::new()
    }
}

impl ShortestResponseLoadBalance {
    /// Thread-local randomness, system clock, 30 s window.
    pub fn new() -> Self {
        ShortestResponseLoadBalance {
            rand: Rand::Thread,
            clock: Clock::System,
            slide_period_ms: DEFAULT_SLIDE_PERIOD_MS,
        }
    }

    /// Reproducible tie-breaking from `seed`.
    pub fn seeded(seed: u64) -> Self {
        ShortestResponseLoadBalance {
            rand: Rand::seeded(seed),
            ..ShortestResponseLoadBalance::new()
        }
    }

    /// Uses `clock` for the window and warm-up.
    pub fn with_clock(mut self, clock: Clock) -> Self {
        self.clock = clock;
        self
    }

    /// Sets `shortestResponseSlidePeriod` (ms, values <= 0 keep the default).
    pub fn with_slide_period_ms(mut self, ms: i64) -> Self {
        if ms > 0 {
            self.slide_period_ms = ms;
        }
        self
    }
}

impl LoadBalance for ShortestResponseLoadBalance {
    fn select(&self, set: &InvokerSet, invocation: &Invocation) -> Option<usize> {
        let n = set.len();
        match n {
            0 => return None,
            1 => return Some(0),
            _ => {}
        }
        let method = invocation.real_method();
        if n >= MIN_INDEX_THRESHOLD && set.weights_are_static(|| self.clock.now_ms()) {
            let kind = KeyKind::Estimate {
                slide_ms: self.slide_period_ms,
                clock: self.clock.clone(),
            };
            return Some(set.min_index(method, kind).select(&self.rand));
        }
        let window = self.clock.now_ms().div_euclid(self.slide_period_ms);
        Some(set.with_method_statuses(method, |st| {
            with_weights(set, method, &self.clock, |w| {
                pick_min_weighted(
                    st.iter().map(|s| s.estimate_response_us(window)),
                    &w,
                    &self.rand,
                )
            })
        }))
    }

    fn name(&self) -> &'static str {
        "shortestresponse"
    }
}
