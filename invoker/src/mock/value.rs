//! `MockInvoker.parseMockValue`: the value of a `return <v>` mock, typed by the method's return
//! type.

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
    /// `byte`, `short`, `int`, `long` and their boxes, with the width Java narrows to.
    Integer(IntWidth),
    /// `float`, `double` and their boxes (`true` for `float`: values are rounded to 32 bits).
    Float(bool),
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

/// The width of a Java integer type: a number is narrowed to it as `Number.byteValue()`,
/// `shortValue()`, `intValue()` or `longValue()` do (wrapping), a string parsed as
/// `Byte.parseByte` ... `Long.parseLong` do (range-checked).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IntWidth {
    /// `byte` / `java.lang.Byte`.
    Byte,
    /// `short` / `java.lang.Short`.
    Short,
    /// `int` / `java.lang.Integer`.
    Int,
    /// `long` / `java.lang.Long`.
    Long,
}

impl IntWidth {
    /// Keeps the low bits of `v`, sign-extended, as Java's narrowing conversion does.
    pub fn wrap(self, v: i64) -> i64 {
        match self {
            IntWidth::Byte => i64::from(v as i8),
            IntWidth::Short => i64::from(v as i16),
            IntWidth::Int => i64::from(v as i32),
            IntWidth::Long => v,
        }
    }

    /// `Integer.parseInt` and friends: an optional sign and ASCII digits, in range; no spaces.
    pub fn parse(self, s: &str) -> Option<i64> {
        let digits = s.strip_prefix(['+', '-']).unwrap_or(s);
        if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        let v: i64 = s.parse().ok()?;
        (self.wrap(v) == v).then_some(v)
    }
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
            "byte" | "Byte" => JavaType::Integer(IntWidth::Byte),
            "short" | "Short" => JavaType::Integer(IntWidth::Short),
            "int" | "Integer" => JavaType::Integer(IntWidth::Int),
            "long" | "Long" => JavaType::Integer(IntWidth::Long),
            "float" | "Float" => JavaType::Float(true),
            "double" | "Double" => JavaType::Float(false),
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
            JavaType::Integer(_) => Value::from(0),
            JavaType::Float(_) => Value::from(0.0),
            JavaType::Str => Value::String(String::new()),
            JavaType::Object | JavaType::List(_) | JavaType::Set(_) | JavaType::Array(_) => {
                Value::Array(Vec::new())
            }
            JavaType::Map | JavaType::Pojo(_) => Value::Object(Map::new()),
        },
    }
}

/// Dubbo's `StringUtils.isNumeric(s, false)`: non-empty, ASCII digits only (no sign, no dot).
/// Whether an object in the JSON text has a field name without quotes (`{a:1}`), outside
/// string literals (either quote, with escapes).
fn has_unquoted_key(text: &str) -> bool {
    let mut stack: Vec<u8> = Vec::new();
    let mut expect_key = false;
    let mut quote: Option<u8> = None;
    let mut escaped = false;
    for &b in text.as_bytes() {
        if let Some(q) = quote {
            if escaped {
                escaped = false;
            } else if b == b'\\' {
                escaped = true;
            } else if b == q {
                quote = None;
            }
            continue;
        }
        if expect_key && !b.is_ascii_whitespace() {
            expect_key = false;
            if !matches!(b, b'"' | b'\'' | b'}') {
                return true;
            }
        }
        match b {
            b'"' | b'\'' => quote = Some(b),
            b'{' => {
                stack.push(b'{');
                expect_key = true;
            }
            b'[' => stack.push(b'['),
            b'}' | b']' => {
                stack.pop();
            }
            b',' => expect_key = stack.last() == Some(&b'{'),
            _ => {}
        }
    }
    false
}

/// `f` as a `float` (`Float.parseFloat` / `floatValue()`) widened back, or unchanged.
fn round_float(f: f64, single: bool) -> f64 {
    if single {
        f64::from(f as f32)
    } else {
        f
    }
}

/// The decimal digits `s` modulo 2^64, as a two's-complement `i64` (`BigInteger.longValue()`).
fn low_64_bits(s: &str) -> i64 {
    let v = s.bytes().fold(0u64, |acc, b| {
        acc.wrapping_mul(10)
            .wrapping_add(u64::from(b.wrapping_sub(b'0')))
    });
    v as i64
}

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

