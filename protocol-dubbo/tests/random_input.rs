//! Random byte streams (a deterministic generator, 20,000 cases) through the frame decoder and
//! the response decoder: errors are fine, panics are not. The long run is the `dubbo_frame`
//! fuzz target (`fuzz/fuzz_targets/dubbo_frame.rs`).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use bytes::BytesMut;
use protocol_dubbo::frame::{Decoded, FrameDecoder};
use protocol_dubbo::header::Header;
use protocol_dubbo::response::decode_response;

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

#[test]
fn random_frames_never_panic() {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut frames = 0;
    for case in 0..20_000 {
        let len = (rng.next() % 96) as usize;
        let mut body: Vec<u8> = (0..len).map(|_| rng.next() as u8).collect();
        // Often a plausible start: a result flag and a Hessian tag.
        if case % 2 == 0 && !body.is_empty() {
            body[0] = 0x90 + (rng.next() % 6) as u8;
        }
        let status = if case % 3 == 0 {
            (rng.next() % 101) as u8
        } else {
            20
        };
        let mut h = Header {
            flag: 0x02,
            status,
            id: case,
            body_len: body.len() as u32,
        };
        if case % 7 == 0 {
            h.body_len = rng.next() as u32;
        }
        if case % 11 == 0 {
            h.flag = rng.next() as u8;
        }
        let mut stream = h.to_bytes().to_vec();
        stream.extend_from_slice(&body);
        if case % 13 == 0 {
            stream[0] = rng.next() as u8;
        }
        let mut dec = FrameDecoder::new(4096);
        let mut buf = BytesMut::new();
        let chunk = 1 + (rng.next() % 17) as usize;
        'feed: for part in stream.chunks(chunk) {
            buf.extend_from_slice(part);
            loop {
                match dec.decode(&mut buf) {
                    Ok(Some(Decoded::Frame(f))) => {
                        frames += 1;
                        let _ = decode_response(&f, "random");
                    }
                    Ok(Some(Decoded::Oversized(_))) => {}
                    Ok(None) => break,
                    Err(_) => break 'feed,
                }
            }
        }
    }
    assert!(frames > 5_000, "only {frames} frames decoded");
}
