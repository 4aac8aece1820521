//! ConsumerContext, Deprecated and Future filters (`ConsumerContextFilter`, `DeprecatedFilter`,
//! `FutureFilter`).

#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use invoker::filter::consumer_context::{CallContext, ConsumerContextLayer};
use invoker::filter::deprecated::DeprecatedLayer;
use invoker::filter::future::FutureLayer;
use invoker::filter::{apply_layers, InvokerLayer};
use invoker::rpc::{
    Invocation, Invoker, RpcError, RpcErrorCode, RpcResponse, RpcResult, SharedInvoker,
};
use invoker::testutil::*;
use registry_core::Url;
use serde_json::json;

/// Records the attachments of the last call and answers with result attachments.
#[derive(Debug)]
struct Recorder {
    url: Url,
    seen: Mutex<Option<BTreeMap<String, String>>>,
    calls: AtomicUsize,
}

#[async_trait]
impl Invoker for Recorder {
    fn url(&self) -> &Url {
        &self.url
    }

    async fn invoke(&self, invocation: &Invocation) -> RpcResult {
        self.calls.fetch_add(1, Ordering::SeqCst);
        *self.seen.lock().unwrap() = Some(invocation.attachments.clone());
        let mut r = RpcResponse::new(json!("ok"));
        r.attachments.insert("server-said".into(), "hi".into());
        Ok(r)
    }
}

fn recorder(url: &str) -> Arc<Recorder> {
    Arc::new(Recorder {
        url: Url::parse(url).unwrap(),
        seen: Mutex::new(None),
        calls: AtomicUsize::new(0),
    })
}

#[tokio::test]
async fn consumer_context_sets_remote_application_and_copies_attachments() {
    let rec = recorder("dubbo://10.0.0.1:20880/demo.Service?application=shop");
    let inv = ConsumerContextLayer.layer(rec.clone());
    inv.invoke(&Invocation::new("m")).await.unwrap();
    let seen = rec.seen.lock().unwrap().clone().unwrap();
    assert_eq!(
        seen.get("remote.application").map(String::as_str),
        Some("shop")
    );

    let ctx = Arc::new(
        CallContext::new()
            .with_server_attachment("trace", "server")
            .with_server_attachment("keep", "s")
            .with_attachment("trace", "client"),
    );
    ctx.clone()
        .scope(async { inv.invoke(&Invocation::new("m")).await.unwrap() })
        .await;
    let seen = rec.seen.lock().unwrap().clone().unwrap();
    assert_eq!(
        seen.get("trace").map(String::as_str),
        Some("client"),
        "client overwrites server"
    );
    assert_eq!(seen.get("keep").map(String::as_str), Some("s"));
    assert_eq!(
        ctx.response_attachments()
            .get("server-said")
            .map(String::as_str),
        Some("hi")
    );
}

#[tokio::test(start_paused = true)]
async fn consumer_context_timeout_countdown() {
    let rec = recorder("dubbo://10.0.0.1:20880/demo.Service");
    let inv = ConsumerContextLayer.layer(rec.clone());
    let ctx = Arc::new(CallContext::new().with_timeout(Duration::from_millis(300)));
    ctx.clone()
        .scope(async { inv.invoke(&Invocation::new("m")).await.unwrap() })
        .await;
    let seen = rec.seen.lock().unwrap().clone().unwrap();
    assert_eq!(seen.get("_TO").map(String::as_str), Some("300"));

    tokio::time::sleep(Duration::from_millis(400)).await;
    let err = ctx
        .clone()
        .scope(async { inv.invoke(&Invocation::new("m")).await })
        .await
        .unwrap_err();
    assert_eq!(err.code, RpcErrorCode::TimeoutTerminate);
    assert!(err
        .message
        .contains("No time left for making the following call: demo.Service.m"));
    assert_eq!(
        rec.calls.load(Ordering::SeqCst),
        1,
        "an expired call is not made"
    );

    // Disabled per method: the call goes through without a countdown.
    let rec = recorder("dubbo://10.0.0.1:20880/demo.Service?m.enable-timeout-countdown=false");
    let inv = ConsumerContextLayer.layer(rec.clone());
    ctx.clone()
        .scope(async { inv.invoke(&Invocation::new("m")).await.unwrap() })
        .await;
    assert!(!rec
        .seen
        .lock()
        .unwrap()
        .clone()
        .unwrap()
        .contains_key("_TO"));
}

