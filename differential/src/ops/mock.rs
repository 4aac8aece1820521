//! `MockInvoker.parseMockValue(mock[, returnType])` and the built-in result mergers
//! (`MergerFactory.getMerger(type).merge(items...)`).

use invoker::merger::MergerRegistry;
use invoker::mock::{parse_mock_value, JavaType};
use proptest::prelude::*;
use proptest::sample::select;
use proptest::strategy::BoxedStrategy;
use serde_json::{json, Value};

use crate::compare::error;
use crate::Operation;

const RETURN_TYPES: [&str; 22] = [
    "int",
    "java.lang.Integer",
    "long",
    "java.lang.Long",
    "double",
    "java.lang.Double",
    "float",
    "short",
    "byte",
    "boolean",
    "java.lang.Boolean",
    "char",
    "java.lang.String",
    "java.util.List",
    "java.util.Map",
    "java.util.Set",
    "java.lang.Object",
    "int[]",
    "java.lang.String[]",
    "oracle.pojo.User",
    "java.util.ArrayList",
    "java.util.HashMap",
];

fn mock_text() -> BoxedStrategy<String> {
    prop_oneof![
        3 => select(&["empty", "null", "true", "false", "True", "\"x\"", "'x'", "\"\"", "''", "\"", "123", "-1", "0", "1.5",
            "1e3", "0x10", " 1", "007", "99999999999", "99999999999999999999", "1,2", "abc", "", "{", "[1,", "{}", "[]",
            "{\"a\":1}", "{\"a\":\"b\",\"c\":[1,2]}", "[1,2,3]", "[\"a\",\"b\"]", "{a:1}", "{'a':'b'}", "[1,2,]",
            "{\"a\":1,}", "[1.5,2]", "[\"1\",2]", "{\"name\":\"n\",\"age\":3}", "{\"age\":\"x\"}", "[true,null]",
            "-", "+1", "1.", ".5", "NaN", "Infinity", "2147483648", "-2147483649", "\"a\"b\""][..])
            .prop_map(str::to_owned),
        1 => crate::gen::nasty_string(6),
        1 => (any::<i64>()).prop_map(|n| n.to_string()),
    ]
    .boxed()
}

/// `parseMockValue(mock)` or `parseMockValue(mock, new Type[]{type})`, as plain JSON.
#[derive(Debug)]
pub struct MockValue;

impl Operation for MockValue {
    fn name(&self) -> &'static str {
        "mock_value"
    }

    fn strategy(&self) -> BoxedStrategy<Value> {
        (
            mock_text(),
            proptest::option::weighted(0.8, select(&RETURN_TYPES[..])),
        )
            .prop_map(|(mock, t)| match t {
                Some(t) => json!({ "mock": mock, "type": t }),
                None => json!({ "mock": mock }),
            })
            .boxed()
    }

    fn divergence(&self, input: &Value, java: &Value, rust: &Value) -> Option<&'static str> {
        let t = input.get("type").and_then(Value::as_str)?;
        let mock = input
            .get("mock")
            .and_then(Value::as_str)
            .unwrap_or_default();
        if matches!(JavaType::parse(t), JavaType::Pojo(_)) {
            // No Java class here to fill in the fields Java's PojoUtils.realize defaults.
            return Some("mock-pojo-needs-class");
        }
        let refused = rust
            .pointer("/error/message")
            .and_then(Value::as_str)
            .is_some_and(|m| m.contains("can not convert {"));
        (mock.starts_with('{') && refused && !crate::compare::is_error(java))
            .then_some("mock-map-to-scalar-is-error")
    }

    fn answer(&self, input: &Value) -> Value {
        let mock = input
            .get("mock")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let t = input
            .get("type")
            .and_then(Value::as_str)
            .map(JavaType::parse);
        match parse_mock_value(mock, t.as_ref()) {
            Ok(mut v) => {
                if matches!(t, Some(JavaType::Set(_))) {
                    sort_set(&mut v);
                }
                json!({ "value": v })
            }
            Err(e) => error("parse_mock_value", e),
        }
    }
}

/// A set's elements in the oracle's order (by JSON text; a HashSet has no order of its own).
fn sort_set(v: &mut Value) {
    if let Value::Array(a) = v {
        a.sort_by_key(|x| x.to_string());
    }
}

/// The merger for `type` and what it makes of `items`.
#[derive(Debug)]
pub struct Merge;

fn items_of(t: &'static str) -> BoxedStrategy<Value> {
    let elem: BoxedStrategy<Value> = match t {
        "int[]" | "short[]" | "byte[]" | "java.lang.Integer[]" => {
            (-100i32..100).prop_map(|i| json!(i)).boxed()
        }
        "java.lang.String[]" => select(&["a", "b", "c", "x.y", ""][..])
            .prop_map(|s| json!(s))
            .boxed(),
        "long[]" => any::<i64>().prop_map(|i| json!(i)).boxed(),
        "double[]" | "float[]" => select(&[0.5f64, -2.0, 1e10, 3.25, 0.0][..])
            .prop_map(|d| json!(d))
            .boxed(),
        "boolean[]" => any::<bool>().prop_map(|b| json!(b)).boxed(),
        "char[]" => select(&["a", "b", "中"][..]).prop_map(|c| json!(c)).boxed(),
        _ => prop_oneof![
            select(&["a", "b", "c", "x.y"][..]).prop_map(|s| json!(s)),
            (-5i32..5).prop_map(|i| json!(i)),
        ]
        .boxed(),
    };
    let one: BoxedStrategy<Value> = match t {
        "java.util.Map" => {
            proptest::collection::btree_map(select(&["a", "b", "c", "d"][..]), elem, 0..4)
                .prop_map(|m| json!(m))
                .boxed()
        }
        "java.lang.String" | "java.lang.Object" => elem,
        _ => proptest::collection::vec(elem, 0..4)
            .prop_map(Value::Array)
            .boxed(),
    };
    proptest::collection::vec(prop_oneof![8 => one, 1 => Just(Value::Null)], 0..4)
        .prop_map(Value::Array)
        .boxed()
}

impl Operation for Merge {
    fn name(&self) -> &'static str {
        "merger"
    }

    fn strategy(&self) -> BoxedStrategy<Value> {
        select(
            &[
                "java.util.List",
                "java.util.Set",
                "java.util.Map",
                "int[]",
                "long[]",
                "double[]",
                "float[]",
                "boolean[]",
                "short[]",
                "byte[]",
                "char[]",
                "java.lang.String[]",
                "java.lang.Integer[]",
                "java.lang.String",
                "java.lang.Object",
            ][..],
        )
        .prop_flat_map(|t| items_of(t).prop_map(move |items| json!({ "type": t, "items": items })))
        .boxed()
    }

    fn answer(&self, input: &Value) -> Value {
        let t = input.get("type").and_then(Value::as_str);
        let reg = MergerRegistry::global();
        let entry = match reg.merger_for_type(t) {
            Ok(e) => e,
            Err(e) => return error("merger_for_type", e),
        };
        let Some(entry) = entry else {
            return json!({ "merger": null });
        };
        let items: Vec<Value> = input
            .get("items")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        match entry.merger.merge(&items) {
            Ok(mut v) => {
                if t == Some("java.util.Set") {
                    sort_set(&mut v);
                }
                json!({ "merger": entry.class, "result": v })
            }
            Err(e) => error("merge", e),
        }
    }
}
