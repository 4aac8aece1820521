//! Shared measuring helpers of the `bench` rows (Dubbo2 and Triple): per-op time and
//! allocations of a closure, and latency percentiles.

use std::alloc::System;
use std::time::{Duration, Instant};

use stats_alloc::{Region, StatsAlloc};

/// Fastest of 16 chunks (ns per op) and allocations per op of `f`.
pub fn measure(
    global: &'static StatsAlloc<System>,
    budget: Duration,
    mut f: impl FnMut(),
) -> (f64, f64) {
    for _ in 0..1_000 {
        f();
    }
    // Fewest allocations of 3 rounds: the counter is process-wide.
    let allocs = (0..3)
        .map(|_| {
            let region = Region::new(global);
            for _ in 0..1_000 {
                f();
            }
            let s = region.change();
            (s.allocations + s.reallocations) as f64 / 1_000.0
        })
        .fold(f64::INFINITY, f64::min);
    let mut iters = 64usize;
    loop {
        let start = Instant::now();
        for _ in 0..iters {
            f();
        }
        if start.elapsed() >= budget / 64 || iters >= 1 << 24 {
            break;
        }
        iters *= 2;
    }
    let mut best = f64::INFINITY;
    for _ in 0..16 {
        let start = Instant::now();
        for _ in 0..iters {
            f();
        }
        best = best.min(start.elapsed().as_nanos() as f64 / iters as f64);
    }
    (best, allocs)
}

/// The `p` quantile (0..=1, nearest rank) of sorted nanosecond latencies, in microseconds
/// rounded to 0.1; 0 for no samples.
pub fn percentile_us(sorted_ns: &[u64], p: f64) -> f64 {
    if sorted_ns.is_empty() {
        return 0.0;
    }
    let i = ((sorted_ns.len() as f64 * p).ceil() as usize).clamp(1, sorted_ns.len()) - 1;
    (sorted_ns[i] as f64 / 100.0).round() / 10.0
}
