//! `RpcStatus`: per invoker identity and method counters (active, total, failed,
//! elapsed), shared by the least-active / shortest-response / P2C balancers and ActiveLimit.
//!
//! Dubbo keys its counters by `url.toIdentityString()` (and the method name) in a static map;
//! so does this module ([`ServiceStatus::for_identity`]). Entries live as long as something
//! holds them (an [`crate::invoker_set::InvokerSet`], a filter layer or a [`CallGuard`]): the
//! registry keeps only weak references, so providers that come and go do not leak memory,
//! while an invoker that is re-referred with the same identity finds its counters again.
//!
//! Counting is done by [`CallGuard`], an RAII guard: a call that returns `Ok` counts as a
//! success, anything else — an error, a timeout, or a future dropped mid-flight (cancelled) —
//! counts as a failure, and in every case the active count goes back down exactly once.

use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, LazyLock, Weak};
use std::time::Instant;

use parking_lot::{Mutex, RwLock};
use registry_core::Url;
use rustc_hash::FxHashMap;
use tokio::sync::Notify;

/// Counters of one invoker identity (service level) or of one (identity, method) pair.
///
/// Elapsed times are kept in microseconds; the `*_ms` getters give Dubbo's milliseconds.
///
/// Layout: everything a balancer reads per invoker (active, totals, the shortest-response
/// window) comes first (`repr(C)`), the rarely read maxima and the waiter queue last. (Aligning
/// the struct to a cache line was measured slower at 10k invokers: the 256-byte stride it
/// creates maps every status onto a quarter of the L2 sets.)
#[repr(C)]
pub struct RpcStatus {
    /// Shortest-response sliding window: the window number the offsets belong to.
    window: AtomicI64,
    active: AtomicI32,
    total: AtomicU64,
    failed: AtomicU64,
    total_elapsed_us: AtomicU64,
    failed_elapsed_us: AtomicU64,
    window_succeeded_offset: AtomicU64,
    window_elapsed_offset_us: AtomicU64,
    // ----- second cache line: rarely read -----
    max_elapsed_us: AtomicU64,
    failed_max_elapsed_us: AtomicU64,
    succeeded_max_elapsed_us: AtomicU64,
    /// Woken (all waiters) when a call of a limited method ends.
    released: Notify,
    /// True once some least-key index watches this counter.
    observed: AtomicBool,
    /// The indexes watching this counter, with the leaf it is in each.
    observers: Mutex<Vec<(Weak<dyn StatusObserver>, usize)>>,
}

const WINDOW_UNSET: i64 = i64::MIN;

/// Something that follows counters (a load balancer's least-key index): told, with the leaf it
/// gave, whenever a watched counter changes.
pub(crate) trait StatusObserver: Send + Sync {
    /// The counter at `leaf` changed.
    fn update(&self, leaf: usize);
}

impl Default for RpcStatus {
    fn default() -> Self {
        RpcStatus {
            active: AtomicI32::new(0),
            total: AtomicU64::new(0),
            failed: AtomicU64::new(0),
            total_elapsed_us: AtomicU64::new(0),
            failed_elapsed_us: AtomicU64::new(0),
            max_elapsed_us: AtomicU64::new(0),
            failed_max_elapsed_us: AtomicU64::new(0),
            succeeded_max_elapsed_us: AtomicU64::new(0),
            window: AtomicI64::new(WINDOW_UNSET),
            window_succeeded_offset: AtomicU64::new(0),
            window_elapsed_offset_us: AtomicU64::new(0),
            released: Notify::new(),
            observed: AtomicBool::new(false),
            observers: Mutex::new(Vec::new()),
        }
    }
}

impl fmt::Debug for RpcStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RpcStatus")
            .field("active", &self.active())
            .field("total", &self.total())
            .field("failed", &self.failed())
            .field("total_elapsed_us", &self.total_elapsed_us())
            .finish_non_exhaustive()
    }
}

