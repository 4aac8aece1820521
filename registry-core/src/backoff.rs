//! [`Backoff`]: the one delay schedule of every retry loop in the project: registry retries
//! (failback, cache of the Nacos poller), session and connection re-establishment (ZooKeeper,
//! Nacos gRPC, Dubbo2, Triple) and the failback cluster's background calls.
//!
//! Attempt `n` (0-based) waits `initial × multiplier^n` (or `initial × (n + 1)` for a linear
//! schedule), capped at `max` (never below `initial`), scaled by a random factor drawn from
//! the jitter range (none by default).

use std::time::Duration;

/// How consecutive delays grow.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Growth {
    /// Each delay is the previous one times this factor (1 = a fixed period).
    Multiply(u32),
    /// Each delay is the previous one plus `initial` (the Nacos Java client's reconnect
    /// pacing, `min(turns + 1, 50) × 100 ms`).
    Add,
}

/// A delay schedule: exponential, linear or fixed, capped, optionally jittered.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Backoff {
    /// The delay before the first retry (before jitter).
    pub initial: Duration,
    /// The largest delay (before jitter); a value below `initial` counts as `initial`.
    pub max: Duration,
    /// How delays grow.
    pub growth: Growth,
    /// The random factor applied to each delay, drawn uniformly from `[low, high]`
    /// (`(1.0, 1.0)`: no jitter).
    pub jitter: (f64, f64),
}

impl Backoff {
    /// Doubling from `initial` up to `max`, without jitter.
    pub const fn exponential(initial: Duration, max: Duration) -> Self {
        Backoff {
            initial,
            max,
            growth: Growth::Multiply(2),
            jitter: (1.0, 1.0),
        }
    }

    /// `initial`, `2 × initial`, `3 × initial`, ... up to `max`, without jitter.
    pub const fn linear(initial: Duration, max: Duration) -> Self {
        Backoff {
            initial,
            max,
            growth: Growth::Add,
            jitter: (1.0, 1.0),
        }
    }

    /// The same schedule with `multiplier` between delays (0 counts as 1).
    pub const fn with_multiplier(mut self, multiplier: u32) -> Self {
        self.growth = Growth::Multiply(multiplier);
        self
    }

    /// The same schedule with each delay scaled by a random factor in `[low, high]`.
    pub const fn with_jitter(mut self, low: f64, high: f64) -> Self {
        self.jitter = (low, high);
        self
    }

    /// The delay before attempt `attempt` (0-based), without jitter.
    pub fn nominal(&self, attempt: u32) -> Duration {
        let factor = match self.growth {
            Growth::Multiply(m) => m.max(1).checked_pow(attempt.min(64)).unwrap_or(u32::MAX),
            Growth::Add => attempt.saturating_add(1),
        };
        self.initial
            .saturating_mul(factor)
            .min(self.max.max(self.initial))
    }

    /// The delay before attempt `attempt` (0-based), jittered.
    pub fn delay(&self, attempt: u32) -> Duration {
        let d = self.nominal(attempt);
        let (low, high) = self.jitter;
        if low == 1.0 && high == 1.0 {
            return d;
        }
        let (low, high) = (low.max(0.0), high.max(low.max(0.0)));
        d.mul_f64(low + fastrand::f64() * (high - low))
    }

    /// A fresh sequence of delays following this schedule.
    pub fn attempts(&self) -> Attempts {
        Attempts {
            schedule: *self,
            next: 0,
        }
    }
}

/// The delays of one retry loop: [`Attempts::next_delay`] after each failure,
/// [`Attempts::reset`] after a success.
#[derive(Debug, Clone)]
pub struct Attempts {
    schedule: Backoff,
    next: u32,
}

impl Attempts {
    /// The delay before the next attempt; the following one will be longer.
    pub fn next_delay(&mut self) -> Duration {
        let d = self.schedule.delay(self.next);
        self.next = self.next.saturating_add(1);
        d
    }

    /// Starts over from the initial delay.
    pub fn reset(&mut self) {
        self.next = 0;
    }

    /// How many delays were taken since the last reset.
    pub fn taken(&self) -> u32 {
        self.next
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: fn(u64) -> Duration = Duration::from_millis;

    #[test]
    fn doubles_up_to_the_cap() {
        let b = Backoff::exponential(MS(100), MS(1000));
        let got: Vec<u128> = (0..6).map(|a| b.nominal(a).as_millis()).collect();
        assert_eq!(got, [100, 200, 400, 800, 1000, 1000]);
        assert_eq!(b.nominal(u32::MAX), MS(1000), "no overflow");
        assert_eq!(b.delay(2), MS(400), "no jitter by default");
        let lin = Backoff::linear(MS(100), MS(350));
        let got: Vec<u128> = (0..5).map(|a| lin.nominal(a).as_millis()).collect();
        assert_eq!(got, [100, 200, 300, 350, 350]);
        let fixed = b.with_multiplier(1);
        assert_eq!(fixed.nominal(5), MS(100));
        let below = Backoff::exponential(MS(500), MS(100));
        assert_eq!(
            below.nominal(3),
            MS(500),
            "the cap never goes below the initial delay"
        );
    }

    #[test]
    fn jitter_stays_in_its_range() {
        let b = Backoff::exponential(MS(1000), MS(1000)).with_jitter(0.5, 1.0);
        for _ in 0..200 {
            let d = b.delay(3);
            assert!(d >= MS(500) && d <= MS(1000), "{d:?}");
        }
    }

    #[test]
    fn attempts_grow_and_reset() {
        let mut a = Backoff::exponential(MS(10), MS(40)).attempts();
        let got: Vec<u128> = (0..4).map(|_| a.next_delay().as_millis()).collect();
        assert_eq!(got, [10, 20, 40, 40]);
        assert_eq!(a.taken(), 4);
        a.reset();
        assert_eq!(a.next_delay(), MS(10));
    }
}
