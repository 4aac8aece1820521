//! Process-wide counters of the registry layer (cheap relaxed atomics), for dashboards and the
//! CLI.

use std::sync::atomic::{AtomicU64, Ordering};

static NOTIFICATIONS: AtomicU64 = AtomicU64::new(0);
static RETRIES: AtomicU64 = AtomicU64::new(0);

/// A copy of the counters at one moment.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RegistryMetrics {
    /// Notifications queued to subscribers (one per category list published).
    pub notifications: u64,
    /// Background retries of failed register/unregister/subscribe operations.
    pub retries: u64,
}

/// The counters now.
pub fn snapshot() -> RegistryMetrics {
    RegistryMetrics {
        notifications: NOTIFICATIONS.load(Ordering::Relaxed),
        retries: RETRIES.load(Ordering::Relaxed),
    }
}

pub(crate) fn notification() {
    NOTIFICATIONS.fetch_add(1, Ordering::Relaxed);
}

pub(crate) fn retry() {
    RETRIES.fetch_add(1, Ordering::Relaxed);
}