impl RpcStatus {
    /// A fresh, zeroed status (tests and tools; real counters come from [`ServiceStatus`]).
    pub fn new() -> Self {
        RpcStatus::default()
    }

    /// Calls in flight.
    pub fn active(&self) -> i32 {
        self.active.load(Ordering::Relaxed)
    }

    /// Finished calls (succeeded + failed).
    pub fn total(&self) -> u64 {
        self.total.load(Ordering::Relaxed)
    }

    /// Failed (including cancelled) calls.
    pub fn failed(&self) -> u64 {
        self.failed.load(Ordering::Relaxed)
    }

    /// Succeeded calls.
    pub fn succeeded(&self) -> u64 {
        self.total().saturating_sub(self.failed())
    }

    /// Total elapsed time of finished calls, µs.
    pub fn total_elapsed_us(&self) -> u64 {
        self.total_elapsed_us.load(Ordering::Relaxed)
    }

    /// Total elapsed time of finished calls, ms (Dubbo's `getTotalElapsed`).
    pub fn total_elapsed_ms(&self) -> u64 {
        self.total_elapsed_us() / 1000
    }

    /// Elapsed time of failed calls, µs.
    pub fn failed_elapsed_us(&self) -> u64 {
        self.failed_elapsed_us.load(Ordering::Relaxed)
    }

    /// Elapsed time of succeeded calls, µs.
    pub fn succeeded_elapsed_us(&self) -> u64 {
        self.total_elapsed_us()
            .saturating_sub(self.failed_elapsed_us())
    }

    /// The longest call, µs.
    pub fn max_elapsed_us(&self) -> u64 {
        self.max_elapsed_us.load(Ordering::Relaxed)
    }

    /// The longest failed call, µs.
    pub fn failed_max_elapsed_us(&self) -> u64 {
        self.failed_max_elapsed_us.load(Ordering::Relaxed)
    }

    /// The longest succeeded call, µs.
    pub fn succeeded_max_elapsed_us(&self) -> u64 {
        self.succeeded_max_elapsed_us.load(Ordering::Relaxed)
    }

    /// Average elapsed time of finished calls, µs (0 when none).
    pub fn average_elapsed_us(&self) -> u64 {
        self.total_elapsed_us()
            .checked_div(self.total())
            .unwrap_or(0)
    }

