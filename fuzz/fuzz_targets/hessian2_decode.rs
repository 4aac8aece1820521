//! Fuzzes the Hessian 2.0 decoder: `RUSTC_BOOTSTRAP=1 cargo fuzz run hessian2_decode` (from the
//! repository root). Any input must decode to values or an error, never a panic, a stack
//! overflow or an unbounded allocation. Whatever decodes must re-encode, and the re-encoded
//! stream must decode to a value that encodes to the same bytes again (encode/decode agree).
//! The input is also read as a Dubbo2 request body (the typed readers in the order a provider
//! uses them, then the attachments) and by each typed reader alone.
//!
//! Everything runs with the production limits ([`Limits::DEFAULT`]: depth 256, lengths 8 MiB,
//! a memory budget of 16 bytes per input byte and at least 32 MiB), and under libFuzzer
//! (`cfg(fuzzing)`) the memory a `read_json` holds afterwards (counted by the allocator) must
//! not exceed what the decoder charged to its budget: every allocation made for a value is
//! charged. (The corpus replay in `tests/tests/fuzz_corpora.rs` compiles this file without
//! `cfg(fuzzing)`: its threads share the allocator, so it checks the budget only.)
//! `scripts/fuzz.sh` runs this target under an RSS cap (`-rss_limit_mb`, 512 MB for it).
#![no_main]

use hessian2::{Decoder, Encoder, Limits};
use libfuzzer_sys::fuzz_target;

#[cfg(fuzzing)]
#[global_allocator]
static GLOBAL: &stats_alloc::StatsAlloc<std::alloc::System> = &stats_alloc::INSTRUMENTED_SYSTEM;

/// The production limits.
const LIMITS: Limits = Limits::DEFAULT;
#[cfg(fuzzing)]
/// What a decoder may hold besides what it charges: its nesting stack past the inline part
/// (at most `max_depth` entries of 8 bytes) and error messages.
const UNCHARGED: i64 = 64 * 1024;

/// `read_json` holds no more than it charged, and never more than its budget.
fn charged_holds(data: &[u8]) {
    #[cfg(fuzzing)]
    let region = stats_alloc::Region::new(GLOBAL);
    let mut d = Decoder::with_limits(data, LIMITS);
    let r = d.read_json();
    #[cfg(fuzzing)]
    {
        let s = region.change();
        let held = s.bytes_allocated as i64 - s.bytes_deallocated as i64;
        let charged = d.memory_used() as i64;
        assert!(
            held <= charged + UNCHARGED,
            "read_json holds {held} bytes but charged {charged}"
        );
    }
    assert!(d.memory_used() <= d.memory_budget());
    drop(r);
}

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

/// A request body as a provider reads it: version, path, version, method, descriptor, the
/// arguments (up to the attachments map), the attachments.
fn as_request(data: &[u8]) -> Result<(), hessian2::Error> {
    let mut d = Decoder::with_limits(data, LIMITS);
    d.read_str()?;
    d.read_str()?;
    d.read_opt_str()?;
    d.read_str()?;
    d.read_str()?;
    for _ in 0..16 {
        if matches!(d.peek(), Some(b'H') | None) {
            break;
        }
        d.read()?;
    }
    d.read_map_str()?;
    Ok(())
}

fuzz_target!(|data: &[u8]| {
    charged_holds(data);
    let _ = Decoder::with_limits(data, LIMITS).read_map_str();
    let _ = Decoder::with_limits(data, LIMITS).read_json();
    let _ = as_request(data);
    let _ = Decoder::with_limits(data, LIMITS).read_int();
    let _ = Decoder::with_limits(data, LIMITS).read_long();
    let _ = Decoder::with_limits(data, LIMITS).read_double();
    let _ = Decoder::with_limits(data, LIMITS).read_bool();
    let _ = Decoder::with_limits(data, LIMITS).read_null();
    let _ = Decoder::with_limits(data, LIMITS).read_str();
    let Some((first, n)) = reencode(data, 16) else {
        return;
    };
    let Some((second, m)) = reencode(&first, n) else {
        panic!("our own encoding does not decode");
    };
    assert_eq!(n, m, "value count changed");
    assert!(first == second, "encode(decode(encode(decode(x)))) differs");
});
