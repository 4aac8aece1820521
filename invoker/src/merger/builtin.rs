//! Dubbo's built-in mergers (`org.apache.dubbo.rpc.cluster.merger.*`) over JSON values.
//!
//! | extension | class | type | rule |
//! |---|---|---|---|
//! | `list` | ListMerger | `java.util.List` | concatenation in order; null lists skipped, null elements kept |
//! | `set` | SetMerger | `java.util.Set` | union (first-appearance order; Java's `HashSet` has none) |
//! | `map` | MapMerger | `java.util.Map` | successive `putAll`: a later item wins a duplicate key |
//! | `boolean` ... `double` | `<T>ArrayMerger` | `boolean[]` ... `double[]` | concatenation, nulls skipped |
//! | (none) | ArrayMerger | any other array | concatenation; items of different element types fail |
//!
//! Sets and arrays are JSON arrays, maps JSON objects, `char[]` one-character strings.

use std::sync::Arc;

use serde_json::{Map, Value};

use super::{java_error, Merger};
use crate::rpc::RpcError;

/// Concatenates lists (`ListMerger`).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct ListMerger;

/// Unions sets (`SetMerger`).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct SetMerger;

/// `putAll`s maps (`MapMerger`).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct MapMerger;

/// Concatenates object arrays of one element type (`ArrayMerger`).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct ArrayMerger;

/// Concatenates primitive arrays (`BooleanArrayMerger`, `IntArrayMerger`, ...).
#[derive(Debug, Clone, Copy)]
pub(crate) struct PrimitiveArrayMerger {
    /// The Java element type, e.g. `int`.
    pub element: &'static str,
}

fn class_cast(item: &Value, to: &str) -> RpcError {
    let from = match item {
        Value::Object(_) => "java.util.HashMap",
        Value::Array(_) => "java.util.ArrayList",
        Value::String(_) => "java.lang.String",
        Value::Number(_) => "java.lang.Number",
        Value::Bool(_) => "java.lang.Boolean",
        Value::Null => "null",
    };
    java_error(
        "java.lang.ClassCastException",
        format!("class {from} cannot be cast to class {to}"),
    )
}

/// The non-null items as arrays, or a cast error.
fn arrays<'a>(items: &'a [Value], to: &str) -> Result<Vec<&'a Vec<Value>>, RpcError> {
    items
        .iter()
        .filter(|v| !v.is_null())
        .map(|v| v.as_array().ok_or_else(|| class_cast(v, to)))
        .collect()
}

fn concat(lists: &[&Vec<Value>]) -> Value {
    let mut out = Vec::with_capacity(lists.iter().map(|l| l.len()).sum());
    for l in lists {
        out.extend(l.iter().cloned());
    }
    Value::Array(out)
}

impl Merger for ListMerger {
    fn merge(&self, items: &[Value]) -> Result<Value, RpcError> {
        Ok(concat(&arrays(items, "java.util.List")?))
    }
}

impl Merger for SetMerger {
    fn merge(&self, items: &[Value]) -> Result<Value, RpcError> {
        let mut out: Vec<Value> = Vec::new();
        for l in arrays(items, "java.util.Set")? {
            for v in l {
                if !out.contains(v) {
                    out.push(v.clone());
                }
            }
        }
        Ok(Value::Array(out))
    }
}

impl Merger for MapMerger {
    fn merge(&self, items: &[Value]) -> Result<Value, RpcError> {
        let mut out = Map::new();
        for v in items.iter().filter(|v| !v.is_null()) {
            let m = v
                .as_object()
                .ok_or_else(|| class_cast(v, "java.util.Map"))?;
            for (k, val) in m {
                out.insert(k.clone(), val.clone());
            }
        }
        Ok(Value::Object(out))
    }
}

