//! [`MockValueCache`]: mock strings read once, not per call.
//!
//! Java decodes and parses the mock string (`URL.decode`, `normalizeMock`,
//! `parseMockValue`: JSON for maps and lists) on every mocked call; under a degradation every
//! call is mocked, so the parse would be paid per call. What it yields depends only on the raw
//! `mock` value and the call's return type, so it is kept by that pair; what depends on the
//! mock registry (is a `throw` class known, which impl mock is registered) is still decided
//! per call. Both keys come from outside (a provider or override URL, the caller's return
//! type), so at most [`MOCK_CACHE_CAP`] are kept, each for a mock string of at most
//! [`MOCK_CACHE_MAX_LEN`] bytes; others are read per call, as in Java.

use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::RwLock;
use rustc_hash::FxHashMap;

use crate::rpc::{RpcError, RpcResponse};

/// A mock string as read: decoded, normalized and, for `return`, its value parsed.
#[derive(Debug, Clone)]
pub(crate) enum Parsed {
    /// `return <value>`: the answer.
    Value(RpcResponse),
    /// `return <value>` whose value does not fit the return type.
    BadValue {
        /// The value text.
        value: String,
        /// Why it does not parse.
        reason: String,
    },
    /// `throw [class]` (class empty: the default mocked exception).
    Throw(String),
    /// An impl mock: the normalized text (`default` or a class name).
    Impl(String),
    /// Not decodable.
    Bad(RpcError),
}

/// Most outcomes kept by one cache.
pub const MOCK_CACHE_CAP: usize = 256;
/// Longest mock string kept.
pub const MOCK_CACHE_MAX_LEN: usize = 64 * 1024;

/// Mock strings as read, by (raw value, return type).
#[derive(Debug, Default)]
pub struct MockValueCache {
    /// By the hash of the pair (found without allocating), then compared.
    map: RwLock<FxHashMap<u64, Vec<Entry>>>,
    len: std::sync::atomic::AtomicUsize,
    parsed: AtomicU64,
}

#[derive(Debug)]
struct Entry {
    raw: Box<str>,
    return_type: Option<Box<str>>,
    parsed: Parsed,
}

fn key(raw: &str, return_type: Option<&str>) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = rustc_hash::FxHasher::default();
    raw.hash(&mut h);
    return_type.hash(&mut h);
    h.finish()
}

impl MockValueCache {
    /// The reading of (`raw`, `return_type`), made with `make` when not kept.
    pub(crate) fn get_or(
        &self,
        raw: &str,
        return_type: Option<&str>,
        make: impl FnOnce() -> Parsed,
    ) -> Parsed {
        let k = key(raw, return_type);
        if let Some(e) = self.map.read().get(&k).and_then(|v| {
            v.iter()
                .find(|e| &*e.raw == raw && e.return_type.as_deref() == return_type)
        }) {
            return e.parsed.clone();
        }
        self.parsed.fetch_add(1, Ordering::Relaxed);
        let parsed = make();
        if raw.len() <= MOCK_CACHE_MAX_LEN && self.len.load(Ordering::Relaxed) < MOCK_CACHE_CAP {
            let mut map = self.map.write();
            let v = map.entry(k).or_default();
            if !v
                .iter()
                .any(|e| &*e.raw == raw && e.return_type.as_deref() == return_type)
            {
                v.push(Entry {
                    raw: Box::from(raw),
                    return_type: return_type.map(Box::from),
                    parsed: parsed.clone(),
                });
                self.len.fetch_add(1, Ordering::Relaxed);
            }
        }
        parsed
    }

    /// How many mock strings were read (decoded and parsed) so far: once per distinct
    /// (value, return type) while the cache has room.
    pub fn parsed(&self) -> u64 {
        self.parsed.load(Ordering::Relaxed)
    }
}
