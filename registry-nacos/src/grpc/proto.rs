//! The two protobuf messages of Nacos' `nacos_grpc_service.proto` (package-less), written by
//! hand with `prost` derives (no build script), and how a JSON body travels in them.
//!
//! `Payload.metadata.type` is the Java simple class name of the body (`InstanceRequest`,
//! `SubscribeServiceResponse`, ...); `Payload.body` is a `google.protobuf.Any` with an empty
//! `type_url` and the UTF-8 JSON of the object as `value`. Request headers (the access token)
//! travel in `Metadata.headers`.

use std::collections::HashMap;

/// `Metadata { string type = 3; string clientIp = 8; map<string,string> headers = 7; }`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Metadata {
    /// The body's type (Java simple class name).
    #[prost(string, tag = "3")]
    pub r#type: String,
    /// The sender's IP (requests only).
    #[prost(string, tag = "8")]
    pub client_ip: String,
    /// Request headers (`accessToken`, `app`).
    #[prost(map = "string, string", tag = "7")]
    pub headers: HashMap<String, String>,
}

/// `Payload { Metadata metadata = 2; google.protobuf.Any body = 3; }`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Payload {
    /// Type and headers.
    #[prost(message, optional, tag = "2")]
    pub metadata: Option<Metadata>,
    /// The JSON body (`type_url` empty).
    #[prost(message, optional, tag = "3")]
    pub body: Option<prost_types::Any>,
}

/// Path of the unary service (`service Request { rpc request(Payload) returns (Payload) }`).
pub const UNARY_PATH: &str = "/Request/request";
/// Path of the bi-directional stream (`service BiRequestStream`).
pub const STREAM_PATH: &str = "/BiRequestStream/requestBiStream";

impl Payload {
    /// A payload of type `ty` carrying `json`, with `headers`.
    pub fn new(ty: &str, json: Vec<u8>, headers: HashMap<String, String>, client_ip: &str) -> Self {
        Payload {
            metadata: Some(Metadata {
                r#type: ty.to_owned(),
                client_ip: client_ip.to_owned(),
                headers,
            }),
            body: Some(prost_types::Any {
                type_url: String::new(),
                value: json,
            }),
        }
    }

    /// The body's type (empty when missing).
    pub fn type_name(&self) -> &str {
        self.metadata.as_ref().map_or("", |m| m.r#type.as_str())
    }

    /// The JSON body (empty when missing).
    pub fn json(&self) -> &[u8] {
        self.body.as_ref().map_or(&[][..], |b| b.value.as_slice())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use prost::Message;

    #[test]
    fn field_numbers_match_the_proto() {
        let p = Payload::new(
            "HealthCheckRequest",
            b"{}".to_vec(),
            HashMap::new(),
            "1.2.3.4",
        );
        let bytes = p.encode_to_vec();
        // metadata = field 2 (length-delimited: 0x12), body = field 3 (0x1a).
        assert_eq!(bytes[0], 0x12);
        let meta_len = usize::from(bytes[1]);
        // inside metadata: type = field 3 (0x1a) first, clientIp = field 8 (0x42).
        assert_eq!(bytes[2], 0x1a);
        assert!(bytes[2..2 + meta_len].contains(&0x42));
        assert_eq!(bytes[2 + meta_len], 0x1a);
        let back = Payload::decode(bytes.as_slice()).unwrap();
        assert_eq!(back.type_name(), "HealthCheckRequest");
        assert_eq!(back.json(), b"{}");
        assert_eq!(back.body.unwrap().type_url, "");
    }
}