#[tokio::test]
async fn deprecated_logs_once_and_only_when_deprecated() {
    let logs = Arc::new(Mutex::new(Vec::<String>::new()));
    let sink = logs.clone();
    let layer = DeprecatedLayer::isolated().with_observer(Arc::new(move |m: &str| {
        sink.lock().unwrap().push(m.to_owned())
    }));
    let dep = layer.layer(ScriptedInvoker::with_url(
        "test://test:11/demo.Service?echo.deprecated=true",
        ok("x"),
    ));
    let inv = Invocation::new("echo").with_arguments(
        vec!["java.lang.String".into(), "int".into()],
        vec![json!("a"), json!(1)],
    );
    for _ in 0..3 {
        dep.invoke(&inv).await.unwrap();
    }
    let got = logs.lock().unwrap().clone();
    assert_eq!(got.len(), 1);
    assert!(got[0].starts_with("The service method demo.Service.echo(String, int) is DEPRECATED! Declare from test://test:11/demo.Service"), "{}", got[0]);

    // A call that is not deprecated does not mark the key (divergence): a later deprecated
    // invoker for the same interface.method still logs.
    let plain = layer.layer(ScriptedInvoker::with_url(
        "test://test:11/other.Service",
        ok("x"),
    ));
    plain.invoke(&Invocation::new("ping")).await.unwrap();
    let later = layer.layer(ScriptedInvoker::with_url(
        "test://test:11/other.Service?deprecated=true",
        ok("x"),
    ));
    later.invoke(&Invocation::new("ping")).await.unwrap();
    assert_eq!(logs.lock().unwrap().len(), 2);
}

#[tokio::test]
async fn future_callbacks_fire_and_callback_errors_go_to_onthrow() {
    let events = Arc::new(Mutex::new(Vec::<String>::new()));
    let (a, b, c) = (events.clone(), events.clone(), events.clone());
    let layer = FutureLayer::new()
        .on_invoke(
            "m",
            Arc::new(move |_i: &Invocation| {
                a.lock().unwrap().push("invoke".into());
                Ok(())
            }),
        )
        .on_return(
            "m",
            Arc::new(move |r: &RpcResponse, _i: &Invocation| {
                b.lock().unwrap().push(format!("return {}", r.value));
                Err(RpcError::new(RpcErrorCode::Unknown, "callback broke"))
            }),
        )
        .on_throw(
            "m",
            Arc::new(move |e: &RpcError, _i: &Invocation| {
                c.lock().unwrap().push(format!("throw {}", e.message));
            }),
        );
    let ok_inv: SharedInvoker = layer.layer(ScriptedInvoker::new(0, ok("v")));
    let r = ok_inv.invoke(&Invocation::new("m")).await.unwrap();
    assert_eq!(r.value, json!("v"), "callbacks never change the result");
    assert_eq!(
        *events.lock().unwrap(),
        vec!["invoke", "return \"v\"", "throw callback broke"]
    );

    events.lock().unwrap().clear();
    let bad: SharedInvoker = layer.layer(ScriptedInvoker::new(0, biz()));
    assert!(bad
        .invoke(&Invocation::new("m"))
        .await
        .unwrap_err()
        .is_biz());
    assert_eq!(
        *events.lock().unwrap(),
        vec!["invoke", "throw bad argument"]
    );

    events.lock().unwrap().clear();
    bad.invoke(&Invocation::new("unconfigured"))
        .await
        .unwrap_err();
    assert!(events.lock().unwrap().is_empty());
}

#[tokio::test]
async fn layers_compose_outermost_first() {
    let rec = recorder("dubbo://10.0.0.1:20880/demo.Service?application=shop");
    let layers: Vec<Arc<dyn InvokerLayer>> = vec![
        Arc::new(ConsumerContextLayer),
        Arc::new(DeprecatedLayer::isolated()),
        Arc::new(FutureLayer::new()),
    ];
    let chain = apply_layers(rec.clone(), &layers);
    chain.invoke(&Invocation::new("m")).await.unwrap();
    assert_eq!(rec.calls.load(Ordering::SeqCst), 1);
    assert_eq!(chain.url(), &rec.url);
}

#[tokio::test]
async fn join_with_puts_cluster_layers_between_mock_and_strategy() {
    use invoker::cluster::{self, ClusterOptions};
    let rec = recorder("dubbo://10.0.0.1:20880/demo.Service");
    let dir = Arc::new(invoker::directory::StaticDirectory::new(
        Url::parse("consumer://127.0.0.1/demo.Service?application=shop&m2.mock=force:return 7")
            .unwrap(),
        vec![rec.clone() as SharedInvoker],
    ));
    let thrown = Arc::new(AtomicUsize::new(0));
    let t = thrown.clone();
    let layers: Vec<Arc<dyn InvokerLayer>> = vec![
        Arc::new(ConsumerContextLayer),
        Arc::new(FutureLayer::new().on_invoke(
            "m2",
            Arc::new(move |_i: &Invocation| {
                t.fetch_add(1, Ordering::SeqCst);
                Ok(())
            }),
        )),
    ];
    let c = cluster::join_with(
        dir,
        ClusterOptions {
            layers,
            ..ClusterOptions::default()
        },
    );
    c.invoke(&Invocation::new("m")).await.unwrap();
    let seen = rec.seen.lock().unwrap().clone().unwrap();
    assert_eq!(
        seen.get("remote.application").map(String::as_str),
        Some("shop")
    );
    // A forced mock answers before the cluster filters run.
    assert_eq!(
        c.invoke(&Invocation::new("m2")).await.unwrap().value,
        json!(7)
    );
    assert_eq!(thrown.load(Ordering::SeqCst), 0);
}
