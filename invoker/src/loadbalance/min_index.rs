//! [`MinIndex`]: the least-active / shortest-response choice at scale without scanning every
//! invoker per call.
//!
//! One index per (invoker set, method, key kind). It is a segment tree over the set's invokers
//! in list order whose nodes keep, for their range, the minimum key, how many leaves have it,
//! and those leaves' weight sum and weight range. The root therefore says at once how many
//! invokers tie for the minimum, whether their weights are equal and their total weight;
//! Dubbo's choice (one → it; different weights with a positive total → the first tie, in list
//! order, whose running weight exceeds `rand(total)`; else the `rand(count)`-th tie) is found
//! by one descent. Select is O(log n) and allocates nothing.
//!
//! The leaves follow the counters: every [`RpcStatus`] keeps weak observers; a call that
//! begins or ends updates its leaf in every index that watches it (O(log n) each), reading the
//! counter under the index lock, so the last update always leaves the current value. The
//! shortest-response window is a function of time: when the window number moves, the index is
//! rebuilt once (O(n)) at the next select.
//!
//! Weights are fixed when the index is built, so the index is only used while the set's
//! weights are static (no invoker warming up); the balancers scan otherwise.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};

use parking_lot::Mutex;

use super::{Clock, Rand};
use crate::status::{RpcStatus, StatusObserver};

/// What a leaf's key is.
#[derive(Debug, Clone)]
pub(crate) enum KeyKind {
    /// `active` of the method counters.
    Active,
    /// The shortest-response estimate in the window `now / slide_ms`.
    Estimate {
        /// `shortestResponseSlidePeriod`.
        slide_ms: i64,
        /// The balancer's clock.
        clock: Clock,
    },
}

impl KeyKind {
    pub(crate) fn same(&self, other: &KeyKind) -> bool {
        match (self, other) {
            (KeyKind::Active, KeyKind::Active) => true,
            (
                KeyKind::Estimate {
                    slide_ms: a,
                    clock: ca,
                },
                KeyKind::Estimate {
                    slide_ms: b,
                    clock: cb,
                },
            ) => {
                a == b
                    && match (ca, cb) {
                        (Clock::System, Clock::System) => true,
                        (Clock::Manual(x), Clock::Manual(y)) => Arc::ptr_eq(x, y),
                        _ => false,
                    }
            }
            _ => false,
        }
    }

    fn window(&self) -> i64 {
        match self {
            KeyKind::Active => 0,
            KeyKind::Estimate { slide_ms, clock } => clock.now_ms().div_euclid(*slide_ms),
        }
    }

    fn key(&self, status: &RpcStatus, window: i64) -> u64 {
        match self {
            KeyKind::Active => u64::try_from(status.active().max(0)).unwrap_or(0),
            KeyKind::Estimate { .. } => status.estimate_response_us(window),
        }
    }
}

#[derive(Debug, Clone, Copy)]
struct Node {
    min: u64,
    count: u32,
    wsum: i64,
    wmin: i32,
    wmax: i32,
}

const EMPTY: Node = Node {
    min: u64::MAX,
    count: 0,
    wsum: 0,
    wmin: i32::MAX,
    wmax: i32::MIN,
};

fn combine(a: Node, b: Node) -> Node {
    if a.count == 0 || (b.count != 0 && b.min < a.min) {
        return if b.count == 0 { a } else { b };
    }
    if b.count == 0 || a.min < b.min {
        return a;
    }
    Node {
        min: a.min,
        count: a.count + b.count,
        wsum: a.wsum + b.wsum,
        wmin: a.wmin.min(b.wmin),
        wmax: a.wmax.max(b.wmax),
    }
}

#[derive(Debug)]
struct Tree {
    /// Leaves start here (a power of two).
    base: usize,
    nodes: Vec<Node>,
    window: i64,
}

