//! Stands in for `libfuzzer-sys` so that every fuzz target in `fuzz/fuzz_targets/` compiles,
//! unchanged, as a module of an ordinary test: `fuzz_target!(|data: &[u8]| body)` becomes
//! `pub fn run(data: &[u8]) body`. The corpus regression test (`tests/tests/fuzz_corpora.rs`)
//! depends on this crate under the name `libfuzzer_sys` and feeds every corpus file to
//! `run`: the same entry point as the fuzzer's, on stable Rust, without libFuzzer.
//!
//! ```
//! use fuzz_shim::fuzz_target;
//! fuzz_target!(|data: &[u8]| {
//!     assert!(data.len() < 4);
//! });
//! run(b"abc");
//! ```

/// `fuzz_target!(|data: &[u8]| body)` → `pub fn run(data: &[u8]) body`.
#[macro_export]
macro_rules! fuzz_target {
    (|$data:ident: &[u8]| $body:expr) => {
        /// The fuzz target's body.
        pub fn run($data: &[u8]) {
            $body
        }
    };
}
