//! Naming fuzzy watch (Nacos 3.0+, server ability `fuzzyWatch`; Nacos's `NamingFuzzyWatchRequest`
//! and `NamingFuzzyWatchChangeNotifyRequest`): the
//! server tells the client which service names of a pattern exist and pushes every service
//! that appears or goes, so a wildcard subscription needs no `ServiceListRequest` scans.
//!
//! - One watch per group-key pattern `namespace>>group>>servicePattern` (`*`, `prefix*`,
//!   `*suffix`, `*part*` or an exact name), shared by every subscription that asks for it.
//! - `NamingFuzzyWatchRequest{watchType: WATCH}` starts it; the server answers with
//!   `NamingFuzzyWatchSyncRequest` batches (`FUZZY_WATCH_INIT_NOTIFY`, then
//!   `FINISH_FUZZY_WATCH_INIT_NOTIFY`) and later one `NamingFuzzyWatchChangeNotifyRequest`
//!   per service added or deleted. Both are acked with `NamingFuzzyWatchChangeNotifyResponse`
//!   (what the Java client answers to both).
//! - After a reconnect the watch is re-sent with the service keys already known
//!   (`receivedGroupKeys`), so the server sends only the difference
//!   (`FUZZY_WATCH_DIFF_SYNC_NOTIFY`); the known names are kept meanwhile.
//! - When the last receiver goes, `CANCEL_WATCH` is sent.
//! - A watch the server refuses (for example a pattern over its limits, or a server in the
//!   list without the ability after a reconnect) is dropped: its receivers see the channel
//!   close and go back to scanning.
//!
//! Servers without the ability (rnacos, Java 2.x) never see any of this: the subscription
//! scans the service list instead ([`crate::subscribe`]).

use std::collections::BTreeSet;
use std::sync::Arc;

use parking_lot::Mutex;
use rustc_hash::FxHashMap;
use tokio::sync::watch;
use tracing::{debug, warn};

use super::link::Link;
use super::session::{expect_type, Shared};
use super::wire::{self, FuzzyChange, FuzzySync, FuzzyWatchRequest};
use crate::error::NacosError;

/// `syncType` that ends the initial batches.
const FINISH_INIT: &str = "FINISH_FUZZY_WATCH_INIT_NOTIFY";
/// `changedType` of a new service.
const ADD_SERVICE: &str = "ADD_SERVICE";
/// `changedType` of a deleted service.
const DELETE_SERVICE: &str = "DELETE_SERVICE";
/// Separator of a group-key pattern.
const PATTERN_SPLITTER: &str = ">>";
/// Separator of a service key (`namespace@@group@@service`).
const KEY_SPLITTER: &str = "@@";

/// The names a fuzzy watch knows.
#[derive(Debug, Clone, Default)]
pub struct FuzzyNames {
    /// True once the server finished the initial sync (the set is complete).
    pub ready: bool,
    /// Plain service names (the pattern fixes namespace and group).
    pub names: Arc<BTreeSet<String>>,
}

#[derive(Debug)]
struct Watch {
    tx: Arc<watch::Sender<FuzzyNames>>,
    /// Service keys received (`namespace@@group@@service`), sent back on a re-watch.
    keys: BTreeSet<String>,
    /// Generation of the link the watch is active on (0: pending).
    done: u64,
}

/// The fuzzy watches of a session (owned by [`Shared`]).
#[derive(Debug, Default)]
pub(crate) struct FuzzyState {
    watches: Mutex<FxHashMap<String, Watch>>,
}

/// The group-key pattern of `service_pattern` in `namespace` and `group`.
pub(crate) fn group_key_pattern(namespace: &str, group: &str, service_pattern: &str) -> String {
    format!("{namespace}{PATTERN_SPLITTER}{group}{PATTERN_SPLITTER}{service_pattern}")
}

/// One pattern item against a value: exact, `*`, `*x*` (contains), `*x` (suffix), `x*`
/// (prefix); anything else with a `*` matches nothing (the server's rules).
fn item_matches(pattern: &str, value: &str) -> bool {
    if !pattern.contains('*') {
        return pattern == value;
    }
    if pattern == "*" {
        return true;
    }
    let pure = pattern.replace('*', "");
    match (pattern.starts_with('*'), pattern.ends_with('*')) {
        (true, true) => value.contains(&pure),
        (true, false) => value.ends_with(&pure),
        (false, true) => value.starts_with(&pure),
        (false, false) => false,
    }
}

/// True when the service key (`namespace@@group@@service`) is covered by `pattern`.
fn key_matches(pattern: &str, key: &str) -> bool {
    let mut p = pattern.splitn(3, PATTERN_SPLITTER);
    let mut k = key.splitn(3, KEY_SPLITTER);
    match (p.next(), p.next(), p.next(), k.next(), k.next(), k.next()) {
        (Some(pn), Some(pg), Some(ps), Some(kn), Some(kg), Some(ks)) => {
            pn == kn && item_matches(pg, kg) && item_matches(ps, ks)
        }
        _ => false,
    }
}

