//! Load balancers (Dubbo's `AbstractLoadBalance` and its subclasses): pure, seedable pickers over
//! an [`InvokerSet`].
//!
//! | name | algorithm | cost per select |
//! |---|---|---|
//! | `random` (default) | weighted random over precomputed cumulative weights (rejection sampling while providers warm up) | O(log n) |
//! | `roundrobin` | smooth weighted round robin, state per service key + method | O(log n) with equal weights, else O(n) |
//! | `leastactive` | fewest active calls, weighted random among ties | O(n): a scan of every counter |
//! | `shortestresponse` | lowest (avg succeeded elapsed × (active+1)) in a sliding window | O(n) |
//! | `consistenthash` | ketama MD5 ring, 160 virtual nodes, `hash.arguments` | O(log n) + MD5 |
//! | `p2c` | power of two choices on (active+1) × latency / weight | O(1) |
//!
//! All of them read weights, identities and counters that [`InvokerSet`] precomputed, draw
//! random numbers from a thread-local generator (or a seeded one for tests) and allocate
//! nothing per select in steady state. Balancers with state (round robin, consistent hash) keep
//! it per `firstInvoker.serviceKey + method`, like Dubbo; [`by_name`] hands out one shared
//! instance per name, as Dubbo's extension loader does.

use std::cell::RefCell;
use std::collections::HashSet;
use std::fmt::Debug;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, LazyLock};

use parking_lot::{Mutex, RwLock};
use rustc_hash::FxHashMap;

use crate::invoker_set::{now_ms, InvokerSet, StaticWeights};
use crate::rpc::Invocation;
use crate::status::{MAX_TRACKED_METHODS, OVERFLOW_METHOD};

mod consistent_hash;
mod java_string;
mod least_active;
pub(crate) mod min_index;
mod p2c;
mod random;
mod round_robin;
mod shortest_response;

pub use consistent_hash::{
    ceiling, effective_replicas, key_hash, ring_points, ConsistentHashLoadBalance,
    DEFAULT_MAX_REPLICAS, DEFAULT_MAX_RING_POINTS, DEFAULT_REPLICAS,
};
pub use java_string::{java_string_value, write_java_string_value};
pub use least_active::LeastActiveLoadBalance;
pub use p2c::P2cLoadBalance;
pub use random::RandomLoadBalance;
pub use round_robin::{RoundRobinLoadBalance, RECYCLE_PERIOD_MS};
pub use shortest_response::{ShortestResponseLoadBalance, DEFAULT_SLIDE_PERIOD_MS};

/// Picks one invoker of a set. Must not allocate in steady state.
pub trait LoadBalance: Send + Sync + Debug {
    /// The index of the chosen invoker; `None` only for an empty set. A set of one returns 0
    /// without running the algorithm.
    fn select(&self, set: &InvokerSet, invocation: &Invocation) -> Option<usize>;

    /// The `loadbalance` name of this balancer.
    fn name(&self) -> &'static str {
        "custom"
    }

    /// Selects among the invokers for which `excluded(i)` is false (a cluster's reselect:
    /// Dubbo runs the balancer on the list of not-yet-tried invokers). `None` when every
    /// invoker is excluded. Allocates a candidate list: this is the rare path.
    fn select_excluding(
        &self,
        set: &InvokerSet,
        invocation: &Invocation,
        excluded: &dyn Fn(usize) -> bool,
    ) -> Option<usize> {
        let candidates: Vec<usize> = (0..set.len()).filter(|&i| !excluded(i)).collect();
        if candidates.len() == set.len() {
            return self.select(set, invocation);
        }
        if candidates.len() <= 1 {
            return candidates.first().copied();
        }
        let sub = set.subset(&candidates);
        self.select(&sub, invocation)
            .and_then(|i| candidates.get(i).copied())
    }
}

/// The `loadbalance` names [`by_name`] knows.
pub const NAMES: [&str; 6] = [
    "random",
    "roundrobin",
    "leastactive",
    "shortestresponse",
    "consistenthash",
    "p2c",
];