/// The JSON kind of an array's non-null elements when they agree (its "component type");
/// `None` for an empty or all-null array (compatible with anything).
fn component_kind(a: &[Value]) -> Option<Result<u8, ()>> {
    let mut kind = None;
    for v in a {
        let k = match v {
            Value::Null => continue,
            Value::Bool(_) => 1,
            Value::Number(_) => 2,
            Value::String(_) => 3,
            Value::Array(_) => 4,
            Value::Object(_) => 5,
        };
        match kind {
            None => kind = Some(k),
            Some(p) if p != k => return Some(Err(())),
            Some(_) => {}
        }
    }
    kind.map(Ok)
}

impl Merger for ArrayMerger {
    fn merge(&self, items: &[Value]) -> Result<Value, RpcError> {
        let lists = arrays(items, "java.lang.Object[]")?;
        let mut kind: Option<u8> = None;
        for l in &lists {
            match component_kind(l) {
                None => {}
                // A mixed array is an Object[]: compatible only with other mixed arrays.
                Some(Err(())) => match kind {
                    None | Some(0) => kind = Some(0),
                    Some(_) => return Err(types_differ()),
                },
                Some(Ok(k)) => match kind {
                    None => kind = Some(k),
                    Some(p) if p != k => return Err(types_differ()),
                    Some(_) => {}
                },
            }
        }
        Ok(concat(&lists))
    }
}

fn types_differ() -> RpcError {
    java_error(
        "java.lang.IllegalArgumentException",
        "Arguments' types are different",
    )
}

impl Merger for PrimitiveArrayMerger {
    fn merge(&self, items: &[Value]) -> Result<Value, RpcError> {
        let to = format!("{}[]", self.element);
        Ok(concat(&arrays(items, &to)?))
    }
}

/// `(extension name, class, type, merger)` of every built-in.
pub(crate) fn builtins() -> Vec<(&'static str, &'static str, &'static str, Arc<dyn Merger>)> {
    let prim =
        |e: &'static str| -> Arc<dyn Merger> { Arc::new(PrimitiveArrayMerger { element: e }) };
    vec![
        (
            "boolean",
            "BooleanArrayMerger",
            "boolean[]",
            prim("boolean"),
        ),
        ("byte", "ByteArrayMerger", "byte[]", prim("byte")),
        ("char", "CharArrayMerger", "char[]", prim("char")),
        ("double", "DoubleArrayMerger", "double[]", prim("double")),
        ("float", "FloatArrayMerger", "float[]", prim("float")),
        ("int", "IntArrayMerger", "int[]", prim("int")),
        ("list", "ListMerger", "java.util.List", Arc::new(ListMerger)),
        ("long", "LongArrayMerger", "long[]", prim("long")),
        ("map", "MapMerger", "java.util.Map", Arc::new(MapMerger)),
        ("set", "SetMerger", "java.util.Set", Arc::new(SetMerger)),
        ("short", "ShortArrayMerger", "short[]", prim("short")),
    ]
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn list_set_map() {
        let l = ListMerger
            .merge(&[json!([null, "1", "2"]), json!(["3", "4"]), Value::Null])
            .ok();
        assert_eq!(l, Some(json!([null, "1", "2", "3", "4"])));
        assert_eq!(ListMerger.merge(&[]).ok(), Some(json!([])));
        let s = SetMerger
            .merge(&[json!(["c", "a"]), json!(["b", "a"])])
            .ok();
        assert_eq!(s, Some(json!(["c", "a", "b"])));
        let m = MapMerger
            .merge(&[
                json!({"k": "first", "a": "x"}),
                json!({"k": "second"}),
                json!({"b": "y"}),
            ])
            .ok();
        assert_eq!(m, Some(json!({"k": "second", "a": "x", "b": "y"})));
        assert!(ListMerger.merge(&[json!({"a": 1})]).is_err());
    }

    #[test]
    fn arrays_check_element_types() {
        let a = ArrayMerger
            .merge(&[json!(["1"]), json!([]), Value::Null, json!(["2"])])
            .ok();
        assert_eq!(a, Some(json!(["1", "2"])));
        let e = ArrayMerger.merge(&[json!(["1", "2"]), Value::Null, json!([3, 4])]);
        assert_eq!(
            e.err().map(|e| e.message),
            Some("Arguments' types are different".to_owned())
        );
    }
}
