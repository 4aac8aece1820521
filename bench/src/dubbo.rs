//! The Hessian 2.0 / Dubbo2 rows of `dubbo-bench`.
//!
//! - Offline (one thread): encode of a typical request body and of `sayHello("rust")`, decode
//!   of a typical response and of the Java peer's `sayHello` answer (`decode_response`, what a
//!   call does with a response frame): time and allocations per operation.
//! - Call loops (`DubboInvoker::invoke`, one shared connection, 2 tokio workers) with 1 and 64
//!   calls in flight against the in-process echo provider (`protocol_dubbo::bench_support`:
//!   the client's own cost, no JVM) and, with `--dubbo-peer HOST:PORT`, against a real provider
//!   of `org.apache.dubbo.demo.DemoService:1.0.0` (e.g. `scripts/peers/java-dubbo.sh run`):
//!   calls/s, p50, p99 and allocations per call (the whole process: reader and writer tasks
//!   included). The floor row is a 64-byte TCP round trip to an in-process echo.

use std::alloc::System;
use std::hint::black_box;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use hessian2::Encoder;
use invoker::rpc::{Invocation, Invoker};
use protocol_dubbo::bench_support::{self, EchoProvider, SAY_HELLO_RESPONSE_BODY};
use protocol_dubbo::request::{encode_call_body, CallBody};
use protocol_dubbo::response::decode_response;
use protocol_dubbo::{DubboInvoker, DubboInvokerFactory};
use registry_core::Url;
use serde_json::{json, Value};

use crate::measure::{measure, percentile_us};
use stats_alloc::{Region, StatsAlloc};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const SERVICE: &str = "org.apache.dubbo.demo.DemoService";

fn row(op: &str, bytes: usize, (ns, allocs): (f64, f64)) -> Value {
    json!({"op": op, "bytes": bytes, "ns_per_op": (ns * 10.0).round() / 10.0,
           "ops_per_sec": (1e9 / ns.max(1e-9)).round(), "allocs_per_op": allocs})
}

/// The offline codec rows.
pub fn offline(global: &'static StatsAlloc<System>, budget: Duration) -> anyhow::Result<Value> {
    let mut rows = Vec::new();
    let mut enc = Encoder::new();
    let args = bench_support::typical_args();
    let desc = hessian2::java_descriptor(&bench_support::TYPICAL_TYPES);
    let n = bench_support::encode_typical_request(&mut enc, &args, &desc)?;
    rows.push(row(
        "hessian2 encode typical request",
        n,
        measure(global, budget, || {
            let _ = black_box(bench_support::encode_typical_request(
                &mut enc, &args, &desc,
            ));
        }),
    ));
    let hello_args = [json!("rust")];
    let hello_types = ["java.lang.String"];
    let att = [
        ("interface", SERVICE),
        ("path", SERVICE),
        ("version", "1.0.0"),
        ("timeout", "1000"),
    ];
    let hello = |enc: &mut Encoder| {
        enc.clear();
        let body = CallBody {
            service_path: SERVICE,
            version: "1.0.0",
            method: "sayHello",
            descriptor: "Ljava/lang/String;",
            types: &hello_types,
            args: &hello_args,
        };
        let _ = black_box(encode_call_body(enc, &body, att));
    };
    hello(&mut enc);
    let n = enc.as_bytes().len();
    rows.push(row(
        "hessian2 encode sayHello request",
        n,
        measure(global, budget, || hello(&mut enc)),
    ));
    let typical = bench_support::response_frame(1, &bench_support::typical_response_body()?);
    decode_response(&typical, "bench").context("decoding the typical response")?;
    rows.push(row(
        "hessian2 decode typical response",
        typical.body.len(),
        measure(global, budget, || {
            let _ = black_box(decode_response(&typical, "bench"));
        }),
    ));
    let hello_resp = bench_support::response_frame(1, SAY_HELLO_RESPONSE_BODY);
    rows.push(row(
        "hessian2 decode sayHello response",
        hello_resp.body.len(),
        measure(global, budget, || {
            let _ = black_box(decode_response(&hello_resp, "bench"));
        }),
    ));
    Ok(Value::Array(rows))
}

/// Latencies (ns) of `calls` calls with `concurrency` in flight, and the elapsed seconds.
async fn call_loop(
    inv: &Arc<DubboInvoker>,
    call: &Arc<Invocation>,
    calls: usize,
    concurrency: usize,
) -> (Vec<u64>, f64, usize) {
    let next = Arc::new(AtomicUsize::new(0));
    let start = Instant::now();
    let mut tasks = Vec::new();
    for _ in 0..concurrency {
        let (inv, call, next) = (inv.clone(), call.clone(), next.clone());
        tasks.push(tokio::spawn(async move {
            let mut lat = Vec::with_capacity(calls / concurrency + 1);
            let mut errors = 0usize;
            while next.fetch_add(1, Ordering::Relaxed) < calls {
                let t = Instant::now();
                if inv.invoke(&call).await.is_err() {
                    errors += 1;
                }
                lat.push(t.elapsed().as_nanos() as u64);
            }
            (lat, errors)
        }));
    }
    let mut all = Vec::with_capacity(calls);
    let mut errors = 0;
    for t in tasks {
        if let Ok((lat, e)) = t.await {
            all.extend(lat);
            errors += e;
        }
    }
    (all, start.elapsed().as_secs_f64(), errors)
}

