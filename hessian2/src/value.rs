//! The dynamic value model.

use std::sync::Arc;

/// One Hessian 2.0 value.
///
/// Java mapping: `byte`/`short`/`int` arrive as [`Value::Int`], `float`/`double` as
/// [`Value::Double`], `char` as a one-character [`Value::String`], `java.util.Date` as
/// [`Value::Date`], collections and arrays as [`Value::List`] (typed with the Java/Hessian type
/// name when Java sent one, e.g. `java.util.HashSet` or `[int`), maps as [`Value::Map`], and
/// POJOs, enums and exceptions as [`Value::Object`] with the class name and fields in the
/// order of the class definition.
///
/// Names that a stream defines once and then refers to (class names, field names, list and map
/// type names) are shared [`Arc<str>`]s: a decoded stream with a million instances of one class
/// holds its name once.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// `null` (`N`).
    Null,
    /// `true`/`false` (`T`/`F`).
    Bool(bool),
    /// A 32-bit int.
    Int(i32),
    /// A 64-bit long.
    Long(i64),
    /// A double.
    Double(f64),
    /// A `java.util.Date`: milliseconds since the epoch (UTC).
    Date(i64),
    /// A string (full Unicode; on the wire counted in UTF-16 units).
    String(String),
    /// `byte[]`.
    Binary(Vec<u8>),
    /// A list, array or set.
    List {
        /// The Java type name if the list was typed (`java.util.HashSet`, `[int`, ...).
        type_name: Option<Arc<str>>,
        /// The elements.
        items: Vec<Value>,
    },
    /// A map.
    Map {
        /// The Java type name if the map was typed (`java.util.LinkedHashMap`, ...).
        type_name: Option<Arc<str>>,
        /// The entries in stream order.
        entries: Vec<(Value, Value)>,
    },
    /// A typed object: class name and fields in class-definition order.
    Object {
        /// The Java class name.
        class: Arc<str>,
        /// Field names and values.
        fields: Vec<(Arc<str>, Value)>,
    },
    /// A back-reference (`Q n`) to the `n`-th list/map/object (0-based, counted in the order
    /// they begin) of the stream the value was read from or is written to. The decoder keeps
    /// it only where expanding it would make a cycle (e.g. an exception whose `cause` is
    /// itself); any other shared reference is expanded into a copy.
    Ref(u32),
}

impl Value {
    /// A short name of the value's kind, for messages.
    pub fn kind(&self) -> &'static str {
        match self {
            Value::Null => "null",
            Value::Bool(_) => "bool",
            Value::Int(_) => "int",
            Value::Long(_) => "long",
            Value::Double(_) => "double",
            Value::Date(_) => "date",
            Value::String(_) => "string",
            Value::Binary(_) => "binary",
            Value::List { .. } => "list",
            Value::Map { .. } => "map",
            Value::Object { .. } => "object",
            Value::Ref(_) => "ref",
        }
    }

    /// The string if this is a [`Value::String`].
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::String(s) => Some(s),
            _ => None,
        }
    }

    /// The field `name` of an object, or the value of string key `name` of a map.
    pub fn get(&self, name: &str) -> Option<&Value> {
        match self {
            Value::Object { fields, .. } => {
                fields.iter().find(|(k, _)| &**k == name).map(|(_, v)| v)
            }
            Value::Map { entries, .. } => entries
                .iter()
                .find(|(k, _)| k.as_str() == Some(name))
                .map(|(_, v)| v),
            _ => None,
        }
    }
}