/// True when the server said no to the watch itself (not a transient failure): any errorCode
/// but 300 (starting), 301 (reconnect) and 503 (over threshold), or an unexpected reply.
fn refused(e: &NacosError) -> bool {
    match e {
        NacosError::Grpc { code, .. } => !matches!(code, 300 | 301 | 503),
        NacosError::Malformed { .. } => true,
        _ => false,
    }
}

/// The plain service name of a service key.
fn service_of(key: &str) -> Option<&str> {
    key.splitn(3, KEY_SPLITTER).nth(2)
}

impl Watch {
    /// Adds or removes `key`; true when the set changed.
    fn apply(&mut self, key: &str, changed_type: &str) -> bool {
        match changed_type {
            ADD_SERVICE => self.keys.insert(key.to_owned()),
            DELETE_SERVICE => self.keys.remove(key),
            _ => false,
        }
    }

    fn publish(&self, finished: bool) {
        let names: BTreeSet<String> = self
            .keys
            .iter()
            .filter_map(|k| service_of(k).map(str::to_owned))
            .collect();
        self.tx.send_if_modified(|n| {
            let ready = n.ready || finished;
            if n.ready == ready && *n.names == names {
                return false;
            }
            n.ready = ready;
            n.names = Arc::new(names);
            true
        });
    }
}

impl FuzzyState {
    /// The receiver of `pattern`'s names, creating the watch (pending) when new; the bool
    /// says whether it is new (then the owner task must send it).
    pub(crate) fn watch(&self, pattern: &str) -> (watch::Receiver<FuzzyNames>, bool) {
        let mut w = self.watches.lock();
        if let Some(x) = w.get(pattern) {
            return (x.tx.subscribe(), false);
        }
        let (tx, rx) = watch::channel(FuzzyNames::default());
        w.insert(
            pattern.to_owned(),
            Watch {
                tx: Arc::new(tx),
                keys: BTreeSet::new(),
                done: 0,
            },
        );
        (rx, true)
    }

    /// Sends the watch of `pattern` on `link` (with the keys already known), unless it is
    /// already active there (the redo after a connect may have sent it before the command
    /// that asked for it was read).
    pub(crate) async fn watch_one(&self, shared: &Shared, link: &Link, pattern: &str) {
        let Some(received) = self
            .watches
            .lock()
            .get(pattern)
            .filter(|w| w.done != link.generation)
            .map(|w| w.keys.iter().cloned().collect::<Vec<_>>())
        else {
            return;
        };
        let body = FuzzyWatchRequest {
            base: wire::Base::of("naming"),
            namespace: &shared.cfg.namespace,
            group_key_pattern: pattern,
            is_initializing: received.is_empty(),
            received_group_keys: received,
            watch_type: "WATCH",
        };
        let r = shared
            .request_on(link, "fuzzy watch", "NamingFuzzyWatchRequest", &body)
            .await
            .and_then(|r| expect_type(&link.server, "fuzzy watch", r, "NamingFuzzyWatchResponse"));
        match r {
            Ok(_) => {
                if let Some(w) = self.watches.lock().get_mut(pattern) {
                    w.done = link.generation;
                }
                debug!(pattern, "nacos fuzzy watch active");
            }
            Err(e) if refused(&e) => {
                // Dropping the watch closes its channel: subscriptions go back to scanning the
                // service list (a server in the list without the ability, a pattern over the
                // server's limits, ...).
                warn!(pattern, error = %e, "nacos refused the fuzzy watch; scanning the service list instead");
                self.watches.lock().remove(pattern);
            }
            Err(e) => {
                warn!(pattern, error = %e, "nacos fuzzy watch failed; retrying in 3 s (names kept)");
            }
        }
    }

    /// Watches not active on `link`: send them.
    pub(crate) async fn redo(&self, shared: &Shared, link: &Link) {
        let pending: Vec<String> = self
            .watches
            .lock()
            .iter()
            .filter(|(_, w)| w.done != link.generation)
            .map(|(p, _)| p.clone())
            .collect();
        for p in pending {
            self.watch_one(shared, link, &p).await;
        }
    }

    /// Everything must be re-sent on the next connection.
    pub(crate) fn on_disconnect(&self) {
        for w in self.watches.lock().values_mut() {
            w.done = 0;
        }
    }

    /// Cancels the watches nobody receives any more.
    pub(crate) async fn sweep(&self, shared: &Shared, link: &Link) {
        let gone: Vec<(String, bool)> = {
            let mut w = self.watches.lock();
            let names: Vec<String> = w
                .iter()
                .filter(|(_, x)| x.tx.receiver_count() == 0)
                .map(|(k, _)| k.clone())
                .collect();
            names
                .into_iter()
                .filter_map(|n| w.remove(&n).map(|x| (n, x.done == link.generation)))
                .collect()
        };
        for (pattern, active) in gone {
            if !active {
                continue;
            }
            let body = FuzzyWatchRequest {
                base: wire::Base::of("naming"),
                namespace: &shared.cfg.namespace,
                group_key_pattern: &pattern,
                is_initializing: false,
                received_group_keys: Vec::new(),
                watch_type: "CANCEL_WATCH",
            };
            if let Err(e) = shared
                .request_on(link, "fuzzy watch cancel", "NamingFuzzyWatchRequest", &body)
                .await
            {
                debug!(pattern = %pattern, error = %e, "nacos fuzzy watch cancel failed");
            }
        }
    }

