//! The W3C trace context layer: what it adds to a call's attachments, and when it leaves a
//! call alone. (End to end against Java's tracing: `cli/tests/observe_java.rs`.)

#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use invoker::filter::trace_context::{TraceContextLayer, TraceSource};
use invoker::filter::InvokerLayer;
use invoker::rpc::{Invocation, Invoker, RpcResponse, RpcResult};
use invoker::trace_context::{TraceParent, TRACEPARENT, TRACESTATE};
use registry_core::Url;
use serde_json::json;

/// Records the attachments of every call.
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

fn recorder() -> Arc<Recorder> {
    Arc::new(Recorder {
        url: Url::parse("dubbo://10.0.0.1:20880/demo.Service?application=shop").unwrap(),
        seen: Mutex::new(Vec::new()),
    })
}

fn sent(rec: &Recorder, i: usize) -> BTreeMap<String, String> {
    rec.seen.lock().unwrap()[i].clone()
}

#[tokio::test]
async fn every_call_gets_a_new_valid_traceparent() {
    let rec = recorder();
    let inv = TraceContextLayer::new(TraceSource::Generated { sampled: true }).layer(rec.clone());
    let call = Invocation::new("m").with_attachment("keep", "v");
    inv.invoke(&call).await.unwrap();
    inv.invoke(&call).await.unwrap();
    let (a, b) = (sent(&rec, 0), sent(&rec, 1));
    let ta = TraceParent::parse(&a[TRACEPARENT]).unwrap();
    let tb = TraceParent::parse(&b[TRACEPARENT]).unwrap();
    assert!(ta.is_sampled() && tb.is_sampled());
    assert_ne!(ta.trace_id, tb.trace_id, "each call is its own trace");
    assert_eq!(a["keep"], "v", "the call's own attachments are kept");
    assert!(!a.contains_key(TRACESTATE), "no trace state of our own");
    // The caller's invocation is not changed.
    assert_eq!(call.attachment(TRACEPARENT), None);

    let unsampled = TraceContextLayer::new(TraceSource::Generated { sampled: false });
    let rec2 = recorder();
    unsampled
        .layer(rec2.clone())
        .invoke(&Invocation::new("m"))
        .await
        .unwrap();
    let t = TraceParent::parse(&sent(&rec2, 0)[TRACEPARENT]).unwrap();
    assert!(!t.is_sampled());
    assert!(sent(&rec2, 0)[TRACEPARENT].ends_with("-00"));
}

#[tokio::test]
async fn a_call_that_carries_a_context_is_sent_unchanged() {
    let rec = recorder();
    let inv = TraceContextLayer::default().layer(rec.clone());
    let given = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    let call = Invocation::new("m")
        .with_attachment(TRACEPARENT, given)
        .with_attachment(TRACESTATE, "congo=t61rcWkgMzE");
    inv.invoke(&call).await.unwrap();
    let a = sent(&rec, 0);
    assert_eq!(a[TRACEPARENT], given);
    assert_eq!(a[TRACESTATE], "congo=t61rcWkgMzE");
}
