//! Hessian 2 both ways: values encoded by Dubbo's `hessian-lite` (`Hessian2Output`) decode to
//! the same value here, and our bytes decode in `Hessian2Input` to the value we meant.
//!
//! Values travel as typed JSON specs (see the oracle's `HessianOps`): `{"t": "int", "v": 1}`,
//! longs as decimal strings, doubles as the hex of their bits, lists, maps, POJOs
//! (`oracle.pojo.User`, `oracle.pojo.Node`), enums (`oracle.pojo.Color`), `BigDecimal`, a
//! self-reference (`ref`, a cycle) and a repeated element (`dup`, a shared reference). Both
//! sides compare *views* of the same form: maps sorted by key, fields by name.

use std::cmp::Ordering;

use hessian2::Value as H;
use proptest::prelude::*;
use proptest::sample::select;
use proptest::strategy::BoxedStrategy;
use serde_json::{json, Value};

use crate::compare::error;
use crate::Operation;

fn leaf(with_lone: bool) -> BoxedStrategy<Value> {
    let ints = prop_oneof![
        select(
            &[
                0,
                -1,
                1,
                -16,
                47,
                48,
                -17,
                -2048,
                2047,
                2048,
                -2049,
                -262144,
                262143,
                262144,
                -262145,
                i32::MIN,
                i32::MAX
            ][..]
        ),
        any::<i32>(),
    ];
    let longs = prop_oneof![
        select(
            &[
                0i64,
                -8,
                15,
                16,
                -9,
                -2048,
                2047,
                2048,
                -262144,
                262143,
                262144,
                -2_147_483_648,
                2_147_483_647,
                2_147_483_648,
                -2_147_483_649,
                i64::MIN,
                i64::MAX
            ][..]
        ),
        any::<i64>(),
    ];
    let doubles = prop_oneof![
        select(
            &[
                0.0f64,
                -0.0,
                1.0,
                -1.0,
                127.0,
                -128.0,
                128.0,
                32767.0,
                -32768.0,
                32768.0,
                0.5,
                1.25e3,
                0.001,
                1e-300,
                f64::MIN_POSITIVE,
                5e-324,
                f64::MAX,
                f64::MIN,
                f64::INFINITY,
                f64::NEG_INFINITY,
                f64::NAN,
                3.4028235e38,
                123.456,
                -0.1,
                2147483647.0,
                2147483.647
            ][..]
        )
        .prop_map(f64::to_bits),
        any::<u64>(),
    ];
    let dates = prop_oneof![
        select(
            &[
                0i64,
                60_000,
                -60_000,
                1_700_000_000_000,
                1_700_000_040_000,
                1_700_000_000_123,
                -1,
                128_849_018_820_000,
                128_849_018_880_000,
                253_402_300_799_999
            ][..]
        ),
        any::<i64>().prop_map(|x| x % 10_000_000_000_000),
    ];
    let strings = prop_oneof![
        8 => crate::gen::nasty_string(40),
        1 => (select(&['a', 'é', '中', '𝄞'][..]), select(&[31usize, 32, 33, 1023, 1024, 1025, 32767, 32768, 32769, 40000][..]))
            .prop_map(|(c, n)| std::iter::repeat_n(c, n).collect()),
        1 => (0usize..40, select(&[32767usize, 32768, 65535, 65536][..]))
            .prop_map(|(k, n)| {
                // A surrogate pair straddling a chunk boundary.
                let mut s: String = std::iter::repeat_n('a', n - 1 - k % 2).collect();
                s.push('𝄞');
                s.push_str("tail");
                s
            }),
    ];
    let lone = if with_lone {
        proptest::option::weighted(
            0.1,
            (0usize..8, select(&[0xD800u32, 0xDBFF, 0xDC00, 0xDFFF][..])),
        )
        .boxed()
    } else {
        Just(None).boxed()
    };
    prop_oneof![
        1 => Just(json!({"t": "null"})),
        1 => any::<bool>().prop_map(|b| json!({"t": "bool", "v": b})),
        3 => ints.prop_map(|i| json!({"t": "int", "v": i})),
        3 => longs.prop_map(|l| json!({"t": "long", "v": l.to_string()})),
        3 => doubles.prop_map(|d| json!({"t": "double", "v": format!("{d:x}")})),
        1 => dates.prop_map(|d| json!({"t": "date", "v": d})),
        4 => (strings, lone).prop_map(|(s, lone)| match lone {
            Some((at, unit)) => json!({"t": "string", "v": s, "lone": [[at, unit]]}),
            None => json!({"t": "string", "v": s}),
        }),
        1 => proptest::collection::vec(any::<u8>(), 0..40).prop_map(|b| json!({"t": "binary", "v": hex(&b)})),
        1 => select(&["RED", "GREEN", "BLUE"][..]).prop_map(|n| json!({"t": "enum", "class": "oracle.pojo.Color", "name": n})),
        1 => select(&["0", "1.5", "-0.001", "123456789012345678901234567890.123", "1E+10", "0E-8", "-7"][..])
            .prop_map(|d| json!({"t": "object", "class": "java.math.BigDecimal", "fields": [["value", {"t": "string", "v": d}]]})),
    ]
    .boxed()
}

