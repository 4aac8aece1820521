//! [`RtGauges`]: the five response-time gauges Dubbo exports for a measured operation
//! (`*_rt_milliseconds_{last,min,max,sum,avg}`), updated as each operation completes.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use metrics::{Gauge, Label};

use super::names::RtFamilies;

const LAST: usize = 0;
const MIN: usize = 1;
const MAX: usize = 2;
const SUM: usize = 3;
const AVG: usize = 4;

/// Response-time gauges of one operation and label set (milliseconds, with the microseconds
/// as decimals: Java's are whole milliseconds).
///
/// Recording is a handful of atomic operations and allocates nothing. Under concurrent
/// completions `min`, `max` and `avg` may show the value of a call that finished a moment
/// earlier until the next completion; `sum` and `last` are exact.
#[derive(Debug)]
pub struct RtGauges {
    min_us: AtomicU64,
    max_us: AtomicU64,
    sum_us: AtomicU64,
    count: AtomicU64,
    gauges: [Gauge; 5],
}

impl RtGauges {
    /// Registers the gauges of `families` with `labels` (the registration allocates; recording
    /// does not).
    pub fn new(families: &RtFamilies, labels: &[Label]) -> Self {
        let g = |i: usize| metrics::gauge!(families[i].name, labels.to_vec());
        RtGauges {
            min_us: AtomicU64::new(u64::MAX),
            max_us: AtomicU64::new(0),
            sum_us: AtomicU64::new(0),
            count: AtomicU64::new(0),
            gauges: [g(LAST), g(MIN), g(MAX), g(SUM), g(AVG)],
        }
    }

    /// Records one completed operation.
    pub fn record(&self, took: Duration) {
        let us = u64::try_from(took.as_micros()).unwrap_or(u64::MAX);
        self.gauges[LAST].set(ms(us));
        if us < self.min_us.fetch_min(us, Ordering::Relaxed) {
            self.gauges[MIN].set(ms(self.min_us.load(Ordering::Relaxed)));
        }
        if us > self.max_us.fetch_max(us, Ordering::Relaxed) {
            self.gauges[MAX].set(ms(self.max_us.load(Ordering::Relaxed)));
        }
        let sum = self
            .sum_us
            .fetch_add(us, Ordering::Relaxed)
            .saturating_add(us);
        let n = self.count.fetch_add(1, Ordering::Relaxed) + 1;
        self.gauges[SUM].increment(ms(us));
        self.gauges[AVG].set(ms(sum) / n as f64);
    }

    /// Operations recorded so far.
    pub fn count(&self) -> u64 {
        self.count.load(Ordering::Relaxed)
    }
}

fn ms(us: u64) -> f64 {
    us as f64 / 1000.0
}
