//! `merger=.name`: Java calls `returnType.getMethod(name, returnType)` on the first result with
//! each other result. When the method returns a type the result is an instance of, the return
//! value becomes the new result (`String.concat`); otherwise (void, boolean, ...) the method is
//! called for its side effect on the first result, which is returned (`Map.putAll`,
//! `Collection.addAll`).
//!
//! Built-in: the methods of JDK types the JSON value model can express. Java's rule that the
//! parameter type must be *exactly* the declared return type is kept: `List.addAll` takes a
//! `Collection`, so `.addAll` on a `java.util.List` method is "missing", as in Java.

use std::sync::Arc;

use serde_json::Value;

use crate::rpc::{RpcError, RpcErrorCode};

/// One Java method usable as `merger=.name`.
pub trait MethodMerger: Send + Sync {
    /// True when the method's return type is assignable from the receiver's class: Java then
    /// chains `result = result.m(next)`; false for side-effect methods.
    fn chains(&self) -> bool;

    /// Calls the method on `receiver` (mutable: side effects) with `argument`; returns the
    /// method's return value (used only when [`MethodMerger::chains`]).
    fn call(&self, receiver: &mut Value, argument: &Value) -> Result<Value, RpcError>;
}

/// A Java `NullPointerException` inside the merge: "Can not merge result: null".
fn npe() -> RpcError {
    RpcError::new(RpcErrorCode::Unknown, "Can not merge result: null")
}

/// `Map.putAll(Map)`.
#[derive(Debug, Clone, Copy)]
struct PutAll;

impl MethodMerger for PutAll {
    fn chains(&self) -> bool {
        false
    }
    fn call(&self, receiver: &mut Value, argument: &Value) -> Result<Value, RpcError> {
        let (Some(r), Some(a)) = (receiver.as_object_mut(), argument.as_object()) else {
            return Err(npe());
        };
        for (k, v) in a {
            r.insert(k.clone(), v.clone());
        }
        Ok(Value::Null)
    }
}

/// `Collection.addAll/removeAll/retainAll/containsAll(Collection)` (return boolean).
#[derive(Debug, Clone, Copy)]
enum CollectionOp {
    Add,
    Remove,
    Retain,
    Contains,
}

impl MethodMerger for CollectionOp {
    fn chains(&self) -> bool {
        false
    }
    fn call(&self, receiver: &mut Value, argument: &Value) -> Result<Value, RpcError> {
        let (Some(r), Some(a)) = (receiver.as_array_mut(), argument.as_array()) else {
            return Err(npe());
        };
        let before = r.len();
        match self {
            CollectionOp::Add => r.extend(a.iter().cloned()),
            CollectionOp::Remove => r.retain(|v| !a.contains(v)),
            CollectionOp::Retain => r.retain(|v| a.contains(v)),
            CollectionOp::Contains => return Ok(Value::Bool(a.iter().all(|v| r.contains(v)))),
        }
        Ok(Value::Bool(r.len() != before))
    }
}

/// `String.concat(String)` (chained) and `String` methods taking a `String` whose result is
/// not a `String` (no side effect: the first result is returned).
#[derive(Debug, Clone, Copy)]
enum StringOp {
    Concat,
    NoEffect,
}

impl MethodMerger for StringOp {
    fn chains(&self) -> bool {
        matches!(self, StringOp::Concat)
    }
    fn call(&self, receiver: &mut Value, argument: &Value) -> Result<Value, RpcError> {
        let (Some(r), Some(a)) = (receiver.as_str(), argument.as_str()) else {
            return Err(npe());
        };
        Ok(match self {
            StringOp::Concat => Value::String(format!("{r}{a}")),
            StringOp::NoEffect => Value::Null,
        })
    }
}

/// `(type, method, merger)` of every built-in method merger.
pub(crate) fn builtins() -> Vec<(&'static str, &'static str, Arc<dyn MethodMerger>)> {
    let mut v: Vec<(&'static str, &'static str, Arc<dyn MethodMerger>)> = vec![
        ("java.util.Map", "putAll", Arc::new(PutAll)),
        (
            "java.util.Collection",
            "addAll",
            Arc::new(CollectionOp::Add),
        ),
        (
            "java.util.Collection",
            "removeAll",
            Arc::new(CollectionOp::Remove),
        ),
        (
            "java.util.Collection",
            "retainAll",
            Arc::new(CollectionOp::Retain),
        ),
        (
            "java.util.Collection",
            "containsAll",
            Arc::new(CollectionOp::Contains),
        ),
        ("java.lang.String", "concat", Arc::new(StringOp::Concat)),
    ];
    for m in [
        "equalsIgnoreCase",
        "startsWith",
        "endsWith",
        "compareTo",
        "compareToIgnoreCase",
        "indexOf",
        "lastIndexOf",
    ] {
        v.push(("java.lang.String", m, Arc::new(StringOp::NoEffect)));
    }
    v
}

/// Applies a method merger Java's way: `values[0]` is the receiver; chained or side-effect
/// calls with each later value.
pub(crate) fn apply(m: &dyn MethodMerger, values: Vec<Value>) -> Result<Value, RpcError> {
    let mut it = values.into_iter();
    let Some(mut result) = it.next() else {
        return Ok(Value::Null);
    };
    if result.is_null() {
        return Err(npe());
    }
    for next in it {
        if m.chains() {
            result = m.call(&mut result, &next)?;
        } else {
            m.call(&mut result, &next)?;
        }
    }
    Ok(result)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn chained_and_side_effect() {
        let concat = apply(&StringOp::Concat, vec![json!("a"), json!("b"), json!("c")]).ok();
        assert_eq!(concat, Some(json!("abc")));
        let add = apply(&CollectionOp::Add, vec![json!(["a"]), json!(["b", "c"])]).ok();
        assert_eq!(add, Some(json!(["a", "b", "c"])));
        let put = apply(&PutAll, vec![json!({"k": 1}), json!({"k": 2, "b": 2})]).ok();
        assert_eq!(put, Some(json!({"k": 2, "b": 2})));
        let same = apply(&StringOp::NoEffect, vec![json!("a"), json!("b")]).ok();
        assert_eq!(same, Some(json!("a")));
        assert!(apply(&PutAll, vec![Value::Null, json!({})]).is_err());
    }
}
