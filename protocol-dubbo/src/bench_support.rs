//! Benchmark support: typical request and response bodies, and an in-process Dubbo2 echo
//! provider to measure the client's own cost of a whole call (allocations, time) without a JVM.
//!
//! For benchmarks only (criterion benches, `dubbo-bench`): the provider answers every
//! two-way request with one fixed response body and every heartbeat with a heartbeat reply. It
//! is not a Dubbo provider and no test uses it in place of one.

use std::sync::Arc;

use bytes::BytesMut;
use hessian2::{Encoder, Value as HValue};
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio::task::JoinHandle;

use crate::error::DubboError;
use crate::frame::{Decoded, Frame, FrameDecoder, DEFAULT_PAYLOAD};
use crate::header::{Header, HESSIAN2_ID};
use crate::request::{encode_call_body, heartbeat_response, CallBody};
use crate::status;

/// The service of the typical call.
pub const TYPICAL_SERVICE: &str = "com.example.UserService";

/// The Java parameter types of the typical call (`updateUser(String, User)`).
pub const TYPICAL_TYPES: [&str; 2] = ["java.lang.String", "com.example.User"];

/// The arguments of the typical call: a request id and a `User` POJO (sent from JSON).
pub fn typical_args() -> Vec<Value> {
    vec![
        json!("req-42"),
        json!({"class": "com.example.User", "id": 42, "name": "Alice",
               "email": "alice@example.com", "age": 30, "tags": ["a", "b"], "active": true}),
    ]
}

/// The attachments of the typical call, as `DubboInvoker` sends them.
pub const TYPICAL_ATTACHMENTS: [(&str, &str); 6] = [
    ("interface", TYPICAL_SERVICE),
    ("group", "prod"),
    ("remote.application", "consumer-app"),
    ("path", TYPICAL_SERVICE),
    ("version", "1.0.0"),
    ("timeout", "3000"),
];

/// Encodes the typical request body into `enc` (cleared first), as the invoker does; returns
/// its length.
pub fn encode_typical_request(
    enc: &mut Encoder,
    args: &[Value],
    descriptor: &str,
) -> Result<usize, DubboError> {
    enc.clear();
    let body = CallBody {
        service_path: TYPICAL_SERVICE,
        version: "1.0.0",
        method: "updateUser",
        descriptor,
        types: &TYPICAL_TYPES,
        args,
    };
    encode_call_body(enc, &body, TYPICAL_ATTACHMENTS)?;
    Ok(enc.as_bytes().len())
}

/// Encodes `sayHello(args)` of `service` (version 1.0.0, one `java.lang.String` parameter) into
/// `enc` (cleared first) with the attachments the invoker sends; returns its length.
pub fn encode_say_hello(
    enc: &mut Encoder,
    service: &str,
    args: &[Value],
) -> Result<usize, DubboError> {
    enc.clear();
    let body = CallBody {
        service_path: service,
        version: "1.0.0",
        method: "sayHello",
        descriptor: "Ljava/lang/String;",
        types: &["java.lang.String"],
        args,
    };
    let att = [
        ("interface", service),
        ("path", service),
        ("version", "1.0.0"),
        ("timeout", "1000"),
    ];
    encode_call_body(enc, &body, att)?;
    Ok(enc.as_bytes().len())
}

/// The typical response body as Java writes it: flag 4, a `User` object with seven fields
/// (a list and a date among them), `{dubbo: 2.0.2}`.
pub fn typical_response_body() -> Result<Vec<u8>, DubboError> {
    let s = |x: &str| HValue::String(x.to_owned());
    let user = HValue::Object {
        class: "com.example.User".into(),
        fields: vec![
            ("id".into(), HValue::Long(42)),
            ("name".into(), s("Alice")),
            ("email".into(), s("alice@example.com")),
            ("age".into(), HValue::Int(30)),
            (
                "tags".into(),
                HValue::List {
                    type_name: None,
                    items: vec![s("a"), s("b")],
                },
            ),
            ("active".into(), HValue::Bool(true)),
            ("created".into(), HValue::Date(1_700_000_000_000)),
        ],
    };
    let mut e = Encoder::new();
    e.write_int(crate::response::RESPONSE_VALUE_WITH_ATTACHMENTS);
    e.write(&user)?;
    e.write_map_str([("dubbo", "2.0.2")]);
    Ok(e.into_bytes())
}

