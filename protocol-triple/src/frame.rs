//! The gRPC length-prefixed message framing: 1 byte compressed flag, a big-endian u32 length,
//! then the message, as gRPC defines it.
//!
//! [`FrameDecoder`] is incremental (DATA frames split messages anywhere), checks the length
//! against the limit as soon as the 5-byte prefix is known (before buffering anything), and
//! slices whole messages out of a received chunk without copying when they are not split.
//! It never panics on any input (fuzz target `triple_frame`).

use std::collections::VecDeque;

use bytes::{Buf, BufMut, Bytes, BytesMut};

/// Length of the message prefix.
pub const PREFIX_LEN: usize = 5;

/// One framed message as received: the compressed flag and the (possibly compressed) bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawMessage {
    /// The per-message compressed flag (byte 0 == 1).
    pub compressed: bool,
    /// The message bytes as sent.
    pub data: Bytes,
}

/// A framing error.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FrameError {
    /// The flag byte is neither 0 nor 1.
    #[error("invalid gRPC message flag 0x{0:02x} (expected 0 or 1)")]
    BadFlag(u8),
    /// The announced length is over the limit.
    #[error("message of {size} bytes exceeds the limit of {limit} bytes")]
    TooLarge {
        /// Announced length.
        size: usize,
        /// Limit.
        limit: usize,
    },
    /// The stream ended inside a message.
    #[error("stream ended inside a gRPC message ({have} of {need} bytes received)")]
    Truncated {
        /// Bytes of the message (prefix included) that arrived.
        have: usize,
        /// Bytes that were announced (prefix included; 5 when the prefix itself is cut).
        need: usize,
    },
}

/// Writes the prefix for a message of `len` bytes.
pub fn put_prefix(buf: &mut BytesMut, compressed: bool, len: u32) {
    buf.put_u8(u8::from(compressed));
    buf.put_u32(len);
}

/// Frames one uncompressed message into a new buffer. Errors: a message longer than the
/// prefix can announce (`u32::MAX` bytes).
pub fn encode(message: &[u8]) -> Result<Bytes, FrameError> {
    let len = u32::try_from(message.len()).map_err(|_| FrameError::TooLarge {
        size: message.len(),
        limit: u32::MAX as usize,
    })?;
    let mut buf = BytesMut::with_capacity(PREFIX_LEN + message.len());
    put_prefix(&mut buf, false, len);
    buf.extend_from_slice(message);
    Ok(buf.freeze())
}

/// Incremental decoder of length-prefixed messages.
#[derive(Debug)]
pub struct FrameDecoder {
    buf: BytesMut,
    /// Announced (flag, length) of the message being assembled in `buf`.
    want: Option<(bool, usize)>,
    ready: VecDeque<RawMessage>,
    max_len: usize,
}

impl FrameDecoder {
    /// A decoder accepting messages of at most `max_len` bytes.
    pub fn new(max_len: usize) -> Self {
        FrameDecoder {
            buf: BytesMut::new(),
            want: None,
            ready: VecDeque::new(),
            max_len,
        }
    }

    /// Feeds the next chunk of the body.
    pub fn push(&mut self, mut chunk: Bytes) -> Result<(), FrameError> {
        while !chunk.is_empty() {
            if self.buf.is_empty() && self.want.is_none() {
                // Fast path: whole messages straight out of the chunk, no copy.
                if chunk.len() < PREFIX_LEN {
                    self.buf.extend_from_slice(&chunk);
                    return Ok(());
                }
                let (compressed, len) = self.prefix(&chunk[..PREFIX_LEN])?;
                if chunk.len() >= PREFIX_LEN + len {
                    chunk.advance(PREFIX_LEN);
                    let data = chunk.split_to(len);
                    self.ready.push_back(RawMessage { compressed, data });
                    continue;
                }
                chunk.advance(PREFIX_LEN);
                self.want = Some((compressed, len));
                self.buf.reserve(len);
                continue;
            }
            match self.want {
                None => {
                    // Completing a split prefix.
                    let need = PREFIX_LEN - self.buf.len();
                    let take = need.min(chunk.len());
                    self.buf.extend_from_slice(&chunk[..take]);
                    chunk.advance(take);
                    if self.buf.len() == PREFIX_LEN {
                        let (compressed, len) = self.prefix(&self.buf[..])?;
                        self.buf.clear();
                        if len == 0 {
                            self.ready.push_back(RawMessage {
                                compressed,
                                data: Bytes::new(),
                            });
                        } else {
                            self.want = Some((compressed, len));
                            self.buf.reserve(len);
                        }
                    }
                }
                Some((compressed, len)) => {
                    let need = len - self.buf.len();
                    let take = need.min(chunk.len());
                    self.buf.extend_from_slice(&chunk[..take]);
                    chunk.advance(take);
                    if self.buf.len() == len {
                        let data = self.buf.split().freeze();
                        self.want = None;
                        self.ready.push_back(RawMessage { compressed, data });
                    }
                }
            }
        }
        Ok(())
    }