static INSTANCES: LazyLock<[Arc<dyn LoadBalance>; 6]> = LazyLock::new(|| {
    [
        Arc::new(RandomLoadBalance::new()),
        Arc::new(RoundRobinLoadBalance::new()),
        Arc::new(LeastActiveLoadBalance::new()),
        Arc::new(ShortestResponseLoadBalance::new()),
        Arc::new(ConsistentHashLoadBalance::new()),
        Arc::new(P2cLoadBalance::new()),
    ]
});

static WARNED: LazyLock<Mutex<HashSet<String>>> = LazyLock::new(|| Mutex::new(HashSet::new()));

/// The shared load balancer for a `loadbalance` name; `random` (with a warning, once per name)
/// when the name is unknown. Returns the same instance for the same name, so round-robin
/// state and consistent-hash rings persist across calls; no allocation.
pub fn by_name(name: &str) -> Arc<dyn LoadBalance> {
    let i = NAMES.iter().position(|n| *n == name).unwrap_or_else(|| {
        let mut w = WARNED.lock();
        if !w.contains(name) {
            tracing::warn!(loadbalance = name, "unknown load balancer, using random");
            w.insert(name.to_owned());
        }
        0
    });
    INSTANCES[i].clone()
}

/// A fresh (unshared) load balancer for a name whose random choices follow `seed`: for tests
/// and reproducible runs. Unknown names give random.
pub fn seeded(name: &str, seed: u64) -> Arc<dyn LoadBalance> {
    match name {
        "roundrobin" => Arc::new(RoundRobinLoadBalance::new()),
        "leastactive" => Arc::new(LeastActiveLoadBalance::seeded(seed)),
        "shortestresponse" => Arc::new(ShortestResponseLoadBalance::seeded(seed)),
        "consistenthash" => Arc::new(ConsistentHashLoadBalance::new()),
        "p2c" => Arc::new(P2cLoadBalance::seeded(seed)),
        _ => Arc::new(RandomLoadBalance::seeded(seed)),
    }
}

/// The wall clock balancers read (`timestamp` warm-up, round-robin recycling, the
/// shortest-response window). Tests use a manual clock.
#[derive(Debug, Clone, Default)]
pub enum Clock {
    /// The system clock (epoch ms).
    #[default]
    System,
    /// A clock that only moves when told to.
    Manual(Arc<AtomicI64>),
}

impl Clock {
    /// A manual clock starting at `start_ms`.
    pub fn manual(start_ms: i64) -> Self {
        Clock::Manual(Arc::new(AtomicI64::new(start_ms)))
    }

    /// Now, epoch ms.
    pub fn now_ms(&self) -> i64 {
        match self {
            Clock::System => now_ms(),
            Clock::Manual(t) => t.load(Ordering::Relaxed),
        }
    }

    /// Moves a manual clock forward (no effect on the system clock).
    pub fn advance(&self, ms: i64) {
        if let Clock::Manual(t) = self {
            t.fetch_add(ms, Ordering::Relaxed);
        }
    }

    /// Sets a manual clock (no effect on the system clock).
    pub fn set(&self, ms: i64) {
        if let Clock::Manual(t) = self {
            t.store(ms, Ordering::Relaxed);
        }
    }
}

/// The random source of a balancer: the thread-local generator, or a seeded one.
#[derive(Debug)]
pub(crate) enum Rand {
    Thread,
    Seeded(Mutex<fastrand::Rng>),
}

impl Rand {
    pub(crate) fn seeded(seed: u64) -> Self {
        Rand::Seeded(Mutex::new(fastrand::Rng::with_seed(seed)))
    }

    /// Uniform in `0..n` (`n > 0`).
    pub(crate) fn below(&self, n: usize) -> usize {
        match self {
            Rand::Thread => fastrand::usize(..n),
            Rand::Seeded(r) => r.lock().usize(..n),
        }
    }