/// The Java peer's answer to `sayHello("rust")`: flag 4, `"Hello rust"`, `{dubbo: 2.0.2}`.
pub const SAY_HELLO_RESPONSE_BODY: &[u8] = b"\x94\x0aHello rust\x48\x05dubbo\x052.0.2\x5a";

/// A response frame (status 20, Hessian2) with `body`, answering request `id`.
pub fn response_frame(id: i64, body: &[u8]) -> Frame {
    Frame {
        header: response_header(id, body.len()),
        body: bytes::Bytes::copy_from_slice(body),
    }
}

fn response_header(id: i64, len: usize) -> Header {
    Header {
        flag: HESSIAN2_ID,
        status: status::OK,
        id,
        body_len: len as u32,
    }
}

/// An in-process provider that answers every call with one fixed body (see the module docs).
/// It stops when dropped.
#[derive(Debug)]
pub struct EchoProvider {
    port: u16,
    task: JoinHandle<()>,
}

impl EchoProvider {
    /// Listens on a free 127.0.0.1 port; every two-way request is answered with `body`.
    pub async fn start(body: Vec<u8>) -> std::io::Result<EchoProvider> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let port = listener.local_addr()?.port();
        let body: Arc<[u8]> = body.into();
        let task = tokio::spawn(async move {
            let mut conns = tokio::task::JoinSet::new();
            while let Ok((s, _)) = listener.accept().await {
                conns.spawn(serve(s, body.clone()));
            }
        });
        Ok(EchoProvider { port, task })
    }

    /// The listening port.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// `127.0.0.1:port`.
    pub fn addr(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }
}

impl Drop for EchoProvider {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn serve(mut s: tokio::net::TcpStream, body: Arc<[u8]>) {
    let _ = s.set_nodelay(true);
    let mut buf = BytesMut::with_capacity(64 * 1024);
    let mut out = Vec::with_capacity(64 * 1024);
    let mut dec = FrameDecoder::new(DEFAULT_PAYLOAD);
    loop {
        if buf.capacity() - buf.len() < 8 * 1024 {
            buf.reserve(64 * 1024);
        }
        match s.read_buf(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
        loop {
            match dec.decode(&mut buf) {
                Ok(Some(Decoded::Frame(f))) if f.header.is_two_way() => {
                    if f.header.is_event() {
                        out.extend_from_slice(&heartbeat_response(f.header.id, HESSIAN2_ID));
                    } else {
                        out.extend_from_slice(&response_header(f.header.id, body.len()).to_bytes());
                        out.extend_from_slice(&body);
                    }
                }
                Ok(Some(_)) => {}
                Ok(None) => break,
                Err(_) => return,
            }
        }
        if !out.is_empty() {
            if s.write_all(&out).await.is_err() {
                return;
            }
            out.clear();
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use crate::response::decode_response;

    #[test]
    fn typical_bodies_decode() {
        let body = typical_response_body().unwrap();
        let r = decode_response(&response_frame(1, &body), "x").unwrap();
        assert_eq!(r.value["name"], json!("Alice"));
        assert_eq!(r.value["tags"], json!(["a", "b"]));
        assert_eq!(
            r.attachments.get("dubbo").map(String::as_str),
            Some("2.0.2")
        );
        let r = decode_response(&response_frame(2, SAY_HELLO_RESPONSE_BODY), "x").unwrap();
        assert_eq!(r.value, json!("Hello rust"));

        let types: Vec<&str> = TYPICAL_TYPES.to_vec();
        let desc = hessian2::java_descriptor(&types);
        let mut e = Encoder::new();
        let n = encode_typical_request(&mut e, &typical_args(), &desc).unwrap();
        let mut d = hessian2::Decoder::new(e.as_bytes());
        assert_eq!(d.read_str().unwrap(), "2.0.2");
        assert_eq!(d.read_str().unwrap(), TYPICAL_SERVICE);
        assert!(n > 200, "{n}");
    }
}
