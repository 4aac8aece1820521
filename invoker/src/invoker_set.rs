//! [`InvokerSet`]: an immutable list of invokers plus what load balancers precompute about them
//! (weights, warm-up, identities), built once per directory snapshot, never per call.
//!
//! Per invoker ([`InvokerMeta`]): the service-level `weight`, the method-level `<m>.weight`
//! values, `timestamp`, `warmup`, the identity string (`to_identity_string()`) and a lazily
//! created handle to its [`ServiceStatus`] counters. (The address `host:port` is read from the
//! URL only when a consistent-hash ring is built.)
//! Per set: the first invoker's service key, a content hash of the identities (load balancers
//! use it to invalidate per-set caches such as consistent-hash rings), the static weights
//! (cumulative array, total, all-equal flag) and the instant after which no invoker is warming
//! up any more, so that the static weights are exact.
//!
//! [`InvokerSet::new_reusing`] reuses the metadata of invokers already present in a previous
//! set (pointer equality), so a directory that changes one provider out of 10,000 does not
//! recompute the other 9,999.

use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{SystemTime, UNIX_EPOCH};

use parking_lot::RwLock;
use registry_core::Url;
use rustc_hash::{FxHashMap, FxHasher};
use std::hash::Hasher;

use crate::keys::DEFAULT_WEIGHT;
use crate::loadbalance::min_index::{KeyKind, MinIndex};
use crate::rpc::SharedInvoker;
use crate::status::{RpcStatus, ServiceStatus, MAX_TRACKED_METHODS, OVERFLOW_METHOD};

/// Dubbo's default `warmup` (ms).
pub const DEFAULT_WARMUP_MS: i64 = 600_000;
/// The interface of registry-level invokers (multi-registry): their weight has no warm-up.
pub const REGISTRY_SERVICE: &str = "org.apache.dubbo.registry.RegistryService";

/// Milliseconds since the Unix epoch (the clock `timestamp` is compared with).
pub fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

/// `AbstractLoadBalance.calculateWarmupWeight`: `(int)(uptime / ((float)warmup /
/// weight))` in float32 arithmetic, clamped to `[1, weight]`.
pub fn warmup_weight(uptime_ms: i32, warmup_ms: i32, weight: i32) -> i32 {
    #[allow(clippy::cast_precision_loss, clippy::cast_possible_truncation)]
    let ww = (uptime_ms as f32 / (warmup_ms as f32 / weight as f32)) as i32;
    if ww < 1 {
        1
    } else {
        ww.min(weight)
    }
}

fn clamp_i32(v: i64) -> i32 {
    i32::try_from(v).unwrap_or(if v < 0 { i32::MIN } else { i32::MAX })
}

/// What load balancers need to know about one invoker, computed once from its URL.
pub struct InvokerMeta {
    identity: Arc<str>,
    identity_hash: u64,
    /// `getParameter("weight", 100)`.
    weight: i32,
    /// `weight` is present and non-empty.
    has_weight: bool,
    /// `(m, getMethodParameter(m, "weight", 100))` for every `<m>.weight` that passes the
    /// `methods` filter.
    method_weights: Box<[(Box<str>, i32)]>,
    timestamp: i64,
    has_timestamp: bool,
    warmup: i64,
    registry_service: bool,
    status: OnceLock<Arc<ServiceStatus>>,
}

impl fmt::Debug for InvokerMeta {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("InvokerMeta")
            .field("weight", &self.weight)
            .field("timestamp", &self.timestamp)
            .field("warmup", &self.warmup)
            .finish_non_exhaustive()
    }
}

impl InvokerMeta {
    /// Computes the metadata of an invoker URL.
    pub fn from_url(url: &Url) -> Self {
        let identity: Arc<str> = Arc::from(url.to_identity_string());
        let mut h = FxHasher::default();
        h.write(identity.as_bytes());
        let mut method_weights = Vec::new();
        for (k, _) in url.params() {
            if let Some((m, rest)) = k.split_once('.') {
                if rest == "weight" && !m.is_empty() && url.has_method_param(m, "weight") {
                    let w = clamp_i32(url.method_param_i64(m, "weight", i64::from(DEFAULT_WEIGHT)));
                    method_weights.push((Box::from(m), w));
                }
            }
        }
        InvokerMeta {
            identity,
            identity_hash: h.finish(),
            weight: clamp_i32(url.param_i64("weight", i64::from(DEFAULT_WEIGHT))),
            has_weight: url.has_param("weight"),
            method_weights: method_weights.into_boxed_slice(),
            timestamp: url.param_i64("timestamp", 0),
            has_timestamp: url.has_param("timestamp"),
            warmup: url.param_i64("warmup", DEFAULT_WARMUP_MS),
            registry_service: url.service_interface() == Some(REGISTRY_SERVICE),
            status: OnceLock::new(),
        }
    }

