//! `random` (`RandomLoadBalance`): weighted random over the precomputed cumulative weights.

use super::{with_weights, Clock, LoadBalance, Rand, WeightView};
use crate::invoker_set::InvokerSet;
use crate::rpc::Invocation;

/// Weighted random. By default every set is weighted (uniform when all weights are equal);
/// [`RandomLoadBalance::dubbo_first_invoker_rule`] reproduces Dubbo 3.x, which weights only
/// when the **first** invoker has a `weight` or `timestamp` parameter (a documented
/// divergence: rule `random-weights-any-invoker`).
#[derive(Debug)]
pub struct RandomLoadBalance {
    rand: Rand,
    clock: Clock,
    first_invoker_rule: bool,
}

impl Default for RandomLoadBalance {
    fn default() -> Self {
        RandomLoadBalance::new()
    }
}

impl RandomLoadBalance {
    /// Thread-local randomness, system clock, weights always honoured.
    pub fn new() -> Self {
        RandomLoadBalance {
            rand: Rand::Thread,
            clock: Clock::System,
            first_invoker_rule: false,
        }
    }

    /// Reproducible choices from `seed`.
    pub fn seeded(seed: u64) -> Self {
        RandomLoadBalance {
            rand: Rand::seeded(seed),
            ..RandomLoadBalance::new()
        }
    }

    /// Uses `clock` for warm-up.
    pub fn with_clock(mut self, clock: Clock) -> Self {
        self.clock = clock;
        self
    }

    /// Dubbo 3.x's `needWeightLoadBalance`: uniform unless the first invoker has a
    /// (method-level or service-level) `weight` or a `timestamp`.
    pub fn dubbo_first_invoker_rule(mut self) -> Self {
        self.first_invoker_rule = true;
        self
    }

    fn needs_weight(&self, set: &InvokerSet, method: &str) -> bool {
        if !self.first_invoker_rule {
            return true;
        }
        set.meta()
            .first()
            .is_some_and(|m| m.has_weight(method) || m.has_timestamp())
    }
}

impl RandomLoadBalance {
    /// Some invoker may be warming up: rejection sampling over the static (fully warm)
    /// cumulative weights. Warm-up only lowers a weight (`1 <= ww <= w`), so drawing `i` with
    /// probability `w_i / total` and accepting it with probability `ww_i / w_i` selects `i` with
    /// probability proportional to `ww_i`: exact, O(log n) expected. After a few rejections
    /// (most of the weight still warming) an exact O(n) pass decides.
    fn pick_warming(
        &self,
        set: &InvokerSet,
        method: &str,
        now: i64,
        dynamic: &WeightView<'_>,
        n: usize,
    ) -> usize {
        const TRIES: usize = 8;
        let accepted = set.with_static_weights(method, |sw| {
            if sw.total() <= 0 {
                return Some(self.rand.below(n));
            }
            for _ in 0..TRIES {
                let offset = self.rand.below_i64(sw.total());
                let i = sw.cumulative().partition_point(|&c| c <= offset).min(n - 1);
                let full = i64::from(sw.weights().get(i).copied().unwrap_or(0));
                let warm = i64::from(set.weight(i, method, now));
                if full > 0 && (warm >= full || self.rand.below_i64(full) < warm) {
                    return Some(i);
                }
            }
            None
        });
        accepted.unwrap_or_else(|| pick(dynamic, n, &self.rand))
    }
}

fn pick(weights: &WeightView<'_>, n: usize, rand: &Rand) -> usize {
    match weights {
        WeightView::Static(w) => {
            if w.total() > 0 && !w.all_equal() {
                let offset = rand.below_i64(w.total());
                w.cumulative().partition_point(|&c| c <= offset).min(n - 1)
            } else {
                rand.below(n)
            }
        }
        WeightView::Dynamic { .. } => {
            let (mut total, mut same, first) = (0i64, true, weights.get(0));
            for i in 0..n {
                let w = weights.get(i);
                total += i64::from(w);
                same &= w == first;
            }
            if total > 0 && !same {
                let mut offset = rand.below_i64(total);
                for i in 0..n {
                    offset -= i64::from(weights.get(i));
                    if offset < 0 {
                        return i;
                    }
                }
            }
            rand.below(n)
        }
    }
}

impl LoadBalance for RandomLoadBalance {
    fn select(&self, set: &InvokerSet, invocation: &Invocation) -> Option<usize> {
        let n = set.len();
        match n {
            0 => return None,
            1 => return Some(0),
            _ => {}
        }
        let method = invocation.real_method();
        if !self.needs_weight(set, method) {
            return Some(self.rand.below(n));
        }
        Some(with_weights(set, method, &self.clock, |w| match w {
            WeightView::Static(_) => pick(&w, n, &self.rand),
            WeightView::Dynamic { now, .. } => self.pick_warming(set, method, now, &w, n),
        }))
    }

    fn name(&self) -> &'static str {
        "random"
    }
}