    /// A `NamingFuzzyWatchSyncRequest`: a batch of the initial (or diff) sync of one pattern.
    pub(crate) fn on_sync(&self, json: &[u8]) {
        let sync: FuzzySync = match serde_json::from_slice(json) {
            Ok(s) => s,
            Err(e) => {
                warn!(error = %e, "nacos fuzzy watch sync is not valid JSON; ignored (names kept)");
                return;
            }
        };
        let mut w = self.watches.lock();
        let Some(watch) = w.get_mut(&sync.group_key_pattern) else {
            debug!(pattern = %sync.group_key_pattern, "nacos fuzzy watch sync for an unknown pattern; ignored");
            return;
        };
        for c in &sync.contexts {
            if key_matches(&sync.group_key_pattern, &c.service_key) {
                watch.apply(&c.service_key, &c.changed_type);
            }
        }
        watch.publish(sync.sync_type == FINISH_INIT);
    }

    /// A `NamingFuzzyWatchChangeNotifyRequest`: one service added or deleted, applied to every
    /// pattern that covers it.
    pub(crate) fn on_change(&self, json: &[u8]) {
        let change: FuzzyChange = match serde_json::from_slice(json) {
            Ok(c) => c,
            Err(e) => {
                warn!(error = %e, "nacos fuzzy watch change is not valid JSON; ignored (names kept)");
                return;
            }
        };
        for (pattern, w) in self.watches.lock().iter_mut() {
            if key_matches(pattern, &change.service_key)
                && w.apply(&change.service_key, &change.changed_type)
            {
                w.publish(false);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns_match_like_the_server() {
        let p = group_key_pattern("public", "DEFAULT_GROUP", "providers:a.B:*");
        assert_eq!(p, "public>>DEFAULT_GROUP>>providers:a.B:*");
        assert!(key_matches(&p, "public@@DEFAULT_GROUP@@providers:a.B:1.0:"));
        assert!(!key_matches(
            &p,
            "public@@DEFAULT_GROUP@@providers:a.C:1.0:"
        ));
        assert!(!key_matches(&p, "dev@@DEFAULT_GROUP@@providers:a.B:1.0:"));
        assert!(!key_matches(&p, "public@@G2@@providers:a.B:1.0:"));
        assert!(!key_matches(&p, "garbage"));
        assert!(item_matches("*", "x"));
        assert!(item_matches("*ab*", "xaby"));
        assert!(item_matches("*ab", "xab") && !item_matches("*ab", "abx"));
        assert!(item_matches("ab*", "abx") && !item_matches("ab*", "xab"));
        assert!(!item_matches("a*b", "ab"));
        assert!(item_matches("exact", "exact") && !item_matches("exact", "exactly"));
    }

    #[test]
    fn syncs_and_changes_build_the_name_set() {
        let s = FuzzyState::default();
        let p = group_key_pattern("public", "DEFAULT_GROUP", "*");
        let (rx, new) = s.watch(&p);
        assert!(new);
        assert!(!s.watch(&p).1, "a second watcher shares the watch");
        s.on_sync(
            br#"{"groupKeyPattern":"public>>DEFAULT_GROUP>>*","syncType":"FUZZY_WATCH_INIT_NOTIFY",
                "contexts":[{"serviceKey":"public@@DEFAULT_GROUP@@a","changedType":"ADD_SERVICE"},
                            {"serviceKey":"public@@OTHER@@b","changedType":"ADD_SERVICE"}]}"#,
        );
        assert!(!rx.borrow().ready);
        s.on_sync(br#"{"groupKeyPattern":"public>>DEFAULT_GROUP>>*","syncType":"FINISH_FUZZY_WATCH_INIT_NOTIFY"}"#);
        assert!(rx.borrow().ready);
        assert_eq!(rx.borrow().names.iter().collect::<Vec<_>>(), ["a"]);
        s.on_change(br#"{"serviceKey":"public@@DEFAULT_GROUP@@c","changedType":"ADD_SERVICE"}"#);
        s.on_change(br#"{"serviceKey":"public@@DEFAULT_GROUP@@a","changedType":"DELETE_SERVICE"}"#);
        s.on_change(br#"{"serviceKey":"public@@DEFAULT_GROUP@@c","changedType":"HEART_BEAT"}"#);
        s.on_change(b"{not json");
        assert_eq!(rx.borrow().names.iter().collect::<Vec<_>>(), ["c"]);
    }
}
