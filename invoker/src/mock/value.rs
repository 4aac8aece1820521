//! `parseMockValue` (§9): the value of a `return <v>` mock, typed by the method's return type.

use serde_json::{Map, Value};

use crate::rpc::{RpcError, RpcErrorCode};

/// A Java return type, as far as mock values care (Rust has no classes to reflect on).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JavaType {
    /// `void` / `java.lang.Void`.
    Void,
    /// `boolean` / `java.lang.Boolean`.
    Boolean,
    /// `char` / `java.lang.Character`.
    Char,
    /// `byte`, `short`, `int`, `long` and their boxes.
    Integer,
    /// `float`, `double` and their boxes.
    Float,
    /// `java.lang.String`.
    Str,
    /// `java.lang.Object` (its empty value is an empty list, as `Object` is assignable from
    /// `ArrayList` in Dubbo's `getEmptyObject`).
    Object,
    /// `List`, `Collection`, `Iterable`, `ArrayList`, ... with the element type if given.
    List(Option<Box<JavaType>>),
    /// `Set`, `HashSet`, ... with the element type if given.
    Set(Option<Box<JavaType>>),
    /// `Map`, `HashMap`, ...
    Map,
    /// `T[]`.
    Array(Box<JavaType>),
    /// Another JDK type (interfaces, boxes without a value rule): empty is `null`.
    Other(String),
    /// A user class (POJO): empty is an object with no fields set.
    Pojo(String),
    /// No usable type: what Java's `ReflectUtils.getReturnTypes` gives for a raw `Future` /
    /// `CompletableFuture` (no type argument) or a wildcard argument (`CompletableFuture<?>`).
    /// Empty is `null` and values are not converted, as with no return type at all.
    Unknown,
}

impl JavaType {
    /// Maps a Java type name (`int`, `java.lang.String`, `String`, `java.util.List<User>`,
    /// `long[]`, `com.foo.User`) to a [`JavaType`].
    ///
    /// Async methods (`ReflectUtils.getReturnTypes`): a `Future` or `CompletableFuture` with a
    /// type argument `T` maps to `T`; without one, or with a wildcard (`?`), to
    /// [`JavaType::Unknown`]. `CompletionStage` is not a `Future` in Java, so it is an ordinary
    /// JDK interface ([`JavaType::Other`]).
    ///
    /// The empty-value classes follow `getEmptyObject`'s `isAssignableFrom` tests: every type
    /// `ArrayList` is assignable to (`Object`, `Iterable`, `Collection`, `List`,
    /// `RandomAccess`, `Cloneable`, `Serializable`, ...) is a list; then `HashSet`'s (`Set`,
    /// `AbstractSet`) a set; then `HashMap`'s (`Map`, `AbstractMap`) a map.
    pub fn parse(name: &str) -> JavaType {
        let name = name.trim();
        if name == "?" || name.starts_with("? ") {
            return JavaType::Unknown;
        }
        if let Some(elem) = name.strip_suffix("[]") {
            return JavaType::Array(Box::new(JavaType::parse(elem)));
        }
        let (base, generic) = match name.find('<') {
            Some(i) => {
                let inner = name[i + 1..]
                    .trim_end()
                    .strip_suffix('>')
                    .unwrap_or(&name[i + 1..]);
                (&name[..i], Some(inner.trim()))
            }
            None => (name, None),
        };
        // Async methods: Dubbo's return types are those of the future's value.
        if matches!(
            base,
            "java.util.concurrent.CompletableFuture"
                | "CompletableFuture"
                | "java.util.concurrent.Future"
                | "Future"
        ) {
            return generic
                .filter(|g| !g.is_empty())
                .map_or(JavaType::Unknown, JavaType::parse);
        }
        let elem = || generic.map(|g| Box::new(JavaType::parse(g)));
        let simple = base
            .strip_prefix("java.lang.")
            .or_else(|| base.strip_prefix("java.util."))
            .unwrap_or(base);
        match simple {
            "void" | "Void" => JavaType::Void,
            "boolean" | "Boolean" => JavaType::Boolean,
            "char" | "Character" => JavaType::Char,
            "byte" | "short" | "int" | "long" | "Byte" | "Short" | "Integer" | "Long" => {
                JavaType::Integer
            }
            "float" | "double" | "Float" | "Double" => JavaType::Float,
            "String" => JavaType::Str,
            "Object" => JavaType::Object,
            "List"
            | "Collection"
            | "Iterable"
            | "ArrayList"
            | "AbstractList"
            | "AbstractCollection"
            | "RandomAccess"
            | "SequencedCollection" => JavaType::List(elem()),
            // Marker interfaces ArrayList implements: `getEmptyObject` gives an ArrayList.
            "java.io.Serializable" | "Serializable" | "Cloneable" => JavaType::List(None),
            "Set" | "HashSet" | "AbstractSet" => JavaType::Set(elem()),
            "Map" | "HashMap" | "AbstractMap" => JavaType::Map,
            _ if base.starts_with("java.") || base.starts_with("javax.") => {
                JavaType::Other(base.to_owned())
            }
            _ if base.is_empty() => JavaType::Other(String::new()),
            _ => JavaType::Pojo(base.to_owned()),
        }
    }
}