    /// `to_identity_string()` of the URL (may contain credentials: do not log).
    pub fn identity(&self) -> &Arc<str> {
        &self.identity
    }

    /// `timestamp` (0 when absent).
    pub fn timestamp(&self) -> i64 {
        self.timestamp
    }

    /// `warmup` (default 600000 ms).
    pub fn warmup(&self) -> i64 {
        self.warmup
    }

    /// `getMethodParameter(method, "weight", 100)` before warm-up.
    pub fn configured_weight(&self, method: &str) -> i32 {
        if !self.method_weights.is_empty() {
            if let Some((_, w)) = self.method_weights.iter().find(|(m, _)| &**m == method) {
                return *w;
            }
        }
        self.weight
    }

    /// True when `getMethodParameter(method, "weight")` is non-empty (Dubbo 3.x random's
    /// first-invoker test, together with `timestamp`).
    pub fn has_weight(&self, method: &str) -> bool {
        self.has_weight || self.method_weights.iter().any(|(m, _)| &**m == method)
    }

    /// True when the URL has a non-empty `timestamp`.
    pub fn has_timestamp(&self) -> bool {
        self.has_timestamp
    }

    /// `AbstractLoadBalance.getWeight` at wall-clock time `now_ms`.
    pub fn weight_at(&self, method: &str, now_ms: i64) -> i32 {
        if self.registry_service {
            return self.weight.max(0);
        }
        let w = self.configured_weight(method);
        if w > 0 && self.timestamp > 0 {
            let uptime = now_ms.saturating_sub(self.timestamp);
            if uptime < 0 {
                return 1;
            }
            if uptime > 0 && uptime < self.warmup {
                // Java casts uptime to int; it is < warmup, itself an int.
                return warmup_weight(clamp_i32(uptime), clamp_i32(self.warmup), w);
            }
        }
        w.max(0)
    }

    /// The last instant (epoch ms) at which warm-up can still change this invoker's weight.
    fn warm_until(&self) -> i64 {
        if self.registry_service || self.timestamp <= 0 {
            i64::MIN
        } else {
            self.timestamp.saturating_add(self.warmup.max(0))
        }
    }

    /// The counters of this invoker identity (created on first use).
    pub fn status(&self) -> &Arc<ServiceStatus> {
        self.status
            .get_or_init(|| ServiceStatus::for_identity(&self.identity))
    }
}

/// Static (warm-up free) weights of every invoker for one method.
#[derive(Debug)]
pub struct StaticWeights {
    weights: Box<[i32]>,
    cumulative: Box<[i64]>,
    total: i64,
    all_equal: bool,
}

impl StaticWeights {
    fn new(weights: Box<[i32]>) -> Self {
        let mut total = 0i64;
        let cumulative: Box<[i64]> = weights
            .iter()
            .map(|&w| {
                total += i64::from(w);
                total
            })
            .collect();
        let all_equal = weights.windows(2).all(|p| p[0] == p[1]);
        StaticWeights {
            weights,
            cumulative,
            total,
            all_equal,
        }
    }

    /// Weight per invoker.
    pub fn weights(&self) -> &[i32] {
        &self.weights
    }

    /// Running sums of the weights (`cumulative[i]` = sum of `weights[..=i]`).
    pub fn cumulative(&self) -> &[i64] {
        &self.cumulative
    }

    /// Sum of the weights.
    pub fn total(&self) -> i64 {
        self.total
    }

    /// True when every invoker has the same weight.
    pub fn all_equal(&self) -> bool {
        self.all_equal
    }
}

