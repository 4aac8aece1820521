//! JSON → Hessian, for call arguments.
//!
//! With a Java parameter type (`--types`):
//! - `java.lang.String` (or `char`): a string; numbers and booleans are sent as their text.
//! - `int`/`short`/`byte` (and boxed): an int in range; `long`: a long; `double`/`float`:
//!   a double; `boolean`: a boolean. Boxed types and reference types also take `null`.
//! - `java.util.Date`: epoch milliseconds.
//! - `java.math.BigDecimal`: a number, a numeric string, or the object a decoded BigDecimal
//!   becomes in JSON (`{"class": "java.math.BigDecimal", "value": "1.10"}`), sent as Dubbo's
//!   hessian-lite does (an object with the one field `value`, the decimal text).
//! - `java.util.List`/`ArrayList`/`Collection`/`Set`/`Iterable`: an array as an untyped list;
//!   other `java.util` lists/sets/queues (`java.util.LinkedList`, `java.util.HashSet`, ...) as
//!   a list typed with that name.
//! - `java.util.Map`/`HashMap`: an object as an untyped map (a `"class"` key stays an ordinary
//!   entry, as in Dubbo generic calls); other `java.util` maps as a typed map.
//! - arrays (`int[]`, `[Ljava.lang.String;`, ...): a list typed the way Java Hessian types
//!   arrays (`[int`, `[string`, ...), elements converted with the component type; `byte[]`
//!   takes a base64 string or an array of numbers and is sent as binary.
//! - `java.lang.Object`: inferred (below).
//! - any other class name: a JSON object is sent as a typed object of that class (or of its
//!   own `"class"` value), fields in JSON key order; a JSON string is sent as an enum constant
//!   (an object with the field `name`).
//!
//! Without a type the kind is inferred: string → String, integer → long, other number →
//! double, boolean, array → List, object → Map, or a typed object when it has a string
//! `"class"` key.

use serde_json::Value as Json;

use crate::base64;
use crate::encoder::Encoder;
use crate::error::Error;
use crate::java_types::{hessian_array_type, java_class_name};
use crate::value::Value;

/// The kind of a JSON value, for messages.
fn kind(v: &Json) -> &'static str {
    match v {
        Json::Null => "null",
        Json::Bool(_) => "boolean",
        Json::Number(_) => "number",
        Json::String(_) => "string",
        Json::Array(_) => "array",
        Json::Object(_) => "object",
    }
}

fn err(java_type: &str, v: &Json, detail: impl Into<String>) -> Error {
    Error::Json {
        java_type: java_type.to_owned(),
        found: kind(v),
        detail: detail.into(),
    }
}

/// Untyped Java collections: sent as an untyped list, like `ArrayList`.
fn is_plain_list(t: &str) -> bool {
    matches!(
        t,
        "java.util.List"
            | "java.util.ArrayList"
            | "java.util.Collection"
            | "java.util.Set"
            | "java.lang.Iterable"
            | "java.util.AbstractList"
    )
}

fn is_typed_collection(t: &str) -> bool {
    t.starts_with("java.util.")
        && (t.ends_with("List")
            || t.ends_with("Set")
            || t.ends_with("Queue")
            || t.ends_with("Deque"))
}

fn is_plain_map(t: &str) -> bool {
    matches!(
        t,
        "java.util.Map" | "java.util.HashMap" | "java.util.AbstractMap"
    )
}

fn is_typed_map(t: &str) -> bool {
    t.starts_with("java.util.") && t.ends_with("Map")
}

impl Encoder {
    /// Writes a JSON argument as Java parameter type `java_type` (any form accepted by
    /// [`java_class_name`]), or inferred when `None` (see the module docs of `from_json`).
    pub fn write_json(&mut self, v: &Json, java_type: Option<&str>) -> Result<(), Error> {
        match java_type {
            None => self.write_json_inferred(v),
            Some(t) => {
                let t = t.trim();
                // The common names need no normalisation (and no allocation).
                let plain = t.contains('.') || crate::java_types::is_primitive(t);
                if plain && !t.ends_with("[]") && !t.starts_with('[') {
                    self.write_json_as(v, t)
                } else {
                    let name = java_class_name(t);
                    // Name the type as the caller wrote it.
                    self.write_json_as(v, &name).map_err(|e| match e {
                        Error::Json {
                            java_type,
                            found,
                            detail,
                        } if java_type == name => Error::Json {
                            java_type: t.to_owned(),
                            found,
                            detail,
                        },
                        other => other,
                    })
                }
            }
        }
    }

