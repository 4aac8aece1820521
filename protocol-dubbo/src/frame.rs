//! Incremental frame decoding from a byte stream, with the payload limit.
//!
//! [`FrameDecoder::decode`] takes whole frames off the front of a read buffer without copying
//! the body (it is split off as [`Bytes`]). A response whose header announces more than the
//! `payload` limit is reported as [`Decoded::Oversized`] at once and its body is skipped as it
//! arrives, as Java's `finishRespWhenOverPayload` does (status 90 to the caller, the connection
//! stays usable). A wrong magic is fatal for the connection: the stream cannot be re-synced
//! safely by a client.

use bytes::{Buf, Bytes, BytesMut};

use crate::error::DubboError;
use crate::header::{Header, HEADER_LEN};

/// Dubbo's default `payload` limit: 8 MiB.
pub use invoker::rpc::DEFAULT_PAYLOAD;

/// One frame: its header and its body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Frame {
    /// The header.
    pub header: Header,
    /// The body bytes (`header.body_len` of them).
    pub body: Bytes,
}

/// What [`FrameDecoder::decode`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decoded {
    /// A complete frame.
    Frame(Frame),
    /// A frame whose body exceeds the limit: its body is being skipped.
    Oversized(Header),
}

/// Splits a byte stream into frames.
#[derive(Debug, Clone)]
pub struct FrameDecoder {
    max_body: usize,
    skip: u64,
}

impl FrameDecoder {
    /// A decoder that refuses bodies longer than `max_body` bytes.
    pub fn new(max_body: usize) -> Self {
        FrameDecoder { max_body, skip: 0 }
    }

    /// Takes the next frame off `buf`: `Ok(None)` when more bytes are needed. An error means
    /// the stream is corrupt and the connection must be closed.
    pub fn decode(&mut self, buf: &mut BytesMut) -> Result<Option<Decoded>, DubboError> {
        if self.skip > 0 {
            let n = usize::try_from(self.skip)
                .unwrap_or(usize::MAX)
                .min(buf.len());
            buf.advance(n);
            self.skip -= n as u64;
            if self.skip > 0 {
                return Ok(None);
            }
        }
        if buf.len() < HEADER_LEN {
            return Ok(None);
        }
        let mut raw = [0u8; HEADER_LEN];
        raw.copy_from_slice(&buf[..HEADER_LEN]);
        let header = Header::parse(&raw)?;
        let len = header.body_len as usize;
        if len > self.max_body {
            buf.advance(HEADER_LEN);
            let n = len.min(buf.len());
            buf.advance(n);
            self.skip = (len - n) as u64;
            return Ok(Some(Decoded::Oversized(header)));
        }
        if buf.len() < HEADER_LEN + len {
            buf.reserve(HEADER_LEN + len - buf.len());
            return Ok(None);
        }
        buf.advance(HEADER_LEN);
        let body = buf.split_to(len).freeze();
        Ok(Some(Decoded::Frame(Frame { header, body })))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    fn frame(id: i64, status: u8, body: &[u8]) -> Vec<u8> {
        let mut h = Header::request(id, false, 2, body.len() as u32);
        h.flag = 0x02;
        h.status = status;
        let mut v = h.to_bytes().to_vec();
        v.extend_from_slice(body);
        v
    }

    #[test]
    fn frames_split_across_reads_and_many_per_read() {
        let mut all = frame(1, 20, b"\x91\x04rust");
        all.extend(frame(2, 20, b"\x4e"));
        let mut d = FrameDecoder::new(DEFAULT_PAYLOAD);
        let mut buf = BytesMut::new();
        let mut got = Vec::new();
        for b in &all {
            buf.extend_from_slice(&[*b]);
            while let Some(Decoded::Frame(f)) = d.decode(&mut buf).unwrap() {
                got.push(f);
            }
        }
        assert_eq!(got.len(), 2);
        assert_eq!(&got[0].body[..], b"\x91\x04rust");
        assert_eq!(got[1].header.id, 2);
        assert!(buf.is_empty());
    }

    #[test]
    fn oversized_body_is_reported_then_skipped() {
        let mut d = FrameDecoder::new(4);
        let mut buf = BytesMut::new();
        buf.extend_from_slice(&frame(7, 20, b"0123456789")[..20]);
        match d.decode(&mut buf).unwrap() {
            Some(Decoded::Oversized(h)) => assert_eq!((h.id, h.body_len), (7, 10)),
            other => panic!("{other:?}"),
        }
        assert_eq!(d.decode(&mut buf).unwrap(), None);
        buf.extend_from_slice(b"456789");
        buf.extend_from_slice(&frame(8, 20, b"N"));
        match d.decode(&mut buf).unwrap() {
            Some(Decoded::Frame(f)) => assert_eq!(f.header.id, 8),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn bad_magic_and_negative_length_are_errors() {
        let mut d = FrameDecoder::new(DEFAULT_PAYLOAD);
        let mut buf = BytesMut::from(&b"HTTP/1.1 200 OK\r\n\r\n"[..]);
        assert!(matches!(
            d.decode(&mut buf),
            Err(DubboError::BadMagic { .. })
        ));
        let mut f = frame(1, 20, b"");
        f[12] = 0xff;
        let mut buf = BytesMut::from(&f[..]);
        assert!(matches!(
            d.decode(&mut buf),
            Err(DubboError::BadLength { .. })
        ));
    }

    #[test]
    fn absurd_length_does_not_allocate_it() {
        let mut d = FrameDecoder::new(DEFAULT_PAYLOAD);
        let mut f = frame(1, 20, b"");
        f[12..16].copy_from_slice(&0x7fff_ffffu32.to_be_bytes());
        let mut buf = BytesMut::from(&f[..]);
        assert!(matches!(
            d.decode(&mut buf).unwrap(),
            Some(Decoded::Oversized(_))
        ));
        assert!(buf.capacity() < 1 << 20);
    }
}
