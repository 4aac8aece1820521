//! The JSON mapping both ways.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers outside #[test] functions

use hessian2::{Encoder, Error, Value};
use serde_json::json;

fn s(x: &str) -> Value {
    Value::String(x.to_owned())
}

#[test]
fn hessian_to_json() {
    let v = Value::List {
        type_name: Some("java.util.HashSet".into()),
        items: vec![
            Value::Null,
            Value::Bool(true),
            Value::Int(-7),
            Value::Long(i64::MAX),
            Value::Double(0.1),
            Value::Double(f64::NAN),
            Value::Date(1_700_000_000_000),
            s("😀 é"),
            Value::Binary(vec![0xff, 0x00, 0x41]),
            Value::Map {
                type_name: None,
                entries: vec![
                    (s("k"), Value::Int(1)),
                    (Value::Int(2), s("two")),
                    (Value::Bool(false), Value::Null),
                ],
            },
            Value::Object {
                class: "com.example.User".into(),
                fields: vec![
                    ("name".into(), s("n")),
                    (
                        "tags".into(),
                        Value::List {
                            type_name: Some("[string".into()),
                            items: vec![s("a")],
                        },
                    ),
                ],
            },
            Value::Ref(0),
        ],
    };
    assert_eq!(
        v.to_json(),
        json!([
            null, true, -7, 9_223_372_036_854_775_807i64, 0.1, null, 1_700_000_000_000i64, "😀 é", "/wBB",
            {"k": 1, "2": "two", "false": null},
            {"class": "com.example.User", "name": "n", "tags": ["a"]},
            null
        ])
    );
    // Longs print exactly, not through f64.
    assert_eq!(
        Value::Long(9_007_199_254_740_993).to_json().to_string(),
        "9007199254740993"
    );
}

fn via(j: serde_json::Value, t: Option<&str>) -> Value {
    Value::from_json(&j, t).unwrap_or_else(|e| panic!("{j} as {t:?}: {e}"))
}

#[test]
fn json_to_hessian_with_types() {
    assert_eq!(via(json!("x"), Some("java.lang.String")), s("x"));
    assert_eq!(via(json!(12), Some("String")), s("12"));
    assert_eq!(via(json!(5), Some("int")), Value::Int(5));
    assert_eq!(via(json!(5), Some("java.lang.Integer")), Value::Int(5));
    assert_eq!(via(json!(null), Some("java.lang.Integer")), Value::Null);
    assert_eq!(via(json!(5), Some("long")), Value::Long(5));
    assert_eq!(via(json!(5), Some("double")), Value::Double(5.0));
    assert_eq!(via(json!(true), Some("boolean")), Value::Bool(true));
    assert_eq!(via(json!(-3), Some("short")), Value::Int(-3));
    assert_eq!(via(json!("c"), Some("char")), s("c"));
    assert_eq!(
        via(json!(60_000), Some("java.util.Date")),
        Value::Date(60_000)
    );
    assert_eq!(
        via(json!([1, "a"]), Some("java.util.List")),
        Value::List {
            type_name: None,
            items: vec![Value::Long(1), s("a")]
        }
    );
    assert_eq!(
        via(json!([1]), Some("java.util.LinkedList")),
        Value::List {
            type_name: Some("java.util.LinkedList".into()),
            items: vec![Value::Long(1)]
        }
    );
    assert_eq!(
        via(json!({"a": 1, "class": "x.Y"}), Some("java.util.Map")),
        Value::Map {
            type_name: None,
            entries: vec![(s("a"), Value::Long(1)), (s("class"), s("x.Y"))]
        }
    );
    assert_eq!(
        via(json!([1, 2]), Some("int[]")),
        Value::List {
            type_name: Some("[int".into()),
            items: vec![Value::Int(1), Value::Int(2)]
        }
    );
    assert_eq!(
        via(json!([["a"]]), Some("java.lang.String[][]")),
        Value::List {
            type_name: Some("[[string".into()),
            items: vec![Value::List {
                type_name: Some("[string".into()),
                items: vec![s("a")]
            }]
        }
    );
    assert_eq!(
        via(json!("AQID"), Some("byte[]")),
        Value::Binary(vec![1, 2, 3])
    );
    assert_eq!(
        via(json!([1, 255, -1]), Some("[B")),
        Value::Binary(vec![1, 255, 255])
    );
    assert_eq!(
        via(json!({"name": "n", "age": 3}), Some("com.example.User")),
        Value::Object {
            class: "com.example.User".into(),
            fields: vec![("age".into(), Value::Long(3)), ("name".into(), s("n"))]
        }
    );
    assert_eq!(
        via(
            json!({"class": "com.example.Sub", "a": 1}),
            Some("com.example.Base")
        ),
        Value::Object {
            class: "com.example.Sub".into(),
            fields: vec![("a".into(), Value::Long(1))]
        }
    );
    assert_eq!(
        via(json!("RED"), Some("com.example.Color")),
        Value::Object {
            class: "com.example.Color".into(),
            fields: vec![("name".into(), s("RED"))]
        }
    );
    assert_eq!(
        via(json!(1.25), Some("java.math.BigDecimal")),
        Value::Object {
            class: "java.math.BigDecimal".into(),
            fields: vec![("value".into(), s("1.25"))]
        }
    );
    // What a decoded BigDecimal becomes in JSON is accepted back, digits kept.
    let decimal = Value::Object {
        class: "java.math.BigDecimal".into(),
        fields: vec![("value".into(), s("12345678901234567890.10"))],
    };
    assert_eq!(
        via(decimal.to_json(), Some("java.math.BigDecimal")),
        decimal
    );
    assert_eq!(
        via(json!({"value": "2.50"}), Some("java.math.BigDecimal")),
        Value::Object {
            class: "java.math.BigDecimal".into(),
            fields: vec![("value".into(), s("2.50"))]
        }
    );
}