/// `ReflectUtils.getEmptyObject`: the "empty" value of a type (`0`, `false`, `""`, empty
/// collections, a POJO with no fields set, `null` for other interfaces or an unknown type).
pub fn empty_value(t: Option<&JavaType>) -> Value {
    match t {
        None => Value::Null,
        Some(t) => match t {
            JavaType::Void | JavaType::Other(_) | JavaType::Unknown => Value::Null,
            JavaType::Boolean => Value::Bool(false),
            JavaType::Char => Value::String("\0".to_owned()),
            JavaType::Integer => Value::from(0),
            JavaType::Float => Value::from(0.0),
            JavaType::Str => Value::String(String::new()),
            JavaType::Object | JavaType::List(_) | JavaType::Set(_) | JavaType::Array(_) => {
                Value::Array(Vec::new())
            }
            JavaType::Map | JavaType::Pojo(_) => Value::Object(Map::new()),
        },
    }
}

/// Dubbo's `StringUtils.isNumeric(s, false)`: non-empty, ASCII digits only (no sign, no dot).
fn is_numeric(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit())
}

fn is_quoted(s: &str) -> bool {
    s.len() >= 2
        && ((s.starts_with('"') && s.ends_with('"')) || (s.starts_with('\'') && s.ends_with('\'')))
}

fn mock_error(msg: String) -> RpcError {
    RpcError::new(RpcErrorCode::Unknown, msg)
}

/// `MockInvoker.parseMockValue(mock, returnTypes)` (§9), in Dubbo's order:
/// 1. `empty` → [`empty_value`] of the return type;
/// 2. `null`, `true`, `false` (case-sensitive);
/// 3. `"x"` / `'x'` → `x`;
/// 4. return type `String` → the text itself;
/// 5. digits only → a JSON number;
/// 6. `{...}` → a map, `[...]` → a list (lenient JSON: unquoted keys, single quotes,
///    trailing commas);
/// 7. otherwise the text itself.
///
/// The value is then converted to the return type (`PojoUtils.realize`): text to numbers or
/// booleans, numbers between integer and floating point, list elements by their type.
/// Errors: malformed JSON, or text that is not a number for a numeric type.
pub fn parse_mock_value(mock: &str, return_type: Option<&JavaType>) -> Result<Value, RpcError> {
    let value = if mock == "empty" {
        return Ok(empty_value(return_type));
    } else if mock == "null" {
        Value::Null
    } else if mock == "true" {
        Value::Bool(true)
    } else if mock == "false" {
        Value::Bool(false)
    } else if is_quoted(mock) {
        Value::String(mock[1..mock.len() - 1].to_owned())
    } else if return_type == Some(&JavaType::Str) {
        Value::String(mock.to_owned())
    } else if is_numeric(mock) {
        serde_json::from_str::<Value>(mock)
            .map_err(|e| mock_error(format!("bad number {mock:?}: {e}")))?
    } else if mock.starts_with('{') {
        let v: Value =
            json5::from_str(mock).map_err(|e| mock_error(format!("bad JSON map {mock:?}: {e}")))?;
        if !v.is_object() {
            return Err(mock_error(format!("not a JSON map: {mock:?}")));
        }
        v
    } else if mock.starts_with('[') {
        let v: Value = json5::from_str(mock)
            .map_err(|e| mock_error(format!("bad JSON list {mock:?}: {e}")))?;
        if !v.is_array() {
            return Err(mock_error(format!("not a JSON list: {mock:?}")));
        }
        v
    } else {
        Value::String(mock.to_owned())
    };
    match return_type {
        Some(t) => realize(value, t),
        None => Ok(value),
    }
}

/// `PojoUtils.realize` for JSON values.
fn realize(value: Value, t: &JavaType) -> Result<Value, RpcError> {
    let not_convertible = |v: &Value| mock_error(format!("can not convert {v} to {t:?}"));
    Ok(match (t, value) {
        (_, Value::Null) => Value::Null,
        (JavaType::Integer, Value::String(s)) => match s.trim().parse::<i64>() {
            Ok(n) => Value::from(n),
            Err(_) => return Err(not_convertible(&Value::String(s))),
        },
        (JavaType::Integer, Value::Number(n)) => match n.as_i64() {
            Some(i) => Value::from(i),
            // Java's Number.longValue() truncates.
            None => n
                .as_f64()
                .map(|f| Value::from(f.trunc() as i64))
                .unwrap_or(Value::Number(n)),
        },
        (JavaType::Float, Value::String(s)) => match s.trim().parse::<f64>() {
            Ok(f) => Value::from(f),
            Err(_) => return Err(not_convertible(&Value::String(s))),
        },
        (JavaType::Float, Value::Number(n)) => {
            n.as_f64().map(Value::from).unwrap_or(Value::Number(n))
        }
        (JavaType::Boolean, Value::String(s)) => Value::Bool(s.eq_ignore_ascii_case("true")),
        (JavaType::Char, Value::String(s)) => {
            if s.chars().count() != 1 {
                return Err(not_convertible(&Value::String(s)));
            }
            Value::String(s)
        }
        (
            JavaType::List(Some(e)) | JavaType::Set(Some(e)) | JavaType::Array(e),
            Value::Array(items),
        ) => {
            let mut out = Vec::with_capacity(items.len());
            for item in items {
                let v = realize(item, e)?;
                if matches!(t, JavaType::Set(_)) && out.contains(&v) {
                    continue;
                }
                out.push(v);
            }
            Value::Array(out)
        }
        (JavaType::Set(None), Value::Array(items)) => {
            let mut out: Vec<Value> = Vec::with_capacity(items.len());
            for v in items {
                if !out.contains(&v) {
                    out.push(v);
                }
            }
            Value::Array(out)
        }
        (_, v) => v,
    })
}