    fn write_json_inferred(&mut self, v: &Json) -> Result<(), Error> {
        match v {
            Json::Null => self.write_null(),
            Json::Bool(b) => self.write_bool(*b),
            Json::Number(n) => match n.as_i64() {
                Some(i) => self.write_long(i),
                None => self.write_double(n.as_f64().unwrap_or(f64::NAN)),
            },
            Json::String(s) => self.write_str(s),
            Json::Array(items) => {
                self.write_list_begin(items.len(), None);
                for item in items {
                    self.write_json_inferred(item)?;
                }
            }
            Json::Object(m) => match m.get("class") {
                Some(Json::String(class)) => self.write_json_object(m, class)?,
                _ => {
                    self.write_map_begin(None);
                    for (k, val) in m {
                        self.write_str(k);
                        self.write_json_inferred(val)?;
                    }
                    self.write_map_end();
                }
            },
        }
        Ok(())
    }

    /// A JSON object as a typed object of `class`, leaving out its `"class"` key.
    fn write_json_object(
        &mut self,
        m: &serde_json::Map<String, Json>,
        class: &str,
    ) -> Result<(), Error> {
        let names = m.keys().map(String::as_str).filter(|k| *k != "class");
        self.write_object_begin(class, names);
        for (k, val) in m {
            if k != "class" {
                self.write_json_inferred(val)?;
            }
        }
        Ok(())
    }

