//! One subscription's per-category lists and how they are published.
//!
//! Each watched path reports its full visible list; the aggregate publishes, per category, the
//! concatenation of its paths (one path for a normal subscription, one per service for
//! interface `*`) with `empty://` for "none" (`toUrlsWithEmpty`) and `enable-empty-protection`.
//! Publishing goes through [`Publisher::publish_if_changed`], so unchanged lists are not re-sent
//! and a slow consumer gets coalesced lists. Notification is immediate (no `delay-notification`
//! throttle and no double notify: divergence `zk-notify-immediately`).

use std::collections::BTreeMap;
use std::sync::Arc;

use parking_lot::Mutex;
use registry_core::matching::subscribed_categories;
use registry_core::notify::with_empty_marker;
use registry_core::{Publisher, Url};

#[derive(Debug, Default)]
struct Lists {
    /// False until the initial lists of every path are in; nothing is published before.
    ready: bool,
    /// category → (path → visible list).
    per_category: BTreeMap<String, BTreeMap<String, Arc<[Url]>>>,
}

/// The publishing side of one subscription.
#[derive(Debug)]
pub(crate) struct Aggregate {
    publisher: Publisher,
    categories: Vec<String>,
    empty_protection: bool,
    lists: Mutex<Lists>,
}

impl Aggregate {
    pub(crate) fn new(publisher: Publisher, empty_protection: bool) -> Aggregate {
        let categories = subscribed_categories(publisher.consumer());
        Aggregate {
            publisher,
            categories,
            empty_protection,
            lists: Mutex::new(Lists::default()),
        }
    }

    pub(crate) fn consumer(&self) -> &Url {
        self.publisher.consumer()
    }

    /// Stores the list of one path and publishes its category (once ready).
    pub(crate) fn update(&self, category: &str, path: &str, list: Arc<[Url]>) {
        let mut l = self.lists.lock();
        l.per_category
            .entry(category.to_owned())
            .or_default()
            .insert(path.to_owned(), list);
        if l.ready {
            self.publish_locked(&l, category);
        }
    }

    /// Marks the initial lists complete and publishes every subscribed category.
    pub(crate) fn start(&self) {
        let mut l = self.lists.lock();
        l.ready = true;
        for c in &self.categories {
            self.publish_locked(&l, c);
        }
    }

    fn publish_locked(&self, l: &Lists, category: &str) {
        let combined: Arc<[Url]> = match l.per_category.get(category) {
            None => Arc::from(Vec::new()),
            Some(paths) if paths.len() == 1 => paths.values().next().cloned().unwrap_or_default(),
            Some(paths) => paths.values().flat_map(|v| v.iter().cloned()).collect(),
        };
        let list = if combined.is_empty() {
            match with_empty_marker(self.consumer(), category, Vec::new(), self.empty_protection) {
                Some(v) => Arc::from(v),
                None => return,
            }
        } else {
            combined
        };
        self.publisher.publish_if_changed(category, list);
    }
}
