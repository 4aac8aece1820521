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
use crate::router::target::Target;
use registry_core::ip::HostInfo;

/// One key over a provider list: `ids[i]` indexes `values` (`None`: absent).
#[derive(Debug)]
pub(crate) struct Column {
    pub ids: Box<[u32]>,
    /// Shared strings: a column carried over to a new list clones them without copying.
    pub values: Box<[Option<Arc<str>>]>,
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

    /// The fields of a new list `targets` that carry over what `prev` read: `old[i]` is the
    /// position, in the list `prev` was filled for, of the same target (same invoker and
    /// URL objects), `None` for a new one. Only the new targets' URLs are read; a key read
    /// of no previous target stays lazy.
    pub(crate) fn derive(
        prev: &TargetFields,
        old: &[Option<u32>],
        targets: &[Target],
    ) -> TargetFields {
        let columns: FxHashMap<Box<str>, Arc<Column>> = prev
            .columns
            .lock()
            .iter()
            .map(|(k, c)| (k.clone(), Arc::new(derive_column(k, c, old, targets))))
            .collect();
        let hosts = OnceLock::new();
        if let Some(ph) = prev.hosts.get() {
            let h: Box<[HostInfo]> = targets
                .iter()
                .zip(old)
                .map(|(t, o)| match o.and_then(|j| ph.get(j as usize)) {
                    Some(h) => h.clone(),
                    None => HostInfo::new(t.raw.host().unwrap_or(""), t.raw.port()),
                })
                .collect();
            let _ = hosts.set(h);
        }
        TargetFields {
            columns: Mutex::new(columns),
            hosts,
            tags: OnceLock::new(),
        }
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

/// `prev` carried over to a new list: reused targets keep their ids, new ones are read and
/// their values added (values no target uses any more stay; they only cost a match). A few
/// new targets look their value up by a scan; past [`SCAN_LIMIT`] an index is built.
fn derive_column(key: &str, prev: &Column, old: &[Option<u32>], targets: &[Target]) -> Column {
    const SCAN_LIMIT: usize = 16;
    let mut values: Vec<Option<Arc<str>>> = prev.values.to_vec();
    let mut index: Option<FxHashMap<Arc<str>, u32>> = None;
    let mut scans = 0usize;
    let ids = targets
        .iter()
        .zip(old)
        .map(|(t, o)| {
            if let Some(&id) = o.and_then(|j| prev.ids.get(j as usize)) {
                return id;
            }
            let Some(v) = original_value(&t.sample, key) else {
                return 0;
            };
            let found = match &index {
                Some(ix) => ix.get(&*v).copied(),
                None if scans < SCAN_LIMIT => {
                    scans += 1;
                    values
                        .iter()
                        .position(|x| x.as_deref() == Some(&*v))
                        .map(|i| i as u32)
                }
                None => {
                    let ix = index.insert(
                        values
                            .iter()
                            .enumerate()
                            .filter_map(|(i, x)| Some((x.clone()?, i as u32)))
                            .collect(),
                    );
                    ix.get(&*v).copied()
                }
            };
            if let Some(id) = found {
                return id;
            }
            let id = values.len() as u32;
            let v: Arc<str> = Arc::from(&*v);
            if let Some(ix) = &mut index {
                ix.insert(v.clone(), id);
            }
            values.push(Some(v));
            id
        })
        .collect();
    Column {
        ids,
        values: values.into_boxed_slice(),
    }
}

fn build_column(key: &str, targets: &[Target]) -> Column {
    let mut index: FxHashMap<Cow<'_, str>, u32> = FxHashMap::default();
    let mut values: Vec<Option<Arc<str>>> = vec![None];
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
                            values.push(Some(Arc::from(&*v)));
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
