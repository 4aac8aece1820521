//! `roundrobin` (`RoundRobinLoadBalance`): smooth weighted round robin, state per
//! `serviceKey.method` and per invoker identity.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicUsize, Ordering};
use std::sync::Arc;

use arc_swap::ArcSwap;
use parking_lot::Mutex;
use rustc_hash::FxHashMap;

use super::{with_weights, Clock, KeyedCache, LoadBalance, WeightView};
use crate::invoker_set::InvokerSet;
use crate::rpc::Invocation;

/// Entries not updated for this long are purged (when the list size differs from the map size).
pub const RECYCLE_PERIOD_MS: i64 = 60_000;

/// One invoker's smooth-WRR state.
#[derive(Debug)]
struct Wrr {
    weight: AtomicI64,
    current: AtomicI64,
    last_update: AtomicI64,
}

/// The entries of one set, in list order (rebuilt when the set's content changes).
#[derive(Debug, Default)]
struct Aligned {
    content_hash: u64,
    entries: Box<[Arc<Wrr>]>,
    /// Equal-weight mode is holding the currents (the `Wrr` atomics are stale).
    heap_active: AtomicBool,
    heap: Mutex<EqualWeights>,
}

/// Equal-weight mode. When every weight is the same `w`, each pick adds `w` to every current,
/// which does not change their order: smooth WRR reduces to "take the greatest current
/// (earliest on ties), subtract `n*w`". Currents are kept as `offset + picks*w` in a max-heap:
/// O(log n) per pick instead of O(n), same sequence.
#[derive(Debug, Default)]
struct EqualWeights {
    weight: i64,
    picks: i64,
    offsets: Vec<i64>,
    heap: BinaryHeap<(i64, Reverse<u32>)>,
}

/// Rebase the heap's offsets after this many picks (keeps `picks * w` far from overflow).
const REBASE_PICKS: i64 = 1 << 20;

impl Aligned {
    /// Writes the heap's currents back into the atomics and leaves equal-weight mode.
    fn materialize(&self, now: i64) {
        let mut h = self.heap.lock();
        if !self.heap_active.load(Ordering::Acquire) {
            return;
        }
        for (e, off) in self.entries.iter().zip(&h.offsets) {
            e.weight.store(h.weight, Ordering::Relaxed);
            e.current.store(off + h.picks * h.weight, Ordering::Relaxed);
            e.last_update.store(now, Ordering::Relaxed);
        }
        h.heap.clear();
        h.offsets.clear();
        self.heap_active.store(false, Ordering::Release);
    }

    /// One pick in equal-weight mode (weight `w` for all).
    fn pick_equal(&self, w: i64) -> usize {
        let mut h = self.heap.lock();
        let n = i64::try_from(self.entries.len()).unwrap_or(i64::MAX);
        if !self.heap_active.load(Ordering::Acquire) || h.weight != w {
            if self.heap_active.load(Ordering::Acquire) {
                // Weight changed for everyone: Dubbo resets every current to 0.
                h.offsets.iter_mut().for_each(|o| *o = 0);
            } else {
                h.offsets.clear();
                for e in self.entries.iter() {
                    if e.weight.load(Ordering::Relaxed) != w {
                        e.weight.store(w, Ordering::Relaxed);
                        e.current.store(0, Ordering::Relaxed);
                    }
                    h.offsets.push(e.current.load(Ordering::Relaxed));
                }
            }
            h.weight = w;
            h.picks = 0;
            let heap = h
                .offsets
                .iter()
                .enumerate()
                .map(|(i, &o)| (o, Reverse(u32::try_from(i).unwrap_or(u32::MAX))))
                .collect();
            h.heap = heap;
            self.heap_active.store(true, Ordering::Release);
        }
        if h.picks >= REBASE_PICKS {
            let shift = h.picks * h.weight;
            h.offsets.iter_mut().for_each(|o| *o += shift);
            let heap = std::mem::take(&mut h.heap);
            h.heap = heap.into_iter().map(|(o, i)| (o + shift, i)).collect();
            h.picks = 0;
        }
        h.picks += 1;
        let picked = {
            let Some(mut top) = h.heap.peek_mut() else {
                return 0;
            };
            let i = top.1 .0;
            top.0 -= n * w;
            i as usize
        };
        if let Some(o) = h.offsets.get_mut(picked) {
            *o -= n * w;
        }
        picked
    }
}

/// State of one `serviceKey.method`.
#[derive(Debug, Default)]
struct State {
    by_identity: Mutex<FxHashMap<Arc<str>, Arc<Wrr>>>,
    map_len: AtomicUsize,
    aligned: ArcSwap<Aligned>,
    next_recycle: AtomicI64,
}

const UNSET_WEIGHT: i64 = i64::MIN;

impl State {
    fn align(&self, set: &InvokerSet, now: i64) -> Arc<Aligned> {
        let mut map = self.by_identity.lock();
        let cur = self.aligned.load_full();
        if cur.content_hash == set.content_hash() && cur.entries.len() == set.len() {
            return cur;
        }
        cur.materialize(now);
        let entries: Box<[Arc<Wrr>]> = set
            .meta()
            .iter()
            .map(|m| {
                map.entry(m.identity().clone())
                    .or_insert_with(|| {
                        Arc::new(Wrr {
                            weight: AtomicI64::new(UNSET_WEIGHT),
                            current: AtomicI64::new(0),
                            last_update: AtomicI64::new(now),
                        })
                    })
                    .clone()
            })
            .collect();
        self.map_len.store(map.len(), Ordering::Relaxed);
        self.next_recycle.store(i64::MIN, Ordering::Relaxed);
        let a = Arc::new(Aligned {
            content_hash: set.content_hash(),
            entries,
            ..Aligned::default()
        });
        self.aligned.store(a.clone());
        a
    }