/// `MockInvoker.parseMockValue(mock, returnTypes)`, in Dubbo's order:
/// 1. `empty` → [`empty_value`] of the return type;
/// 2. `null`, `true`, `false` (case-sensitive);
/// 3. `"x"` / `'x'` → `x`;
/// 4. return type `String` → the text itself;
/// 5. digits only → a JSON number (leading zeros allowed; for an integer or boolean return
///    type the exact digits are narrowed, as a `BigInteger` would be);
/// 6. `{...}` → a map, `[...]` → a list (JSON as Dubbo's default reader, fastjson2, takes it:
///    single quotes and trailing commas yes, unquoted field names no);
/// 7. otherwise the text itself.
///
/// The value is then converted to the return type (`PojoUtils.realize`): text to numbers
/// (`Integer.parseInt` ranges) or booleans, numbers narrowed to the type's width (wrapping, as
/// `intValue()`; to 32 bits for `float`) or to a boolean (`intValue() != 0`), list elements by
/// their type (an array refuses elements of another type).
/// Errors: malformed JSON, text that is not a number for a numeric type, a JSON map for a
/// number, boolean, char, array or collection type.
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
    } else if let (true, Some(JavaType::Integer(w))) = (is_numeric(mock), return_type) {
        // The JSON reader makes a long or a BigInteger of the digits; intValue() and friends
        // keep the low bits of the exact number.
        return Ok(Value::from(w.wrap(low_64_bits(mock))));
    } else if let (true, Some(JavaType::Boolean)) = (is_numeric(mock), return_type) {
        // Number → boolean is `intValue() != 0`, on the exact number.
        return Ok(Value::Bool(IntWidth::Int.wrap(low_64_bits(mock)) != 0));
    } else if is_numeric(mock) {
        // Digits only; the JSON reader takes leading zeros (`007` is 7) and makes a long, or a
        // BigInteger past 2^63 (here a double of the same value).
        match mock.parse::<u64>() {
            Ok(n) => Value::from(n),
            Err(_) => mock
                .parse::<f64>()
                .map(Value::from)
                .map_err(|e| mock_error(format!("bad number {mock:?}: {e}")))?,
        }
    } else if (mock.starts_with('{') || mock.starts_with('[')) && has_unquoted_key(mock) {
        // Dubbo's JSON reader (fastjson2, Dubbo 3.3's default) refuses unquoted field names.
        return Err(mock_error(format!("unquoted field name in {mock:?}")));
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
        (JavaType::Integer(w), Value::String(s)) => match w.parse(&s) {
            Some(n) => Value::from(n),
            None => return Err(not_convertible(&Value::String(s))),
        },
        (JavaType::Integer(w), Value::Number(n)) => match n.as_i64() {
            // Number.intValue() and friends wrap.
            Some(i) => Value::from(w.wrap(i)),
            // A fraction: Number.longValue() truncates (saturating), then narrows.
            None => n
                .as_f64()
                .map(|f| Value::from(w.wrap(f.trunc() as i64)))
                .unwrap_or(Value::Number(n)),
        },
        // Number → boolean: `intValue() != 0`.
        (JavaType::Boolean, Value::Number(n)) => {
            Value::Bool(n.as_i64().is_some_and(|i| IntWidth::Int.wrap(i) != 0))
        }
        // A JSON map cannot become a number, boolean, char, array or collection: Java makes it
        // 0 / false / '\0' / an empty list for the boxed and collection classes (divergence
        // mock-map-to-scalar-is-error) and throws for primitives and arrays.
        (
            JavaType::Integer(_)
            | JavaType::Float(_)
            | JavaType::Boolean
            | JavaType::Char
            | JavaType::Array(_)
            | JavaType::List(_)
            | JavaType::Set(_),
            v @ Value::Object(_),
        ) => return Err(not_convertible(&v)),
        (JavaType::Float(single), Value::String(s)) => match s.trim().parse::<f64>() {
            Ok(f) => Value::from(round_float(f, *single)),
            Err(_) => return Err(not_convertible(&Value::String(s))),
        },
        (JavaType::Float(single), Value::Number(n)) => n
            .as_f64()
            .map(|f| Value::from(round_float(f, *single)))
            .unwrap_or(Value::Number(n)),
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
                // Array.set refuses an element of another type (a number in a String[], a
                // boolean in an int[], ...).
                let fits = match &**e {
                    JavaType::Str => v.is_string(),
                    JavaType::Integer(_) | JavaType::Float(_) => v.is_number(),
                    JavaType::Boolean => v.is_boolean(),
                    _ => true,
                };
                if matches!(t, JavaType::Array(_)) && !(fits || v.is_null()) {
                    return Err(not_convertible(&v));
                }
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
