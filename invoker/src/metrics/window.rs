//! Sliding time windows for the aggregated call metrics (Java's `TimeWindowCounter`,
//! `TimeWindowQuantile` and `TimeWindowAggregator`, `dubbo.metrics.aggregation`): a ring of
//! panes, each covering a fixed slice of time; a read sums the panes still inside the window.
//!
//! Recording is a few relaxed atomic operations on the current pane and allocates nothing.
//! A pane is reset by the first call that lands in it after its slice ended; a call racing
//! that reset may be lost, as in Java's windows.
//!
//! Response-time quantiles come from a log-linear histogram per pane (microseconds: exact
//! below 16 µs, then 8 buckets per power of two, so a quantile is within 6.25 % of the true
//! value, and never outside the window's min and max). Java uses a t-digest.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use super::outcome::Outcome;

/// Count slots of a call pane.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(usize)]
pub enum Slot {
    /// Calls started.
    Requests,
    /// Calls that returned a result.
    Succeed,
    /// Calls that failed, whatever the reason.
    FailedTotal,
    /// Business exceptions.
    Business,
    /// Timeouts.
    Timeout,
    /// Concurrency-limit refusals.
    Limit,
    /// Other failures.
    Unknown,
    /// Network failures.
    Network,
    /// Codec failures.
    Codec,
    /// Forbidden by the registry.
    ServiceUnavailable,
}

impl Outcome {
    /// Runs `f` with every counter slot a call of this outcome adds one to (its own slot,
    /// `FailedTotal` for a failure; a forbidden call counts as unknown *and* service
    /// unavailable, as Java's two filters do).
    pub fn for_each_slot(self, mut f: impl FnMut(Slot)) {
        match self {
            Outcome::Succeed => f(Slot::Succeed),
            Outcome::Business => f(Slot::Business),
            Outcome::Timeout => f(Slot::Timeout),
            Outcome::Limit => f(Slot::Limit),
            Outcome::Codec => f(Slot::Codec),
            Outcome::Network => f(Slot::Network),
            Outcome::Forbidden => {
                f(Slot::Unknown);
                f(Slot::ServiceUnavailable);
            }
            Outcome::Unknown => f(Slot::Unknown),
        }
        if self.is_failure() {
            f(Slot::FailedTotal);
        }
    }
}

/// Number of [`Slot`]s.
pub const SLOTS: usize = 10;

/// Exact buckets below this many microseconds.
const LINEAR: u64 = 16;
/// Buckets per power of two above [`LINEAR`] (as bits).
const SUB_BITS: u32 = 3;
/// The largest power of two with its own buckets: 2^35 µs ≈ 9.5 h (longer times share the
/// last bucket).
const MAX_EXP: u32 = 35;
/// Histogram buckets per pane.
pub const BUCKETS: usize = LINEAR as usize + ((MAX_EXP - 3) as usize + 1) * (1 << SUB_BITS);

/// The histogram bucket of `us` microseconds.
pub fn bucket_of(us: u64) -> usize {
    if us < LINEAR {
        return us as usize;
    }
    let exp = (63 - us.leading_zeros()).min(MAX_EXP);
    if us >> exp > 1 {
        // Above the largest tracked power of two.
        return BUCKETS - 1;
    }
    let sub = (us >> (exp - SUB_BITS)) & ((1 << SUB_BITS) - 1);
    LINEAR as usize + ((exp - 4) as usize) * (1 << SUB_BITS) + sub as usize
}

/// The value a bucket stands for (its middle, in microseconds).
pub fn bucket_value(idx: usize) -> f64 {
    if (idx as u64) < LINEAR {
        return idx as f64;
    }
    let i = idx - LINEAR as usize;
    let exp = (i >> SUB_BITS) as u32 + 4;
    let sub = (i & ((1 << SUB_BITS) - 1)) as u64;
    let width = 1u64 << (exp - SUB_BITS);
    let low = ((1u64 << SUB_BITS) + sub) << (exp - SUB_BITS);
    low as f64 + width as f64 / 2.0
}

/// Milliseconds since the first use in this process (monotonic).
pub fn now_ms() -> u64 {
    static BASE: OnceLock<Instant> = OnceLock::new();
    u64::try_from(BASE.get_or_init(Instant::now).elapsed().as_millis()).unwrap_or(u64::MAX)
}

const EMPTY: u64 = u64::MAX;

#[derive(Debug)]
struct CallPane {
    epoch: AtomicU64,
    counts: [AtomicU32; SLOTS],
    min_us: AtomicU64,
    max_us: AtomicU64,
    sum_us: AtomicU64,
    timed: AtomicU64,
    buckets: [AtomicU32; BUCKETS],
}

impl CallPane {
    fn new() -> Self {
        CallPane {
            epoch: AtomicU64::new(EMPTY),
            counts: std::array::from_fn(|_| AtomicU32::new(0)),
            min_us: AtomicU64::new(u64::MAX),
            max_us: AtomicU64::new(0),
            sum_us: AtomicU64::new(0),
            timed: AtomicU64::new(0),
            buckets: std::array::from_fn(|_| AtomicU32::new(0)),
        }
    }

