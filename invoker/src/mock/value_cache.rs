//! [`MockValueCache`]: the answers of `return` and `throw` mocks, read once per mock string.
//!
//! Java decodes and parses the mock string (`URL.decode`, `normalizeMock`,
//! `parseMockValue`: JSON for maps and lists) on every mocked call; under a degradation every
//! call is mocked, so the parse would be paid per call. The outcome depends only on the raw
//! `mock` value and the call's return type, so it is kept by that pair. Both come from
//! outside (a provider or override URL, the caller's return type), so at most
//! [`MOCK_CACHE_CAP`] outcomes are kept, each for a mock string of at most
//! [`MOCK_CACHE_MAX_LEN`] bytes; others are parsed per call, as in Java.

use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::RwLock;
use rustc_hash::FxHashMap;

use crate::rpc::{RpcError, RpcResponse};

/// Most outcomes kept by one cache.
pub const MOCK_CACHE_CAP: usize = 256;
/// Longest mock string kept.
pub const MOCK_CACHE_MAX_LEN: usize = 64 * 1024;

/// A kept outcome: the answer of a `return` mock or the error of a `throw` (or bad) mock;
/// `None` for an impl mock (its class name, looked up per call).
pub(crate) type Outcome = Option<Result<RpcResponse, RpcError>>;

/// The outcomes of mock strings by (raw value, return type).
#[derive(Debug, Default)]
pub struct MockValueCache {
    map: RwLock<FxHashMap<(Box<str>, Option<Box<str>>), Outcome>>,
    parsed: AtomicU64,
}

impl MockValueCache {
    /// The outcome of (`raw`, `return_type`), computing it with `make` when not kept.
    pub(crate) fn get_or(
        &self,
        raw: &str,
        return_type: Option<&str>,
        make: impl FnOnce() -> Outcome,
    ) -> Outcome {
        if let Some(o) = self
            .map
            .read()
            .get(&(Box::from(raw), return_type.map(Box::from)))
        {
            return o.clone();
        }
        self.parsed.fetch_add(1, Ordering::Relaxed);
        let o = make();
        if raw.len() <= MOCK_CACHE_MAX_LEN {
            let mut map = self.map.write();
            if map.len() < MOCK_CACHE_CAP {
                map.insert((Box::from(raw), return_type.map(Box::from)), o.clone());
            }
        }
        o
    }

    /// How many mock strings were read (decoded and parsed) so far: once per distinct
    /// (value, return type) while the cache has room.
    pub fn parsed(&self) -> u64 {
        self.parsed.load(Ordering::Relaxed)
    }
}
