//! [`TraceContextLayer`]: sends the W3C trace context with every call (Java's
//! `ObservationSenderFilter`, a cluster filter: one client span per call, whatever the
//! retries), in the attachments `traceparent` / `tracestate` ([`crate::trace_context`]).
//!
//! Where the context comes from ([`TraceSource`]):
//! - [`TraceSource::Generated`] (always available): each call is the root of a new trace
//!   with random ids (sampled by default), logged as the `trace_id` field of a debug span
//!   `dubbo.call`: enough to find one call in the traces of providers that trace;
//! - `TraceSource::OpenTelemetry` (feature `opentelemetry`): each call is a client span
//!   (`tracing` span `dubbo.call`, OpenTelemetry name `interface/method`, kind client) made
//!   under the current span through `tracing-opentelemetry`; its trace id, span id, sampled
//!   flag and trace state are sent, so a provider's spans join the caller's trace. Without a
//!   valid OpenTelemetry context (no layer installed) it falls back to a generated one.
//!
//! A call that already carries a `traceparent` attachment is sent unchanged (the caller owns
//! its context). The call's attachments are copied to add the context: this layer allocates
//! per call, unlike the metrics.

use std::sync::Arc;

use async_trait::async_trait;
use registry_core::Url;
use tracing::Instrument;

use super::InvokerLayer;
use crate::rpc::{Invocation, Invoker, RpcResult, SharedInvoker};
use crate::trace_context::{TraceParent, TRACEPARENT, TRACESTATE};

/// Where a call's trace context comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TraceSource {
    /// A new trace per call (random ids; `sampled` sets the flag).
    Generated {
        /// The sampled flag sent (a provider that traces samples when it is set).
        sampled: bool,
    },
    /// A client span under the current `tracing` span, through `tracing-opentelemetry`.
    #[cfg(feature = "opentelemetry")]
    OpenTelemetry,
}

impl Default for TraceSource {
    fn default() -> Self {
        TraceSource::Generated { sampled: true }
    }
}

/// The layer that adds the trace context to every call.
#[derive(Debug, Clone, Copy, Default)]
pub struct TraceContextLayer {
    source: TraceSource,
}

impl TraceContextLayer {
    /// A layer taking contexts from `source`.
    pub fn new(source: TraceSource) -> Self {
        TraceContextLayer { source }
    }
}

impl InvokerLayer for TraceContextLayer {
    fn layer(&self, inner: SharedInvoker) -> SharedInvoker {
        Arc::new(TraceContextInvoker {
            inner,
            source: self.source,
        })
    }
}

/// The invoker [`TraceContextLayer`] makes.
#[derive(Debug)]
pub struct TraceContextInvoker {
    inner: SharedInvoker,
    source: TraceSource,
}

/// The context of one call, and the span the call runs in.
fn begin(
    source: TraceSource,
    url: &Url,
    invocation: &Invocation,
) -> (TraceParent, Option<String>, tracing::Span) {
    match source {
        TraceSource::Generated { sampled } => {
            let tp = TraceParent::generate(sampled);
            let span = tracing::debug_span!(
                "dubbo.call",
                service = url.service_interface().unwrap_or(""),
                method = invocation.real_method(),
                trace_id = %tracing::field::display(HexTrace(&tp)),
            );
            (tp, None, span)
        }
        #[cfg(feature = "opentelemetry")]
        TraceSource::OpenTelemetry => otel::begin(url, invocation),
    }
}

/// Displays a trace id without building a string unless the span is enabled.
struct HexTrace<'a>(&'a TraceParent);

impl std::fmt::Display for HexTrace<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for b in self.0.trace_id {
            write!(f, "{b:02x}")?;
        }
        Ok(())
    }
}

#[async_trait]
impl Invoker for TraceContextInvoker {
    crate::delegate_invoker!(inner);

    async fn invoke(&self, invocation: &Invocation) -> RpcResult {
        if invocation.attachment(TRACEPARENT).is_some() {
            return self.inner.invoke(invocation).await;
        }
        let (tp, state, span) = begin(self.source, self.inner.url(), invocation);
        let mut traced = invocation.clone();
        traced
            .attachments
            .insert(TRACEPARENT.to_owned(), tp.to_string());
        if let Some(s) = state.filter(|s| !s.is_empty()) {
            traced.attachments.insert(TRACESTATE.to_owned(), s);
        }
        self.inner.invoke(&traced).instrument(span).await
    }
}

#[cfg(feature = "opentelemetry")]
mod otel {
    use opentelemetry::trace::TraceContextExt;
    use registry_core::Url;
    use tracing_opentelemetry::OpenTelemetrySpanExt;

    use crate::rpc::Invocation;
    use crate::trace_context::TraceParent;

    /// A client span under the current one; its OpenTelemetry ids.
    pub(super) fn begin(
        url: &Url,
        invocation: &Invocation,
    ) -> (TraceParent, Option<String>, tracing::Span) {
        let service = url.service_interface().unwrap_or("");
        let method = invocation.real_method();
        // Java's `DefaultDubboClientObservationConvention`: `interface/method`, kind client,
        // rpc.system apache_dubbo.
        let span = tracing::info_span!(
            "dubbo.call",
            otel.name = %format_args!("{service}/{method}"),
            otel.kind = "client",
            rpc.system = "apache_dubbo",
            rpc.service = service,
            rpc.method = method,
        );
        let cx = span.context();
        let sc = cx.span().span_context().clone();
        if !sc.is_valid() {
            let tp = TraceParent::generate(true);
            return (tp, None, span);
        }
        let tp = TraceParent {
            trace_id: sc.trace_id().to_bytes(),
            span_id: sc.span_id().to_bytes(),
            flags: sc.trace_flags().to_u8(),
        };
        let state = sc.trace_state().header();
        (tp, Some(state), span)
    }
}
