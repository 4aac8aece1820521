//! The 16-byte Dubbo2 frame header (Dubbo's `ExchangeCodec`).
//!
//! ```text
//! 0..2  magic 0xDABB
//! 2     flag: 0x80 request, 0x40 two-way, 0x20 event, low 5 bits = serialization id
//! 3     status (responses only)
//! 4..12 request id (i64, big-endian)
//! 12..16 body length (i32, big-endian, header excluded)
//! ```

use crate::error::DubboError;

/// The two magic bytes every frame starts with.
pub const MAGIC: u16 = 0xdabb;
/// Header length in bytes.
pub const HEADER_LEN: usize = 16;
/// Flag bit: the frame is a request (else a response).
pub const FLAG_REQUEST: u8 = 0x80;
/// Flag bit: the request expects a response.
pub const FLAG_TWOWAY: u8 = 0x40;
/// Flag bit: an event (heartbeat, readonly) rather than a call.
pub const FLAG_EVENT: u8 = 0x20;
/// Mask of the serialization id in the flag byte.
pub const SERIALIZATION_MASK: u8 = 0x1f;
/// Serialization id of Hessian2 (`SER/.../Constants.HESSIAN2_SERIALIZATION_ID`).
pub const HESSIAN2_ID: u8 = 2;
/// The Dubbo protocol version a Java 3.3 consumer writes first in every request body.
pub const DUBBO_VERSION: &str = "2.0.2";

/// A decoded frame header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    /// The flag byte (request / two-way / event bits and the serialization id).
    pub flag: u8,
    /// The status byte (meaningful in responses).
    pub status: u8,
    /// The request id the response answers.
    pub id: i64,
    /// Body length in bytes.
    pub body_len: u32,
}

impl Header {
    /// A request header (`0xC2` two-way, `0x82` one-way for Hessian2).
    pub fn request(id: i64, two_way: bool, serialization: u8, body_len: u32) -> Self {
        let mut flag = FLAG_REQUEST | (serialization & SERIALIZATION_MASK);
        if two_way {
            flag |= FLAG_TWOWAY;
        }
        Header {
            flag,
            status: 0,
            id,
            body_len,
        }
    }

    /// True for a request frame.
    pub fn is_request(&self) -> bool {
        self.flag & FLAG_REQUEST != 0
    }

    /// True when a response is expected.
    pub fn is_two_way(&self) -> bool {
        self.flag & FLAG_TWOWAY != 0
    }

    /// True for an event (heartbeat, readonly).
    pub fn is_event(&self) -> bool {
        self.flag & FLAG_EVENT != 0
    }

    /// The serialization id.
    pub fn serialization(&self) -> u8 {
        self.flag & SERIALIZATION_MASK
    }

    /// The 16 header bytes.
    pub fn to_bytes(&self) -> [u8; HEADER_LEN] {
        let mut b = [0u8; HEADER_LEN];
        b[0..2].copy_from_slice(&MAGIC.to_be_bytes());
        b[2] = self.flag;
        b[3] = self.status;
        b[4..12].copy_from_slice(&self.id.to_be_bytes());
        b[12..16].copy_from_slice(&self.body_len.to_be_bytes());
        b
    }

    /// Parses 16 header bytes: a wrong magic or a negative length is an error.
    pub fn parse(b: &[u8; HEADER_LEN]) -> Result<Header, DubboError> {
        let magic = u16::from_be_bytes([b[0], b[1]]);
        if magic != MAGIC {
            return Err(DubboError::BadMagic { found: magic });
        }
        let mut id = [0u8; 8];
        id.copy_from_slice(&b[4..12]);
        let len = i32::from_be_bytes([b[12], b[13], b[14], b[15]]);
        let body_len = u32::try_from(len).map_err(|_| DubboError::BadLength { len })?;
        Ok(Header {
            flag: b[2],
            status: b[3],
            id: i64::from_be_bytes(id),
            body_len,
        })
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn golden_request_header() {
        // A captured sayHello("rust") frame: id 1, 0xc2 body length.
        let h = Header::request(1, true, HESSIAN2_ID, 0xc2);
        let hex: String = h.to_bytes().iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(hex, "dabbc2000000000000000001000000c2");
        assert_eq!(Header::request(2, false, 2, 0).flag, 0x82);
    }

    #[test]
    fn parse_response_and_reject_bad_input() {
        let mut b = [0u8; 16];
        b[..16].copy_from_slice(&[
            0xda, 0xbb, 0x02, 0x14, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0x0c,
        ]);
        let h = Header::parse(&b).unwrap();
        assert_eq!((h.status, h.id, h.body_len), (20, 1, 12));
        assert!(!h.is_request() && !h.is_event() && h.serialization() == 2);
        b[0] = 0x12;
        assert!(matches!(
            Header::parse(&b),
            Err(DubboError::BadMagic { found: 0x12bb })
        ));
        b[0] = 0xda;
        b[12] = 0x80;
        assert!(matches!(
            Header::parse(&b),
            Err(DubboError::BadLength { .. })
        ));
    }
}
