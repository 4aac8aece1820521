//! Allocations per call, counted by a counting global allocator (every thread of the process):
//! request encode allocates nothing in steady state, response decode only what it returns, and
//! a whole call against the Java Dubbo2 peer stays within a small fixed number. One test only:
//! the counter is process-wide. Run with `--nocapture` for the counts (BENCHMARKS.md).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use tests::dubbo2_peers as common;

use std::alloc::System;

use common::JavaPeer;
use hessian2::Encoder;
use invoker::rpc::{Invocation, Invoker};
use protocol_dubbo::bench_support::{self, response_frame, SAY_HELLO_RESPONSE_BODY};
use protocol_dubbo::response::decode_response;
use protocol_dubbo::DubboInvokerFactory;
use serde_json::json;
use stats_alloc::{Region, StatsAlloc, INSTRUMENTED_SYSTEM};

#[global_allocator]
static GLOBAL: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

const SERVICE: &str = "org.apache.dubbo.demo.DemoService";

/// Allocations per call of `f`: the fewest of five rounds of `n` calls (the counter is
/// process-wide; the minimum leaves out the runtime's and the harness's own occasional ones).
fn per_call(n: usize, mut f: impl FnMut()) -> f64 {
    (0..5)
        .map(|_| {
            let region = Region::new(GLOBAL);
            for _ in 0..n {
                f();
            }
            let s = region.change();
            (s.allocations + s.reallocations) as f64 / n as f64
        })
        .fold(f64::INFINITY, f64::min)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn allocations_per_call() {
    let mut enc = Encoder::new();
    let args = [json!("rust")];
    let mut encode = || {
        bench_support::encode_say_hello(&mut enc, SERVICE, &args).unwrap();
    };
    encode();
    let enc_req = per_call(1000, &mut encode);
    assert_eq!(enc_req, 0.0, "request encode allocates in steady state");

    let frame = response_frame(1, SAY_HELLO_RESPONSE_BODY);
    let dec_resp = per_call(1000, || {
        let r = decode_response(&frame, "127.0.0.1:20880").unwrap();
        assert_eq!(r.value.as_str(), Some("Hello rust"));
    });
    // The value string, the attachment key and value, the map node: what the result holds.
    assert!(dec_resp <= 4.0, "decode response: {dec_resp} allocations");

    let Some(peer) = JavaPeer::start("allocations_per_call", &[]).await else {
        println!("allocations per call: encode request {enc_req}, decode response {dec_resp}");
        return;
    };
    let f = DubboInvokerFactory::new();
    let inv = f.refer_dubbo(&peer.url("timeout=5000")).unwrap();
    let call = Invocation::new("sayHello")
        .with_arguments(vec!["java.lang.String".into()], vec![json!("rust")]);
    for _ in 0..2000 {
        inv.invoke(&call).await.unwrap();
    }
    let n = 2000;
    let region = Region::new(GLOBAL);
    for _ in 0..n {
        inv.invoke(&call).await.unwrap();
    }
    let s = region.change();
    let whole = (s.allocations + s.reallocations) as f64 / n as f64;
    println!(
        "allocations per call: encode request {enc_req}, decode response {dec_resp}, \
         whole call against the Java peer {whole}"
    );
    // What the result holds (the value string; the peer's two attachments, `dubbo` and
    // `provider.name`, as 4 strings in one map node) and the `async_trait` box of
    // `Invoker::invoke`: 7. Nothing else: the reply slot, the timer, the encoder, the decoder's
    // tables, the write and read buffers allocate nothing per call (5 against the in-process
    // echo provider, whose answer has one attachment: `benches/call_alloc.rs`).
    assert!(whole < 7.5, "whole call: {whole} allocations");
    peer.kill().await;
}