    fn reset(&self) {
        for c in &self.counts {
            c.store(0, Ordering::Relaxed);
        }
        self.min_us.store(u64::MAX, Ordering::Relaxed);
        self.max_us.store(0, Ordering::Relaxed);
        self.sum_us.store(0, Ordering::Relaxed);
        self.timed.store(0, Ordering::Relaxed);
        for b in &self.buckets {
            b.store(0, Ordering::Relaxed);
        }
    }
}

/// Calls of one method over a sliding window: counts per [`Slot`] and response times.
#[derive(Debug)]
pub struct CallWindow {
    panes: Box<[CallPane]>,
    pane_ms: u64,
}

/// What a [`CallWindow`] holds now.
#[derive(Debug, Clone, PartialEq)]
pub struct CallStats {
    /// Counts per [`Slot`].
    pub counts: [u64; SLOTS],
    /// Smallest, largest and mean response time (ms); `None` without timed calls.
    pub rt_min_max_avg: Option<(f64, f64, f64)>,
    /// p50, p90, p95, p99 (ms); `None` without timed calls.
    pub quantiles: Option<[f64; 4]>,
}

/// Picks the pane of `now` in `panes` (resetting it when its slice ended).
fn pane_at<P>(
    panes: &[P],
    pane_ms: u64,
    now: u64,
    epoch: impl Fn(&P) -> &AtomicU64,
    reset: impl Fn(&P),
) -> &P {
    let e = now / pane_ms;
    let p = &panes[(e % panes.len() as u64) as usize];
    let cur = epoch(p).load(Ordering::Acquire);
    if cur != e
        && epoch(p)
            .compare_exchange(cur, e, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
    {
        reset(p);
    }
    p
}

/// True when a pane of epoch `e` is inside the window ending at `now`.
fn live(e: u64, now: u64, pane_ms: u64, n: usize) -> bool {
    e != EMPTY && e <= now / pane_ms && now / pane_ms - e < n as u64
}

impl CallWindow {
    /// A window of `panes` panes covering `window` (Java: 10 panes, 120 s).
    pub fn new(panes: usize, window: Duration) -> Self {
        let panes = panes.max(1);
        CallWindow {
            panes: (0..panes).map(|_| CallPane::new()).collect(),
            pane_ms: (u64::try_from(window.as_millis()).unwrap_or(u64::MAX) / panes as u64).max(1),
        }
    }

    fn pane(&self, now: u64) -> &CallPane {
        pane_at(
            &self.panes,
            self.pane_ms,
            now,
            |p| &p.epoch,
            CallPane::reset,
        )
    }

    /// A call started at `now` (ms, [`now_ms`]).
    pub fn started(&self, now: u64) {
        self.pane(now).counts[Slot::Requests as usize].fetch_add(1, Ordering::Relaxed);
    }

    /// A call finished at `now` with `outcome` after `rt_us` microseconds.
    pub fn finished(&self, now: u64, outcome: Outcome, rt_us: u64) {
        let p = self.pane(now);
        outcome.for_each_slot(|s| {
            p.counts[s as usize].fetch_add(1, Ordering::Relaxed);
        });
        p.min_us.fetch_min(rt_us, Ordering::Relaxed);
        p.max_us.fetch_max(rt_us, Ordering::Relaxed);
        p.sum_us.fetch_add(rt_us, Ordering::Relaxed);
        p.timed.fetch_add(1, Ordering::Relaxed);
        p.buckets[bucket_of(rt_us)].fetch_add(1, Ordering::Relaxed);
    }

    /// The window's counts and times at `now` (no allocation: the merged histogram is on the
    /// stack).
    pub fn stats(&self, now: u64) -> CallStats {
        let n = self.panes.len();
        let mut counts = [0u64; SLOTS];
        let mut buckets = [0u64; BUCKETS];
        let (mut min, mut max, mut sum, mut timed) = (u64::MAX, 0u64, 0u64, 0u64);
        for p in self.panes.iter() {
            if !live(p.epoch.load(Ordering::Acquire), now, self.pane_ms, n) {
                continue;
            }
            for (c, a) in counts.iter_mut().zip(&p.counts) {
                *c += u64::from(a.load(Ordering::Relaxed));
            }
            let t = p.timed.load(Ordering::Relaxed);
            if t == 0 {
                continue;
            }
            timed += t;
            min = min.min(p.min_us.load(Ordering::Relaxed));
            max = max.max(p.max_us.load(Ordering::Relaxed));
            sum = sum.saturating_add(p.sum_us.load(Ordering::Relaxed));
            for (b, a) in buckets.iter_mut().zip(&p.buckets) {
                *b += u64::from(a.load(Ordering::Relaxed));
            }
        }
        if timed == 0 {
            return CallStats {
                counts,
                rt_min_max_avg: None,
                quantiles: None,
            };
        }
        let total: u64 = buckets.iter().sum();
        let q = |q: f64| -> f64 {
            let rank = ((q * total as f64).ceil() as u64).clamp(1, total.max(1));
            let mut seen = 0;
            for (i, c) in buckets.iter().enumerate() {
                seen += c;
                if seen >= rank {
                    return bucket_value(i).clamp(min as f64, max as f64) / 1000.0;
                }
            }
            max as f64 / 1000.0
        };
        CallStats {
            counts,
            rt_min_max_avg: Some((
                min as f64 / 1000.0,
                max as f64 / 1000.0,
                sum as f64 / timed as f64 / 1000.0,
            )),
            quantiles: Some([q(0.50), q(0.90), q(0.95), q(0.99)]),
        }
    }
}

#[derive(Debug)]
struct RatePane {
    epoch: AtomicU64,
    count: AtomicU64,
}

/// Events per second over a short sliding window (Java's QPS: 10 panes over 3 s).
#[derive(Debug)]
pub struct RateWindow {
    panes: Box<[RatePane]>,
    pane_ms: u64,
}

impl RateWindow {
    /// A window of `panes` panes covering `window`.
    pub fn new(panes: usize, window: Duration) -> Self {
        let panes = panes.max(1);
        RateWindow {
            panes: (0..panes)
                .map(|_| RatePane {
                    epoch: AtomicU64::new(EMPTY),
                    count: AtomicU64::new(0),
                })
                .collect(),
            pane_ms: (u64::try_from(window.as_millis()).unwrap_or(u64::MAX) / panes as u64).max(1),
        }
    }

    /// One event at `now` (ms).
    pub fn add(&self, now: u64) {
        pane_at(
            &self.panes,
            self.pane_ms,
            now,
            |p| &p.epoch,
            |p| p.count.store(0, Ordering::Relaxed),
        )
        .count
        .fetch_add(1, Ordering::Relaxed);
    }

    /// Events per second at `now`: the events of the live panes over the time from the
    /// oldest live pane's start to `now`.
    pub fn per_second(&self, now: u64) -> f64 {
        let n = self.panes.len();
        let (mut total, mut oldest) = (0u64, u64::MAX);
        for p in self.panes.iter() {
            let e = p.epoch.load(Ordering::Acquire);
            if live(e, now, self.pane_ms, n) {
                total += p.count.load(Ordering::Relaxed);
                oldest = oldest.min(e);
            }
        }
        if total == 0 {
            return 0.0;
        }
        let span = now.saturating_sub(oldest * self.pane_ms).max(1);
        total as f64 * 1000.0 / span as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_are_monotonic_and_close() {
        let mut last = 0;
        for us in (0..100_000u64).chain([1 << 20, 1 << 30, (1 << 35) + 5, u64::MAX]) {
            let b = bucket_of(us);
            assert!(b >= last || us == 0, "bucket of {us} went down");
            assert!(b < BUCKETS);
            last = b;
            if us > 0 && us < (1 << 35) {
                let v = bucket_value(b);
                assert!(
                    (v - us as f64).abs() / us as f64 <= 0.0625,
                    "{us} µs -> bucket {b} = {v}"
                );
            }
        }
    }

    #[test]
    fn quantiles_and_counts_of_one_window() {
        let w = CallWindow::new(10, Duration::from_secs(120));
        let now = 1_000_000;
        for ms in 1..=100u64 {
            w.started(now);
            w.finished(now, Outcome::Succeed, ms * 1000);
        }
        w.started(now);
        w.finished(now, Outcome::Timeout, 500_000);
        let s = w.stats(now);
        assert_eq!(s.counts[Slot::Requests as usize], 101);
        assert_eq!(s.counts[Slot::Succeed as usize], 100);
        assert_eq!(s.counts[Slot::Timeout as usize], 1);
        assert_eq!(s.counts[Slot::FailedTotal as usize], 1);
        let (min, max, _avg) = s.rt_min_max_avg.unwrap();
        assert_eq!((min, max), (1.0, 500.0));
        let [p50, p90, p95, p99] = s.quantiles.unwrap();
        for (got, want) in [(p50, 51.0), (p90, 91.0), (p95, 96.0), (p99, 100.0)] {
            assert!((got - want).abs() / want < 0.07, "{got} vs {want}");
        }
        // Two minutes later the window is empty again.
        let later = w.stats(now + 120_000);
        assert_eq!(later.counts, [0; SLOTS]);
        assert!(later.quantiles.is_none());
    }

    #[test]
    fn rate_over_the_live_panes() {
        let r = RateWindow::new(10, Duration::from_secs(3));
        for t in 0..3000u64 {
            r.add(10_000 + t);
        }
        let qps = r.per_second(13_000);
        assert!((900.0..=1100.0).contains(&qps), "{qps}");
        assert_eq!(r.per_second(20_000), 0.0);
    }
}