impl Tree {
    fn set(&mut self, leaf: usize, key: u64, weight: i32) {
        let mut i = self.base + leaf;
        self.nodes[i] = Node {
            min: key,
            count: 1,
            wsum: i64::from(weight),
            wmin: weight,
            wmax: weight,
        };
        while i > 1 {
            i /= 2;
            self.nodes[i] = combine(self.nodes[2 * i], self.nodes[2 * i + 1]);
        }
    }

    fn rebuild(&mut self, keys: impl Iterator<Item = u64>, weights: &[i32]) {
        for (leaf, key) in keys.enumerate() {
            let w = weights.get(leaf).copied().unwrap_or(0);
            self.nodes[self.base + leaf] = Node {
                min: key,
                count: 1,
                wsum: i64::from(w),
                wmin: w,
                wmax: w,
            };
        }
        for i in (1..self.base).rev() {
            self.nodes[i] = combine(self.nodes[2 * i], self.nodes[2 * i + 1]);
        }
    }

    /// Descends to the leaf chosen by `go_left(left child, remaining) -> Some(new remaining)`.
    fn pick(&self, rand: &Rand) -> usize {
        let root = self.nodes[1];
        let target = root.min;
        let in_min = |n: &Node| n.count > 0 && n.min == target;
        let mut i = 1;
        if root.count > 1 && root.wmin != root.wmax && root.wsum > 0 {
            let mut offset = rand.below_i64(root.wsum);
            while i < self.base {
                let l = self.nodes[2 * i];
                if in_min(&l) && offset < l.wsum {
                    i *= 2;
                } else {
                    if in_min(&l) {
                        offset -= l.wsum;
                    }
                    i = 2 * i + 1;
                }
            }
        } else {
            let mut r = if root.count > 1 {
                rand.below(root.count as usize)
            } else {
                0
            };
            while i < self.base {
                let l = self.nodes[2 * i];
                let lc = if in_min(&l) { l.count as usize } else { 0 };
                if r < lc {
                    i *= 2;
                } else {
                    r -= lc;
                    i = 2 * i + 1;
                }
            }
        }
        i - self.base
    }
}

/// The index of one (set, method, key kind). See the module docs.
#[derive(Debug)]
pub(crate) struct MinIndex {
    kind: KeyKind,
    statuses: Arc<[Arc<RpcStatus>]>,
    weights: Box<[i32]>,
    tree: Mutex<Tree>,
    stale: AtomicBool,
}

impl StatusObserver for MinIndex {
    fn update(&self, leaf: usize) {
        self.update_leaf(leaf);
    }
}

impl MinIndex {
    /// Builds the index and subscribes it to every counter.
    pub(crate) fn build(
        kind: KeyKind,
        statuses: Arc<[Arc<RpcStatus>]>,
        weights: Box<[i32]>,
    ) -> Arc<MinIndex> {
        let n = statuses.len();
        let base = n.next_power_of_two().max(1);
        let index = Arc::new(MinIndex {
            kind,
            statuses,
            weights,
            tree: Mutex::new(Tree {
                base,
                nodes: vec![EMPTY; 2 * base],
                window: 0,
            }),
            stale: AtomicBool::new(true),
        });
        let weak: Weak<MinIndex> = Arc::downgrade(&index);
        for (leaf, s) in index.statuses.iter().enumerate() {
            s.observe(weak.clone(), leaf);
        }
        // Built after subscribing: a change racing with the build is seen either here or
        // by its own update.
        index.refresh(&mut index.tree.lock(), index.kind.window());
        index
    }

    fn refresh(&self, tree: &mut Tree, window: i64) {
        tree.window = window;
        let kind = &self.kind;
        tree.rebuild(
            self.statuses.iter().map(|s| kind.key(s, window)),
            &self.weights,
        );
        self.stale.store(false, Ordering::Release);
    }

    /// A counter of leaf `leaf` changed.
    fn update_leaf(&self, leaf: usize) {
        let Some(status) = self.statuses.get(leaf) else {
            return;
        };
        let mut tree = self.tree.lock();
        let window = self.kind.window();
        if window != tree.window {
            // Every estimate moves to the new window: rebuilt at the next select.
            self.stale.store(true, Ordering::Release);
            return;
        }
        let key = self.kind.key(status, window);
        let w = self.weights.get(leaf).copied().unwrap_or(0);
        tree.set(leaf, key, w);
    }