    /// Atomic admission (Dubbo's `beginCount(url, m, max)`): increments `active` unless that
    /// would exceed `max` (`max <= 0` = unlimited) or overflow. Never over-admits.
    pub fn try_acquire(&self, max: i32) -> bool {
        let limit = if max <= 0 { i32::MAX } else { max };
        let ok = self
            .active
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |a| {
                if a >= limit || a == i32::MAX {
                    None
                } else {
                    Some(a + 1)
                }
            })
            .is_ok();
        if ok {
            self.notify_observers();
        }
        ok
    }

    /// Increments `active` unconditionally (saturating); the service-level counterpart of
    /// [`RpcStatus::try_acquire`].
    fn acquire(&self) {
        let _ = self
            .active
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |a| {
                if a == i32::MAX {
                    None
                } else {
                    Some(a + 1)
                }
            });
        self.notify_observers();
    }

    /// Dubbo's `endCount`: active--, total++, elapsed statistics.
    fn end(&self, elapsed_us: u64, succeeded: bool) {
        self.active.fetch_sub(1, Ordering::AcqRel);
        self.total.fetch_add(1, Ordering::Relaxed);
        self.total_elapsed_us
            .fetch_add(elapsed_us, Ordering::Relaxed);
        self.max_elapsed_us.fetch_max(elapsed_us, Ordering::Relaxed);
        if succeeded {
            self.succeeded_max_elapsed_us
                .fetch_max(elapsed_us, Ordering::Relaxed);
        } else {
            self.failed.fetch_add(1, Ordering::Relaxed);
            self.failed_elapsed_us
                .fetch_add(elapsed_us, Ordering::Relaxed);
            self.failed_max_elapsed_us
                .fetch_max(elapsed_us, Ordering::Relaxed);
        }
        self.notify_observers();
    }

    /// Records a finished call without a guard (tests, replaying statistics). `active` is
    /// not touched.
    pub fn record(&self, elapsed_us: u64, succeeded: bool) {
        self.record_counts(elapsed_us, succeeded);
        self.notify_observers();
    }

    fn record_counts(&self, elapsed_us: u64, succeeded: bool) {
        self.total.fetch_add(1, Ordering::Relaxed);
        self.total_elapsed_us
            .fetch_add(elapsed_us, Ordering::Relaxed);
        self.max_elapsed_us.fetch_max(elapsed_us, Ordering::Relaxed);
        if succeeded {
            self.succeeded_max_elapsed_us
                .fetch_max(elapsed_us, Ordering::Relaxed);
        } else {
            self.failed.fetch_add(1, Ordering::Relaxed);
            self.failed_elapsed_us
                .fetch_add(elapsed_us, Ordering::Relaxed);
            self.failed_max_elapsed_us
                .fetch_max(elapsed_us, Ordering::Relaxed);
        }
    }

    /// The shortest-response estimate (`ShortestResponseLoadBalance`) in µs for the sliding window
    /// `window` (a window number, e.g. `now_ms / slide_period_ms`): average succeeded elapsed time
    /// since the window started × (active + 1); 0 when nothing succeeded in the window.
    ///
    /// The window of fresh counters starts at zero (like Dubbo's new `SlideWindowData`); the
    /// first read in a later window moves the window start to the current counters (a lazy
    /// form of Dubbo's asynchronous reset every `shortestResponseSlidePeriod`).
    pub fn estimate_response_us(&self, window: i64) -> u64 {
        let seen = self.window.load(Ordering::Acquire);
        if seen != window
            && self
                .window
                .compare_exchange(seen, window, Ordering::AcqRel, Ordering::Acquire)
                .is_ok()
            && seen != WINDOW_UNSET
        {
            self.window_succeeded_offset
                .store(self.succeeded(), Ordering::Relaxed);
            self.window_elapsed_offset_us
                .store(self.succeeded_elapsed_us(), Ordering::Relaxed);
        }
        let succeeded = self
            .succeeded()
            .saturating_sub(self.window_succeeded_offset.load(Ordering::Relaxed));
        if succeeded == 0 {
            return 0;
        }
        let elapsed = self
            .succeeded_elapsed_us()
            .saturating_sub(self.window_elapsed_offset_us.load(Ordering::Relaxed));
        let active = u64::try_from(self.active().max(0)).unwrap_or(0) + 1;
        (elapsed / succeeded).saturating_mul(active)
    }

    /// Average succeeded elapsed time over the whole life, µs (P2C's latency signal).
    pub fn succeeded_average_us(&self) -> u64 {
        self.succeeded_elapsed_us()
            .checked_div(self.succeeded())
            .unwrap_or(0)
    }

    /// Subscribes a least-key index (leaf `leaf`) to changes of this counter.
    pub(crate) fn observe(&self, index: Weak<dyn StatusObserver>, leaf: usize) {
        let mut o = self.observers.lock();
        o.retain(|(w, _)| w.strong_count() > 0);
        o.push((index, leaf));
        self.observed.store(true, Ordering::Release);
    }

    /// Tells the watching indexes that `active` or the elapsed statistics changed. Free
    /// (one atomic load) when no index watches.
    pub(crate) fn notify_observers(&self) {
        if !self.observed.load(Ordering::Acquire) {
            return;
        }
        let mut o = self.observers.lock();
        o.retain(|(w, leaf)| match w.upgrade() {
            Some(index) => {
                index.update(*leaf);
                true
            }
            None => false,
        });
        if o.is_empty() {
            self.observed.store(false, Ordering::Release);
        }
    }

    /// The notifier woken when a call of a limited method ends (ActiveLimit waiters).
    pub fn released(&self) -> &Notify {
        &self.released
    }
}

