//! Metrics of the registry layer.
//!
//! - Dubbo's metrics, under Java's names and labels ([`names`]), through the [`metrics`]
//!   facade: install a recorder (e.g. `metrics-exporter-prometheus`) **before** creating
//!   registries and consumers, since handles created while no recorder is installed stay
//!   no-ops. [`identity()`] holds the application labels; [`RegistryOpMetrics`] the register and
//!   subscribe counts of a registry; [`RtGauges`] the response-time gauges every measured
//!   operation shares.
//! - Process-wide counters (cheap relaxed atomics) for the CLI: [`snapshot`].

use std::sync::atomic::{AtomicU64, Ordering};

pub mod identity;
pub mod names;
mod registry_ops;
mod rt;

pub use identity::{identity, set_application_name, set_identity, Identity};
pub use registry_ops::{registry_cluster, RegistryOpMetrics};
pub use rt::RtGauges;

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