    /// Uniform in `0..n` (`n > 0`).
    pub(crate) fn below_i64(&self, n: i64) -> i64 {
        match self {
            Rand::Thread => fastrand::i64(0..n),
            Rand::Seeded(r) => r.lock().i64(0..n),
        }
    }
}

/// Weights of one method as seen by one select: static (precomputed) or computed with
/// warm-up at a fixed `now`.
pub(crate) enum WeightView<'a> {
    Static(&'a StaticWeights),
    Dynamic {
        set: &'a InvokerSet,
        method: &'a str,
        now: i64,
    },
}

impl WeightView<'_> {
    #[inline]
    pub(crate) fn get(&self, i: usize) -> i32 {
        match self {
            WeightView::Static(w) => w.weights().get(i).copied().unwrap_or(0),
            WeightView::Dynamic { set, method, now } => set.weight(i, method, *now),
        }
    }
}

/// Runs `f` with the weights of `method` at the clock's now (reading the clock only while some
/// invoker may still be warming up).
pub(crate) fn with_weights<R>(
    set: &InvokerSet,
    method: &str,
    clock: &Clock,
    f: impl FnOnce(WeightView<'_>) -> R,
) -> R {
    let mut now = None;
    if set.weights_are_static(|| *now.get_or_insert_with(|| clock.now_ms())) {
        set.with_static_weights(method, |w| f(WeightView::Static(w)))
    } else {
        let now = now.unwrap_or_else(|| clock.now_ms());
        f(WeightView::Dynamic { set, method, now })
    }
}

thread_local! {
    static SCRATCH: RefCell<Vec<u32>> = const { RefCell::new(Vec::new()) };
}

/// From this many invokers on, leastactive and shortestresponse choose through a
/// segment tree (`min_index`, O(log n), maintained on call begin/end) instead of scanning.
pub const MIN_INDEX_THRESHOLD: usize = 32;

/// Dubbo's "keep the minimum, then weighted random among the ties" (least active, shortest
/// response). `keys` yields the value to minimise per invoker, in list order. Uses a
/// thread-local scratch buffer: no allocation once it has grown.
pub(crate) fn pick_min_weighted<K: PartialOrd + Copy>(
    keys: impl Iterator<Item = K>,
    weights: &WeightView<'_>,
    rand: &Rand,
) -> usize {
    match weights {
        // Equal static weights: the weighted branch can never apply.
        WeightView::Static(w) if w.all_equal() => pick_min(keys, |_| 1, rand),
        WeightView::Static(w) => {
            let ws = w.weights();
            pick_min(keys, |i| ws.get(i).copied().unwrap_or(0), rand)
        }
        dynamic => pick_min(keys, |i| dynamic.get(i), rand),
    }
}

fn pick_min<K: PartialOrd + Copy>(
    keys: impl Iterator<Item = K>,
    weight: impl Fn(usize) -> i32,
    rand: &Rand,
) -> usize {
    SCRATCH.with(|s| {
        let mut local = Vec::new();
        let mut borrowed = s.try_borrow_mut();
        // Re-entrant use cannot happen in practice; a local buffer keeps it correct anyway.
        let ties: &mut Vec<u32> = match borrowed.as_deref_mut() {
            Ok(v) => v,
            Err(_) => &mut local,
        };
        ties.clear();
        let mut least: Option<K> = None;
        let (mut total, mut first_weight, mut same) = (0i64, 0i32, true);
        for (i, k) in keys.enumerate() {
            let idx = u32::try_from(i).unwrap_or(u32::MAX);
            match least {
                Some(l) if k > l => {}
                Some(l) if k == l => {
                    let w = weight(i);
                    ties.push(idx);
                    total += i64::from(w);
                    same &= w == first_weight;
                }
                _ => {
                    let w = weight(i);
                    least = Some(k);
                    ties.clear();
                    ties.push(idx);
                    total = i64::from(w);
                    first_weight = w;
                    same = true;
                }
            }
        }
        match ties.len() {
            0 => return 0,
            1 => return ties[0] as usize,
            _ => {}
        }
        if !same && total > 0 {
            let mut offset = rand.below_i64(total);
            for &i in ties.iter() {
                offset -= i64::from(weight(i as usize));
                if offset < 0 {
                    return i as usize;
                }
            }
        }
        ties[rand.below(ties.len())] as usize
    })
}

/// Per-(service key, method) state of a balancer, found without allocating. Method names come
/// from callers: a service key keeps state for at most [`MAX_TRACKED_METHODS`] names, and
/// further names share the state of [`OVERFLOW_METHOD`].
#[derive(Debug)]
pub(crate) struct KeyedCache<V> {
    map: RwLock<FxHashMap<Arc<str>, PerMethod<V>>>,
}

/// Method name → state.
type PerMethod<V> = FxHashMap<Box<str>, Arc<V>>;

impl<V> Default for KeyedCache<V> {
    fn default() -> Self {
        KeyedCache {
            map: RwLock::new(FxHashMap::default()),
        }
    }
}

impl<V> KeyedCache<V> {
    /// Runs `f` with the state of (`service_key`, `method`), creating it with `make`.
    pub(crate) fn with<R>(
        &self,
        service_key: &Arc<str>,
        method: &str,
        make: impl FnOnce() -> V,
        f: impl FnOnce(&V) -> R,
    ) -> R {
        {
            let m = self.map.read();
            if let Some(v) = m.get(&**service_key).and_then(|x| x.get(method)) {
                return f(v);
            }
        }
        let v = {
            let mut m = self.map.write();
            let per = m.entry(service_key.clone()).or_default();
            let key = if per.len() >= MAX_TRACKED_METHODS && !per.contains_key(method) {
                OVERFLOW_METHOD
            } else {
                method
            };
            per.entry(Box::from(key))
                .or_insert_with(|| Arc::new(make()))
                .clone()
        };
        f(&v)
    }

    /// How many method names `service_key` keeps state for (the overflow entry included).
    #[cfg(test)]
    fn tracked(&self, service_key: &str) -> usize {
        self.map.read().get(service_key).map_or(0, |x| x.len())
    }

    /// The state of (`service_key`, `method`) if it exists (a name past the bound: the
    /// overflow state).
    pub(crate) fn get(&self, service_key: &str, method: &str) -> Option<Arc<V>> {
        let m = self.map.read();
        let per = m.get(service_key)?;
        per.get(method)
            .or_else(|| {
                (per.len() >= MAX_TRACKED_METHODS)
                    .then(|| per.get(OVERFLOW_METHOD))
                    .flatten()
            })
            .cloned()
    }
}

#[cfg(test)]
mod keyed_cache_tests {
    use super::*;

    #[test]
    fn caller_supplied_method_names_keep_the_cache_bounded() {
        let cache: KeyedCache<usize> = KeyedCache::default();
        let key: Arc<str> = Arc::from("demo.Service");
        let mut made = 0;
        for i in 0..(10 * MAX_TRACKED_METHODS) {
            cache.with(
                &key,
                &format!("m{i}"),
                || {
                    made += 1;
                    i
                },
                |_| (),
            );
        }
        assert_eq!(cache.tracked(&key), MAX_TRACKED_METHODS + 1);
        assert_eq!(made, MAX_TRACKED_METHODS + 1, "later names share one state");
        assert_eq!(
            cache.get(&key, "m0").as_deref(),
            Some(&0),
            "early names keep theirs"
        );
        let overflow = cache.get(&key, OVERFLOW_METHOD);
        assert_eq!(overflow.as_deref(), Some(&MAX_TRACKED_METHODS));
        assert_eq!(
            cache.get(&key, "never-seen").as_deref(),
            overflow.as_deref()
        );
        assert_eq!(cache.get("other.Service", "m0"), None);
    }
}
