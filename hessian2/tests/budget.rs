//! The decoder's memory: names a stream defines once are shared by every value that uses
//! them, every allocation made for the returned values is charged to the budget before it is
//! made (so what a decode holds never exceeds what it was charged), and input built to expand
//! is refused. Measured with a counting global allocator; one test only, the counter is
//! process-wide.

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[allow(dead_code)] // the typical body is the only thing used here
mod common;

use std::alloc::System;
use std::sync::Arc;

use hessian2::{Decoder, Encoder, Error, Limits, Value};
use stats_alloc::{Region, StatsAlloc, INSTRUMENTED_SYSTEM};

#[global_allocator]
static GLOBAL: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

/// Bytes allocated and not freed since `region` began (a reallocation counts its growth as
/// allocated, its shrinking as freed).
fn held(region: &Region<'_, System>) -> i64 {
    let s = region.change();
    s.bytes_allocated as i64 - s.bytes_deallocated as i64
}

fn long_name(n: usize) -> String {
    let mut s = String::from("com.example.");
    while s.len() < n {
        s.push('A');
    }
    s.truncate(n);
    s
}

/// An untyped variable-length list: `first` writes the first element, `unit` repeats.
fn list(first: impl FnOnce(&mut Encoder), unit: &[u8], count: usize) -> Vec<u8> {
    let mut e = Encoder::new();
    e.write_raw(b"W");
    first(&mut e);
    for _ in 1..count {
        e.write_raw(unit);
    }
    e.write_raw(b"Z");
    e.into_bytes()
}

fn class_names(name_len: usize, count: usize) -> Vec<u8> {
    let name = long_name(name_len);
    list(|e| e.write_object_begin(&name, []), &[0x60], count)
}

fn field_names(name_len: usize, count: usize) -> Vec<u8> {
    let field = long_name(name_len);
    list(
        |e| {
            e.write_object_begin("A", [field.as_str()]);
            e.write_null();
        },
        &[0x60, b'N'],
        count,
    )
}

fn list_types(name_len: usize, count: usize) -> Vec<u8> {
    let ty = long_name(name_len);
    list(|e| e.write_list_begin(0, Some(&ty)), &[0x70, 0x90], count)
}

fn map_types(name_len: usize, count: usize) -> Vec<u8> {
    let ty = long_name(name_len);
    list(
        |e| {
            e.write_map_begin(Some(&ty));
            e.write_map_end();
        },
        &[b'M', 0x90, b'Z'],
        count,
    )
}

/// A map shared by reference many times (`Q` expansions are copies and are charged).
fn references(count: usize) -> Vec<u8> {
    let mut e = Encoder::new();
    e.write_list_begin(count + 1, None);
    e.write_map_begin(None);
    e.write_str("k");
    e.write_str(&"v".repeat(100));
    e.write_map_end();
    for _ in 0..count {
        e.write_ref(1).unwrap();
    }
    e.into_bytes()
}

/// Strings, non-ASCII text, binaries and an attachments map.
fn mixed() -> Vec<u8> {
    let mut e = Encoder::new();
    let v = Value::List {
        type_name: Some("java.util.ArrayList".into()),
        items: (0..200)
            .map(|i| Value::Map {
                type_name: None,
                entries: vec![
                    (
                        Value::String(format!("ké{i}")),
                        Value::String("é😀x".repeat(i)),
                    ),
                    (Value::Int(i as i32), Value::Binary(vec![7; i * 50])),
                ],
            })
            .collect(),
    };
    e.write(&v).unwrap();
    e.write_map_str([("a", "b"), ("timeout", "3000")]);
    e.into_bytes()
}

#[test]
fn names_shared_allocations_charged_expansion_refused() {
    // Shared names: 10,000 instances of a class with a 10 KiB name hold the name once
    // (copies would take 100 MB).
    let body = class_names(10 * 1024, 10_000);
    let region = Region::new(GLOBAL);
    let mut d = Decoder::new(&body);
    let v = d.read().unwrap();
    let kept = held(&region);
    let Value::List { items, .. } = &v else {
        panic!("{v:?}")
    };
    assert_eq!(items.len(), 10_000);
    let class = |i: usize| match &items[i] {
        Value::Object { class, .. } => class.clone(),
        other => panic!("{other:?}"),
    };
    assert!(Arc::ptr_eq(&class(0), &class(9_999)));
    assert!(kept < 1 << 20, "10,000 instances hold {kept} bytes");
    drop(v);

    // Every allocation is charged: what a decode holds never exceeds what it was charged.
    let cases: Vec<(&str, Vec<u8>)> = vec![
        ("class names", class_names(4096, 2000)),
        ("field names", field_names(4096, 2000)),
        ("list types", list_types(4096, 2000)),
        ("map types", map_types(4096, 2000)),
        ("references", references(2000)),
        ("mixed", mixed()),
        ("typical", {
            let mut e = Encoder::new();
            common::typical::encode_response(&mut e, &common::typical::response_value()).unwrap();
            e.into_bytes()
        }),
    ];
    for (name, body) in &cases {
        for json in [false, true] {
            let region = Region::new(GLOBAL);
            let mut d = Decoder::new(body);
            let mut out = Vec::new();
            while !d.is_empty() {
                let r = if json {
                    d.read_json().map(|j| out.push(Some(j)))
                } else {
                    d.read().map(|v| {
                        out.push(None);
                        drop(v);
                    })
                };
                if r.is_err() {
                    // The typical body ends with its attachments; read them as a map.
                    break;
                }
            }
            let kept = held(&region);
            let charged = d.memory_used() as i64;
            drop(d);
            assert!(
                kept <= charged + 4096,
                "{name} (json {json}): holds {kept} bytes, charged {charged}"
            );
            assert!(!out.is_empty(), "{name}: nothing decoded");
        }
    }

    // Expansion refused: a 64 KiB body whose JSON form copies a 32 KiB class name 32,000
    // times (1 GiB) fails once the copies would pass the budget, before they are made.
    let body = class_names(32 * 1024, 32 * 1024);
    assert!(body.len() < 70 * 1024);
    let region = Region::new(GLOBAL);
    let mut d = Decoder::new(&body);
    let err = d.read_json().unwrap_err();
    assert!(matches!(err, Error::OverBudget { .. }), "{err}");
    // The refused charge is not counted (found by the fuzz target).
    assert!(d.memory_used() <= d.memory_budget());
    assert!(err.is_limit());
    assert!(err.to_string().contains("memory budget"), "{err}");
    let region_peak = held(&region);
    drop(d);
    assert!(
        region_peak < 8 << 20,
        "after the refusal {region_peak} bytes held"
    );

    // The budget scales with the input, above its floor; a smaller budget refuses earlier.
    let tight = Limits {
        min_memory: 64 * 1024,
        memory_per_byte: 4,
        ..Limits::DEFAULT
    };
    let body = list_types(1024, 10_000);
    assert!(Decoder::new(&body).read().is_ok());
    let err = Decoder::with_limits(&body, tight).read().unwrap_err();
    assert!(matches!(err, Error::OverBudget { limit, .. } if limit == 4 * body.len()));
}