fn spec(with_lone: bool) -> BoxedStrategy<Value> {
    let value = leaf(with_lone).prop_recursive(3, 24, 6, move |inner| {
        let key = prop_oneof![
            crate::gen::word().prop_map(|s| json!({"t": "string", "v": s})),
            (-3i32..3).prop_map(|i| json!({"t": "int", "v": i})),
            (-3i64..3).prop_map(|l| json!({"t": "long", "v": l.to_string()})),
        ];
        prop_oneof![
            (proptest::collection::vec(inner.clone(), 0..6), any::<bool>()).prop_map(|(mut items, dup)| {
                if dup && !items.is_empty() {
                    items.push(json!({"t": "dup"}));
                }
                json!({"t": "list", "items": items})
            }),
            proptest::collection::vec((key, inner.clone()), 0..5)
                .prop_map(|e| json!({"t": "map", "entries": e.into_iter().map(|(k, v)| json!([k, v])).collect::<Vec<_>>()})),
            (proptest::option::of(crate::gen::word()), any::<i32>(), inner.clone()).prop_map(|(name, age, tag)| {
                let name = name.map_or(json!({"t": "null"}), |n| json!({"t": "string", "v": n}));
                json!({"t": "object", "class": "oracle.pojo.User",
                    "fields": [["name", name], ["age", {"t": "int", "v": age}], ["tag", tag]]})
            }),
            inner.prop_map(|v| json!({"t": "object", "class": "oracle.pojo.Node",
                "fields": [["value", v], ["next", {"t": "null"}]]})),
        ]
    });
    // A cycle: a node whose `next` is itself (only at the root, where it is reference 0).
    prop_oneof![
        9 => value.clone(),
        1 => value.prop_map(|v| json!({"t": "object", "class": "oracle.pojo.Node",
            "fields": [["value", v], ["next", {"t": "ref"}]]})),
    ]
    .boxed()
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn unhex(s: &str) -> Option<Vec<u8>> {
    (0..s.len() / 2)
        .map(|i| u8::from_str_radix(s.get(2 * i..2 * i + 2)?, 16).ok())
        .collect()
}

fn text<'a>(spec: &'a Value, key: &str) -> &'a str {
    spec.get(key).and_then(Value::as_str).unwrap_or_default()
}