    fn prefix(&self, p: &[u8]) -> Result<(bool, usize), FrameError> {
        let compressed = match p[0] {
            0 => false,
            1 => true,
            f => return Err(FrameError::BadFlag(f)),
        };
        let len = u32::from_be_bytes([p[1], p[2], p[3], p[4]]) as usize;
        if len > self.max_len {
            return Err(FrameError::TooLarge {
                size: len,
                limit: self.max_len,
            });
        }
        Ok((compressed, len))
    }

    /// The next complete message, if any.
    pub fn next_message(&mut self) -> Option<RawMessage> {
        self.ready.pop_front()
    }

    /// Checks that the body did not end inside a message.
    pub fn finish(&self) -> Result<(), FrameError> {
        match self.want {
            Some((_, len)) => Err(FrameError::Truncated {
                have: PREFIX_LEN + self.buf.len(),
                need: PREFIX_LEN + len,
            }),
            None if !self.buf.is_empty() => Err(FrameError::Truncated {
                have: self.buf.len(),
                need: PREFIX_LEN,
            }),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn two_messages() -> Vec<u8> {
        let mut v = encode(b"hello").unwrap().to_vec();
        v.extend_from_slice(&encode(b"").unwrap());
        v.extend_from_slice(&[1, 0, 0, 0, 3, 9, 8, 7]);
        v
    }

    #[test]
    fn decodes_messages_split_at_every_byte() {
        let all = two_messages();
        for cut in 0..=all.len() {
            let mut d = FrameDecoder::new(1024);
            d.push(Bytes::copy_from_slice(&all[..cut])).unwrap();
            d.push(Bytes::copy_from_slice(&all[cut..])).unwrap();
            d.finish().unwrap();
            let m1 = d.next_message().unwrap();
            assert_eq!((m1.compressed, &m1.data[..]), (false, &b"hello"[..]));
            let m2 = d.next_message().unwrap();
            assert!(m2.data.is_empty());
            let m3 = d.next_message().unwrap();
            assert_eq!((m3.compressed, &m3.data[..]), (true, &[9u8, 8, 7][..]));
            assert!(d.next_message().is_none());
        }
    }

    #[test]
    fn byte_by_byte() {
        let all = two_messages();
        let mut d = FrameDecoder::new(1024);
        for b in &all {
            d.push(Bytes::copy_from_slice(&[*b])).unwrap();
        }
        d.finish().unwrap();
        assert_eq!(d.next_message().unwrap().data, Bytes::from_static(b"hello"));
    }

    #[test]
    fn rejects_oversize_before_buffering_and_bad_flags() {
        let mut d = FrameDecoder::new(4);
        let e = d
            .push(Bytes::from_static(&[0, 0xff, 0xff, 0xff, 0xff]))
            .unwrap_err();
        assert_eq!(
            e,
            FrameError::TooLarge {
                size: u32::MAX as usize,
                limit: 4
            }
        );
        let mut d = FrameDecoder::new(4);
        assert_eq!(
            d.push(Bytes::from_static(&[7, 0, 0, 0, 0])).unwrap_err(),
            FrameError::BadFlag(7)
        );
    }

    #[test]
    fn random_input_never_panics() {
        // A cheap in-tree companion of the `triple_frame` fuzz target.
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for _ in 0..2000 {
            let len = (next() % 64) as usize;
            let mut data: Vec<u8> = (0..len).map(|_| next() as u8).collect();
            if let Some(b) = data.first_mut() {
                *b &= 1;
            }
            let step = (next() % 7 + 1) as usize;
            let mut d = FrameDecoder::new(32);
            for c in data.chunks(step) {
                if d.push(Bytes::copy_from_slice(c)).is_err() {
                    break;
                }
                while let Some(m) = d.next_message() {
                    let _ = crate::wrapper::decode_response(m.data);
                }
            }
            let _ = d.finish();
        }
    }

    #[test]
    fn truncation_is_reported() {
        let mut d = FrameDecoder::new(100);
        d.push(Bytes::from_static(&[0, 0, 0, 0, 10, 1, 2])).unwrap();
        assert_eq!(
            d.finish().unwrap_err(),
            FrameError::Truncated { have: 7, need: 15 }
        );
        let mut d = FrameDecoder::new(100);
        d.push(Bytes::from_static(&[0, 0])).unwrap();
        assert_eq!(
            d.finish().unwrap_err(),
            FrameError::Truncated { have: 2, need: 5 }
        );
    }
}