#[test]
fn json_to_hessian_inferred() {
    assert_eq!(via(json!(7), None), Value::Long(7));
    assert_eq!(via(json!(1.5), None), Value::Double(1.5));
    assert_eq!(
        via(json!(18_446_744_073_709_551_615u64), None),
        Value::Double(18_446_744_073_709_551_615.0)
    );
    assert_eq!(via(json!("s"), None), s("s"));
    assert_eq!(via(json!(null), Some("java.lang.Object")), Value::Null);
    assert_eq!(
        via(json!({"b": {"class": "p.Q", "x": true}}), None),
        Value::Map {
            type_name: None,
            entries: vec![(
                s("b"),
                Value::Object {
                    class: "p.Q".into(),
                    fields: vec![("x".into(), Value::Bool(true))]
                }
            )]
        }
    );
    // A non-string "class" is an ordinary key.
    assert_eq!(
        via(json!({"class": 1}), None),
        Value::Map {
            type_name: None,
            entries: vec![(s("class"), Value::Long(1))]
        }
    );
}

#[test]
fn json_errors_name_the_problem() {
    for (j, t) in [
        (json!("x"), "int"),
        (json!(1.5), "int"),
        (json!(3_000_000_000i64), "int"),
        (json!(200), "byte"),
        (json!(null), "int"),
        (json!(1.5), "long"),
        (json!("1"), "double"),
        (json!(1), "boolean"),
        (json!({}), "java.util.List"),
        (json!([]), "java.util.Map"),
        (json!(1), "com.example.User"),
        (json!("not base64!"), "byte[]"),
        (json!([256]), "byte[]"),
        (json!({}), "int[]"),
        (json!("ab"), "char"),
        (json!([]), "java.lang.String"),
        (json!("x"), "java.math.BigDecimal"),
        (json!({"value": "x"}), "java.math.BigDecimal"),
        (
            json!({"class": "java.lang.String", "value": "1"}),
            "java.math.BigDecimal",
        ),
    ] {
        let err = Value::from_json(&j, Some(t)).unwrap_err();
        assert!(matches!(err, Error::Json { .. }), "{j} as {t}: {err}");
        assert!(err.to_string().contains(t), "{err}");
    }
    // An error in a nested element fails the whole argument.
    let mut e = Encoder::new();
    assert!(e.write_json(&json!(["x", "y"]), Some("int[]")).is_err());
}

#[test]
fn json_round_trip_of_plain_data() {
    let j =
        json!({"a": [1, -2, 3.5, "x", true, null, {"b": "c"}], "n": 9_223_372_036_854_775_807i64});
    assert_eq!(via(j.clone(), None).to_json(), j);
    let mut e = Encoder::new();
    e.write_json(&j, None).unwrap();
    assert_eq!(hessian2::Decoder::new(e.as_bytes()).read_json().unwrap(), j);
}
