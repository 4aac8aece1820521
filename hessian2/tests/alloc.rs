//! Allocations per call, counted by a global allocator: the encoders reused through
//! `Encoder::clear` allocate nothing in steady state. The decode counts are printed (run with
//! `--nocapture`) for BENCHMARKS.md. One test only: the counter is process-wide.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers outside #[test] functions

mod common;

use std::alloc::System;

use common::typical;
use hessian2::Encoder;
use stats_alloc::{Region, StatsAlloc, INSTRUMENTED_SYSTEM};

#[global_allocator]
static GLOBAL: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

fn allocations(mut f: impl FnMut()) -> usize {
    let region = Region::new(GLOBAL);
    for _ in 0..100 {
        f();
    }
    region.change().allocations / 100
}

#[test]
fn allocations_per_call() {
    let req = typical::request();
    let resp = typical::response_value();
    let mut e = Encoder::new();
    // Warm up: buffers and tables reach their steady size.
    typical::encode_request(&mut e, &req).unwrap();
    typical::encode_request(&mut e, &req).unwrap();
    let request_bytes = e.as_bytes().to_vec();
    let enc_req = allocations(|| typical::encode_request(&mut e, &req).unwrap());
    assert_eq!(enc_req, 0, "encode request allocates in steady state");
    assert_eq!(e.as_bytes(), request_bytes.as_slice());

    typical::encode_response(&mut e, &resp).unwrap();
    let response_bytes = e.as_bytes().to_vec();
    let enc_resp = allocations(|| typical::encode_response(&mut e, &resp).unwrap());
    assert_eq!(enc_resp, 0, "encode response allocates in steady state");

    let dec_req = allocations(|| {
        typical::decode_request(&request_bytes).unwrap();
    });
    let dec_resp = allocations(|| {
        typical::decode_response(&response_bytes).unwrap();
    });
    let dec_json = allocations(|| {
        typical::decode_response_json(&response_bytes).unwrap();
    });
    println!(
        "allocations per call: encode request {enc_req}, encode response {enc_resp}, decode request {dec_req}, \
         decode response {dec_resp}, decode response to JSON {dec_json}; request {} bytes, response {} bytes",
        request_bytes.len(),
        response_bytes.len()
    );
    // Decoding allocates the strings and vectors it returns, nothing per byte; class and field
    // names once per definition (shared by the instances).
    assert!(dec_resp <= 20, "decode response: {dec_resp} allocations");
}
