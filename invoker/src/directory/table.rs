//! The incremental provider table behind a [`super::RegistryDirectory`].
//!
//! A providers notification is the complete list, but applying it costs O(changes) merges
//! and refers plus O(n) cheap pointer lookups:
//! - each notified URL is first looked up by object identity ([`Url::ptr_id`]; backends reuse
//!   the `Url` of an unchanged provider), then by value (equality ignores the `timestamp`
//!   value), and only a URL found neither way is merged and referred;
//! - entries not seen in the list are retired; their invokers are returned to the caller,
//!   which destroys them after publishing the new snapshot;
//! - invokers are shared by **merged** URL (the key of Dubbo's `urlInvokerMap`), so two provider
//!   URLs that merge to the same URL share one invoker, and a changed provider URL whose merged URL
//!   is unchanged keeps its invoker.

use std::collections::HashMap;

use registry_core::matching::is_empty_url;
use registry_core::url::comma_split;
use registry_core::Url;
use rustc_hash::{FxBuildHasher, FxHashMap, FxHashSet};

use super::configurator::Configurator;
use super::merge::{invoker_url, is_enabled, is_mock_provider};
use super::options::DubboCompat;
use crate::router::mock::MockProviderInvoker;
use crate::rpc::{InvokerFactory, SharedInvoker};
use std::sync::Arc;

/// What a table operation needs from its directory.
pub(crate) struct Ctx<'a> {
    /// The original consumer URL (merge input).
    pub consumer: &'a Url,
    pub configurators: &'a [Configurator],
    pub compat: DubboCompat,
    pub factory: &'a dyn InvokerFactory,
    /// Precompute `url.to_string()` sort keys (2.6 per-method cache).
    pub sort_keys: bool,
}

/// One provider URL of the current list.
#[derive(Debug)]
pub(crate) struct Entry {
    pub raw: Url,
    /// The URL the invoker was referred with (meaningless when `filtered`).
    pub merged: Url,
    /// `None`: filtered by protocol, disabled, or the factory failed.
    pub invoker: Option<SharedInvoker>,
    pub mock: bool,
    /// Excluded by the consumer's `protocol` (independent of configurators).
    pub filtered: bool,
    pub sort_key: Option<Arc<str>>,
    /// The invoker's URL has a static tag (`dubbo.tag`): read once here, so a snapshot
    /// without rules knows without reading every URL that it needs no routing targets.
    pub tagged: bool,
    /// The provider application of `raw` (`provider_application`), interned per table;
    /// `None` when empty.
    pub app: Option<Arc<str>>,
    /// [`host_hash`] of `raw`'s host: configurator changes find the providers of a host
    /// without reading every URL.
    pub host_hash: u64,
    epoch: u64,
}

/// The hash [`Entry::host_hash`] holds.
pub(crate) fn host_hash(host: &str) -> u64 {
    use std::hash::BuildHasher;
    FxBuildHasher.hash_one(host)
}

/// True when the invoker's URL carries a non-empty `dubbo.tag`.
fn is_tagged(inv: Option<&SharedInvoker>) -> bool {
    inv.is_some_and(|i| {
        i.url()
            .param(crate::keys::TAG_KEY)
            .is_some_and(|t| !t.is_empty())
    })
}

#[derive(Debug)]
struct Referred {
    invoker: SharedInvoker,
    refs: u32,
}

/// The result of applying a list.
#[derive(Debug, Default)]
pub(crate) struct Applied {
    /// The table changed (a new snapshot is needed).
    pub changed: bool,
    /// The list had no valid provider: the old entries were kept (as
    /// `RegistryDirectory.refreshInvoker`).
    pub kept_old: bool,
    /// Invokers no longer used: destroy them after publishing.
    pub retired: Vec<SharedInvoker>,
}

const FRESH: u32 = 1 << 31;

/// Entries by identity, by value and in list order, plus the invokers by merged URL.
#[derive(Debug, Default)]
pub(crate) struct ProviderTable {
    slots: Vec<Option<Entry>>,
    free: Vec<u32>,
    live: usize,
    by_ptr: FxHashMap<usize, u32>,
    by_value: HashMap<Url, u32, FxBuildHasher>,
    referred: HashMap<Url, Referred, FxBuildHasher>,
    /// Number of entries sharing an invoker with an earlier entry (sum of `refs - 1`).
    shared: usize,
    order: Vec<u32>,
    /// The previous `order` buffer, reused by the next apply.
    spare_order: Vec<u32>,
    /// Provider application names, shared by the entries.
    app_pool: Vec<Arc<str>>,
    epoch: u64,
    /// The last provider that could not be referred (for the directory's health).
    refer_error: Option<String>,
}

