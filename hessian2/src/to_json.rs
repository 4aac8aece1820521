//! Hessian value → JSON.
//!
//! Integers exactly (longs up to 2^63-1), doubles as numbers (NaN and infinities, which JSON
//! cannot hold, as `null`), strings, null, booleans; lists, arrays and sets as arrays; maps as
//! objects with string keys; typed objects as their fields plus `"class"`; dates as epoch
//! milliseconds; `byte[]` as standard padded base64. A value referenced twice appears twice;
//! a back-reference that would make a cycle ([`Value::Ref`]) becomes `null`.
//!
//! JSON has no shared names: every object carries its own copy of its class and field names.
//! [`Value::to_json_within`] (and the decoder's budget, through `json_cost`) bounds what that
//! costs before anything is built.

use std::mem::size_of;
use std::sync::Arc;

use serde_json::{Map, Number, Value as Json};

use crate::base64;
use crate::value::Value;

/// One JSON node.
const NODE: usize = size_of::<Json>();
/// A JSON object's first B-tree node (11 entries of key and value, plus its header).
const MAP_NODE: usize = 11 * (size_of::<String>() + NODE) + 16;
/// What each further entry of a JSON object adds: B-tree nodes are at least five-elevenths
/// full, plus their share of the inner nodes.
const MAP_ENTRY: usize = 3 * (size_of::<String>() + NODE);

/// One JSON node (what the decoder charges for every value read for its JSON form).
pub(crate) const JSON_NODE: usize = NODE;
/// A JSON object's first node (charged per map by the decoder).
pub(crate) const JSON_MAP: usize = MAP_NODE;

/// What one map entry with key `k` adds to a JSON object (charged by the decoder).
pub(crate) fn json_entry_cost(k: &Value) -> usize {
    MAP_ENTRY.saturating_add(k.key_cost(true))
}

/// What the JSON object of one instance of class `class` with fields `names` costs besides
/// its field values: the object, its `"class"` entry and a copy of every name (charged by the
/// decoder per instance; computed once per class definition).
pub(crate) fn json_object_cost(class: &str, names: &[Arc<str>]) -> usize {
    let head = (NODE + MAP_NODE + MAP_ENTRY + "class".len() + NODE).saturating_add(class.len());
    names.iter().fold(head, |acc, k| {
        acc.saturating_add(MAP_ENTRY).saturating_add(k.len())
    })
}

/// Length of the padded base64 text of `n` bytes.
fn base64_len(n: usize) -> usize {
    n.div_ceil(3).saturating_mul(4)
}

impl Value {
    /// This value as JSON (see the module docs for the mapping).
    pub fn to_json(&self) -> Json {
        match self {
            Value::Null | Value::Ref(_) => Json::Null,
            Value::Bool(b) => Json::Bool(*b),
            Value::Int(i) => Json::Number((*i).into()),
            Value::Long(l) | Value::Date(l) => Json::Number((*l).into()),
            Value::Double(d) => Number::from_f64(*d).map_or(Json::Null, Json::Number),
            Value::String(s) => Json::String(s.clone()),
            Value::Binary(b) => Json::String(base64::encode(b)),
            Value::List { items, .. } => Json::Array(items.iter().map(Value::to_json).collect()),
            Value::Map { entries, .. } => {
                let mut m = Map::new();
                for (k, v) in entries {
                    m.insert(k.key_string(), v.to_json());
                }
                Json::Object(m)
            }
            Value::Object { class, fields } => {
                let mut m = Map::new();
                for (k, v) in fields {
                    m.insert(String::from(&**k), v.to_json());
                }
                m.insert("class".to_owned(), Json::String(String::from(&**class)));
                Json::Object(m)
            }
        }
    }

    /// Like [`Value::to_json`], consuming the value (strings are moved, not copied).
    pub fn into_json(self) -> Json {
        match self {
            Value::String(s) => Json::String(s),
            Value::List { items, .. } => {
                Json::Array(items.into_iter().map(Value::into_json).collect())
            }
            Value::Map { entries, .. } => {
                let mut m = Map::new();
                for (k, v) in entries {
                    let key = match k {
                        Value::String(s) => s,
                        other => other.key_string(),
                    };
                    m.insert(key, v.into_json());
                }
                Json::Object(m)
            }
            Value::Object { class, fields } => {
                let mut m = Map::new();
                for (k, v) in fields {
                    m.insert(String::from(&*k), v.into_json());
                }
                m.insert("class".to_owned(), Json::String(String::from(&*class)));
                Json::Object(m)
            }
            other => other.to_json(),
        }
    }