/// The metadata of an invoker (what `AbstractLoadBalance.getWeight` reads). A cluster invoker
/// (multi-registry) is weighted by its registry URL: a `RegistryService` (or path-less) registry
/// URL gives its plain `weight` without warm-up;
/// any other registry URL gives its method-level `weight`, warmed up by the `timestamp` and
/// `warmup` of the invoker's own URL (Java's `getWeight` reads those from `invoker.getUrl()`).
fn meta_of(invoker: &SharedInvoker) -> InvokerMeta {
    match invoker.registry_url() {
        None => InvokerMeta::from_url(invoker.url()),
        Some(registry) => {
            let mut m = InvokerMeta::from_url(registry);
            // Dubbo gives every registry URL the RegistryService path; ours are often
            // path-less (`zookeeper://host:2181?...`), which plays the same role.
            m.registry_service |= registry.service_interface().is_none_or(str::is_empty);
            if m.registry_service {
                // `needWeightLoadBalance` looks at `weight` only for these.
                m.has_timestamp = false;
            } else {
                let own = invoker.url();
                m.timestamp = own.param_i64("timestamp", 0);
                m.has_timestamp = own.has_param("timestamp");
                m.warmup = own.param_i64("warmup", DEFAULT_WARMUP_MS);
            }
            m
        }
    }
}

/// An immutable, shareable list of invokers with load-balancing metadata.
pub struct InvokerSet {
    invokers: Box<[SharedInvoker]>,
    meta: Box<[Arc<InvokerMeta>]>,
    service_key: Arc<str>,
    content_hash: u64,
    service_weights: StaticWeights,
    /// Methods for which some invoker has a `<m>.weight`.
    weighted_methods: Box<[Box<str>]>,
    warm_until: i64,
    warming: AtomicBool,
    method_weights: RwLock<FxHashMap<Box<str>, Arc<StaticWeights>>>,
    method_statuses: RwLock<FxHashMap<Box<str>, MethodStatuses>>,
    /// Least-key indexes (leastactive / shortestresponse at scale), per method.
    min_indexes: RwLock<FxHashMap<Box<str>, Vec<Arc<MinIndex>>>>,
}

/// The counters of every invoker of a set for one method, in list order.
type MethodStatuses = Arc<[Arc<RpcStatus>]>;

/// `method`, or [`OVERFLOW_METHOD`] when `map` already holds [`MAX_TRACKED_METHODS`] names
/// and not this one: per-method state (one entry per invoker) is kept for a bounded number
/// of caller-supplied names.
fn bounded_method<'a, V>(map: &RwLock<FxHashMap<Box<str>, V>>, method: &'a str) -> &'a str {
    let m = map.read();
    if m.len() < MAX_TRACKED_METHODS || m.contains_key(method) {
        method
    } else {
        OVERFLOW_METHOD
    }
}

impl fmt::Debug for InvokerSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("InvokerSet")
            .field("len", &self.invokers.len())
            .field("service_key", &self.service_key)
            .finish_non_exhaustive()
    }
}

impl Default for InvokerSet {
    fn default() -> Self {
        InvokerSet::new(Vec::new())
    }
}

impl InvokerSet {
    /// Builds the set (and its metadata) from invokers in list order.
    pub fn new(invokers: Vec<SharedInvoker>) -> Self {
        let meta = invokers.iter().map(|i| Arc::new(meta_of(i))).collect();
        InvokerSet::with_meta(invokers.into_boxed_slice(), meta)
    }

    /// Like [`InvokerSet::new`], but reuses the metadata of invokers (same `Arc`) that are
    /// also in `previous`. Lists that mostly keep their order (the usual notify: a few
    /// providers added, removed or replaced) are matched by a cursor walk, O(n) pointer
    /// comparisons; heavily reordered lists fall back to a pointer-keyed map.
    pub fn new_reusing(invokers: Vec<SharedInvoker>, previous: &InvokerSet) -> Self {
        const MAX_CURSOR_MISSES: usize = 64;
        let ptr = |i: &SharedInvoker| Arc::as_ptr(i).cast::<()>();
        let old = &previous.invokers;
        let mut meta = Vec::with_capacity(invokers.len());
        let mut j = 0usize;
        let mut misses = 0usize;
        let mut map: Option<FxHashMap<*const (), usize>> = None;
        for inv in &invokers {
            let p = ptr(inv);
            // Same position, or a few removed before it.
            let found = (j..old.len().min(j + 4)).find(|&k| ptr(&old[k]) == p);
            let idx = match found {
                Some(k) => {
                    j = k + 1;
                    Some(k)
                }
                None => {
                    misses += 1;
                    if misses > MAX_CURSOR_MISSES {
                        let m = map.get_or_insert_with(|| {
                            old.iter().enumerate().map(|(k, i)| (ptr(i), k)).collect()
                        });
                        m.get(&p).copied()
                    } else {
                        None
                    }
                }
            };
            meta.push(match idx.and_then(|k| previous.meta.get(k)) {
                Some(m) => Arc::clone(m),
                None => Arc::new(meta_of(inv)),
            });
        }
        InvokerSet::with_meta(invokers.into_boxed_slice(), meta.into_boxed_slice())
    }

