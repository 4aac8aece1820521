//! Allocations per call on the client's call path, counted by a counting global allocator
//! (`stats_alloc`, every thread of the process): request encode, response decode, and a whole
//! `DubboInvoker::invoke` (1 and 64 in flight) against the in-process echo provider
//! (`bench_support::EchoProvider`), so that only the client's own allocations are counted.
//! The same count against the Java peer is `tests/call_alloc.rs`.
//!
//! `cargo bench -p protocol-dubbo --bench call_alloc` (prints one JSON line per row).

#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use std::alloc::System;
use std::sync::Arc;

use hessian2::Encoder;
use invoker::rpc::{Invocation, Invoker};
use protocol_dubbo::bench_support::{self, EchoProvider, SAY_HELLO_RESPONSE_BODY};
use protocol_dubbo::response::decode_response;
use protocol_dubbo::DubboInvokerFactory;
use registry_core::Url;
use serde_json::json;
use stats_alloc::{Region, StatsAlloc, INSTRUMENTED_SYSTEM};

#[global_allocator]
static GLOBAL: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

const SERVICE: &str = "org.apache.dubbo.demo.DemoService";

/// Allocations (including reallocations) per call of `f`, over `n` calls.
fn per_call(n: usize, mut f: impl FnMut()) -> f64 {
    let region = Region::new(GLOBAL);
    for _ in 0..n {
        f();
    }
    let s = region.change();
    (s.allocations + s.reallocations) as f64 / n as f64
}

fn row(what: &str, allocs: f64) {
    println!(
        "{}",
        json!({"bench": "protocol-dubbo call_alloc", "row": what, "allocs_per_call": allocs})
    );
}

fn main() {
    // Criterion-style arguments (`--bench`, filters) are accepted and ignored.
    let mut enc = Encoder::new();
    let args = [json!("rust")];
    let mut encode = || {
        bench_support::encode_say_hello(&mut enc, SERVICE, &args).unwrap();
    };
    encode();
    row("encode sayHello request", per_call(10_000, &mut encode));

    let typical_args = bench_support::typical_args();
    let desc = hessian2::java_descriptor(&bench_support::TYPICAL_TYPES);
    let mut enc2 = Encoder::new();
    bench_support::encode_typical_request(&mut enc2, &typical_args, &desc).unwrap();
    row(
        "encode typical request",
        per_call(10_000, || {
            bench_support::encode_typical_request(&mut enc2, &typical_args, &desc).unwrap();
        }),
    );

    let hello = bench_support::response_frame(1, SAY_HELLO_RESPONSE_BODY);
    row(
        "decode sayHello response",
        per_call(10_000, || {
            decode_response(&hello, "127.0.0.1:20880").unwrap();
        }),
    );
    let typical =
        bench_support::response_frame(1, &bench_support::typical_response_body().unwrap());
    row(
        "decode typical response",
        per_call(10_000, || {
            decode_response(&typical, "127.0.0.1:20880").unwrap();
        }),
    );

    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let provider = EchoProvider::start(SAY_HELLO_RESPONSE_BODY.to_vec())
            .await
            .unwrap();
        let url = Url::parse(&format!(
            "dubbo://{}/{SERVICE}?interface={SERVICE}&version=1.0.0&timeout=5000",
            provider.addr()
        ))
        .unwrap();
        let factory = DubboInvokerFactory::new();
        let inv = factory.refer_dubbo(&url).unwrap();
        let call = Arc::new(
            Invocation::new("sayHello")
                .with_arguments(vec!["java.lang.String".into()], vec![json!("rust")]),
        );
        for _ in 0..5_000 {
            inv.invoke(&call).await.unwrap();
        }
        let n = 20_000;
        let region = Region::new(GLOBAL);
        for _ in 0..n {
            inv.invoke(&call).await.unwrap();
        }
        let s = region.change();
        row(
            "whole call, 1 in flight (echo provider)",
            (s.allocations + s.reallocations) as f64 / n as f64,
        );
        let batches = 500;
        let run = |inv: Arc<protocol_dubbo::DubboInvoker>, call: Arc<Invocation>| async move {
            let mut set = tokio::task::JoinSet::new();
            for _ in 0..64 {
                let (inv, call) = (inv.clone(), call.clone());
                set.spawn(async move { inv.invoke(&call).await.map(|_| ()) });
            }
            while let Some(r) = set.join_next().await {
                r.unwrap().unwrap();
            }
        };
        for _ in 0..50 {
            run(inv.clone(), call.clone()).await;
        }
        let region = Region::new(GLOBAL);
        for _ in 0..batches {
            run(inv.clone(), call.clone()).await;
        }
        let s = region.change();
        row(
            "whole call, 64 in flight (echo provider; includes one spawned task per call)",
            (s.allocations + s.reallocations) as f64 / (batches * 64) as f64,
        );
        drop(provider);
    });
}
