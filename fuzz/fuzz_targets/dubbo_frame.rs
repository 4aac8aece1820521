//! Fuzzes the Dubbo2 client's decoding of a provider's byte stream:
//! `RUSTC_BOOTSTRAP=1 cargo fuzz run dubbo_frame` (from the repository root).
//!
//! The first byte picks the mode and the chunk size (the stream arrives in chunks of 1-64
//! bytes, as reads do):
//! - stream mode (high bit clear): the rest is the raw stream;
//! - body mode (high bit set): the next two bytes are the flag and status of a well-formed
//!   header the target writes in front of the rest, so that arbitrary bodies reach the body
//!   decoders without the fuzzer having to find the magic and a matching length first.
//!
//! Every frame goes where the connection's reader sends it: a response to the response decoder
//! (`decode_response`: result flags, values, attachments, exceptions, status messages), an event
//! to the event reader (heartbeat `N`, readonly `"R"`/`"W"`). Checked: no panic, no unbounded
//! allocation (64 KiB payload limit, the decoders' limits), every frame's body has the length
//! its header announced and the header survives `to_bytes`/`parse`, and an oversized frame is
//! skipped without losing the frames after it.
#![no_main]

use bytes::BytesMut;
use libfuzzer_sys::fuzz_target;
use protocol_dubbo::frame::{Decoded, Frame, FrameDecoder};
use protocol_dubbo::header::{Header, HEADER_LEN, HESSIAN2_ID};
use protocol_dubbo::response::decode_response;

const PAYLOAD: usize = 64 * 1024;

fn check_frame(h: &Header, body_len: usize) {
    assert_eq!(
        h.body_len as usize, body_len,
        "body length differs from the header"
    );
    let again = Header::parse(&h.to_bytes()).expect("a parsed header parses again");
    assert_eq!(&again, h, "header changed through to_bytes/parse");
}

fn on_frame(frame: &Frame) {
    let (h, body) = (&frame.header, &frame.body[..]);
    check_frame(h, body.len());
    if h.is_event() {
        // What the connection does with an event: heartbeat `N`, or a string.
        if body != b"N" {
            let _ = hessian2::Decoder::new(body).read_str();
        }
    } else if !h.is_request() {
        let _ = decode_response(frame, "fuzz");
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&first, rest)) = data.split_first() else {
        return;
    };
    let chunk = usize::from(first % 64) + 1;
    let stream: Vec<u8> = if first & 0x80 != 0 {
        let [flag, status, body @ ..] = rest else {
            return;
        };
        let h = Header {
            // Mostly Hessian2 responses; the flag's other bits as given.
            flag: if flag & 0x1f == 0 {
                flag | HESSIAN2_ID
            } else {
                *flag
            },
            status: *status,
            id: 1,
            body_len: body.len() as u32,
        };
        let mut s = Vec::with_capacity(HEADER_LEN + body.len());
        s.extend_from_slice(&h.to_bytes());
        s.extend_from_slice(body);
        s
    } else {
        rest.to_vec()
    };
    let mut dec = FrameDecoder::new(PAYLOAD);
    let mut buf = BytesMut::new();
    let mut frames = 0usize;
    for part in stream.chunks(chunk) {
        buf.extend_from_slice(part);
        loop {
            match dec.decode(&mut buf) {
                Ok(Some(Decoded::Frame(f))) => {
                    frames += 1;
                    on_frame(&f);
                }
                Ok(Some(Decoded::Oversized(h))) => {
                    assert!(
                        h.body_len as usize > PAYLOAD,
                        "oversized but within the limit"
                    );
                }
                Ok(None) => break,
                Err(_) => return,
            }
        }
        assert!(
            buf.len() < HEADER_LEN + PAYLOAD + chunk,
            "the read buffer holds more than one frame's worth"
        );
    }
    if first & 0x80 != 0 && rest.len() >= 2 && rest.len() - 2 <= PAYLOAD {
        assert_eq!(frames, 1, "a well-formed frame was not decoded");
    }
});
