//! Fuzz target: the Triple (gRPC) frame decoder and the TripleResponseWrapper decoder, as the
//! client runs them on a response body.
//!
//! Byte 0 picks where the input is split into chunks (HTTP/2 DATA frames split messages
//! anywhere), byte 1 the message limit (1 B .. 1 MiB, so the over-limit path is reached) and
//! the response's `grpc-encoding` (identity, gzip, deflate). Every message goes through the
//! per-message compressed flag as `call.rs` does (a flagged message under identity is an
//! error), the decompression limit, then the response-wrapper decoder. Nothing may panic.
#![no_main]

use bytes::Bytes;
use libfuzzer_sys::fuzz_target;
use protocol_triple::compression::Encoding;
use protocol_triple::frame::FrameDecoder;
use protocol_triple::wrapper::decode_response;

fuzz_target!(|data: &[u8]| {
    let [step, knobs, rest @ ..] = data else {
        return;
    };
    let step = usize::from(step % 64) + 1;
    let limit = 1usize << (knobs % 21);
    let encoding = match knobs / 21 % 3 {
        0 => Encoding::Identity,
        1 => Encoding::Gzip,
        _ => Encoding::Deflate,
    };
    let mut d = FrameDecoder::new(limit);
    for chunk in rest.chunks(step) {
        if d.push(Bytes::copy_from_slice(chunk)).is_err() {
            return;
        }
        while let Some(m) = d.next_message() {
            assert!(m.data.len() <= limit);
            let body = if m.compressed {
                match encoding.decompress(&m.data, limit) {
                    Ok(b) => {
                        assert!(b.len() <= limit);
                        b
                    }
                    Err(_) => continue,
                }
            } else {
                m.data
            };
            let _ = decode_response(body);
        }
    }
    let _ = d.finish();
});