impl ProviderTable {
    /// The last refer failure since the previous call.
    pub(crate) fn take_refer_error(&mut self) -> Option<String> {
        self.refer_error.take()
    }

    /// Entries in list order.
    pub(super) fn entries(&self) -> impl Iterator<Item = &Entry> + '_ {
        self.order
            .iter()
            .filter_map(|&i| self.slots.get(i as usize).and_then(Option::as_ref))
    }

    /// Number of provider URLs held.
    pub(super) fn len(&self) -> usize {
        self.live
    }

    /// True when some entries share one invoker (the snapshot must de-duplicate).
    pub(super) fn has_shared(&self) -> bool {
        self.shared > 0
    }

    /// Number of entries with an invoker.
    pub(super) fn valid(&self) -> usize {
        self.entries().filter(|e| e.invoker.is_some()).count()
    }

    fn acquire(&mut self, merged: &Url, mock: bool, ctx: &Ctx<'_>) -> Option<SharedInvoker> {
        if let Some(r) = self.referred.get_mut(merged) {
            r.refs += 1;
            self.shared += 1;
            return Some(r.invoker.clone());
        }
        let invoker: SharedInvoker = if mock {
            Arc::new(MockProviderInvoker::new(merged.clone()))
        } else {
            match ctx.factory.refer(merged) {
                Ok(i) => i,
                Err(e) => {
                    tracing::warn!(provider = %merged, error = %e, "failed to refer provider; skipped");
                    self.refer_error = Some(format!(
                        "cannot refer provider {}: {e}",
                        merged.to_masked_identity_string()
                    ));
                    return None;
                }
            }
        };
        self.referred.insert(
            merged.clone(),
            Referred {
                invoker: invoker.clone(),
                refs: 1,
            },
        );
        Some(invoker)
    }

    /// Drops one reference; returns the invoker when nobody uses it any more.
    fn release(&mut self, merged: &Url) -> Option<SharedInvoker> {
        let r = self.referred.get_mut(merged)?;
        if r.refs > 1 {
            r.refs -= 1;
            self.shared = self.shared.saturating_sub(1);
            return None;
        }
        self.referred.remove(merged).map(|r| r.invoker)
    }

    fn new_entry(&mut self, raw: &Url, ctx: &Ctx<'_>) -> Entry {
        let filtered = !calls_protocol(ctx.consumer, raw.protocol_str());
        let mock = is_mock_provider(raw);
        let app = crate::router::sample::provider_application(raw);
        let app = (!app.is_empty()).then(|| match self.app_pool.iter().find(|a| &***a == app) {
            Some(a) => a.clone(),
            None => {
                let a: Arc<str> = Arc::from(app);
                if self.app_pool.len() < 256 {
                    self.app_pool.push(a.clone());
                }
                a
            }
        });
        let mut e = Entry {
            raw: raw.clone(),
            merged: raw.clone(),
            invoker: None,
            mock,
            filtered,
            sort_key: None,
            tagged: false,
            app,
            host_hash: host_hash(raw.host().unwrap_or("")),
            epoch: self.epoch,
        };
        if !filtered {
            e.merged = invoker_url(raw, ctx.consumer, ctx.configurators, ctx.compat);
            if is_enabled(&e.merged) {
                e.invoker = self.acquire(&e.merged, mock, ctx);
                e.tagged = is_tagged(e.invoker.as_ref());
            }
            if ctx.sort_keys {
                e.sort_key = Some(Arc::from(e.merged.to_string()));
            }
        }
        e
    }

    /// Applies a complete providers list (no `empty://` marker handling here: those URLs are
    /// skipped). An all-invalid list keeps the old entries.
    pub(super) fn apply(&mut self, urls: &[Url], ctx: &Ctx<'_>) -> Applied {
        self.epoch += 1;
        let ep = self.epoch;
        // Reuse the previous order buffer (no allocation per apply in steady state).
        let mut order: Vec<u32> = std::mem::take(&mut self.spare_order);
        order.clear();
        order.reserve(urls.len());
        let mut rebinds: Vec<(u32, Url)> = Vec::new();
        let mut fresh: Vec<Entry> = Vec::new();
        let mut fresh_seen: FxHashSet<Url> = FxHashSet::default();
        let mut valid = 0usize;
        let mut marked = 0usize;
        for (pos, url) in urls.iter().enumerate() {
            // Fast path: the same object at the same position as last time.
            if let Some(&i) = self.order.get(pos) {
                if let Some(Some(e)) = self.slots.get_mut(i as usize) {
                    if Url::ptr_eq(&e.raw, url) && e.epoch != ep {
                        e.epoch = ep;
                        marked += 1;
                        valid += usize::from(e.invoker.is_some());
                        order.push(i);
                        continue;
                    }
                }
            }
            if is_empty_url(url) {
                continue;
            }
            let by_ptr = self.by_ptr.get(&url.ptr_id()).copied();
            let found = by_ptr.or_else(|| self.by_value.get(url).copied());
            if let Some(i) = found {
                let Some(Some(e)) = self.slots.get_mut(i as usize) else {
                    continue;
                };
                if e.epoch == ep {
                    continue; // duplicate in this list
                }
                e.epoch = ep;
                marked += 1;
                valid += usize::from(e.invoker.is_some());
                if by_ptr.is_none() {
                    rebinds.push((i, url.clone()));
                }
                order.push(i);
                continue;
            }
            if !fresh_seen.insert(url.clone()) {
                continue;
            }
            let e = self.new_entry(url, ctx);
            valid += usize::from(e.invoker.is_some());
            order.push(FRESH | fresh.len() as u32);
            fresh.push(e);
        }
        if valid == 0 && !order.is_empty() {
            tracing::warn!(
                urls = urls.len(),
                "urls to invokers error: no valid provider in the notified list; keeping the current invokers"
            );
            let mut retired = Vec::new();
            for e in fresh {
                if e.invoker.is_some() {
                    retired.extend(self.release(&e.merged));
                }
            }
            self.spare_order = order;
            return Applied {
                changed: false,
                kept_old: true,
                retired,
            };
        }
        for (i, url) in rebinds {
            if let Some(Some(e)) = self.slots.get_mut(i as usize) {
                self.by_ptr.remove(&e.raw.ptr_id());
                self.by_ptr.insert(url.ptr_id(), i);
                e.raw = url;
            }
        }
        let fresh_count = fresh.len();
        let mut fresh_idx: Vec<u32> = Vec::with_capacity(fresh_count);
        for e in fresh {
            let i = self.insert(e);
            fresh_idx.push(i);
        }
        for o in &mut order {
            if *o & FRESH != 0 {
                *o = fresh_idx[(*o & !FRESH) as usize];
            }
        }
        let mut retired = Vec::new();
        let live_before = self.live - fresh_count;
        let removed = live_before - marked;
        if removed > 0 {
            for i in 0..self.slots.len() {
                let stale = matches!(&self.slots[i], Some(e) if e.epoch != ep);
                if stale {
                    if let Some(e) = self.remove(i as u32) {
                        if e.invoker.is_some() {
                            retired.extend(self.release(&e.merged));
                        }
                    }
                }
            }
        }
        let changed = fresh_count > 0 || removed > 0 || order != self.order;
        self.spare_order = std::mem::replace(&mut self.order, order);
        Applied {
            changed,
            kept_old: false,
            retired,
        }
    }

    fn insert(&mut self, e: Entry) -> u32 {
        let ptr = e.raw.ptr_id();
        let raw = e.raw.clone();
        let i = match self.free.pop() {
            Some(i) => {
                self.slots[i as usize] = Some(e);
                i
            }
            None => {
                self.slots.push(Some(e));
                (self.slots.len() - 1) as u32
            }
        };
        self.by_ptr.insert(ptr, i);
        self.by_value.insert(raw, i);
        self.live += 1;
        i
    }

    fn remove(&mut self, i: u32) -> Option<Entry> {
        let e = self.slots.get_mut(i as usize)?.take()?;
        self.by_ptr.remove(&e.raw.ptr_id());
        self.by_value.remove(&e.raw);
        self.free.push(i);
        self.live -= 1;
        Some(e)
    }

    /// Re-merges the entries whose raw URL `affected` selects (configurators changed; the
    /// caller passes a filter that is true for every provider a configurator of the old or
    /// the new list may touch, so the others keep their merged URL unchanged). Entries whose
    /// merged URL is unchanged keep their invoker. When the result would have no valid
    /// provider while there was one, nothing changes (as `RegistryDirectory.refreshInvoker`).
    pub(super) fn remerge(&mut self, ctx: &Ctx<'_>, affected: &dyn Fn(&Entry) -> bool) -> Applied {
        let valid_before = self.valid();
        let mut plan: Vec<(u32, Url, Option<SharedInvoker>)> = Vec::new();
        let mut valid_after = valid_before;
        for idx in 0..self.order.len() {
            let i = self.order[idx];
            let Some(Some(e)) = self.slots.get(i as usize) else {
                continue;
            };
            if e.filtered || !affected(e) {
                continue;
            }
            let merged = invoker_url(&e.raw, ctx.consumer, ctx.configurators, ctx.compat);
            if merged == e.merged {
                continue;
            }
            let had = e.invoker.is_some();
            let mock = e.mock;
            let inv = if is_enabled(&merged) {
                self.acquire(&merged, mock, ctx)
            } else {
                None
            };
            valid_after = valid_after + usize::from(inv.is_some()) - usize::from(had);
            plan.push((i, merged, inv));
        }
        if plan.is_empty() {
            return Applied::default();
        }
        if valid_after == 0 && valid_before > 0 {
            tracing::warn!("configurators leave no valid provider; keeping the current invokers");
            let mut retired = Vec::new();
            for (_, merged, inv) in plan {
                if inv.is_some() {
                    retired.extend(self.release(&merged));
                }
            }
            return Applied {
                changed: false,
                kept_old: true,
                retired,
            };
        }
        let mut retired = Vec::new();
        for (i, merged, inv) in plan {
            let Some(Some(e)) = self.slots.get_mut(i as usize) else {
                continue;
            };
            let old_merged = std::mem::replace(&mut e.merged, merged);
            let old_inv = std::mem::replace(&mut e.invoker, inv);
            e.tagged = is_tagged(e.invoker.as_ref());
            if ctx.sort_keys {
                e.sort_key = Some(Arc::from(e.merged.to_string()));
            }
            if old_inv.is_some() {
                retired.extend(self.release(&old_merged));
            }
        }
        Applied {
            changed: true,
            kept_old: false,
            retired,
        }
    }

    /// Removes everything (forbidden); returns the invokers to destroy.
    pub(super) fn clear(&mut self) -> Vec<SharedInvoker> {
        let retired = self.referred.drain().map(|(_, r)| r.invoker).collect();
        *self = ProviderTable {
            epoch: self.epoch,
            app_pool: std::mem::take(&mut self.app_pool),
            ..ProviderTable::default()
        };
        retired
    }
}

