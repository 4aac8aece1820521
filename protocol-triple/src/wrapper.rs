//! `TripleRequestWrapper` / `TripleResponseWrapper` (package `org.apache.dubbo.triple`),
//! coded by hand exactly as Java 3.3's `TripleCustomerProtocolWapper` (sic) does:
//! request = field 1 `serializeType` (always written, even empty),
//! then every field 2 `args`, then every field 3 `argTypes`; only these three LEN fields, since
//! the Java decoder rejects any other field number or wire type.

use bytes::{Buf, BufMut, Bytes, BytesMut};

/// The `serializeType` a Java consumer sends for Hessian2.
pub const HESSIAN4: &str = "hessian4";

/// A decoded `TripleResponseWrapper`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ResponseWrapper {
    /// Field 1: the serialization the server used (echoes the request's).
    pub serialize_type: String,
    /// Field 2: the serialized value (absent for `null`).
    pub data: Bytes,
    /// Field 3: the declared Java return type.
    pub type_name: String,
}

fn put_varint(buf: &mut BytesMut, mut v: u64) {
    while v >= 0x80 {
        buf.put_u8((v as u8) | 0x80);
        v >>= 7;
    }
    buf.put_u8(v as u8);
}

fn varint_len(mut v: u64) -> usize {
    let mut n = 1;
    while v >= 0x80 {
        v >>= 7;
        n += 1;
    }
    n
}

pub(crate) fn put_len_field(buf: &mut BytesMut, tag: u8, bytes: &[u8]) {
    buf.put_u8(tag);
    put_varint(buf, bytes.len() as u64);
    buf.extend_from_slice(bytes);
}

/// The encoded size of a request wrapper (to reserve exactly once).
pub fn request_len(serialize_type: &str, args: &[&[u8]], arg_types: &[&str]) -> usize {
    let f = |n: usize| 1 + varint_len(n as u64) + n;
    f(serialize_type.len())
        + args.iter().map(|a| f(a.len())).sum::<usize>()
        + arg_types.iter().map(|t| f(t.len())).sum::<usize>()
}

/// Appends a `TripleRequestWrapper` in Java's field order.
pub fn encode_request(
    buf: &mut BytesMut,
    serialize_type: &str,
    args: &[&[u8]],
    arg_types: &[&str],
) {
    buf.reserve(request_len(serialize_type, args, arg_types));
    put_len_field(buf, 0x0a, serialize_type.as_bytes());
    for a in args {
        put_len_field(buf, 0x12, a);
    }
    for t in arg_types {
        put_len_field(buf, 0x1a, t.as_bytes());
    }
}

fn get_varint(buf: &mut Bytes) -> Result<u64, String> {
    let mut v = 0u64;
    for i in 0..10 {
        if !buf.has_remaining() {
            return Err("truncated varint".to_owned());
        }
        let b = buf.get_u8();
        v |= u64::from(b & 0x7f) << (7 * i);
        if b < 0x80 {
            return Ok(v);
        }
    }
    Err("varint longer than 10 bytes".to_owned())
}

fn utf8(b: Bytes, field: &str) -> Result<String, String> {
    String::from_utf8(b.to_vec()).map_err(|_| format!("{field} is not UTF-8"))
}

/// Decodes a `TripleResponseWrapper`. Unknown fields are skipped (the client is lenient
/// where Java's is strict: it only matters for what we send).
pub fn decode_response(mut buf: Bytes) -> Result<ResponseWrapper, String> {
    let mut out = ResponseWrapper::default();
    while buf.has_remaining() {
        let key = get_varint(&mut buf)?;
        let (field, wire) = (key >> 3, key & 7);
        match wire {
            0 => {
                get_varint(&mut buf)?;
            }
            1 | 5 => {
                let n = if wire == 1 { 8 } else { 4 };
                if buf.remaining() < n {
                    return Err("truncated fixed field".to_owned());
                }
                buf.advance(n);
            }
            2 => {
                let len = get_varint(&mut buf)?;
                if len > buf.remaining() as u64 {
                    return Err(format!(
                        "field {field} announces {len} bytes, {} remain",
                        buf.remaining()
                    ));
                }
                let v = buf.split_to(len as usize);
                match field {
                    1 => out.serialize_type = utf8(v, "serializeType")?,
                    2 => out.data = v,
                    3 => out.type_name = utf8(v, "type")?,
                    _ => {}
                }
            }
            w => return Err(format!("unexpected wire type {w} for field {field}")),
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_bytes_match_java_golden() {
        // The bytes Java 3.3 writes for sayHello("rust").
        let mut b = BytesMut::new();
        let arg: &[u8] = &[0x04, b'r', b'u', b's', b't'];
        encode_request(&mut b, HESSIAN4, &[arg], &["java.lang.String"]);
        let mut want = vec![0x0a, 0x08];
        want.extend_from_slice(b"hessian4");
        want.extend_from_slice(&[0x12, 0x05, 0x04]);
        want.extend_from_slice(b"rust");
        want.extend_from_slice(&[0x1a, 0x10]);
        want.extend_from_slice(b"java.lang.String");
        assert_eq!(&b[..], &want[..]);
        assert_eq!(
            b.len(),
            request_len(HESSIAN4, &[arg], &["java.lang.String"])
        );
    }

    #[test]
    fn empty_serialize_type_is_still_written_and_order_is_args_then_types() {
        let mut b = BytesMut::new();
        encode_request(&mut b, "", &[b"a", b"b"], &["int", "long"]);
        assert_eq!(
            &b[..],
            &[
                0x0a, 0, 0x12, 1, b'a', 0x12, 1, b'b', 0x1a, 3, b'i', b'n', b't', 0x1a, 4, b'l',
                b'o', b'n', b'g'
            ][..]
        );
    }

    #[test]
    fn response_decodes_and_rejects_garbage() {
        let mut b = BytesMut::new();
        put_len_field(&mut b, 0x0a, b"hessian4");
        put_len_field(&mut b, 0x12, &[0x91]);
        b.extend_from_slice(&[0x20, 0x05]); // unknown varint field 4
        put_len_field(&mut b, 0x1a, b"int");
        let r = decode_response(b.freeze()).unwrap();
        assert_eq!(r.serialize_type, "hessian4");
        assert_eq!(&r.data[..], &[0x91]);
        assert_eq!(r.type_name, "int");
        assert!(decode_response(Bytes::from_static(&[0x12, 0x09, 1])).is_err());
        assert!(decode_response(Bytes::from_static(&[0x0b])).is_err());
        assert!(decode_response(Bytes::from_static(&[0x80])).is_err());
    }
}
