//! Observability options shared by `invoke` and `watch`: a Prometheus endpoint with Dubbo's
//! metrics (`--metrics-addr`), and for `invoke` the W3C trace context (`--trace`).

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use invoker::filter::trace_context::{TraceContextLayer, TraceSource};
use invoker::filter::InvokerLayer;
use invoker::metrics::MetricsOptions;

/// `--metrics-addr` and friends.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct MetricsArgs {
    /// Serve Dubbo's metrics (Java's names and labels) for Prometheus on this address, e.g.
    /// 127.0.0.1:9464 (GET /metrics).
    #[arg(long, value_name = "ADDR")]
    pub metrics_addr: Option<SocketAddr>,
    /// Leave out the sliding-window families (qps, *_aggregate, p50..p99), as Java does
    /// unless dubbo.metrics.aggregation.enabled is set.
    #[arg(long, requires = "metrics_addr")]
    pub metrics_no_aggregation: bool,
    /// Keep serving the metrics this many seconds after the command is done (a last scrape
    /// sees the final counts).
    #[arg(
        long,
        value_name = "SECS",
        default_value_t = 0,
        requires = "metrics_addr"
    )]
    pub metrics_linger: u64,
}

impl MetricsArgs {
    /// Installs the Prometheus recorder and its HTTP listener (inside the runtime) and names
    /// the application; `None` without `--metrics-addr`. Must run before registries and
    /// consumers are made (their handles bind to the recorder installed then).
    pub fn install(&self, application: &str) -> anyhow::Result<Option<MetricsOptions>> {
        let Some(addr) = self.metrics_addr else {
            return Ok(None);
        };
        metrics_exporter_prometheus::PrometheusBuilder::new()
            .with_http_listener(addr)
            .install()
            .with_context(|| format!("--metrics-addr {addr}"))?;
        registry_core::metrics::names::describe_all();
        registry_core::metrics::set_application_name(application);
        Ok(Some(MetricsOptions {
            aggregation: !self.metrics_no_aggregation,
            ..MetricsOptions::default()
        }))
    }

    /// Waits `--metrics-linger` seconds (refreshing the window gauges) when metrics are on.
    pub async fn linger(&self) {
        if self.metrics_addr.is_none() || self.metrics_linger == 0 {
            return;
        }
        let until = tokio::time::Instant::now() + Duration::from_secs(self.metrics_linger);
        while tokio::time::Instant::now() < until {
            invoker::metrics::refresh_all();
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
}

/// `--trace`: the layer that sends a new W3C trace context with every call.
pub fn trace_layer(enabled: bool) -> Option<Arc<dyn InvokerLayer>> {
    enabled.then(|| {
        Arc::new(TraceContextLayer::new(TraceSource::Generated {
            sampled: true,
        })) as Arc<dyn InvokerLayer>
    })
}
