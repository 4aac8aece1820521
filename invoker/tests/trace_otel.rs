//! `TraceSource::OpenTelemetry` (feature `opentelemetry`): the context sent with a call is
//! that of a client span made under the current `tracing` span through
//! `tracing-opentelemetry`: the caller's trace id and trace state, a span id of its own.

#![cfg(feature = "opentelemetry")]
#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use invoker::filter::trace_context::{TraceContextLayer, TraceSource};
use invoker::filter::InvokerLayer;
use invoker::rpc::{Invocation, Invoker, RpcResponse, RpcResult};
use invoker::trace_context::{TraceParent, TRACEPARENT, TRACESTATE};
use opentelemetry::trace::{
    SpanContext, SpanId, TraceContextExt, TraceFlags, TraceId, TraceState, TracerProvider as _,
};
use opentelemetry::Context;
use opentelemetry_sdk::trace::SdkTracerProvider;
use registry_core::Url;
use serde_json::json;
use tracing::Instrument;
use tracing_opentelemetry::OpenTelemetrySpanExt;
use tracing_subscriber::layer::SubscriberExt;

#[derive(Debug)]
struct Recorder {
    url: Url,
    seen: Mutex<Vec<BTreeMap<String, String>>>,
}

#[async_trait]
impl Invoker for Recorder {
    fn url(&self) -> &Url {
        &self.url
    }

    async fn invoke(&self, invocation: &Invocation) -> RpcResult {
        self.seen
            .lock()
            .unwrap()
            .push(invocation.attachments.clone());
        Ok(RpcResponse::new(json!("ok")))
    }
}

#[tokio::test]
async fn the_call_is_a_client_span_of_the_current_trace() {
    let provider = SdkTracerProvider::builder().build();
    let subscriber = tracing_subscriber::registry()
        .with(tracing_opentelemetry::layer().with_tracer(provider.tracer("test")));
    let _guard = tracing::subscriber::set_default(subscriber);

    let rec = Arc::new(Recorder {
        url: Url::parse("dubbo://10.0.0.1:20880/demo.Service?application=shop").unwrap(),
        seen: Mutex::new(Vec::new()),
    });
    let inv = TraceContextLayer::new(TraceSource::OpenTelemetry).layer(rec.clone());

    // A request this program serves, whose caller sent a trace context (remote parent).
    let incoming =
        TraceParent::parse("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01").unwrap();
    let state: TraceState = "congo=t61rcWkgMzE".parse().unwrap();
    let remote = SpanContext::new(
        TraceId::from_bytes(incoming.trace_id),
        SpanId::from_bytes(incoming.span_id),
        TraceFlags::SAMPLED,
        true,
        state,
    );
    let request = tracing::info_span!("request");
    request
        .set_parent(Context::new().with_remote_span_context(remote))
        .unwrap();
    let ours = request.context().span().span_context().span_id();

    inv.invoke(&Invocation::new("sayHello"))
        .instrument(request.clone())
        .await
        .unwrap();
    inv.invoke(&Invocation::new("sayHello"))
        .instrument(request)
        .await
        .unwrap();

    let seen = rec.seen.lock().unwrap().clone();
    let a = TraceParent::parse(&seen[0][TRACEPARENT]).unwrap();
    let b = TraceParent::parse(&seen[1][TRACEPARENT]).unwrap();
    assert_eq!(
        a.trace_id, incoming.trace_id,
        "the caller's trace continues"
    );
    assert_eq!(b.trace_id, incoming.trace_id);
    assert!(a.is_sampled());
    assert_ne!(a.span_id, incoming.span_id, "a client span of its own");
    assert_ne!(
        a.span_id,
        ours.to_bytes(),
        "not the request's span: a child of it"
    );
    assert_ne!(a.span_id, b.span_id, "one client span per call");
    assert_eq!(seen[0][TRACESTATE], "congo=t61rcWkgMzE");
}

#[tokio::test]
async fn without_an_opentelemetry_layer_a_context_is_generated() {
    let rec = Arc::new(Recorder {
        url: Url::parse("dubbo://10.0.0.1:20880/demo.Service").unwrap(),
        seen: Mutex::new(Vec::new()),
    });
    let inv = TraceContextLayer::new(TraceSource::OpenTelemetry).layer(rec.clone());
    inv.invoke(&Invocation::new("m")).await.unwrap();
    let seen = rec.seen.lock().unwrap().clone();
    let t = TraceParent::parse(&seen[0][TRACEPARENT]).unwrap();
    assert!(t.is_sampled());
    assert!(!seen[0].contains_key(TRACESTATE));
}
