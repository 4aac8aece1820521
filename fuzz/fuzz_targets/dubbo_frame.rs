//! Fuzzes the Dubbo2 frame decoder and response body decoder:
//! `cargo +nightly fuzz run dubbo_frame` (from the repository root). The input is fed in
//! chunks (the first byte picks the chunk size) as a provider's byte stream; every frame
//! found is decoded as a response. Any input must give frames or errors, never a panic or
//! an unbounded allocation.
#![no_main]

use bytes::BytesMut;
use libfuzzer_sys::fuzz_target;
use protocol_dubbo::frame::{Decoded, FrameDecoder};
use protocol_dubbo::response::decode_response;

fuzz_target!(|data: &[u8]| {
    let Some((&first, rest)) = data.split_first() else {
        return;
    };
    let chunk = usize::from(first % 64) + 1;
    let mut dec = FrameDecoder::new(64 * 1024);
    let mut buf = BytesMut::new();
    for part in rest.chunks(chunk) {
        buf.extend_from_slice(part);
        loop {
            match dec.decode(&mut buf) {
                Ok(Some(Decoded::Frame(f))) => {
                    let _ = decode_response(&f, "fuzz");
                }
                Ok(Some(Decoded::Oversized(_))) => {}
                Ok(None) => break,
                Err(_) => return,
            }
        }
    }
});