/// Most method names one identity (or one invoker set) keeps state of its own for; further
/// names share [`OVERFLOW_METHOD`]'s.
pub const MAX_TRACKED_METHODS: usize = 128;

/// The key under which calls of method names past [`MAX_TRACKED_METHODS`] are counted (no
/// Java method can have this name).
pub const OVERFLOW_METHOD: &str = "<other methods>";

/// The counters of one invoker identity: service level plus one [`RpcStatus`] per method.
pub struct ServiceStatus {
    identity: Arc<str>,
    service: RpcStatus,
    methods: RwLock<FxHashMap<Box<str>, Arc<RpcStatus>>>,
}

impl fmt::Debug for ServiceStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The identity string may hold credentials: never print it.
        f.debug_struct("ServiceStatus")
            .field("service", &self.service)
            .finish_non_exhaustive()
    }
}

static REGISTRY: LazyLock<RwLock<FxHashMap<Arc<str>, Weak<ServiceStatus>>>> =
    LazyLock::new(|| RwLock::new(FxHashMap::default()));

impl ServiceStatus {
    /// The shared counters of an invoker URL (keyed by `to_identity_string()`).
    pub fn for_url(url: &Url) -> Arc<ServiceStatus> {
        ServiceStatus::for_identity(&url.to_identity_string())
    }

    /// The shared counters of an identity string, created on first use.
    pub fn for_identity(identity: &str) -> Arc<ServiceStatus> {
        if let Some(s) = REGISTRY.read().get(identity).and_then(Weak::upgrade) {
            return s;
        }
        let mut map = REGISTRY.write();
        if let Some(s) = map.get(identity).and_then(Weak::upgrade) {
            return s;
        }
        // Drop dead entries now and then (amortised O(1) per insert).
        if map.len() >= 1024 && map.len().is_power_of_two() {
            map.retain(|_, w| w.strong_count() > 0);
        }
        let identity: Arc<str> = Arc::from(identity);
        let s = Arc::new(ServiceStatus {
            identity: identity.clone(),
            service: RpcStatus::default(),
            methods: RwLock::new(FxHashMap::default()),
        });
        map.insert(identity, Arc::downgrade(&s));
        s
    }

    /// The identity string these counters belong to (may contain credentials: do not log).
    pub fn identity(&self) -> &Arc<str> {
        &self.identity
    }

    /// Service-level (all methods) counters.
    pub fn service(&self) -> &RpcStatus {
        &self.service
    }

    /// The counters of `method`, created on first use. Method names come from callers, so
    /// at most [`MAX_TRACKED_METHODS`] get their own counters per identity; calls of any
    /// further name share the counters of [`OVERFLOW_METHOD`] (Java keeps one per name,
    /// without bound).
    pub fn method(&self, method: &str) -> Arc<RpcStatus> {
        {
            let map = self.methods.read();
            if let Some(s) = map.get(method) {
                return s.clone();
            }
            if map.len() >= MAX_TRACKED_METHODS {
                if let Some(s) = map.get(OVERFLOW_METHOD) {
                    return s.clone();
                }
            }
        }
        let mut map = self.methods.write();
        let key = if map.len() >= MAX_TRACKED_METHODS && !map.contains_key(method) {
            OVERFLOW_METHOD
        } else {
            method
        };
        map.entry(Box::from(key)).or_default().clone()
    }

    /// Number of method names with counters of their own (the overflow included).
    pub fn tracked_methods(&self) -> usize {
        self.methods.read().len()
    }

