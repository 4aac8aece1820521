//! Property tests: every value round-trips; arbitrary and mutated bytes never panic.
#![allow(clippy::unwrap_used)] // strategies outside #[test] functions

use std::sync::Arc;

use hessian2::{Decoder, Encoder, Limits, Value};
use proptest::prelude::*;

fn scalar() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i32>().prop_map(Value::Int),
        (-300_000i32..300_000).prop_map(Value::Int),
        any::<i64>().prop_map(Value::Long),
        (-300_000i64..300_000).prop_map(Value::Long),
        // Any double except -0.0 (Java writes it as 0.0) and NaN (not equal to itself).
        any::<f64>()
            .prop_filter("no -0.0/NaN", |d| !(d.is_nan()
                || (*d == 0.0 && d.is_sign_negative())))
            .prop_map(Value::Double),
        (-2_147_483_648i64..2_147_483_647).prop_map(|m| Value::Double(0.001 * m as f64)),
        (-40_000i32..40_000).prop_map(|i| Value::Double(f64::from(i))),
        any::<i64>().prop_map(Value::Date),
        (-1_000_000i64..1_000_000).prop_map(|m| Value::Date(m * 60_000)),
        any::<String>().prop_map(Value::String),
        "[a-zé😀]{0,40}".prop_map(Value::String),
        proptest::collection::vec(any::<u8>(), 0..40).prop_map(Value::Binary),
    ]
}

fn type_name() -> impl Strategy<Value = Option<Arc<str>>> {
    prop_oneof![
        Just(None),
        Just(Some("java.util.LinkedList".into())),
        Just(Some("[int".into())),
        "[a-z.]{1,12}".prop_map(|s| Some(s.into()))
    ]
}

fn value() -> impl Strategy<Value = Value> {
    scalar().prop_recursive(4, 64, 10, |inner| {
        prop_oneof![
            (type_name(), proptest::collection::vec(inner.clone(), 0..10))
                .prop_map(|(type_name, items)| Value::List { type_name, items }),
            (
                type_name(),
                proptest::collection::vec((inner.clone(), inner.clone()), 0..6)
            )
                .prop_map(|(type_name, entries)| Value::Map { type_name, entries }),
            (
                "[A-Z][a-z]{0,3}",
                proptest::collection::vec(("[a-z]{1,3}", inner), 0..5)
            )
                .prop_map(|(class, fields)| Value::Object {
                    class: class.into(),
                    fields: fields.into_iter().map(|(k, v)| (k.into(), v)).collect(),
                }),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn round_trip(values in proptest::collection::vec(value(), 1..4)) {
        let mut e = Encoder::new();
        for v in &values {
            e.write(v).unwrap();
        }
        let mut d = Decoder::new(e.as_bytes());
        for v in &values {
            prop_assert_eq!(&d.read().unwrap(), v);
            prop_assert_eq!(v.clone().into_json(), v.to_json());
        }
        prop_assert!(d.is_empty());
        // Encoding is deterministic and a reused encoder writes the same bytes.
        let first = e.as_bytes().to_vec();
        e.clear();
        for v in &values {
            e.write(v).unwrap();
        }
        prop_assert_eq!(e.as_bytes(), first.as_slice());
    }

    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..256)) {
        let limits = Limits { max_depth: 32, max_len: 4096, ..Limits::DEFAULT };
        let mut d = Decoder::with_limits(&bytes, limits);
        for _ in 0..8 {
            if d.read().is_err() || d.is_empty() {
                break;
            }
        }
        let _ = Decoder::new(&bytes).read_map_str();
        let _ = Decoder::new(&bytes).read_json();
    }

    #[test]
    fn read_map_str_agrees_with_read(v in value()) {
        // A map read as attachments holds what `read` gives, in string form, nulls dropped.
        let bytes = hessian2::to_bytes(&v).unwrap();
        let direct = Decoder::new(&bytes).read_map_str();
        if let Ok(Value::Map { entries, .. }) = Decoder::new(&bytes).read() {
            let form = |v: Value| match v {
                Value::String(s) => s,
                other => match other.to_json() {
                    serde_json::Value::String(s) => s,
                    j => j.to_string(),
                },
            };
            let mut want = std::collections::BTreeMap::new();
            for (k, v) in entries {
                if !matches!(v, Value::Null) {
                    want.insert(form(k), form(v));
                }
            }
            prop_assert_eq!(direct.unwrap(), want);
        }
    }

    #[test]
    fn mutated_valid_streams_never_panic(v in value(), flips in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..6), cut in any::<prop::sample::Index>()) {
        let mut bytes = hessian2::to_bytes(&v).unwrap();
        for (i, b) in flips {
            let n = bytes.len();
            bytes[i.index(n)] = b;
        }
        let _ = Decoder::new(&bytes).read();
        let n = bytes.len();
        let _ = Decoder::new(&bytes[..cut.index(n)]).read();
    }

    #[test]
    fn json_values_round_trip(j in json_value()) {
        let mut e = Encoder::new();
        e.write_json(&j, None).unwrap();
        prop_assert_eq!(Decoder::new(e.as_bytes()).read_json().unwrap(), j);
    }
}

fn json_value() -> impl Strategy<Value = serde_json::Value> {
    let leaf = prop_oneof![
        Just(serde_json::Value::Null),
        any::<bool>().prop_map(serde_json::Value::Bool),
        any::<i64>().prop_map(|i| serde_json::json!(i)),
        any::<f64>()
            .prop_filter("finite, not integral", |d| d.is_finite()
                && d.fract() != 0.0)
            .prop_map(|d| serde_json::json!(d)),
        any::<String>().prop_map(serde_json::Value::String),
    ];
    leaf.prop_recursive(4, 48, 8, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..8).prop_map(serde_json::Value::Array),
            proptest::collection::btree_map("[a-z]{0,4}", inner, 0..6).prop_map(|m| {
                serde_json::Value::Object(m.into_iter().filter(|(k, _)| k != "class").collect())
            }),
        ]
    })
}
