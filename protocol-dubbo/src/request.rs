//! Request bodies (`DubboCodec.encodeRequestData`) and event frames (`ExchangeCodec`
//! heartbeat and readonly events).
//!
//! A call body is one Hessian2 stream: `"2.0.2"`, service path, version, method, parameter
//! descriptor, each argument, attachments. Class definitions and references span the whole
//! body, so one [`hessian2::Encoder`] writes all of it; callers reuse it ([`Encoder::clear`])
//! so that steady-state encoding allocates nothing.

use hessian2::Encoder;
use serde_json::Value;

use crate::error::DubboError;
use crate::header::{Header, DUBBO_VERSION, FLAG_EVENT, HEADER_LEN};

/// The fixed fields of one call body.
#[derive(Debug, Clone, Copy)]
pub struct CallBody<'a, S> {
    /// The service path: the `interface` attachment, else the URL path.
    pub service_path: &'a str,
    /// The `version` attachment (`0.0.0` when the provider has none, as Java sends).
    pub version: &'a str,
    /// The method name.
    pub method: &'a str,
    /// The JVM parameter descriptor, e.g. `Ljava/lang/String;I`.
    pub descriptor: &'a str,
    /// The Java parameter types (one per argument) used to encode each argument.
    pub types: &'a [S],
    /// The arguments.
    pub args: &'a [Value],
}

/// Writes a call body into `enc` (which the caller has cleared).
pub fn encode_call_body<'k, S: AsRef<str>>(
    enc: &mut Encoder,
    body: &CallBody<'_, S>,
    attachments: impl IntoIterator<Item = (&'k str, &'k str)>,
) -> Result<(), DubboError> {
    enc.write_str(DUBBO_VERSION);
    enc.write_str(body.service_path);
    enc.write_str(body.version);
    enc.write_str(body.method);
    enc.write_str(body.descriptor);
    for (i, arg) in body.args.iter().enumerate() {
        let ty = body.types.get(i).map(AsRef::as_ref);
        enc.write_json(arg, ty)?;
    }
    enc.write_map_str(attachments);
    Ok(())
}

/// A heartbeat request frame: event + two-way, body Hessian `N` (`dabbe2…000000014e`).
pub fn heartbeat_request(id: i64, serialization: u8) -> [u8; HEADER_LEN + 1] {
    let mut h = Header::request(id, true, serialization, 1);
    h.flag |= FLAG_EVENT;
    event_frame(h)
}

/// The reply to a provider's heartbeat: flag `0x22`, status 20, body `N`.
pub fn heartbeat_response(id: i64, serialization: u8) -> [u8; HEADER_LEN + 1] {
    event_frame(Header {
        flag: FLAG_EVENT | (serialization & crate::header::SERIALIZATION_MASK),
        status: crate::status::OK,
        id,
        body_len: 1,
    })
}

fn event_frame(h: Header) -> [u8; HEADER_LEN + 1] {
    let mut f = [0u8; HEADER_LEN + 1];
    f[..HEADER_LEN].copy_from_slice(&h.to_bytes());
    f[HEADER_LEN] = b'N';
    f
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    fn hex(b: &[u8]) -> String {
        b.iter().map(|b| format!("{b:02x}")).collect()
    }

    #[test]
    fn heartbeat_frames_match_the_golden_bytes() {
        assert_eq!(
            hex(&heartbeat_request(2, 2)),
            "dabbe2000000000000000002000000014e"
        );
        assert_eq!(
            hex(&heartbeat_response(2, 2)),
            "dabb2214000000000000000200000001".to_owned() + "4e"
        );
    }
}