    fn write_json_as(&mut self, v: &Json, t: &str) -> Result<(), Error> {
        let primitive = crate::java_types::is_primitive(t);
        if v.is_null() {
            if primitive {
                return Err(err(t, v, "a primitive cannot be null"));
            }
            self.write_null();
            return Ok(());
        }
        match t {
            "java.lang.Object" => self.write_json_inferred(v)?,
            "java.lang.String" | "char" | "java.lang.Character" | "java.lang.CharSequence" => {
                match v {
                    Json::String(s) => {
                        if t != "java.lang.String" && s.chars().count() != 1 {
                            return Err(err(t, v, "a char needs a one-character string"));
                        }
                        self.write_str(s)
                    }
                    Json::Number(n) => self.write_str(&n.to_string()),
                    Json::Bool(b) => self.write_str(if *b { "true" } else { "false" }),
                    _ => return Err(err(t, v, "expected a string")),
                }
            }
            "int" | "java.lang.Integer" | "short" | "java.lang.Short" | "byte"
            | "java.lang.Byte" => {
                let (lo, hi) = match t {
                    "short" | "java.lang.Short" => (i64::from(i16::MIN), i64::from(i16::MAX)),
                    "byte" | "java.lang.Byte" => (i64::from(i8::MIN), i64::from(i8::MAX)),
                    _ => (i64::from(i32::MIN), i64::from(i32::MAX)),
                };
                match v.as_i64() {
                    Some(i) if (lo..=hi).contains(&i) => self.write_int(i as i32),
                    Some(_) => return Err(err(t, v, format!("out of range {lo}..={hi}"))),
                    None => return Err(err(t, v, "expected an integer")),
                }
            }
            "long" | "java.lang.Long" => match v.as_i64() {
                Some(i) => self.write_long(i),
                None => return Err(err(t, v, "expected an integer in the long range")),
            },
            "double" | "java.lang.Double" | "float" | "java.lang.Float" | "java.lang.Number" => {
                match v.as_f64() {
                    Some(d) if v.is_number() => self.write_double(d),
                    _ => return Err(err(t, v, "expected a number")),
                }
            }
            "boolean" | "java.lang.Boolean" => match v {
                Json::Bool(b) => self.write_bool(*b),
                _ => return Err(err(t, v, "expected true or false")),
            },
            "java.util.Date" => match v.as_i64() {
                Some(ms) => self.write_date(ms),
                None => return Err(err(t, v, "expected epoch milliseconds")),
            },
            "java.math.BigDecimal" => {
                // A decoded BigDecimal's JSON form goes back out as it came in.
                let decoded = match v {
                    Json::Object(m)
                        if m.len() <= 2
                            && m.get("class").is_none_or(|c| c == "java.math.BigDecimal") =>
                    {
                        m.get("value")
                    }
                    _ => None,
                };
                let text = match decoded.unwrap_or(v) {
                    Json::Number(n) => n.to_string(),
                    Json::String(s) if !s.is_empty() && s.parse::<f64>().is_ok() => s.clone(),
                    _ => {
                        return Err(err(
                            t,
                            v,
                            "expected a number, a numeric string or {\"value\": \"<decimal>\"}",
                        ))
                    }
                };
                self.write_object_begin("java.math.BigDecimal", ["value"]);
                self.write_str(&text);
            }
            "[B" => match v {
                Json::String(s) => match base64::decode(s) {
                    Some(b) => self.write_binary(&b),
                    None => return Err(err(t, v, "expected base64")),
                },
                Json::Array(items) => {
                    let mut b = Vec::with_capacity(items.len());
                    for item in items {
                        match item.as_i64() {
                            Some(x) if (-128..=255).contains(&x) => b.push(x as u8),
                            _ => return Err(err(t, item, "expected byte values -128..=255")),
                        }
                    }
                    self.write_binary(&b);
                }
                _ => return Err(err(t, v, "expected base64 or an array of bytes")),
            },
            _ if t.starts_with('[') => {
                let Json::Array(items) = v else {
                    return Err(err(t, v, "expected an array"));
                };
                let Some(list_type) = hessian_array_type(t) else {
                    return Err(err(t, v, "not a valid array type"));
                };
                let component = component_class(t);
                self.write_list_begin(items.len(), Some(&list_type));
                for item in items {
                    self.write_json_as(item, &component)?;
                }
            }
            _ if is_plain_list(t) || is_typed_collection(t) => {
                let Json::Array(items) = v else {
                    return Err(err(t, v, "expected an array"));
                };
                let type_name = if is_plain_list(t) { None } else { Some(t) };
                self.write_list_begin(items.len(), type_name);
                for item in items {
                    self.write_json_inferred(item)?;
                }
            }
            _ if is_plain_map(t) || is_typed_map(t) => {
                let Json::Object(m) = v else {
                    return Err(err(t, v, "expected an object"));
                };
                self.write_map_begin(if is_plain_map(t) { None } else { Some(t) });
                for (k, val) in m {
                    self.write_str(k);
                    self.write_json_inferred(val)?;
                }
                self.write_map_end();
            }
            _ if primitive => return Err(err(t, v, "unsupported primitive type")),
            _ => match v {
                Json::Object(m) => {
                    let class = match m.get("class") {
                        Some(Json::String(c)) => c.as_str(),
                        _ => t,
                    };
                    self.write_json_object(m, class)?;
                }
                Json::String(s) => {
                    // An enum constant.
                    self.write_object_begin(t, ["name"]);
                    self.write_str(s);
                }
                _ => return Err(err(t, v, "expected an object (fields of the class)")),
            },
        }
        Ok(())
    }
}

/// The `Class.getName()` of the component type of an array type in that form.
fn component_class(array: &str) -> String {
    let rest = &array[1..];
    match rest.as_bytes().first() {
        Some(b'L') if rest.ends_with(';') => rest[1..rest.len() - 1].to_owned(),
        Some(b'[') => rest.to_owned(),
        Some(&c) => match c {
            b'Z' => "boolean",
            b'B' => "byte",
            b'C' => "char",
            b'S' => "short",
            b'I' => "int",
            b'J' => "long",
            b'F' => "float",
            b'D' => "double",
            _ => "java.lang.Object",
        }
        .to_owned(),
        None => "java.lang.Object".to_owned(),
    }
}

impl Value {
    /// The value [`Encoder::write_json`] would send for `v` as Java type `java_type`.
    pub fn from_json(v: &Json, java_type: Option<&str>) -> Result<Value, Error> {
        let mut enc = Encoder::new();
        enc.write_json(v, java_type)?;
        crate::decoder::Decoder::new(enc.as_bytes()).read()
    }
}