    /// Dubbo's least-key choice: an index into the set.
    pub(crate) fn select(&self, rand: &Rand) -> usize {
        let mut tree = self.tree.lock();
        let window = self.kind.window();
        if self.stale.load(Ordering::Acquire) || window != tree.window {
            self.refresh(&mut tree, window);
        }
        tree.pick(rand)
    }

    pub(crate) fn kind(&self) -> &KeyKind {
        &self.kind
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn statuses(active: &[i32]) -> Arc<[Arc<RpcStatus>]> {
        active
            .iter()
            .map(|&a| {
                let s = Arc::new(RpcStatus::new());
                for _ in 0..a {
                    s.try_acquire(0);
                }
                s
            })
            .collect()
    }

    #[test]
    fn picks_the_least_and_follows_updates() {
        let st = statuses(&[3, 1, 2, 1, 5]);
        let idx = MinIndex::build(KeyKind::Active, st.clone(), vec![100; 5].into());
        let rand = Rand::seeded(7);
        for _ in 0..50 {
            let p = idx.select(&rand);
            assert!(p == 1 || p == 3, "picked {p}");
        }
        st[3].try_acquire(0);
        st[3].notify_observers();
        for _ in 0..20 {
            assert_eq!(idx.select(&rand), 1);
        }
    }

    #[test]
    fn weighted_ties_in_list_order() {
        let st = statuses(&[0, 0, 1]);
        let idx = MinIndex::build(KeyKind::Active, st, vec![0, 10, 100].into());
        let rand = Rand::seeded(1);
        // weight 0 is never picked when another tie has weight.
        for _ in 0..50 {
            assert_eq!(idx.select(&rand), 1);
        }
    }
}

#[cfg(test)]
mod equivalence {
    use super::*;

    /// The index picks exactly what the scan (`pick_min`) picks with the same random
    /// numbers, through changing counters and weights that tie or differ.
    #[test]
    fn index_choice_equals_the_scan() {
        let mut seed = 0x9E37_79B9_7F4A_7C15u64;
        let mut next = move |m: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % m
        };
        for round in 0..40 {
            let n = 1 + next(300) as usize;
            let st: Arc<[Arc<RpcStatus>]> = (0..n).map(|_| Arc::new(RpcStatus::new())).collect();
            for s in st.iter() {
                for _ in 0..next(3) {
                    s.try_acquire(0);
                }
            }
            let weights: Box<[i32]> = (0..n)
                .map(|_| {
                    if round % 3 == 0 {
                        100
                    } else {
                        next(4) as i32 * 50
                    }
                })
                .collect();
            let estimate = round % 2 == 1;
            let clock = Clock::manual(1_000_000);
            let kind = if estimate {
                KeyKind::Estimate {
                    slide_ms: 30_000,
                    clock: clock.clone(),
                }
            } else {
                KeyKind::Active
            };
            let idx = MinIndex::build(kind, st.clone(), weights.clone());
            for step in 0..200u64 {
                // Change one counter (an update through the observers).
                let s = &st[next(n as u64) as usize];
                if estimate {
                    s.record(next(5) * 1000, true);
                } else {
                    s.try_acquire(0);
                }
                if step % 50 == 49 && estimate {
                    clock.advance(30_000);
                }
                let window = clock.now_ms().div_euclid(30_000);
                let (a, b) = (Rand::seeded(step), Rand::seeded(step));
                let got = idx.select(&a);
                let keys: Vec<u64> = st
                    .iter()
                    .map(|s| {
                        if estimate {
                            s.estimate_response_us(window)
                        } else {
                            u64::try_from(s.active()).unwrap_or(0)
                        }
                    })
                    .collect();
                let want = super::super::pick_min(keys.iter().copied(), |i| weights[i], &b);
                assert_eq!(got, want, "round {round} step {step} n {n}");
            }
        }
    }
}
