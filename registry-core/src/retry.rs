//! The retry schedule of the failback layer (Dubbo's `FailbackRegistry` retry timer; see
//! docs/compatibility.md): exponential backoff with jitter.
//!
//! Dubbo retries every `retry.period` (default 5000 ms) on a timer wheel. We retry sooner and
//! back off instead, so a short outage heals within a second and a long one does not hammer
//! the registry:
//!
//! - base delay: `retry.period` when the registry URL sets it, else 1 s;
//! - attempt `n` (0-based) waits `min(cap, base * 2^n)`, scaled by a random factor in
//!   `[0.5, 1.0]` (jitter), so the first retry comes after at most `base` (≤ 1 s by default);
//! - cap: `retry.max-period` when set, else 30 s (never below the base);
//! - `retry.times`: how many retries before giving up; `-1` (the default, as in Dubbo 3.3)
//!   or any negative value means unlimited, `0` means no retry.

use std::time::Duration;

use crate::backoff::Backoff;
use crate::url::Url;

/// Default base delay when the registry URL has no `retry.period`.
pub const DEFAULT_BASE: Duration = Duration::from_secs(1);
/// Default cap of the backoff.
pub const DEFAULT_CAP: Duration = Duration::from_secs(30);

/// When and how often a failed registry operation is retried.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Delay before the first retry (before jitter).
    pub base: Duration,
    /// Upper bound of any delay.
    pub cap: Duration,
    /// Maximum number of retries; `None` = unlimited.
    pub times: Option<u32>,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            base: DEFAULT_BASE,
            cap: DEFAULT_CAP,
            times: None,
        }
    }
}

impl RetryPolicy {
    /// Reads `retry.period`, `retry.max-period` (milliseconds) and `retry.times` from the
    /// registry URL; invalid or non-positive values fall back to the defaults.
    pub fn from_url(url: &Url) -> Self {
        let ms = |k: &str| {
            let v = url.param_positive_i64(k, 0);
            (v > 0).then(|| Duration::from_millis(v as u64))
        };
        let base = ms("retry.period").unwrap_or(DEFAULT_BASE);
        let cap = ms("retry.max-period").unwrap_or(DEFAULT_CAP).max(base);
        let times = url.param_i64("retry.times", -1);
        let times = (times >= 0).then(|| u32::try_from(times).unwrap_or(u32::MAX));
        RetryPolicy { base, cap, times }
    }

    /// True when retry number `attempt` (0-based) is still allowed.
    pub fn allows(&self, attempt: u32) -> bool {
        self.times.is_none_or(|t| attempt < t)
    }

    /// The schedule: doubling from `base` up to `cap`, jittered to `[0.5, 1.0]` of each delay.
    pub fn backoff(&self) -> Backoff {
        Backoff::exponential(self.base, self.cap).with_jitter(0.5, 1.0)
    }

    /// The un-jittered delay before retry number `attempt` (0-based).
    pub fn nominal_delay(&self, attempt: u32) -> Duration {
        self.backoff().nominal(attempt)
    }

    /// The delay before retry number `attempt`, with jitter in `[0.5, 1.0]` of the nominal one.
    pub fn delay(&self, attempt: u32) -> Duration {
        self.backoff().delay(attempt)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_and_growth() {
        let p = RetryPolicy::from_url(&Url::parse("zookeeper://h:2181").unwrap());
        assert_eq!(p, RetryPolicy::default());
        assert!(p.allows(1_000_000));
        assert!(p.delay(0) <= Duration::from_secs(1));
        assert!(p.delay(0) >= Duration::from_millis(500));
        assert_eq!(p.nominal_delay(1), Duration::from_secs(2));
        assert_eq!(p.nominal_delay(10), DEFAULT_CAP);
        assert_eq!(p.nominal_delay(u32::MAX), DEFAULT_CAP);
    }

    #[test]
    fn from_url_params() {
        let u =
            Url::parse("zookeeper://h:2181?retry.period=200&retry.times=3&retry.max-period=1000")
                .unwrap();
        let p = RetryPolicy::from_url(&u);
        assert_eq!(p.base, Duration::from_millis(200));
        assert_eq!(p.cap, Duration::from_millis(1000));
        assert!(p.allows(2));
        assert!(!p.allows(3));
        assert_eq!(p.nominal_delay(5), Duration::from_millis(1000));
        let bad =
            RetryPolicy::from_url(&Url::parse("zk://h?retry.period=-5&retry.times=x").unwrap());
        assert_eq!(bad, RetryPolicy::default());
        let zero = RetryPolicy::from_url(&Url::parse("zk://h?retry.times=0").unwrap());
        assert!(!zero.allows(0));
    }
}