    /// The invokers at `indices` (in that order), reusing their metadata: the candidate list
    /// of a cluster's reselect.
    pub fn subset(&self, indices: &[usize]) -> InvokerSet {
        let mut inv = Vec::with_capacity(indices.len());
        let mut meta = Vec::with_capacity(indices.len());
        for &i in indices {
            if let (Some(a), Some(m)) = (self.invokers.get(i), self.meta.get(i)) {
                inv.push(a.clone());
                meta.push(m.clone());
            }
        }
        InvokerSet::with_meta(inv.into_boxed_slice(), meta.into_boxed_slice())
    }

    fn with_meta(invokers: Box<[SharedInvoker]>, meta: Box<[Arc<InvokerMeta>]>) -> Self {
        let mut h = FxHasher::default();
        h.write_usize(meta.len());
        for m in meta.iter() {
            h.write_u64(m.identity_hash);
        }
        let service_key: Arc<str> = invokers
            .first()
            .and_then(|i| i.url().service_key())
            .map_or_else(|| Arc::from(""), Arc::from);
        let service_weights =
            StaticWeights::new(meta.iter().map(|m| m.weight_at("", i64::MAX)).collect());
        let mut weighted: Vec<Box<str>> = meta
            .iter()
            .flat_map(|m| m.method_weights.iter().map(|(k, _)| k.clone()))
            .collect();
        weighted.sort_unstable();
        weighted.dedup();
        let warm_until = meta
            .iter()
            .map(|m| m.warm_until())
            .max()
            .unwrap_or(i64::MIN);
        InvokerSet {
            invokers,
            meta,
            service_key,
            content_hash: h.finish(),
            service_weights,
            weighted_methods: weighted.into_boxed_slice(),
            warm_until,
            warming: AtomicBool::new(warm_until > i64::MIN),
            method_weights: RwLock::new(FxHashMap::default()),
            method_statuses: RwLock::new(FxHashMap::default()),
            min_indexes: RwLock::new(FxHashMap::default()),
        }
    }

    /// The invokers in list order.
    pub fn invokers(&self) -> &[SharedInvoker] {
        &self.invokers
    }

    /// Number of invokers.
    pub fn len(&self) -> usize {
        self.invokers.len()
    }

    /// True when there is no invoker.
    pub fn is_empty(&self) -> bool {
        self.invokers.is_empty()
    }

    /// The invoker at `i`.
    pub fn get(&self, i: usize) -> Option<&SharedInvoker> {
        self.invokers.get(i)
    }

    /// The metadata of every invoker, in list order.
    pub fn meta(&self) -> &[Arc<InvokerMeta>] {
        &self.meta
    }

    /// The first invoker's service key (`""` when empty or without interface): load
    /// balancers key their per-service state by it and the method name.
    pub fn service_key(&self) -> &Arc<str> {
        &self.service_key
    }

    /// A hash of the identities in order: equal for two sets with the same invokers in the
    /// same order (used to invalidate per-set caches).
    pub fn content_hash(&self) -> u64 {
        self.content_hash
    }

    /// The epoch-ms instant after which no invoker's weight changes with time.
    pub fn warm_until(&self) -> i64 {
        self.warm_until
    }

    /// True when the precomputed weights are exact at `now` (no invoker warming up).
    pub fn weights_are_static(&self, now: impl FnOnce() -> i64) -> bool {
        if !self.warming.load(Ordering::Relaxed) {
            return true;
        }
        if now() > self.warm_until {
            self.warming.store(false, Ordering::Relaxed);
            return true;
        }
        false
    }

    /// Runs `f` with the static weights of `method` (exact only when
    /// [`InvokerSet::weights_are_static`]). No allocation after the first call per method.
    pub fn with_static_weights<R>(&self, method: &str, f: impl FnOnce(&StaticWeights) -> R) -> R {
        if self.weighted_methods.is_empty()
            || self
                .weighted_methods
                .binary_search_by(|m| (**m).cmp(method))
                .is_err()
        {
            return f(&self.service_weights);
        }
        if let Some(w) = self.method_weights.read().get(method) {
            return f(w);
        }
        let w = Arc::new(StaticWeights::new(
            self.meta
                .iter()
                .map(|m| m.weight_at(method, i64::MAX))
                .collect(),
        ));
        self.method_weights
            .write()
            .entry(Box::from(method))
            .or_insert(w.clone());
        f(&w)
    }

