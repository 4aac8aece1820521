//! A typical Dubbo2 request and response body, shared by the allocation test and the benches.

use hessian2::{Decoder, Encoder, Error, Value};
use serde_json::json;

/// The call's arguments and their Java types.
pub struct Request {
    pub args: Vec<serde_json::Value>,
    pub types: Vec<&'static str>,
    pub descriptor: String,
    pub attachments: Vec<(&'static str, &'static str)>,
}

pub fn request() -> Request {
    let types = vec!["java.lang.String", "com.example.User"];
    Request {
        args: vec![
            json!("req-42"),
            json!({"id": 42, "name": "Alice", "email": "alice@example.com", "age": 30, "tags": ["a", "b"], "active": true}),
        ],
        descriptor: hessian2::java_descriptor(&types),
        types,
        attachments: vec![
            ("path", "com.example.UserService"),
            ("interface", "com.example.UserService"),
            ("version", "1.0.0"),
            ("group", "prod"),
            ("timeout", "3000"),
            ("remote.application", "consumer-app"),
        ],
    }
}

/// Writes the request body the way a Dubbo2 consumer does (`DubboCodec.encodeRequestData`).
pub fn encode_request(e: &mut Encoder, r: &Request) -> Result<(), Error> {
    e.clear();
    e.write_str("2.0.2");
    e.write_str("com.example.UserService");
    e.write_str("1.0.0");
    e.write_str("updateUser");
    e.write_str(&r.descriptor);
    for (a, t) in r.args.iter().zip(&r.types) {
        e.write_json(a, Some(t))?;
    }
    e.write_map_str(r.attachments.iter().copied());
    Ok(())
}

/// Reads a request body as a provider would (dynamically).
pub fn decode_request(b: &[u8]) -> Result<usize, Error> {
    let mut d = Decoder::new(b);
    let mut n = d.read_str()?.len();
    n += d.read_str()?.len();
    n += d.read_opt_str()?.map_or(0, |s| s.len());
    n += d.read_str()?.len();
    n += d.read_str()?.len();
    for _ in 0..2 {
        if let Value::Object { fields, .. } = d.read()? {
            n += fields.len();
        }
    }
    n += d.read_map_str()?.len();
    Ok(n)
}

/// The returned object, as Java writes a POJO.
pub fn response_value() -> Value {
    let s = |x: &str| Value::String(x.to_owned());
    Value::Object {
        class: "com.example.User".into(),
        fields: vec![
            ("id".into(), Value::Long(42)),
            ("name".into(), s("Alice")),
            ("email".into(), s("alice@example.com")),
            ("age".into(), Value::Int(30)),
            (
                "tags".into(),
                Value::List {
                    type_name: None,
                    items: vec![s("a"), s("b")],
                },
            ),
            ("active".into(), Value::Bool(true)),
            ("created".into(), Value::Date(1_700_000_000_000)),
        ],
    }
}

/// Writes a response body: flag 4 (value with attachments), the value, `{dubbo: 2.0.2}`.
pub fn encode_response(e: &mut Encoder, v: &Value) -> Result<(), Error> {
    e.clear();
    e.write_int(4);
    e.write(v)?;
    e.write_map_str([("dubbo", "2.0.2")]);
    Ok(())
}

/// Reads a response body into a [`Value`] and the attachments.
pub fn decode_response(b: &[u8]) -> Result<Value, Error> {
    let mut d = Decoder::new(b);
    let _flag = d.read_int()?;
    let v = d.read()?;
    let _att = d.read_map_str()?;
    Ok(v)
}

/// Reads a response body into JSON, as the CLI prints it.
pub fn decode_response_json(b: &[u8]) -> Result<serde_json::Value, Error> {
    let mut d = Decoder::new(b);
    let _flag = d.read_int()?;
    let v = d.read_json()?;
    let _att = d.read_map_str()?;
    Ok(v)
}
