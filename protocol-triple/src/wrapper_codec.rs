//! Wrapper mode payloads: Hessian2 arguments in a `TripleRequestWrapper`, the result (or the
//! thrown `Throwable`) in a `TripleResponseWrapper`.
//!
//! Each argument is a complete Hessian2 stream of its own (a fresh encoder per argument, as
//! Java's `DefaultMultipleSerialization` does), `argTypes` are Java `Class.getName()` forms
//! (`int`, `java.lang.String`, `[Ljava.lang.String;`). Without declared types they are
//! inferred from the JSON: string → `java.lang.String`, integer → `long`, other number →
//! `double`, boolean → `boolean`, array → `java.util.List`, object → its `"class"` or
//! `java.util.Map`, null → `java.lang.Object`.

use bytes::{BufMut, Bytes, BytesMut};
use serde_json::Value;

use crate::error::TripleError;
use crate::frame::PREFIX_LEN;
use crate::wrapper::{decode_response, put_len_field, HESSIAN4};

/// The Java type inferred for an untyped JSON argument.
pub fn infer_type(v: &Value) -> String {
    match v {
        Value::String(_) => "java.lang.String".to_owned(),
        Value::Number(n) if n.is_i64() || n.is_u64() => "long".to_owned(),
        Value::Number(_) => "double".to_owned(),
        Value::Bool(_) => "boolean".to_owned(),
        Value::Array(_) => "java.util.List".to_owned(),
        Value::Object(o) => match o.get("class") {
            Some(Value::String(c)) => c.clone(),
            _ => "java.util.Map".to_owned(),
        },
        Value::Null => "java.lang.Object".to_owned(),
    }
}

/// Encodes the request wrapper, 5 bytes of frame prefix space first.
pub fn encode_args(types: &[String], args: &[Value]) -> Result<BytesMut, TripleError> {
    if !types.is_empty() && types.len() != args.len() {
        return Err(TripleError::InvalidArgument(format!(
            "{} parameter types for {} arguments",
            types.len(),
            args.len()
        )));
    }
    // Field order as Java writes it: serializeType, every arg, every argType. Each argument
    // is its own Hessian2 stream: one encoder, cleared (tables reset, capacity kept).
    let mut buf = BytesMut::with_capacity(PREFIX_LEN + 16 + 64 * args.len());
    buf.put_bytes(0, PREFIX_LEN);
    put_len_field(&mut buf, 0x0a, HESSIAN4.as_bytes());
    let mut enc = hessian2::Encoder::new();
    for (i, arg) in args.iter().enumerate() {
        enc.clear();
        enc.write_json(arg, types.get(i).map(String::as_str))
            .map_err(|e| {
                TripleError::InvalidArgument(format!(
                    "argument {i} cannot be sent as Hessian2: {e}"
                ))
            })?;
        put_len_field(&mut buf, 0x12, enc.as_bytes());
    }
    for (i, arg) in args.iter().enumerate() {
        let name = match types.get(i) {
            Some(t) => hessian2::java_class_name(t),
            None => infer_type(arg),
        };
        put_len_field(&mut buf, 0x1a, name.as_bytes());
    }
    Ok(buf)
}

/// Decodes a normal result: the wrapper's `data` as Hessian2 → JSON (`null` when absent),
/// with the default [`hessian2::Limits`].
pub fn decode_result(message: Option<Bytes>) -> Result<Value, TripleError> {
    decode_result_with(message, hessian2::Limits::DEFAULT)
}

/// [`decode_result`] within `limits` (the Hessian2 decoder's bounds and memory budget).
pub fn decode_result_with(
    message: Option<Bytes>,
    limits: hessian2::Limits,
) -> Result<Value, TripleError> {
    let Some(m) = message else {
        return Ok(Value::Null);
    };
    let w = decode_response(m)
        .map_err(|e| TripleError::Codec(format!("bad TripleResponseWrapper: {e}")))?;
    if w.data.is_empty() {
        return Ok(Value::Null);
    }
    hessian2::Decoder::with_limits(&w.data, limits)
        .read_json()
        .map_err(|e| TripleError::Codec(format!("bad Hessian2 result: {e}")))
}

/// Decodes the Throwable of a `tri-exception-code: 3` response into (class, message);
/// `None` when the body is not a wrapped Hessian object. Decoded with the default
/// [`hessian2::Limits`].
pub fn decode_exception(message: Option<&Bytes>) -> Option<(String, String)> {
    decode_exception_with(message, hessian2::Limits::DEFAULT)
}

/// [`decode_exception`] within `limits`.
pub fn decode_exception_with(
    message: Option<&Bytes>,
    limits: hessian2::Limits,
) -> Option<(String, String)> {
    let w = decode_response(message?.clone()).ok()?;
    if w.data.is_empty() {
        return None;
    }
    match hessian2::Decoder::with_limits(&w.data, limits)
        .read()
        .ok()?
    {
        hessian2::Value::Object { class, fields } => {
            let msg = fields
                .iter()
                .find(|(k, _)| &**k == "detailMessage")
                .and_then(|(_, v)| v.as_str())
                .unwrap_or_default()
                .to_owned();
            Some((class.to_string(), msg))
        }
        _ => None,
    }
}