    /// The weight of invoker `i` for `method` at `now_ms` (`AbstractLoadBalance.getWeight`).
    pub fn weight(&self, i: usize, method: &str, now_ms: i64) -> i32 {
        self.meta.get(i).map_or(0, |m| m.weight_at(method, now_ms))
    }

    /// The least-key index of `method` for `kind` (built, with the method's static weights,
    /// on first use; later calls find it without allocating).
    pub(crate) fn min_index(&self, method: &str, kind: KeyKind) -> Arc<MinIndex> {
        let method = bounded_method(&self.min_indexes, method);
        if let Some(v) = self.min_indexes.read().get(method) {
            if let Some(i) = v.iter().find(|i| i.kind().same(&kind)) {
                return i.clone();
            }
        }
        let statuses = self.with_method_statuses(method, |s| -> MethodStatuses { s.into() });
        let weights: Box<[i32]> = self.with_static_weights(method, |w| w.weights().into());
        let mut map = self.min_indexes.write();
        let v = map.entry(Box::from(method)).or_default();
        if let Some(i) = v.iter().find(|i| i.kind().same(&kind)) {
            return i.clone();
        }
        let index = MinIndex::build(kind, statuses, weights);
        v.push(index.clone());
        index
    }

    /// Number of method names with per-method state of their own in this set (counters and
    /// least-key indexes; at most [`MAX_TRACKED_METHODS`] plus the overflow entry each).
    pub fn tracked_methods(&self) -> usize {
        self.method_statuses
            .read()
            .len()
            .max(self.min_indexes.read().len())
    }

    /// Runs `f` with the [`RpcStatus`] of every invoker for `method`, in list order. Built once
    /// per (set, method); no allocation after that.
    pub fn with_method_statuses<R>(
        &self,
        method: &str,
        f: impl FnOnce(&[Arc<RpcStatus>]) -> R,
    ) -> R {
        let method = bounded_method(&self.method_statuses, method);
        if let Some(s) = self.method_statuses.read().get(method) {
            return f(s);
        }
        let s: MethodStatuses = self
            .meta
            .iter()
            .map(|m| m.status().method(method))
            .collect();
        self.method_statuses
            .write()
            .entry(Box::from(method))
            .or_insert(s.clone());
        f(&s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn warmup_examples() {
        for (up, expected) in [
            (6_000, 1),
            (12_000, 2),
            (60_000, 10),
            (300_000, 50),
            (306_000, 51),
        ] {
            assert_eq!(warmup_weight(up, 600_000, 100), expected, "uptime {up}");
        }
        assert_eq!(warmup_weight(594_000, 600_000, 100), 99);
        assert_eq!(warmup_weight(600_000, 600_000, 100), 100);
        assert_eq!(warmup_weight(100_000, 600_000, 1000), 166);
        assert_eq!(warmup_weight(0, 600_000, 100), 1);
    }

    #[test]
    fn weight_rules() {
        let now = 1_000_000_000;
        let m = |s: &str| InvokerMeta::from_url(&Url::parse(s).unwrap());
        assert_eq!(m("dubbo://h:1/S?weight=-5").weight_at("x", now), 0);
        let ahead = m(&format!(
            "dubbo://h:1/S?weight=50&timestamp={}",
            now + 60_000
        ));
        assert_eq!(ahead.weight_at("x", now), 1);
        let warm = m(&format!("dubbo://h:1/S?timestamp={}", now - 60_000));
        assert_eq!(warm.weight_at("x", now), 10);
        let meth = m("dubbo://h:1/S?weight=5&sayHi.weight=7");
        assert_eq!(meth.weight_at("sayHi", now), 7);
        assert_eq!(meth.weight_at("other", now), 5);
        let filtered = m("dubbo://h:1/S?weight=5&sayHi.weight=7&methods=foo");
        assert_eq!(filtered.weight_at("sayHi", now), 5);
        let reg = m(&format!(
            "registry://h:1/{REGISTRY_SERVICE}?weight=30&timestamp={}",
            now - 1000
        ));
        assert_eq!(reg.weight_at("x", now), 30);
    }
}