    /// Starts counting a call of `method` with no limit.
    pub fn begin(self: &Arc<Self>, method: &str) -> CallGuard {
        let m = self.method(method);
        m.acquire();
        self.service.acquire();
        CallGuard::new(self.clone(), m, false)
    }

    /// Starts counting a call of `method` if fewer than `max` calls are active (`max <= 0` =
    /// unlimited). On success the guard wakes waiters of the method when it ends (if `max >
    /// 0`).
    pub fn try_begin(self: &Arc<Self>, method: &Arc<RpcStatus>, max: i32) -> Option<CallGuard> {
        if !method.try_acquire(max) {
            return None;
        }
        self.service.acquire();
        Some(CallGuard::new(self.clone(), method.clone(), max > 0))
    }
}

/// Counts one call: created when the call is admitted, finished by [`CallGuard::finish`] or
/// by being dropped (a cancelled call counts as failed). Always releases its slot once.
#[must_use = "dropping the guard ends the call immediately (counted as failed)"]
pub struct CallGuard {
    service: Arc<ServiceStatus>,
    method: Arc<RpcStatus>,
    start: Instant,
    notify: bool,
    done: bool,
}

impl fmt::Debug for CallGuard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CallGuard")
            .field("done", &self.done)
            .finish_non_exhaustive()
    }
}

impl CallGuard {
    fn new(service: Arc<ServiceStatus>, method: Arc<RpcStatus>, notify: bool) -> Self {
        CallGuard {
            service,
            method,
            start: Instant::now(),
            notify,
            done: false,
        }
    }

    /// Ends the call: `succeeded` is true for an `Ok` result.
    pub fn finish(mut self, succeeded: bool) {
        self.end(succeeded);
    }

    /// The method counters this guard updates.
    pub fn method_status(&self) -> &Arc<RpcStatus> {
        &self.method
    }

    fn end(&mut self, succeeded: bool) {
        if self.done {
            return;
        }
        self.done = true;
        let us = u64::try_from(self.start.elapsed().as_micros()).unwrap_or(u64::MAX);
        self.method.end(us, succeeded);
        self.service.service.end(us, succeeded);
        if self.notify {
            self.method.released.notify_waiters();
        }
    }
}

impl Drop for CallGuard {
    fn drop(&mut self) {
        self.end(false);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn acquire_respects_max_and_guard_releases() {
        let s = ServiceStatus::for_identity("test://status-unit:1/a");
        let m = s.method("m");
        let g1 = s.try_begin(&m, 2).unwrap();
        let g2 = s.try_begin(&m, 2).unwrap();
        assert!(s.try_begin(&m, 2).is_none());
        assert_eq!(m.active(), 2);
        assert_eq!(s.service().active(), 2);
        g1.finish(true);
        drop(g2);
        assert_eq!(m.active(), 0);
        assert_eq!(s.service().active(), 0);
        assert_eq!(m.total(), 2);
        assert_eq!(m.failed(), 1);
        assert_eq!(m.succeeded(), 1);
    }

    #[test]
    fn same_identity_same_counters_while_alive() {
        let a = ServiceStatus::for_identity("test://status-unit:2/a");
        let b = ServiceStatus::for_identity("test://status-unit:2/a");
        assert!(Arc::ptr_eq(&a, &b));
        let _g = a.begin("x");
        assert_eq!(b.method("x").active(), 1);
    }

    #[test]
    fn estimate_uses_window() {
        let s = RpcStatus::new();
        s.record(5_000, true);
        // Fresh counters: the first window starts at zero.
        assert_eq!(s.estimate_response_us(6), 5_000);
        // A later window starts at the counters seen then.
        assert_eq!(s.estimate_response_us(7), 0);
        s.record(3_000, true);
        s.record(1_000, true);
        assert_eq!(s.estimate_response_us(7), 2_000);
        assert!(s.try_acquire(0));
        assert_eq!(s.estimate_response_us(7), 4_000);
        assert_eq!(s.estimate_response_us(8), 0);
    }
}