    /// [`Value::to_json`] when the JSON form takes at most `max_bytes` of memory (counted as the
    /// decoder's memory budget counts it), else `None` (nothing is built). For rendering a
    /// decoded value whose JSON form may be far larger than the value: every object of a list
    /// of a million instances of one class copies the class name.
    pub fn to_json_within(&self, max_bytes: usize) -> Option<Json> {
        (self.json_cost(false) <= max_bytes).then(|| self.to_json())
    }

    /// The JSON object key for this value used as a map key: strings as they are, scalars
    /// in their JSON text (`1`, `true`, `null`), compound keys as their JSON text.
    pub fn key_string(&self) -> String {
        match self {
            Value::String(s) => s.clone(),
            Value::Int(i) => i.to_string(),
            Value::Long(l) | Value::Date(l) => l.to_string(),
            Value::Binary(b) => base64::encode(b),
            other => other.to_json().to_string(),
        }
    }

    /// An upper estimate of the memory the JSON form of this value takes: its nodes, the
    /// B-tree nodes of its objects, and the strings it copies (every string when `moved` is
    /// false; with `moved`, as [`Value::into_json`] builds it, only names, base64 text and
    /// converted keys). Saturates instead of overflowing.
    pub(crate) fn json_cost(&self, moved: bool) -> usize {
        let copied = |len: usize| if moved { 0 } else { len };
        match self {
            Value::String(s) => NODE + copied(s.len()),
            Value::Binary(b) => NODE.saturating_add(base64_len(b.len())),
            Value::List { items, .. } => items
                .iter()
                .fold(NODE, |acc, v| acc.saturating_add(v.json_cost(moved))),
            Value::Map { entries, .. } => entries.iter().fold(NODE + MAP_NODE, |acc, (k, v)| {
                acc.saturating_add(MAP_ENTRY)
                    .saturating_add(k.key_cost(moved))
                    .saturating_add(v.json_cost(moved))
            }),
            Value::Object { class, fields } => {
                let head = (NODE + MAP_NODE + MAP_ENTRY + "class".len() + NODE)
                    .saturating_add(class.len());
                fields.iter().fold(head, |acc, (k, v)| {
                    acc.saturating_add(MAP_ENTRY)
                        .saturating_add(k.len())
                        .saturating_add(v.json_cost(moved))
                })
            }
            _ => NODE,
        }
    }

    /// What turning this value into a JSON object key costs (see [`Value::key_string`]).
    fn key_cost(&self, moved: bool) -> usize {
        match self {
            Value::String(s) => {
                if moved {
                    0
                } else {
                    s.len()
                }
            }
            Value::Int(_) | Value::Long(_) | Value::Date(_) => 24,
            Value::Binary(b) => base64_len(b.len()),
            other => other
                .json_cost(false)
                .saturating_add(other.json_text_bound()),
        }
    }

    /// An upper bound of the length of this value's JSON text (every string byte escaped to
    /// six).
    pub(crate) fn json_text_bound(&self) -> usize {
        let quoted = |len: usize| len.saturating_mul(6).saturating_add(2);
        match self {
            Value::Null | Value::Ref(_) | Value::Bool(_) => 5,
            Value::Int(_) | Value::Long(_) | Value::Date(_) | Value::Double(_) => 24,
            Value::String(s) => quoted(s.len()),
            Value::Binary(b) => base64_len(b.len()).saturating_add(2),
            Value::List { items, .. } => items.iter().fold(2, |acc, v| {
                acc.saturating_add(v.json_text_bound()).saturating_add(1)
            }),
            Value::Map { entries, .. } => entries.iter().fold(2, |acc, (k, v)| {
                acc.saturating_add(quoted(k.json_text_bound()))
                    .saturating_add(v.json_text_bound())
                    .saturating_add(2)
            }),
            Value::Object { class, fields } => {
                let head = quoted(class.len()).saturating_add(12);
                fields.iter().fold(head, |acc, (k, v)| {
                    acc.saturating_add(quoted(k.len()))
                        .saturating_add(v.json_text_bound())
                        .saturating_add(2)
                })
            }
        }
    }
}
