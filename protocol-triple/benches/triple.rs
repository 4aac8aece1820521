//! Triple benchmarks: the per-call encode/decode path offline, and unary calls against the
//! grpcio peer with 1 and 64 in flight (skipped with a message when the peer is not installed:
//! `bash scripts/peers/python-grpc.sh install`), then the same-run comparison rows: our
//! `TripleInvoker` (IDL, JSON) and `TripleClient` (prost), tonic's `Grpc::unary` (prost) and
//! grpcio's own aio client, alternating, two rounds.
//!
//! `cargo bench --profile release -p protocol-triple --bench triple -- --warm-up-time 1 --measurement-time 3`

#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use tests::triple_peers as common;
#[path = "../../bench/src/bin/triple_load.rs"]
mod load;

use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use invoker::rpc::Invocation;
use protocol_triple::frame::{encode, FrameDecoder};
use protocol_triple::{IdlService, PayloadMode, ProtoSchema, TripleInvokerFactory};
use registry_core::Url;
use serde_json::json;

fn schema() -> Arc<ProtoSchema> {
    Arc::new(ProtoSchema::load(&[common::proto_dir().join("test.proto")]).unwrap())
}

fn offline(c: &mut Criterion) {
    let mut g = c.benchmark_group("triple_offline");
    let types = vec!["java.lang.String".to_owned()];
    let args = vec![json!("rust")];
    g.bench_function("wrapper_encode_sayHello", |b| {
        b.iter(|| protocol_triple::wrapper_codec::encode_args(&types, &args).unwrap())
    });
    let m = schema().method("tritest.Greeter", "SayHello").unwrap();
    let arg = [json!({"name": "rust"})];
    g.bench_function("idl_encode_HelloRequest", |b| {
        b.iter(|| m.encode_args(&arg).unwrap())
    });
    let reply = Bytes::from_static(b"\x0a\x0aHello rust");
    g.bench_function("idl_decode_HelloReply", |b| {
        b.iter(|| m.decode_result(Some(reply.clone())).unwrap())
    });
    let framed = encode(b"\x0a\x0aHello rust").unwrap();
    g.bench_function("frame_decode_one", |b| {
        b.iter(|| {
            let mut d = FrameDecoder::new(1 << 20);
            d.push(framed.clone()).unwrap();
            d.next_message().unwrap()
        })
    });
    g.finish();
}

fn calls(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let Some(peer) = rt.block_on(common::grpc_peer("bench triple_calls", 0)) else {
        return;
    };
    let f = TripleInvokerFactory::new(PayloadMode::Idl(IdlService::new(
        schema(),
        "tritest.Greeter",
    )));
    let url = Url::parse(&format!(
        "tri://{}/tritest.Greeter?interface=tritest.Greeter&timeout=10000",
        peer.addr()
    ))
    .unwrap();
    // The connection task is spawned on the runtime the invoker is made in.
    let _guard = rt.enter();
    let inv = f.refer_triple(&url).unwrap();
    let hello = Invocation::new("SayHello").with_arguments(vec![], vec![json!({"name": "bench"})]);
    rt.block_on(inv.call(&hello)).unwrap();
    let mut g = c.benchmark_group("triple_grpcio_peer");
    g.measurement_time(Duration::from_secs(8));
    g.throughput(Throughput::Elements(1));
    g.bench_function("unary_1_in_flight", |b| {
        b.to_async(&rt)
            .iter(|| async { inv.call(&hello).await.unwrap() })
    });
    g.throughput(Throughput::Elements(64));
    g.bench_function("unary_64_in_flight", |b| {
        b.iter_custom(|iters| {
            rt.block_on(async {
                let start = Instant::now();
                for _ in 0..iters {
                    let all = (0..64).map(|_| inv.call(&hello));
                    for r in futures::future::join_all(all).await {
                        r.unwrap();
                    }
                }
                start.elapsed()
            })
        })
    });
    g.finish();
    compare(&rt, &peer);
    drop(peer);
}

/// Calls/s, p50 and p99 with 1 and 64 in flight: ours (invoker and typed client), tonic and
/// grpcio's own client (grpc.aio) on the same peer in the same run, alternating for two rounds;
/// one JSON line per row on stdout.
fn compare(rt: &tokio::runtime::Runtime, peer: &common::Peer) {
    let addr = peer.addr();
    let clients: Vec<load::LoadClient> = ["invoker", "client", "tonic"]
        .iter()
        .map(|k| rt.block_on(load::LoadClient::connect(k, &addr)).unwrap())
        .collect();
    for (calls, conc) in [(5_000usize, 1usize), (20_000, 64)] {
        for c in &clients {
            rt.block_on(load::measure(c, 2_000, conc));
        }
        for round in 1..=2 {
            for c in &clients {
                let mut row = rt.block_on(load::measure(c, calls, conc));
                row["round"] = json!(round);
                println!("{row}");
            }
            let python = common::peers_dir().join("python-grpc/venv/bin/python");
            let out = std::process::Command::new(python)
                .arg(common::triple_dir().join("tests/peers/grpc_bench_client.py"))
                .arg(&addr)
                .arg(calls.to_string())
                .arg(conc.to_string())
                .output();
            match out {
                Ok(o) => print!("{}", String::from_utf8_lossy(&o.stdout)),
                Err(e) => println!("{{\"client\": \"grpcio-aio\", \"error\": \"{e}\"}}"),
            }
        }
    }
}

criterion_group!(benches, offline, calls);
criterion_main!(benches);
