//! # hessian2
//!
//! Hessian 2.0 serialization as Dubbo uses it, both ways, matching Java's `Hessian2Output`
//! and `Hessian2Input` byte for byte where Java's choice depends only on the value.
//!
//! Where it sits: the Dubbo2 protocol (`dubbo://`) writes a request body as one Hessian2
//! stream (version, path, version, method, descriptor, arguments, attachments) and reads
//! the response body the same way; Triple's wrapper mode carries each argument and the result
//! as a separate Hessian2 stream. Both protocols use this crate and nothing else for payloads.
//!
//! - [`Value`]: the dynamic value model (typed objects keep class name and field order);
//! - [`Encoder`]: one output stream; class definitions and type names persist across writes;
//!   [`Encoder::write_json`] sends JSON arguments as given Java parameter types;
//! - [`Decoder`]: one input stream over a byte slice; resolves `Q` references (expanding
//!   shared ones, keeping [`Value::Ref`] only for cycles) within [`Limits`];
//! - [`Value::to_json`] / [`Value::from_json`]: the JSON mapping;
//! - [`java_class_name`] / [`java_descriptor`]: Java type names for `--types` entries
//!   (Triple's `argTypes`, Dubbo2's parameter descriptor).
//!
//! Contract: decoding never panics and is bounded by [`Limits`] on any input: depth, single
//! lengths, and a memory budget tied to the input size that every allocation made for the
//! returned values (and their JSON form) is charged to before it is made; bad input is an
//! [`Error`] naming what and where. Names a stream defines once (class, field and type names)
//! are shared by the values that use them. An encoder reused through [`Encoder::clear`] does
//! not allocate in steady state.
//!
//! ```
//! use hessian2::{Decoder, Encoder, Error, Value};
//!
//! // A POJO, as a Dubbo2 response carries it.
//! let mut e = Encoder::new();
//! e.write_object_begin("com.example.User", ["name", "age"]);
//! e.write_str("alice");
//! e.write_int(30);
//! let v = Decoder::new(e.as_bytes()).read()?;
//! assert_eq!(v.get("age"), Some(&Value::Int(30)));
//! assert_eq!(v.to_json()["class"], "com.example.User");
//!
//! // 64 KiB that would be 1 GiB as JSON: one 32 KiB class name, 32,768 one-byte instances.
//! let mut e = Encoder::new();
//! e.write_raw(b"W");
//! e.write_object_begin(&"A".repeat(32 * 1024), []);
//! e.write_raw(&[0x60; 32 * 1024]);
//! e.write_raw(b"Z");
//! let err = Decoder::new(e.as_bytes()).read_json().unwrap_err();
//! assert!(matches!(err, Error::OverBudget { .. }));
//! # Ok::<(), hessian2::Error>(())
//! ```

#![warn(unreachable_pub)]

mod base64;
mod decoder;
mod encoder;
mod error;
mod from_json;
mod java_types;
mod limits;
mod small_stack;
mod to_json;
mod value;

pub use decoder::Decoder;
pub use encoder::Encoder;
pub use error::Error;
pub use java_types::{hessian_array_type, is_primitive, java_class_name, java_descriptor};
pub use limits::Limits;
pub use value::Value;

/// Standard padded base64 of `bytes`, the JSON form of `byte[]`.
pub fn base64_encode(bytes: &[u8]) -> String {
    base64::encode(bytes)
}

/// Decodes standard or URL-safe base64 (padding optional).
pub fn base64_decode(text: &str) -> Option<Vec<u8>> {
    base64::decode(text)
}

/// Encodes one value as a complete stream of its own (Triple's wrapper sends each argument
/// this way).
pub fn to_bytes(v: &Value) -> Result<Vec<u8>, Error> {
    let mut e = Encoder::new();
    e.write(v)?;
    Ok(e.into_bytes())
}

/// Decodes the first value of `bytes` as a stream of its own.
pub fn from_bytes(bytes: &[u8]) -> Result<Value, Error> {
    Decoder::new(bytes).read()
}
