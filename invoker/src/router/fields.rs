//! [`TargetFields`]: what routing reads from a provider list, read once per list.
//!
//! Provider URLs live in separate allocations; reading one param of 10k of them is 10k
//! cache misses, which dominated a rule change. A rule change on an unchanged list reuses
//! the columns its keys already read: per key, an id per provider and the distinct values
//! (most params are shared by every provider, so a condition is matched once per distinct
//! value), plus the parsed provider addresses of the tag router.

use std::borrow::Cow;
use std::sync::{Arc, OnceLock};

use parking_lot::Mutex;
use rustc_hash::FxHashMap;

use crate::router::sample::original_value;
use crate::router::tag::address::HostInfo;
use crate::router::target::Target;

/// One key over a provider list: `ids[i]` indexes `values` (`None`: absent).
#[derive(Debug)]
pub(crate) struct Column {
    pub ids: Box<[u32]>,
    pub values: Box<[Option<Box<str>>]>,
}

/// Columns and addresses of one provider list, filled on first use.
#[derive(Debug, Default)]
pub struct TargetFields {
    columns: Mutex<FxHashMap<Box<str>, Arc<Column>>>,
    hosts: OnceLock<Box<[HostInfo]>>,
    tags: OnceLock<Arc<[Option<Box<str>>]>>,
}

impl TargetFields {
    /// Empty (nothing read yet).
    pub fn new() -> TargetFields {
        TargetFields::default()
    }

    /// `URL#toOriginalMap().get(key)` of every target's `sample`.
    pub(crate) fn column(&self, key: &str, targets: &[Target]) -> Arc<Column> {
        if let Some(c) = self.columns.lock().get(key) {
            if c.ids.len() == targets.len() {
                return c.clone();
            }
        }
        let c = Arc::new(build_column(key, targets));
        self.columns.lock().insert(Box::from(key), c.clone());
        c
    }

    /// The static tag of every target.
    pub(crate) fn static_tags(&self, targets: &[Target]) -> Arc<[Option<Box<str>>]> {
        let t = self
            .tags
            .get_or_init(|| targets.iter().map(|t| t.tag.clone()).collect());
        if t.len() == targets.len() {
            t.clone()
        } else {
            targets.iter().map(|t| t.tag.clone()).collect()
        }
    }

    /// The parsed `host:port` of every target's raw URL.
    pub(crate) fn hosts(&self, targets: &[Target]) -> Cow<'_, [HostInfo]> {
        let parse = || -> Box<[HostInfo]> {
            targets
                .iter()
                .map(|t| HostInfo::new(t.raw.host().unwrap_or(""), t.raw.port()))
                .collect()
        };
        let h = self.hosts.get_or_init(parse);
        if h.len() == targets.len() {
            Cow::Borrowed(&h[..])
        } else {
            // Not the list these fields were filled for: read it without caching.
            Cow::Owned(parse().into_vec())
        }
    }
}

fn build_column(key: &str, targets: &[Target]) -> Column {
    let mut index: FxHashMap<Cow<'_, str>, u32> = FxHashMap::default();
    let mut values: Vec<Option<Box<str>>> = vec![None];
    let mut ids = Vec::with_capacity(targets.len());
    let mut last: Option<(*const u8, usize, u32)> = None;
    for t in targets {
        let id = match original_value(&t.sample, key) {
            None => 0,
            Some(v) => {
                // Shared values are often the same interned string: skip the hash.
                let p = (v.as_ptr(), v.len());
                match last {
                    Some((lp, ll, id)) if matches!(v, Cow::Borrowed(_)) && (lp, ll) == p => id,
                    _ => {
                        let next = values.len() as u32;
                        let id = *index.entry(v.clone()).or_insert_with(|| {
                            values.push(Some(Box::from(&*v)));
                            next
                        });
                        if matches!(v, Cow::Borrowed(_)) {
                            last = Some((p.0, p.1, id));
                        }
                        id
                    }
                }
            }
        };
        ids.push(id);
    }
    Column {
        ids: ids.into_boxed_slice(),
        values: values.into_boxed_slice(),
    }
}
