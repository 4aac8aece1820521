//! Fuzz target: the Triple (gRPC) frame decoder and the TripleResponseWrapper decoder.
//! The first byte picks where the input is split into chunks (HTTP/2 DATA frames split
//! messages anywhere); every message is then decoded as a response wrapper and, if its
//! compressed flag is set, run through the gzip decoder with a limit. Nothing may panic.
#![no_main]

use bytes::Bytes;
use libfuzzer_sys::fuzz_target;
use protocol_triple::compression::Encoding;
use protocol_triple::frame::FrameDecoder;
use protocol_triple::wrapper::decode_response;

fuzz_target!(|data: &[u8]| {
    let Some((&step, rest)) = data.split_first() else {
        return;
    };
    let step = usize::from(step % 64) + 1;
    let mut d = FrameDecoder::new(1 << 20);
    for chunk in rest.chunks(step) {
        if d.push(Bytes::copy_from_slice(chunk)).is_err() {
            return;
        }
        while let Some(m) = d.next_message() {
            let body = if m.compressed {
                match Encoding::Gzip.decompress(&m.data, 1 << 20) {
                    Ok(b) => b,
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
