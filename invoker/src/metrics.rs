//! Process-wide counters of the call path (cheap relaxed atomics), for dashboards and the CLI.

use std::sync::atomic::{AtomicU64, Ordering};

static NOTIFICATIONS: AtomicU64 = AtomicU64::new(0);
static SNAPSHOTS: AtomicU64 = AtomicU64::new(0);
static RETRIES: AtomicU64 = AtomicU64::new(0);
static MOCKED: AtomicU64 = AtomicU64::new(0);

/// A copy of the counters at one moment.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct InvokerMetrics {
    /// Registry notifications applied by directories.
    pub notifications: u64,
    /// Directory snapshots published (each provider-list change that altered the invokers).
    pub snapshots: u64,
    /// Cluster retries: failover re-attempts and failback background retries.
    pub retries: u64,
    /// Calls answered by a mock (force, or fail-mock after a non-biz error).
    pub mocked: u64,
}

/// The counters now.
pub fn snapshot() -> InvokerMetrics {
    InvokerMetrics {
        notifications: NOTIFICATIONS.load(Ordering::Relaxed),
        snapshots: SNAPSHOTS.load(Ordering::Relaxed),
        retries: RETRIES.load(Ordering::Relaxed),
        mocked: MOCKED.load(Ordering::Relaxed),
    }
}

pub(crate) fn notification() {
    NOTIFICATIONS.fetch_add(1, Ordering::Relaxed);
}

pub(crate) fn snapshot_published() {
    SNAPSHOTS.fetch_add(1, Ordering::Relaxed);
}

pub(crate) fn retry() {
    RETRIES.fetch_add(1, Ordering::Relaxed);
}

pub(crate) fn mocked() {
    MOCKED.fetch_add(1, Ordering::Relaxed);
}