fn stats(what: &str, concurrency: usize, mut lat: Vec<u64>, secs: f64, errors: usize) -> Value {
    lat.sort_unstable();
    let pct = |p: f64| percentile_us(&lat, p);
    json!({"target": what, "in_flight": concurrency, "calls": lat.len(), "errors": errors,
           "calls_per_sec": (lat.len() as f64 / secs.max(1e-9)).round(),
           "p50_us": pct(0.5), "p99_us": pct(0.99)})
}

/// Rows for one provider: 1 and 64 in flight, with allocations per call measured over the
/// calls of each loop (latency vectors are preallocated).
async fn rows_for(
    global: &'static StatsAlloc<System>,
    what: &str,
    addr: &str,
    quick: bool,
) -> anyhow::Result<Vec<Value>> {
    let url = Url::parse(&format!(
        "dubbo://{addr}/{SERVICE}?interface={SERVICE}&version=1.0.0&timeout=10000"
    ))?;
    let factory = DubboInvokerFactory::new();
    let inv = factory.refer_dubbo(&url)?;
    let call = Arc::new(
        Invocation::new("sayHello")
            .with_arguments(vec!["java.lang.String".into()], vec![json!("rust")]),
    );
    let r = inv
        .invoke(&call)
        .await
        .map_err(|e| anyhow::anyhow!("{what} {addr}: sayHello failed: {e}"))?;
    anyhow::ensure!(
        r.value == json!("Hello rust"),
        "{what} {addr}: sayHello answered {}",
        r.value
    );
    let (n1, n64) = if quick {
        (2_000, 10_000)
    } else {
        (20_000, 100_000)
    };
    call_loop(&inv, &call, n1 / 2, 16).await;
    let mut out = Vec::new();
    for (n, c) in [(n1, 1), (n64, 64)] {
        let region = Region::new(global);
        let (lat, secs, errors) = call_loop(&inv, &call, n, c).await;
        let s = region.change();
        let mut r = stats(what, c, lat, secs, errors);
        // The loop's own allocations (tasks, latency vectors) are c + 2 + 2c: negligible.
        r["allocs_per_call"] =
            json!(((s.allocations + s.reallocations) as f64 / n as f64 * 100.0).round() / 100.0);
        out.push(r);
    }
    Ok(out)
}

/// One 64-byte TCP round trip on loopback to an in-process echo: the floor.
async fn floor(quick: bool) -> anyhow::Result<Value> {
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let port = l.local_addr()?.port();
    let server = tokio::spawn(async move {
        if let Ok((mut s, _)) = l.accept().await {
            let _ = s.set_nodelay(true);
            let mut buf = [0u8; 4096];
            while let Ok(n) = s.read(&mut buf).await {
                if n == 0 || s.write_all(&buf[..n]).await.is_err() {
                    break;
                }
            }
        }
    });
    let mut s = tokio::net::TcpStream::connect(("127.0.0.1", port)).await?;
    s.set_nodelay(true)?;
    let n = if quick { 2_000 } else { 20_000 };
    let mut lat = Vec::with_capacity(n);
    let msg = [7u8; 64];
    let mut got = [0u8; 64];
    let start = Instant::now();
    for _ in 0..n {
        let t = Instant::now();
        s.write_all(&msg).await?;
        s.read_exact(&mut got).await?;
        lat.push(t.elapsed().as_nanos() as u64);
    }
    let secs = start.elapsed().as_secs_f64();
    drop(s);
    server.abort();
    Ok(stats("raw TCP round trip 64 B (floor)", 1, lat, secs, 0))
}

/// The call-loop rows: the floor, the echo provider, and `peer` when given.
pub fn calls(
    global: &'static StatsAlloc<System>,
    peer: Option<&str>,
    quick: bool,
) -> anyhow::Result<Value> {
    let rt = crate::runtime()?;
    rt.block_on(async {
        let mut rows = vec![floor(quick).await?];
        let echo = EchoProvider::start(SAY_HELLO_RESPONSE_BODY.to_vec())
            .await
            .context("starting the in-process echo provider")?;
        rows.extend(rows_for(global, "in-process echo provider", &echo.addr(), quick).await?);
        drop(echo);
        if let Some(addr) = peer {
            rows.extend(rows_for(global, "dubbo peer", addr, quick).await?);
        }
        Ok(Value::Array(rows))
    })
}
