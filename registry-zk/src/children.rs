//! Child → URL conversion (`CacheableFailbackRegistry.toUrlsWithEmpty`) and the incremental child
//! set of one watched category path.
//!
//! The set is keyed by the raw (encoded) child name, so an unchanged child keeps its parsed
//! [`Url`] object across events and re-lists: applying one `NodeCreated`/`NodeDeleted` costs
//! one parse, and the published list shares every other `Url` with the previous one.

use std::collections::BTreeMap;
use std::sync::Arc;

use registry_core::matching::{is_match, is_match_service_address, PROVIDERS};
use registry_core::Url;

use crate::paths::last_segment;

/// `://` URL-encoded: configurators/routers children must contain it.
const ENCODED_SCHEME_SEPARATOR: &str = "%3A%2F%2F";

/// How children of a category path are converted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PathKind {
    /// A `…/providers` path: every child is a provider URL.
    Providers,
    /// configurators, routers, consumers: only children that are real encoded URLs count.
    Other,
}

impl PathKind {
    /// The kind of a category path (Dubbo tests `path.endsWith("providers")`).
    pub fn of(path: &str) -> PathKind {
        if last_segment(path).ends_with(PROVIDERS) {
            PathKind::Providers
        } else {
            PathKind::Other
        }
    }
}

/// Converts one raw child name into the URL the consumer sees, or `None` when it is skipped
/// (does not match the consumer, is not a URL, or is garbage — garbage is logged).
///
/// Providers: parsed with [`Url::parse_encoded`] and kept iff it matches the consumer the way a
/// 3.x `ServiceAddressURL` does ([`is_match_service_address`]: interface through the consumer,
/// group/version the provider's own), which a child without parameters also passes only for a
/// consumer without group and version (Dubbo 3.3's notify filter). The provider's
/// `timestamp` and `pid` are kept (divergence `zk-keep-timestamp`). Other categories: only
/// children containing `%3A%2F%2F`, kept iff they match.
pub fn convert_child(kind: PathKind, consumer: &Url, raw: &str) -> Option<Url> {
    if kind == PathKind::Other && !raw.contains(ENCODED_SCHEME_SEPARATOR) {
        return None;
    }
    let url = match Url::parse_encoded(raw) {
        Ok(u) if u.protocol().is_some_and(|p| !p.is_empty()) && u.host().is_some() => u,
        Ok(_) => {
            tracing::warn!(child = %truncate(raw), "skipping znode that is not a URL");
            return None;
        }
        Err(e) => {
            tracing::warn!(child = %truncate(raw), error = %e, "skipping malformed znode");
            return None;
        }
    };
    if kind == PathKind::Providers {
        // Dubbo 3.x builds a ServiceAddressURL (interface through the consumer) and filters it
        // with isMatch; a child without params skips that filter, but AbstractRegistry#notify
        // applies the same isMatch to everything it delivers, so it survives only for a
        // consumer without group and version.
        return is_match_service_address(consumer, &url).then_some(url);
    }
    is_match(consumer, &url).then_some(url)
}

/// Below this many new children a re-list is converted on the calling thread.
const PARALLEL_MIN: usize = 4096;

/// Converts many children, split over the available cores for large lists (the first list
/// of a 50k-provider service).
pub fn convert_many(kind: PathKind, consumer: &Url, raws: &[String]) -> Vec<Option<Url>> {
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(8);
    if raws.len() < PARALLEL_MIN || threads < 2 {
        return raws
            .iter()
            .map(|r| convert_child(kind, consumer, r))
            .collect();
    }
    let chunk = raws.len().div_ceil(threads);
    std::thread::scope(|scope| {
        let handles: Vec<_> = raws
            .chunks(chunk)
            .map(|c| {
                let h = scope.spawn(move || {
                    c.iter()
                        .map(|r| convert_child(kind, consumer, r))
                        .collect::<Vec<_>>()
                });
                (c, h)
            })
            .collect();
        let mut out = Vec::with_capacity(raws.len());
        for (c, h) in handles {
            match h.join() {
                Ok(v) => out.extend(v),
                // A conversion never panics; if one did, convert that chunk here instead.
                Err(_) => out.extend(c.iter().map(|r| convert_child(kind, consumer, r))),
            }
        }
        out
    })
}

fn truncate(s: &str) -> &str {
    match s.char_indices().nth(200) {
        Some((i, _)) => &s[..i],
        None => s,
    }
}

/// The children of one category path and the URLs they convert to.
#[derive(Debug)]
pub struct ChildSet {
    kind: PathKind,
    consumer: Url,
    entries: BTreeMap<Box<str>, Option<Url>>,
    /// The visible list, rebuilt lazily after a change.
    cached: Option<Arc<[Url]>>,
}

impl ChildSet {
    /// An empty set for `path`, converting for `consumer`.
    pub fn new(path: &str, consumer: Url) -> ChildSet {
        ChildSet {
            kind: PathKind::of(path),
            consumer,
            entries: BTreeMap::new(),
            cached: None,
        }
    }

    /// Number of children (including skipped ones).
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// True without children.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Applies a `NodeCreated`; true when the visible list changed.
    pub fn insert(&mut self, raw: &str) -> bool {
        if self.entries.contains_key(raw) {
            return false;
        }
        let url = convert_child(self.kind, &self.consumer, raw);
        let visible = url.is_some();
        self.entries.insert(raw.into(), url);
        self.touch(visible)
    }