    /// Purges entries older than the recycle period (only while sizes differ; checked at most
    /// when the oldest stale entry can have expired).
    fn recycle(&self, aligned: &Aligned, n: usize, now: i64) {
        if self.map_len.load(Ordering::Relaxed) == n
            || now < self.next_recycle.load(Ordering::Relaxed)
        {
            return;
        }
        if aligned.heap_active.load(Ordering::Acquire) {
            // Equal-weight mode does not touch `last_update` per pick: the current set's
            // entries are in use now.
            for e in aligned.entries.iter() {
                e.last_update.store(now, Ordering::Relaxed);
            }
        }
        let mut map = self.by_identity.lock();
        map.retain(|_, w| now - w.last_update.load(Ordering::Relaxed) <= RECYCLE_PERIOD_MS);
        self.map_len.store(map.len(), Ordering::Relaxed);
        let oldest = map
            .values()
            .map(|w| w.last_update.load(Ordering::Relaxed))
            .filter(|&t| t < now)
            .min();
        self.next_recycle.store(
            oldest.map_or(now.saturating_add(1), |t| t + RECYCLE_PERIOD_MS + 1),
            Ordering::Relaxed,
        );
    }
}

/// Smooth weighted round robin: each pick adds every invoker's weight to its `current`, picks
/// the strictly greatest `current` (ties go to the earliest) and subtracts the total from it.
/// A weight change resets that invoker's `current` to 0.
///
/// Like Dubbo the per-invoker updates are atomic but the pick as a whole is not serialised:
/// concurrent picks may interleave (the long-run distribution is still exact).
#[derive(Debug, Default)]
pub struct RoundRobinLoadBalance {
    states: KeyedCache<State>,
    clock: Clock,
}

impl RoundRobinLoadBalance {
    /// A balancer with no state, on the system clock.
    pub fn new() -> Self {
        RoundRobinLoadBalance::default()
    }

    /// Uses `clock` (recycling and warm-up).
    pub fn with_clock(mut self, clock: Clock) -> Self {
        self.clock = clock;
        self
    }

    /// How many invoker entries the state of (`service_key`, `method`) holds (Dubbo's
    /// `methodWeightMap.get(key).size()`), `None` when there is no state yet.
    pub fn cached_entries(&self, service_key: &str, method: &str) -> Option<usize> {
        self.states
            .get(service_key, method)
            .map(|s| s.by_identity.lock().len())
    }
}

impl RoundRobinLoadBalance {
    /// One pick over the invokers of `set` that are not excluded (all when `excluded` is
    /// `None`). Excluded invokers keep their state untouched, exactly as if the list had been
    /// the sub-list of the others (Dubbo's reselect), without re-keying the state.
    fn pick(
        &self,
        set: &InvokerSet,
        invocation: &Invocation,
        excluded: Option<&dyn Fn(usize) -> bool>,
    ) -> Option<usize> {
        let n = set.len();
        let method = invocation.real_method();
        let now = self.clock.now_ms();
        self.states
            .with(set.service_key(), method, State::default, |st| {
                let guard = st.aligned.load();
                let owned;
                let aligned: &Aligned =
                    if guard.content_hash == set.content_hash() && guard.entries.len() == n {
                        &guard
                    } else {
                        owned = st.align(set, now);
                        &owned
                    };
                let picked = with_weights(set, method, &self.clock, |w| {
                    if let (WeightView::Static(sw), None) = (&w, excluded) {
                        let first = sw.weights().first().copied().unwrap_or(0);
                        if sw.all_equal() && first > 0 {
                            return Some(aligned.pick_equal(i64::from(first)));
                        }
                    }
                    if aligned.heap_active.load(Ordering::Acquire) {
                        aligned.materialize(now);
                    }
                    let (mut max, mut picked, mut total) = (i64::MIN, None, 0i64);
                    for (i, e) in aligned.entries.iter().enumerate() {
                        if excluded.is_some_and(|x| x(i)) {
                            continue;
                        }
                        let weight = i64::from(w.get(i));
                        if e.weight.load(Ordering::Relaxed) != weight {
                            e.weight.store(weight, Ordering::Relaxed);
                            e.current.store(0, Ordering::Relaxed);
                        }
                        let cur = e.current.fetch_add(weight, Ordering::Relaxed) + weight;
                        e.last_update.store(now, Ordering::Relaxed);
                        if cur > max {
                            max = cur;
                            picked = Some(i);
                        }
                        total += weight;
                    }
                    if let Some(e) = picked.and_then(|p| aligned.entries.get(p)) {
                        e.current.fetch_sub(total, Ordering::Relaxed);
                    }
                    picked
                });
                st.recycle(aligned, n, now);
                picked
            })
    }
}

impl LoadBalance for RoundRobinLoadBalance {
    fn select(&self, set: &InvokerSet, invocation: &Invocation) -> Option<usize> {
        match set.len() {
            0 => None,
            1 => Some(0),
            _ => self.pick(set, invocation, None),
        }
    }

    fn select_excluding(
        &self,
        set: &InvokerSet,
        invocation: &Invocation,
        excluded: &dyn Fn(usize) -> bool,
    ) -> Option<usize> {
        let mut candidates = (0..set.len()).filter(|&i| !excluded(i));
        let first = candidates.next()?;
        if candidates.next().is_none() {
            // A list of one is returned without running the algorithm.
            return Some(first);
        }
        self.pick(set, invocation, Some(excluded))
    }

    fn name(&self) -> &'static str {
        "roundrobin"
    }
}
