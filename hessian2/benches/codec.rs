//! Encode and decode of a typical Dubbo2 request and response body (tests/common/typical.rs).
//!
//! `cargo bench -p hessian2 --bench codec`

#![allow(clippy::expect_used, missing_docs)]

#[path = "../tests/common/typical.rs"]
#[allow(dead_code)]
mod typical;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use hessian2::Encoder;
use std::hint::black_box;

fn bench(c: &mut Criterion) {
    let req = typical::request();
    let resp = typical::response_value();
    let mut e = Encoder::new();
    typical::encode_request(&mut e, &req).expect("encode");
    let request_bytes = e.as_bytes().to_vec();
    typical::encode_response(&mut e, &resp).expect("encode");
    let response_bytes = e.as_bytes().to_vec();

    let mut g = c.benchmark_group("hessian2");
    g.throughput(Throughput::Elements(1));
    g.bench_function("encode_request", |b| {
        b.iter(|| {
            typical::encode_request(&mut e, black_box(&req)).expect("encode");
            black_box(e.as_bytes().len())
        })
    });
    g.bench_function("decode_request", |b| {
        b.iter(|| typical::decode_request(black_box(&request_bytes)).expect("decode"))
    });
    g.bench_function("encode_response", |b| {
        b.iter(|| {
            typical::encode_response(&mut e, black_box(&resp)).expect("encode");
            black_box(e.as_bytes().len())
        })
    });
    g.bench_function("decode_response", |b| {
        b.iter(|| typical::decode_response(black_box(&response_bytes)).expect("decode"))
    });
    g.bench_function("decode_response_json", |b| {
        b.iter(|| typical::decode_response_json(black_box(&response_bytes)).expect("decode"))
    });
    // Baseline in the same run: serde_json text of the same response value.
    let json = typical::decode_response_json(&response_bytes).expect("decode");
    let json_text = serde_json::to_vec(&json).expect("json");
    g.bench_function("baseline_serde_json_parse_same_value", |b| {
        b.iter(|| serde_json::from_slice::<serde_json::Value>(black_box(&json_text)).expect("json"))
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
