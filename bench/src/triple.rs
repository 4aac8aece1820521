//! The Triple rows of `dubbo-bench`: the per-call encode/decode steps offline (time
//! and allocations per operation), and, with `--triple-peer HOST:PORT` (a gRPC server serving
//! `tritest.Greeter/SayHello`, e.g. protocol-triple's grpcio peer), unary call loops with 1 and
//! 64 calls in flight on one connection (calls/s, p50, p99, allocations per call).

use std::alloc::System;
use std::hint::black_box;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use invoker::rpc::Invocation;
use protocol_triple::frame::{encode, FrameDecoder, PREFIX_LEN};
use protocol_triple::{
    BaseHeaders, ConnectionOptions, IdlService, PayloadMode, ProtoSchema, TripleInvoker,
    TripleInvokerFactory,
};
use registry_core::Url;
use serde_json::{json, Value};

use crate::measure::{measure, percentile_us};
use stats_alloc::{Region, StatsAlloc};

/// The schema of the call loop (the `tritest.Greeter` subset of protocol-triple's fixture).
const PROTO: &str = "syntax = \"proto3\";\npackage tritest;\n\
    message HelloRequest { string name = 1; }\nmessage HelloReply { string message = 1; }\n\
    service Greeter { rpc SayHello (HelloRequest) returns (HelloReply); }\n";

fn schema() -> anyhow::Result<Arc<ProtoSchema>> {
    let dir = std::env::temp_dir().join(format!("dubbo-registry-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).context("temp dir")?;
    let file = dir.join("greeter.proto");
    std::fs::write(&file, PROTO).context("writing the bench .proto")?;
    let schema = ProtoSchema::load(&[file]);
    let _ = std::fs::remove_dir_all(&dir);
    Ok(Arc::new(schema?))
}

fn row(op: &str, (ns, allocs): (f64, f64)) -> Value {
    json!({"op": op, "ns_per_op": (ns * 10.0).round() / 10.0, "allocs_per_op": allocs})
}

/// The offline rows: wrapper and IDL encode, IDL decode, frame decode, per-call headers.
pub fn offline(global: &'static StatsAlloc<System>, budget: Duration) -> anyhow::Result<Value> {
    let schema = schema()?;
    let m = schema.method("tritest.Greeter", "SayHello")?;
    let types = vec!["java.lang.String".to_owned()];
    let args = vec![json!("rust")];
    let idl_arg = [json!({"name": "rust"})];
    let framed = encode(b"\x0a\x0aHello rust")?;
    let reply = framed.slice(PREFIX_LEN..);
    let url = Url::parse("tri://127.0.0.1:50051/tritest.Greeter?version=1.0.0&application=b")?;
    let base = BaseHeaders::from_url(&url);
    let mut rows = vec![
        row(
            "wrapper_encode_sayHello",
            measure(global, budget, || {
                black_box(protocol_triple::wrapper_codec::encode_args(&types, &args).ok());
            }),
        ),
        row(
            "idl_encode_HelloRequest",
            measure(global, budget, || {
                black_box(m.encode_args(&idl_arg).ok());
            }),
        ),
        row(
            "idl_decode_HelloReply",
            measure(global, budget, || {
                black_box(m.decode_result(Some(reply.clone())).ok());
            }),
        ),
        row(
            "frame_decode_one",
            measure(global, budget, || {
                let mut d = FrameDecoder::new(1 << 20);
                let _ = d.push(framed.clone());
                black_box(d.next_message());
            }),
        ),
    ];
    rows.push(row(
        "request_headers_no_attachments",
        measure(global, budget, || {
            black_box(base.for_call(Duration::from_millis(3000), []));
        }),
    ));
    Ok(Value::Array(rows))
}

async fn call_loop(
    inv: &Arc<TripleInvoker>,
    hello: &Invocation,
    calls: usize,
    conc: usize,
) -> Value {
    let next = Arc::new(AtomicUsize::new(0));
    let start = Instant::now();
    let tasks: Vec<_> = (0..conc)
        .map(|_| {
            let (inv, hello, next) = (inv.clone(), hello.clone(), next.clone());
            tokio::spawn(async move {
                let mut lat = Vec::with_capacity(calls / conc + 1);
                let mut errors = 0usize;
                while next.fetch_add(1, Ordering::Relaxed) < calls {
                    let t = Instant::now();
                    if inv.call(&hello).await.is_err() {
                        errors += 1;
                    }
                    lat.push(t.elapsed().as_nanos() as u64);
                }
                (lat, errors)
            })
        })
        .collect();
    let mut lat = Vec::with_capacity(calls);
    let mut errors = 0;
    for t in tasks {
        if let Ok((l, e)) = t.await {
            lat.extend(l);
            errors += e;
        }
    }
    let secs = start.elapsed().as_secs_f64();
    lat.sort_unstable();
    let pct = |p: f64| percentile_us(&lat, p);
    json!({"concurrency": conc, "calls": lat.len(), "errors": errors,
           "calls_per_sec": (lat.len() as f64 / secs).round(),
           "p50_us": pct(0.5), "p99_us": pct(0.99)})
}

/// The call-loop rows against `addr`: 1 and 64 in flight, plus allocations per call (the
/// whole process, connection task included) with 1 in flight, and 64 in flight again on a
/// connection with write coalescing off (`"write_coalescing": false`), for a same-run
/// comparison.
pub fn calls(
    global: &'static StatsAlloc<System>,
    addr: &str,
    quick: bool,
) -> anyhow::Result<Value> {
    let rt = crate::runtime()?;
    let schema = schema()?;
    let factory = |write_coalescing: bool| {
        let options = ConnectionOptions {
            write_coalescing,
            ..ConnectionOptions::default()
        };
        let service = IdlService::new(schema.clone(), "tritest.Greeter");
        TripleInvokerFactory::with_options(PayloadMode::Idl(service), options)
    };
    let (on, off) = (factory(true), factory(false));
    let url = Url::parse(&format!(
        "tri://{addr}/tritest.Greeter?interface=tritest.Greeter&timeout=10000"
    ))?;
    // The connection tasks are spawned on the runtime the invokers are made in.
    let _guard = rt.enter();
    let inv = on.refer_triple(&url)?;
    let plain = off.refer_triple(&url)?;
    let hello = Invocation::new("SayHello").with_arguments(vec![], vec![json!({"name": "bench"})]);
    rt.block_on(async {
        for i in [&inv, &plain] {
            i.call(&hello)
                .await
                .with_context(|| format!("--triple-peer {addr}: SayHello"))?;
        }
        let (n1, n64) = if quick { (500, 2_000) } else { (5_000, 20_000) };
        call_loop(&inv, &hello, n1.min(1_000), 1).await;
        let region = Region::new(global);
        for _ in 0..200 {
            let _ = inv.call(&hello).await;
        }
        let s = region.change();
        let allocs = (s.allocations + s.reallocations) as f64 / 200.0;
        let mut one = call_loop(&inv, &hello, n1, 1).await;
        one["allocs_per_call"] = json!(allocs);
        one["write_coalescing"] = json!(true);
        let mut many = call_loop(&inv, &hello, n64, 64).await;
        many["write_coalescing"] = json!(true);
        call_loop(&plain, &hello, n1.min(1_000), 16).await;
        let mut many_plain = call_loop(&plain, &hello, n64, 64).await;
        many_plain["write_coalescing"] = json!(false);
        Ok(json!([one, many, many_plain]))
    })
}
