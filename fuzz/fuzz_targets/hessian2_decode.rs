//! Fuzzes the Hessian 2.0 decoder: `RUSTC_BOOTSTRAP=1 cargo fuzz run hessian2_decode` (from the
//! repository root). Any input must decode to values or an error, never a panic, a stack
//! overflow or an unbounded allocation. Whatever decodes must re-encode, and the re-encoded
//! stream must decode to a value that encodes to the same bytes again (encode/decode agree).
#![no_main]

use hessian2::{Decoder, Encoder, Limits};
use libfuzzer_sys::fuzz_target;

const LIMITS: Limits = Limits {
    max_depth: 64,
    max_len: 1 << 20,
};

fn reencode(bytes: &[u8], max_values: usize) -> Option<(Vec<u8>, usize)> {
    let mut d = Decoder::with_limits(bytes, LIMITS);
    let mut e = Encoder::new();
    let mut n = 0;
    while n < max_values && !d.is_empty() {
        match d.read() {
            Ok(v) => {
                if let Err(err) = e.write(&v) {
                    panic!("a decoded value does not encode: {err}");
                }
                n += 1;
            }
            Err(_) => break,
        }
    }
    (n > 0).then(|| (e.into_bytes(), n))
}

fuzz_target!(|data: &[u8]| {
    let _ = Decoder::with_limits(data, LIMITS).read_map_str();
    let _ = Decoder::with_limits(data, LIMITS).read_json();
    let Some((first, n)) = reencode(data, 16) else {
        return;
    };
    let Some((second, m)) = reencode(&first, n) else {
        panic!("our own encoding does not decode");
    };
    assert_eq!(n, m, "value count changed");
    assert!(first == second, "encode(decode(encode(decode(x)))) differs");
});
