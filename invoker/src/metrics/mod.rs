//! Metrics of the call path.
//!
//! - Dubbo's consumer metrics under Java's names and labels, through the [`metrics`] facade:
//!   calls per method ([`crate::cluster::ClusterOptions::metrics`] or [`MetricsLayer`]:
//!   counts by outcome, in flight, response times, and with aggregation qps and p50..p99) and
//!   [`DirectoryMetrics`] (provider counts of a
//!   directory, notifications). Names live in [`registry_core::metrics::names`]. Install a
//!   recorder first; handles made while none is installed stay no-ops.
//! - Process-wide counters (cheap relaxed atomics) for the CLI: [`snapshot`].
//!
//! Installing a Prometheus endpoint in a program:
//!
//! ```no_run
//! # fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use invoker::metrics::MetricsOptions;
//!
//! // Any `metrics` recorder works; this one serves http://127.0.0.1:9464/metrics.
//! // (Inside a tokio runtime.)
//! metrics_exporter_prometheus::PrometheusBuilder::new()
//!     .with_http_listener(([127, 0, 0, 1], 9464))
//!     .install()?;
//! registry_core::metrics::names::describe_all();
//! registry_core::metrics::set_application_name("my-app");
//! let options = invoker::cluster::ClusterOptions {
//!     metrics: Some(MetricsOptions { aggregation: true, ..Default::default() }),
//!     ..Default::default()
//! };
//! // invoker::cluster::join_with(directory, options) ...
//! # let _ = options; Ok(()) }
//! ```

use std::sync::atomic::{AtomicU64, Ordering};

mod consumer;
mod directory;
pub mod outcome;
pub mod window;

pub use consumer::{
    refresh_all, CallRecord, ConsumerMetrics, MethodMetrics, MetricsInvoker, MetricsLayer,
    MetricsOptions, OTHER_METHOD,
};
pub use directory::{DirectoryCounts, DirectoryMetrics};
pub use outcome::Outcome;

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