    /// Applies a `NodeDeleted`; true when the visible list changed.
    pub fn remove(&mut self, raw: &str) -> bool {
        let visible = matches!(self.entries.remove(raw), Some(Some(_)));
        self.touch(visible)
    }

    /// Removes every child (the category node itself was deleted).
    pub fn clear(&mut self) -> bool {
        let visible = self.entries.values().any(Option::is_some);
        self.entries.clear();
        self.touch(visible)
    }

    /// Replaces the set with a fresh child list (a re-list), reusing the `Url` of every child
    /// that is still there. True when the visible list changed.
    pub fn replace_all(&mut self, children: Vec<String>) -> bool {
        let mut old = std::mem::take(&mut self.entries);
        let mut fresh: Vec<String> = Vec::new();
        for raw in children {
            match old.remove_entry(raw.as_str()) {
                Some((k, v)) => {
                    self.entries.insert(k, v);
                }
                None => fresh.push(raw),
            }
        }
        let urls = convert_many(self.kind, &self.consumer, &fresh);
        let mut changed = old.values().any(Option::is_some);
        for (raw, url) in fresh.into_iter().zip(urls) {
            changed |= url.is_some();
            self.entries.insert(raw.into_boxed_str(), url);
        }
        self.touch(changed)
    }

    fn touch(&mut self, visible_change: bool) -> bool {
        if visible_change {
            self.cached = None;
        }
        visible_change
    }

    /// The visible URLs in child-name order (never contains `empty://`; may be empty).
    pub fn list(&mut self) -> Arc<[Url]> {
        if let Some(c) = &self.cached {
            return c.clone();
        }
        let list: Arc<[Url]> = self.entries.values().flatten().cloned().collect();
        self.cached = Some(list.clone());
        list
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use registry_core::codec::encode;

    fn child(s: &str) -> String {
        encode(s)
    }

    #[test]
    fn incremental_and_reuse() {
        let c = Url::parse("consumer://1.1.1.1/S?version=1&category=providers").unwrap();
        let mut set = ChildSet::new("/dubbo/S/providers", c);
        let a = child("dubbo://10.0.0.1:1/S?version=1&timestamp=5");
        let b = child("dubbo://10.0.0.2:1/S?version=2");
        assert!(set.insert(&a));
        assert!(!set.insert(&b), "version mismatch is not visible");
        assert!(!set.insert("garbage%zz"));
        let l1 = set.list();
        assert_eq!(l1.len(), 1);
        assert_eq!(l1[0].param("timestamp"), Some("5"));
        let d = child("dubbo://10.0.0.3:1/S?version=1");
        assert!(set.replace_all(vec![a.clone(), b.clone(), d.clone()]));
        let l2 = set.list();
        assert_eq!(l2.len(), 2);
        assert!(Url::ptr_eq(&l1[0], &l2[0]), "unchanged child keeps its Url");
        assert!(!set.replace_all(vec![a.clone(), b.clone(), d.clone()]));
        assert!(set.remove(&d));
        assert!(!set.remove(&d));
        assert!(set.clear());
        assert!(set.list().is_empty());
    }

    #[test]
    fn parallel_conversion_matches_sequential() {
        let c = Url::parse("consumer://1.1.1.1/S?version=1").unwrap();
        let raws: Vec<String> = (0..PARALLEL_MIN + 7)
            .map(|i| {
                child(&format!(
                    "dubbo://10.0.{}.{}:1/S?version={}",
                    i / 256,
                    i % 256,
                    i % 2
                ))
            })
            .collect();
        let par = convert_many(PathKind::Providers, &c, &raws);
        let seq: Vec<Option<Url>> = raws
            .iter()
            .map(|r| convert_child(PathKind::Providers, &c, r))
            .collect();
        assert_eq!(par, seq);
        assert_eq!(par.iter().flatten().count(), (PARALLEL_MIN + 7) / 2);
    }

    #[test]
    fn other_categories_need_real_urls() {
        let c = Url::parse("consumer://1.1.1.1/S?category=routers").unwrap();
        assert!(convert_child(PathKind::Other, &c, "not-a-url").is_none());
        let r = child("route://0.0.0.0/S?category=routers&rule=x");
        assert!(convert_child(PathKind::Other, &c, &r).is_some());
        let p = Url::parse("consumer://1.1.1.1/S").unwrap();
        let bare = child("dubbo://10.0.0.1:1/Other");
        assert!(
            convert_child(PathKind::Providers, &p, &bare).is_some(),
            "no params, consumer without group/version: kept"
        );
        for q in ["group=g", "version=1.0"] {
            let c = Url::parse(&format!("consumer://1.1.1.1/S?{q}")).unwrap();
            assert!(
                convert_child(PathKind::Providers, &c, &bare).is_none(),
                "no params, consumer {q}: dropped by notify's isMatch"
            );
        }
        let any = Url::parse("consumer://1.1.1.1/S?group=*&version=*").unwrap();
        assert!(convert_child(PathKind::Providers, &any, &bare).is_some());
        // The interface comes from the consumer: a provider without interface/path matches.
        let no_iface = child("dubbo://10.0.0.1:1/?group=g&side=provider");
        let g = Url::parse("consumer://1.1.1.1/S?interface=S&group=g").unwrap();
        assert!(convert_child(PathKind::Providers, &g, &no_iface).is_some());
    }
}