/// True when `consumer` calls providers of `protocol`: its `protocol` parameter (a comma
/// separated list) names it, or it has none (Dubbo's `RegistryDirectory#toInvokers`).
pub(crate) fn calls_protocol(consumer: &Url, protocol: &str) -> bool {
    consumer
        .param("protocol")
        .filter(|p| !p.is_empty())
        .is_none_or(|p| comma_split(p).contains(&protocol))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::RecordingFactory;

    fn u(s: &str) -> Url {
        Url::parse(s).unwrap()
    }

    fn ctx<'a>(consumer: &'a Url, f: &'a RecordingFactory) -> Ctx<'a> {
        Ctx {
            consumer,
            configurators: &[],
            compat: DubboCompat::V3,
            factory: f,
            sort_keys: false,
        }
    }

    #[test]
    fn pointer_then_value_reuse_and_retire() {
        let c = u("consumer://9.9.9.9/S?interface=S");
        let f = RecordingFactory::default();
        let mut t = ProviderTable::default();
        let a = u("dubbo://1.1.1.1:1/S?timestamp=1");
        let b = u("dubbo://1.1.1.2:1/S");
        let r = t.apply(&[a.clone(), b.clone()], &ctx(&c, &f));
        assert!(r.changed && r.retired.is_empty());
        assert_eq!(f.referred(), 2);
        // Same objects: nothing changes.
        let r = t.apply(&[a.clone(), b.clone()], &ctx(&c, &f));
        assert!(!r.changed);
        // Equal by value (other timestamp value): reused, no new refer.
        let a2 = u("dubbo://1.1.1.1:1/S?timestamp=2");
        let r = t.apply(&[a2.clone(), b.clone()], &ctx(&c, &f));
        assert!(!r.changed);
        assert_eq!(f.referred(), 2);
        // b removed: retired.
        let r = t.apply(std::slice::from_ref(&a2), &ctx(&c, &f));
        assert!(r.changed);
        assert_eq!(r.retired.len(), 1);
        assert_eq!(r.retired[0].url().host(), Some("1.1.1.2"));
        assert_eq!(t.len(), 1);
    }

    #[test]
    fn duplicates_collapse() {
        let c = u("consumer://9.9.9.9/S?interface=S");
        let f = RecordingFactory::default();
        let mut t = ProviderTable::default();
        let a = u("dubbo://1.1.1.1:1/S");
        t.apply(
            &[a.clone(), a.clone(), u("dubbo://1.1.1.1:1/S")],
            &ctx(&c, &f),
        );
        assert_eq!(t.len(), 1);
        assert_eq!(f.referred(), 1);
    }

    #[test]
    fn all_invalid_keeps_old() {
        let c = u("consumer://9.9.9.9/S?interface=S&protocol=dubbo");
        let f = RecordingFactory::default();
        let mut t = ProviderTable::default();
        t.apply(&[u("dubbo://1.1.1.1:1/S")], &ctx(&c, &f));
        let r = t.apply(&[u("rest://1.1.1.1:1/S")], &ctx(&c, &f));
        assert!(r.kept_old && !r.changed);
        assert_eq!(t.valid(), 1);
        assert_eq!(t.entries().next().unwrap().raw.protocol(), Some("dubbo"));
    }
}