/// The value a spec describes (lone surrogates cannot be in a Rust string: not used here).
fn to_value(spec: &Value) -> Result<H, String> {
    let items = |k: &str| {
        spec.get(k)
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or_default()
    };
    Ok(match text(spec, "t") {
        "null" => H::Null,
        "bool" => H::Bool(spec.get("v").and_then(Value::as_bool).unwrap_or(false)),
        "int" => H::Int(
            spec.get("v")
                .and_then(Value::as_i64)
                .and_then(|i| i32::try_from(i).ok())
                .unwrap_or(0),
        ),
        "long" => H::Long(text(spec, "v").parse().map_err(|e| format!("long: {e}"))?),
        "double" => H::Double(f64::from_bits(
            u64::from_str_radix(text(spec, "v"), 16).map_err(|e| format!("double: {e}"))?,
        )),
        "date" => H::Date(spec.get("v").and_then(Value::as_i64).unwrap_or(0)),
        "string" => H::String(text(spec, "v").to_owned()),
        "binary" => H::Binary(unhex(text(spec, "v")).ok_or("binary")?),
        "list" => {
            let mut out: Vec<H> = Vec::new();
            for item in items("items") {
                let v = match (text(item, "t"), out.last()) {
                    ("dup", Some(prev)) => prev.clone(),
                    _ => to_value(item)?,
                };
                out.push(v);
            }
            H::List {
                type_name: None,
                items: out,
            }
        }
        "map" => H::Map {
            type_name: None,
            entries: items("entries")
                .iter()
                .map(|kv| Ok((to_value(&kv[0])?, to_value(&kv[1])?)))
                .collect::<Result<_, String>>()?,
        },
        "enum" => H::Object {
            class: text(spec, "class").into(),
            fields: vec![("name".into(), H::String(text(spec, "name").to_owned()))],
        },
        "object" => H::Object {
            class: text(spec, "class").into(),
            fields: items("fields")
                .iter()
                .map(|nv| {
                    let v = if text(&nv[1], "t") == "ref" {
                        H::Ref(0)
                    } else {
                        to_value(&nv[1])?
                    };
                    Ok((nv[0].as_str().unwrap_or_default().into(), v))
                })
                .collect::<Result<_, String>>()?,
        },
        "ref" => H::Ref(0),
        other => return Err(format!("unknown spec type {other:?}")),
    })
}

/// Java's `String.compareTo`: UTF-16 code unit order.
fn utf16_cmp(a: &str, b: &str) -> Ordering {
    a.encode_utf16().cmp(b.encode_utf16())
}

/// The sort key of a map key's view (the oracle's `keyText`): type, `|`, the raw value text.
fn key_text(v: &Value) -> String {
    let val = match v.get("v") {
        Some(Value::String(s)) => s.clone(),
        Some(other) => other.to_string(),
        None => String::new(),
    };
    format!("{}|{val}", text(v, "t"))
}

/// The value Java reads from the bytes of `v` when Java's writer has the same rules as ours:
/// `-0.0` travels as the zero shortcut (`0x5b`, read back as `0.0`) and a NaN as the
/// canonical NaN (`Double.doubleToLongBits`).
fn as_java_reads(v: H) -> H {
    match v {
        // Matches -0.0 too (float patterns compare with ==).
        H::Double(0.0) => H::Double(0.0),
        H::Double(d) if d.is_nan() => H::Double(f64::NAN),
        H::List { type_name, items } => H::List {
            type_name,
            items: items.into_iter().map(as_java_reads).collect(),
        },
        H::Map { type_name, entries } => H::Map {
            type_name,
            entries: entries
                .into_iter()
                .map(|(k, x)| (as_java_reads(k), as_java_reads(x)))
                .collect(),
        },
        H::Object { class, fields } => H::Object {
            class,
            fields: fields
                .into_iter()
                .map(|(n, x)| (n, as_java_reads(x)))
                .collect(),
        },
        other => other,
    }
}

