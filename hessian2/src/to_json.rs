//! Hessian value → JSON.
//!
//! Integers exactly (longs up to 2^63-1), doubles as numbers (NaN and infinities, which JSON
//! cannot hold, as `null`), strings, null, booleans; lists, arrays and sets as arrays; maps as
//! objects with string keys; typed objects as their fields plus `"class"`; dates as epoch
//! milliseconds; `byte[]` as standard padded base64. A value referenced twice appears twice;
//! a back-reference that would make a cycle ([`Value::Ref`]) becomes `null`.

use serde_json::{Map, Number, Value as Json};

use crate::base64;
use crate::value::Value;

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
                    m.insert(k.clone(), v.to_json());
                }
                m.insert("class".to_owned(), Json::String(class.clone()));
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
                    m.insert(k, v.into_json());
                }
                m.insert("class".to_owned(), Json::String(class));
                Json::Object(m)
            }
            other => other.to_json(),
        }
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
}
