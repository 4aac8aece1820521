//! IDL-mode results are measured before they are decoded: the estimate of what a protobuf
//! message and its JSON form take is at least what they really take (counted by the
//! allocator) for every shape of message, and a message built to expand is refused. One test
//! only: the counter is process-wide.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers panic on bad fixtures

use tests::triple_peers as common;

use std::alloc::System;

use bytes::Bytes;
use prost::Message;
use prost_reflect::{DynamicMessage, SerializeOptions};
use protocol_triple::{ProtoSchema, TripleError};
use serde_json::json;
use stats_alloc::{Region, StatsAlloc, INSTRUMENTED_SYSTEM};

#[global_allocator]
static GLOBAL: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

fn held(region: &Region<'_, System>) -> i64 {
    let s = region.change();
    s.bytes_allocated as i64 - s.bytes_deallocated as i64
}

/// `n` copies of `unit`.
fn repeat(unit: &[u8], n: usize) -> Vec<u8> {
    let mut v = Vec::with_capacity(unit.len() * n);
    for _ in 0..n {
        v.extend_from_slice(unit);
    }
    v
}

#[test]
fn estimates_cover_what_decoding_takes_and_expansion_is_refused() {
    let schema = ProtoSchema::load(&[common::proto_dir().join("test.proto")]).unwrap();
    let m = schema.method("tritest.Greeter", "Echo").unwrap();
    let desc = m.output().clone();
    let from_json = |j: serde_json::Value| {
        DynamicMessage::deserialize(desc.clone(), j)
            .unwrap()
            .encode_to_vec()
    };
    let n = 20_000;
    let packed_int64 = {
        // Field 18, packed: one-byte varints.
        let mut v = vec![0x92, 0x01];
        let mut len = n;
        while len >= 0x80 {
            v.push((len as u8) | 0x80);
            len >>= 7;
        }
        v.push(len as u8);
        v.extend(std::iter::repeat_n(1u8, n));
        v
    };
    let shapes: Vec<(&str, Vec<u8>)> = vec![
        ("empty repeated messages", repeat(&[0xa2, 0x01, 0x00], n)),
        (
            "repeated messages",
            from_json(
                json!({"rInner": (0..n).map(|i| json!({"label": format!("l{i}"), "weight": i})).collect::<Vec<_>>()}),
            ),
        ),
        ("packed int64", packed_int64),
        (
            "repeated strings",
            from_json(json!({"rString": (0..n).map(|i| format!("s{i}")).collect::<Vec<_>>()})),
        ),
        (
            "string map",
            from_json(
                json!({"mStrInt": (0..n).map(|i| (format!("k{i}"), json!(i))).collect::<serde_json::Map<_, _>>()}),
            ),
        ),
        (
            "message map",
            from_json(
                json!({"mLongInner": (0..n).map(|i| (format!("{i}"), json!({"label": "x", "weight": 1}))).collect::<serde_json::Map<_, _>>()}),
            ),
        ),
        (
            "bytes",
            from_json(json!({"fBytes": hessian2::base64_encode(&vec![7u8; 100_000])})),
        ),
        (
            "everything once",
            from_json(json!({
                "fDouble": 1.5, "fFloat": 2.5, "fInt32": -3, "fInt64": "4", "fUint32": 5, "fUint64": "6",
                "fSint32": -7, "fSint64": "-8", "fFixed32": 9, "fFixed64": "10", "fSfixed32": -11,
                "fSfixed64": "-12", "fBool": true, "fString": "text", "fBytes": "AQID", "fEnum": "RED",
                "fInner": {"label": "in", "weight": 1}, "rInt64": ["1", "2"], "rString": ["a", "b"],
                "rInner": [{"label": "a"}], "mStrInt": {"a": 1}, "mLongInner": {"7": {"label": "b"}},
                "cText": "c", "oInt32": 0, "oString": "", "tTime": "2024-01-01T00:00:00Z",
                "tDuration": "1.5s", "wString": "w", "wInt64": "9",
                "sStruct": {"a": [1, "two", {"b": null}]}, "rEnum": ["RED", "GREEN"]
            })),
        ),
    ];
    let opts = SerializeOptions::new()
        .stringify_64_bit_integers(true)
        .use_enum_numbers(false)
        .use_proto_field_name(false)
        .skip_default_fields(true);
    for (name, bytes) in &shapes {
        let estimate = m.result_memory(bytes, usize::MAX - 1) as i64;
        let input = Bytes::from(bytes.clone());
        let region = Region::new(GLOBAL);
        let msg = DynamicMessage::decode(desc.clone(), input).unwrap();
        let json = msg
            .serialize_with_options(serde_json::value::Serializer, &opts)
            .unwrap();
        let real = held(&region);
        drop((msg, json));
        println!(
            "{name}: {} bytes, takes {real} decoded and as JSON, estimated {estimate} ({:.2}x)",
            bytes.len(),
            estimate as f64 / real as f64
        );
        assert!(
            real <= estimate,
            "{name}: takes {real}, estimated {estimate}"
        );
    }

    // 8 MiB of empty sub-messages (about 250 MB decoded) is refused before decoding.
    let hostile = repeat(&[0xa2, 0x01, 0x00], (8 << 20) / 3);
    let region = Region::new(GLOBAL);
    let e = m.decode_result(Some(Bytes::from(hostile))).unwrap_err();
    assert!(held(&region) < 1 << 20);
    assert!(
        matches!(&e, TripleError::Codec(msg) if msg.contains("memory budget")),
        "{e}"
    );
    // 10,000 small messages (140 KB, about 15 MB decoded and as JSON) pass; 50,000 (700 KB,
    // about 72 MB) need a larger budget than the default 32 MiB, and pass with one.
    let list = |n: usize| {
        Bytes::from(from_json(
            json!({"rInner": (0..n).map(|i| json!({"label": format!("label-{i}"), "weight": i})).collect::<Vec<_>>()}),
        ))
    };
    assert!(m.decode_result(Some(list(10_000))).is_ok());
    let big = list(50_000);
    assert!(m.decode_result(Some(big.clone())).is_err());
    let roomy = hessian2::Limits {
        memory_per_byte: 256,
        ..hessian2::Limits::DEFAULT
    };
    assert!(m.decode_result_with(Some(big), roomy).is_ok());
}