/// The view of a decoded (or intended) value, as the oracle's `HessianOps.view` makes it.
fn view(v: &H) -> Value {
    match v {
        H::Null => json!({"t": "null"}),
        H::Bool(b) => json!({"t": "bool", "v": b}),
        H::Int(i) => json!({"t": "int", "v": i}),
        H::Long(l) => json!({"t": "long", "v": l.to_string()}),
        H::Double(d) => json!({"t": "double", "v": format!("{:x}", d.to_bits())}),
        H::Date(ms) => json!({"t": "date", "v": ms}),
        H::String(s) => json!({"t": "string", "v": s}),
        H::Binary(b) => json!({"t": "binary", "v": hex(b)}),
        H::List { items, .. } => {
            json!({"t": "list", "items": items.iter().map(view).collect::<Vec<_>>()})
        }
        H::Map { entries, .. } => {
            // A HashMap: one entry per key (the last put wins), in key order.
            let mut out: Vec<(Value, Value)> = Vec::new();
            for (k, x) in entries {
                let (k, x) = (view(k), view(x));
                match out.iter_mut().find(|(ok, _)| *ok == k) {
                    Some(e) => e.1 = x,
                    None => out.push((k, x)),
                }
            }
            out.sort_by(|a, b| utf16_cmp(&key_text(&a.0), &key_text(&b.0)));
            json!({"t": "map", "entries": out.into_iter().map(|(k, x)| json!([k, x])).collect::<Vec<_>>()})
        }
        H::Object { class, fields } => {
            let mut f: Vec<(&str, Value)> = fields.iter().map(|(n, x)| (&**n, view(x))).collect();
            f.sort_by(|a, b| utf16_cmp(a.0, b.0));
            json!({"t": "object", "class": &**class, "fields": f.into_iter().map(|(n, x)| json!([n, x])).collect::<Vec<_>>()})
        }
        H::Ref(_) => json!({"t": "ref"}),
    }
}

/// Java's view marks a string that held a lone surrogate; ours cannot hold one and shows
/// U+FFFD (`hessian-lone-surrogate`). Whether the views agree once those marks are dropped.
fn same_but_lossy(java: &Value, rust: &Value) -> bool {
    fn strip(v: &Value) -> Value {
        match v {
            Value::Object(m) => Value::Object(
                m.iter()
                    .filter(|(k, _)| *k != "lossy")
                    .map(|(k, x)| (k.clone(), strip(x)))
                    .collect(),
            ),
            Value::Array(a) => Value::Array(a.iter().map(strip).collect()),
            other => other.clone(),
        }
    }
    java.to_string().contains("\"lossy\":true") && crate::compare::same(&strip(java), &strip(rust))
}

/// Java encodes (hessian-lite `Hessian2Output.writeObject`), we decode.
#[derive(Debug)]
pub struct JavaToRust;

impl Operation for JavaToRust {
    fn name(&self) -> &'static str {
        "hessian_java_to_rust"
    }

    fn strategy(&self) -> BoxedStrategy<Value> {
        spec(true).prop_map(|v| json!({ "value": v })).boxed()
    }

    fn answer(&self, _input: &Value) -> Value {
        Value::Null
    }

    fn answer_after(&self, _input: &Value, java: &Value) -> Option<Value> {
        let hex_text = java.get("hex")?.as_str()?;
        let Some(bytes) = unhex(hex_text) else {
            return Some(error("hex", "bad hex from the oracle"));
        };
        Some(match hessian2::from_bytes(&bytes) {
            Ok(v) => json!({ "hex": hex_text, "view": view(&v) }),
            Err(e) => error("hessian2::from_bytes", e),
        })
    }

    fn divergence(&self, _input: &Value, java: &Value, rust: &Value) -> Option<&'static str> {
        same_but_lossy(java, rust).then_some("hessian-lone-surrogate")
    }
}

/// We encode (`hessian2::to_bytes`), Java decodes (`Hessian2Input.readObject`).
#[derive(Debug)]
pub struct RustToJava;

impl Operation for RustToJava {
    fn name(&self) -> &'static str {
        "hessian_rust_to_java"
    }

    fn strategy(&self) -> BoxedStrategy<Value> {
        spec(false)
            .prop_map(|v| {
                let hex_text = to_value(&v)
                    .ok()
                    .and_then(|h| hessian2::to_bytes(&h).ok())
                    .map(|b| hex(&b));
                json!({ "value": v, "hex": hex_text })
            })
            .boxed()
    }

    fn answer(&self, input: &Value) -> Value {
        let spec = input.get("value").unwrap_or(&Value::Null);
        match to_value(spec) {
            Ok(v) if input.get("hex").is_some_and(Value::is_string) => {
                json!({ "view": view(&as_java_reads(v)) })
            }
            Ok(_) => error("hessian2::to_bytes", "our encoder refused the value"),
            Err(e) => error("spec", e),
        }
    }
}
