//! Response bodies (`DecodeableRpcResult`).
//!
//! Status 20: a result flag (a Hessian int) then, by flag, a value, a `Throwable` and/or the
//! result attachments. Any other status: one string, the provider's message. A Java business
//! exception is a typed object (`detailMessage`, `cause` = a self-reference, `stackTrace`);
//! it becomes [`DubboError::Biz`] with the class and message. The Node peer's bare `N`
//! (instead of flag 2) is read as a null result.

use std::collections::BTreeMap;

use hessian2::{Decoder, Limits, Value as HValue};
use invoker::rpc::RpcResponse;

use crate::error::DubboError;
use crate::frame::Frame;
use crate::header::HESSIAN2_ID;
use crate::status;

/// Flag 0: a `Throwable` follows.
pub const RESPONSE_WITH_EXCEPTION: i32 = 0;
/// Flag 1: a value follows.
pub const RESPONSE_VALUE: i32 = 1;
/// Flag 2: a null value.
pub const RESPONSE_NULL_VALUE: i32 = 2;
/// Flag 3: a `Throwable` and the attachments.
pub const RESPONSE_WITH_EXCEPTION_WITH_ATTACHMENTS: i32 = 3;
/// Flag 4: a value and the attachments.
pub const RESPONSE_VALUE_WITH_ATTACHMENTS: i32 = 4;
/// Flag 5: a null value and the attachments.
pub const RESPONSE_NULL_VALUE_WITH_ATTACHMENTS: i32 = 5;

/// At most this much memory is spent on rendering a non-string value into an error message
/// (the message itself is cut at 200 bytes).
const MESSAGE_JSON_BUDGET: usize = 64 * 1024;

/// Decodes a response frame into a result, or the error it carries, with the default
/// [`Limits`].
pub fn decode_response(frame: &Frame, addr: &str) -> Result<RpcResponse, DubboError> {
    decode_response_with(frame, addr, Limits::DEFAULT)
}

/// Decodes a response frame into a result, or the error it carries; the body is decoded within
/// `limits` (its memory budget covers the value and its JSON form).
pub fn decode_response_with(
    frame: &Frame,
    addr: &str,
    limits: Limits,
) -> Result<RpcResponse, DubboError> {
    let h = &frame.header;
    if h.serialization() != HESSIAN2_ID {
        return Err(DubboError::UnsupportedSerialization(h.serialization()));
    }
    let mut d = Decoder::with_limits(&frame.body, limits);
    if h.status != status::OK {
        let message = match d.read() {
            Ok(HValue::String(s)) => s,
            Ok(HValue::Null) | Err(_) => String::new(),
            Ok(other) => short(&other),
        };
        return Err(DubboError::Status {
            addr: addr.to_owned(),
            status: h.status,
            message,
        });
    }
    if frame.body.is_empty() {
        return Ok(RpcResponse::empty());
    }
    let flag = match d.read()? {
        HValue::Int(f) => f,
        HValue::Long(f) => i32::try_from(f).unwrap_or(-1),
        // hessian.js (Node peer) writes a bare null for a void result.
        HValue::Null => return Ok(RpcResponse::empty()),
        other => {
            return Err(DubboError::BadResponse(format!(
                "expected a result flag, found {}",
                short(&other)
            )))
        }
    };
    match flag {
        RESPONSE_VALUE | RESPONSE_VALUE_WITH_ATTACHMENTS => {
            let value = d.read_json()?;
            let attachments = if flag == RESPONSE_VALUE_WITH_ATTACHMENTS {
                read_attachments(&mut d)?
            } else {
                BTreeMap::new()
            };
            Ok(RpcResponse { value, attachments })
        }
        RESPONSE_NULL_VALUE | RESPONSE_NULL_VALUE_WITH_ATTACHMENTS => {
            let attachments = if flag == RESPONSE_NULL_VALUE_WITH_ATTACHMENTS {
                read_attachments(&mut d)?
            } else {
                BTreeMap::new()
            };
            Ok(RpcResponse {
                value: serde_json::Value::Null,
                attachments,
            })
        }
        RESPONSE_WITH_EXCEPTION | RESPONSE_WITH_EXCEPTION_WITH_ATTACHMENTS => {
            let (class, message) = throwable(&d.read()?);
            Err(DubboError::Biz { class, message })
        }
        other => Err(DubboError::BadResponse(format!(
            "unknown result flag {other}"
        ))),
    }
}

fn read_attachments(d: &mut Decoder<'_>) -> Result<BTreeMap<String, String>, DubboError> {
    if d.is_empty() {
        return Ok(BTreeMap::new());
    }
    Ok(d.read_map_str()?)
}

/// The class and message of a decoded Java `Throwable` (or Dubbo's `GenericException`).
pub fn throwable(v: &HValue) -> (String, String) {
    let (class, fields): (String, Vec<(&str, &HValue)>) = match v {
        HValue::Object { class, fields } => (
            class.to_string(),
            fields.iter().map(|(k, v)| (&**k, v)).collect(),
        ),
        HValue::Map { type_name, entries } => (
            type_name
                .as_deref()
                .unwrap_or("java.lang.Throwable")
                .to_owned(),
            entries
                .iter()
                .filter_map(|(k, v)| match k {
                    HValue::String(k) => Some((k.as_str(), v)),
                    _ => None,
                })
                .collect(),
        ),
        HValue::String(s) => return ("java.lang.Throwable".to_owned(), s.clone()),
        other => return ("java.lang.Throwable".to_owned(), short(other)),
    };
    let field = |name: &str| {
        fields.iter().find_map(|(k, v)| match v {
            HValue::String(s) if *k == name => Some(s.clone()),
            _ => None,
        })
    };
    if class.ends_with(".GenericException") {
        if let Some(c) = field("exceptionClass") {
            return (c, field("exceptionMessage").unwrap_or_default());
        }
    }
    let message = field("detailMessage")
        .or_else(|| field("message"))
        .unwrap_or_default();
    (class, message)
}

/// A decoded value for a message: its JSON text, cut at 200 bytes; only its kind when even
/// its JSON form would be large (a value's JSON form can be far larger than the value).
fn short(v: &HValue) -> String {
    let Some(json) = v.to_json_within(MESSAGE_JSON_BUDGET) else {
        return format!("<a {} too large to show>", v.kind());
    };
    let mut s = json.to_string();
    if s.len() > 200 {
        let mut cut = 200;
        while !s.is_char_boundary(cut) {
            cut -= 1;
        }
        s.truncate(cut);
        s.push_str("...");
    }
    s
}
