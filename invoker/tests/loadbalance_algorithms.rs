//! Load balancers (Dubbo's `AbstractLoadBalance` subclasses): rules of every algorithm, through the
//! public API.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers panic on bad fixtures

use std::sync::Arc;

use async_trait::async_trait;
use invoker::invoker_set::InvokerSet;
use invoker::loadbalance::{
    self, Clock, ConsistentHashLoadBalance, LeastActiveLoadBalance, LoadBalance, P2cLoadBalance,
    RandomLoadBalance, RoundRobinLoadBalance, ShortestResponseLoadBalance, DEFAULT_MAX_REPLICAS,
    RECYCLE_PERIOD_MS,
};
use invoker::rpc::{Invocation, Invoker, RpcResponse, RpcResult, SharedInvoker};
use registry_core::Url;
use serde_json::json;

#[derive(Debug)]
struct UrlInvoker(Url);

#[async_trait]
impl Invoker for UrlInvoker {
    fn url(&self) -> &Url {
        &self.0
    }
    async fn invoke(&self, _invocation: &Invocation) -> RpcResult {
        Ok(RpcResponse::empty())
    }
}

fn inv(url: &str) -> SharedInvoker {
    Arc::new(UrlInvoker(Url::parse(url).unwrap()))
}

fn set(urls: &[String]) -> InvokerSet {
    InvokerSet::new(urls.iter().map(|u| inv(u)).collect())
}

fn weighted(tag: &str, weights: &[i64]) -> InvokerSet {
    let urls: Vec<String> = weights
        .iter()
        .enumerate()
        .map(|(i, w)| format!("test://{tag}:{}/DemoService?weight={w}", i + 1))
        .collect();
    set(&urls)
}

fn counts(lb: &dyn LoadBalance, s: &InvokerSet, call: &Invocation, runs: usize) -> Vec<usize> {
    let mut c = vec![0; s.len()];
    for _ in 0..runs {
        c[lb.select(s, call).unwrap()] += 1;
    }
    c
}

fn near(got: usize, want: f64, rel: f64) -> bool {
    (got as f64 - want).abs() <= want * rel
}

#[test]
fn empty_and_single_sets_for_every_balancer() {
    let one = weighted("single", &[0]);
    let none = InvokerSet::new(Vec::new());
    let call = Invocation::new("m");
    for name in loadbalance::NAMES {
        let lb = loadbalance::by_name(name);
        assert_eq!(lb.name(), name);
        assert_eq!(lb.select(&none, &call), None, "{name}");
        assert_eq!(lb.select(&one, &call), Some(0), "{name}");
    }
}

#[test]
fn by_name_shares_instances_and_defaults_to_random() {
    let a = loadbalance::by_name("roundrobin");
    let b = loadbalance::by_name("roundrobin");
    assert!(Arc::ptr_eq(&a, &b));
    assert_eq!(loadbalance::by_name("nope").name(), "random");
}

#[test]
fn random_follows_weights_and_never_picks_zero() {
    let s = weighted("rnd", &[1, 9, 0, 6]);
    let c = counts(
        &RandomLoadBalance::seeded(1),
        &s,
        &Invocation::new("m"),
        16_000,
    );
    assert_eq!(c[2], 0);
    assert!(
        near(c[0], 1000.0, 0.15) && near(c[1], 9000.0, 0.05) && near(c[3], 6000.0, 0.05),
        "{c:?}"
    );
}

#[test]
fn random_dubbo_rule_is_uniform_when_first_has_no_weight() {
    let s = set(&[
        "dubbo://10.0.0.1:20880/S".into(),
        "dubbo://10.0.0.2:20880/S?weight=1000".into(),
    ]);
    let call = Invocation::new("m");
    let dubbo = counts(
        &RandomLoadBalance::seeded(2).dubbo_first_invoker_rule(),
        &s,
        &call,
        10_000,
    );
    assert!(near(dubbo[0], 5000.0, 0.05), "{dubbo:?}");
    let ours = counts(&RandomLoadBalance::seeded(2), &s, &call, 10_000);
    assert!(near(ours[1], 10_000.0 * 1000.0 / 1100.0, 0.05), "{ours:?}");
}

#[test]
fn method_level_weight_applies_to_that_method_only() {
    let s = set(&[
        "test://mw:1/S?weight=100&hot.weight=900".into(),
        "test://mw:2/S?weight=100".into(),
    ]);
    let lb = RandomLoadBalance::seeded(3);
    let hot = counts(&lb, &s, &Invocation::new("hot"), 10_000);
    assert!(near(hot[0], 9000.0, 0.05), "{hot:?}");
    let cold = counts(&lb, &s, &Invocation::new("cold"), 10_000);
    assert!(near(cold[0], 5000.0, 0.06), "{cold:?}");
}

#[test]
fn warm_up_weights_change_with_time() {
    let t0 = 1_700_000_000_000i64;
    // Invoker 0 started 60 s ago (weight 10 of 100), invoker 1 is long warm.
    let s = set(&[
        format!("test://wu:1/S?timestamp={}", t0 - 60_000),
        format!("test://wu:2/S?timestamp={}", t0 - 6_000_000),
    ]);
    let clock = Clock::manual(t0);
    let lb = RandomLoadBalance::seeded(4).with_clock(clock.clone());
    let c = counts(&lb, &s, &Invocation::new("m"), 11_000);
    assert!(near(c[0], 1000.0, 0.15), "{c:?}");
    clock.set(t0 + 600_000);
    let c = counts(&lb, &s, &Invocation::new("m"), 10_000);
    assert!(near(c[0], 5000.0, 0.06), "{c:?}");
}

#[test]
fn roundrobin_smooth_sequences() {
    let lb = RoundRobinLoadBalance::new();
    let s = weighted("rr-seq", &[5, 1, 1]);
    let call = Invocation::new("m");
    let seq: Vec<usize> = (0..7).map(|_| lb.select(&s, &call).unwrap()).collect();
    assert_eq!(seq, [0, 0, 1, 0, 2, 0, 0]);
    let zeros = weighted("rr-zero", &[0, 0, 0]);
    assert!((0..10).all(|_| lb.select(&zeros, &call) == Some(0)));
}

#[test]
fn roundrobin_state_is_per_method_and_survives_a_new_snapshot() {
    let lb = RoundRobinLoadBalance::new();
    let s = weighted("rr-state", &[1, 1, 1]);
    let a = Invocation::new("a");
    let b = Invocation::new("b");
    assert_eq!(lb.select(&s, &a), Some(0));
    assert_eq!(lb.select(&s, &a), Some(1));
    assert_eq!(lb.select(&s, &b), Some(0), "separate state per method");
    // A new snapshot with the same providers continues the rotation.
    let again = InvokerSet::new_reusing(s.invokers().to_vec(), &s);
    assert_eq!(lb.select(&again, &a), Some(2));
}

#[test]
fn roundrobin_weight_change_resets_current() {
    let lb = RoundRobinLoadBalance::new();
    let call = Invocation::new("m");
    let s1 = weighted("rr-w", &[1, 1]);
    assert_eq!(lb.select(&s1, &call), Some(0));
    // Same identities, new weight for the second: its current restarts at 0.
    let s2 = weighted("rr-w", &[1, 3]);
    let seq: Vec<usize> = (0..4).map(|_| lb.select(&s2, &call).unwrap()).collect();
    assert_eq!(seq.iter().filter(|&&i| i == 1).count(), 3, "{seq:?}");
}

#[test]
fn roundrobin_recycles_after_period_when_sizes_differ() {
    let clock = Clock::manual(1_000_000);
    let lb = RoundRobinLoadBalance::new().with_clock(clock.clone());
    let call = Invocation::new("m");
    let s = weighted("rr-rec", &[1, 2, 3, 4]);
    lb.select(&s, &call);
    let key = s.service_key().clone();
    let fewer = InvokerSet::new_reusing(s.invokers()[..2].to_vec(), &s);
    lb.select(&fewer, &call);
    assert_eq!(lb.cached_entries(&key, "m"), Some(4));
    clock.advance(RECYCLE_PERIOD_MS);
    lb.select(&fewer, &call);
    assert_eq!(lb.cached_entries(&key, "m"), Some(4));
    clock.advance(1);
    lb.select(&fewer, &call);
    assert_eq!(lb.cached_entries(&key, "m"), Some(2));
}

#[test]
fn least_active_prefers_idle_invokers() {
    let s = weighted("la", &[1, 9, 6]);
    let method = "la-m";
    let busy = s.meta()[2].status().begin(method);
    let c = counts(
        &LeastActiveLoadBalance::seeded(5),
        &s,
        &Invocation::new(method),
        10_000,
    );
    assert_eq!(c[2], 0);
    assert!(
        near(c[0], 1000.0, 0.15) && near(c[1], 9000.0, 0.05),
        "{c:?}"
    );
    drop(busy);
    let one_busy = s.meta()[0].status().begin(method);
    let two_busy = s.meta()[1].status().begin(method);
    assert_eq!(
        LeastActiveLoadBalance::seeded(5).select(&s, &Invocation::new(method)),
        Some(2)
    );
    drop((one_busy, two_busy));
}

#[test]
fn shortest_response_prefers_fast_and_resets_window() {
    let s = weighted("sr", &[1, 1]);
    let method = "sr-m";
    let slow = s.meta()[0].status().method(method);
    let fast = s.meta()[1].status().method(method);
    slow.record(50_000, true);
    fast.record(1_000, true);
    let clock = Clock::manual(0);
    let lb = ShortestResponseLoadBalance::seeded(6).with_clock(clock.clone());
    let call = Invocation::new(method);
    assert!((0..100).all(|_| lb.select(&s, &call) == Some(1)));
    // A new window forgets the history: both estimates are 0, so both are chosen.
    clock.advance(30_000);
    let c = counts(&lb, &s, &call, 2_000);
    assert!(c[0] > 700 && c[1] > 700, "{c:?}");
}

#[test]
fn p2c_avoids_the_loaded_invoker_and_weight_zero() {
    let s = weighted("p2c", &[100, 100]);
    let method = "p2c-m";
    let g: Vec<_> = (0..5).map(|_| s.meta()[0].status().begin(method)).collect();
    let lb = P2cLoadBalance::seeded(7);
    assert!((0..100).all(|_| lb.select(&s, &Invocation::new(method)) == Some(1)));
    drop(g);
    let z = weighted("p2c-z", &[0, 100, 100, 100]);
    let c = counts(&lb, &z, &Invocation::new(method), 3_000);
    assert_eq!(c[0], 0, "{c:?}");
    assert!(c[1] > 700 && c[2] > 700 && c[3] > 700, "{c:?}");
}

fn ch_set(n: usize, extra: &str) -> InvokerSet {
    let urls: Vec<String> = (1..=n)
        .map(|i| format!("test://127.0.0.1:{i}/DemoService?x=1{extra}"))
        .collect();
    set(&urls)
}

fn arg_call(method: &str, args: serde_json::Value) -> Invocation {
    let args = args.as_array().unwrap().clone();
    let types = args.iter().map(|_| "java.lang.String".to_owned()).collect();
    Invocation::new(method).with_arguments(types, args)
}

#[test]
fn consistent_hash_is_sticky_and_uses_hash_arguments() {
    let lb = ConsistentHashLoadBalance::new();
    let s = ch_set(5, "");
    let first = lb.select(&s, &arg_call("m", json!(["k1", "a"]))).unwrap();
    for second in ["b", "c", "d"] {
        assert_eq!(
            lb.select(&s, &arg_call("m", json!(["k1", second]))),
            Some(first),
            "only arg 0 counts"
        );
    }
    // hash.arguments=0,1: the second argument matters too; the key is their concatenation.
    let s01 = ch_set(5, "&hash.arguments=0,1");
    let lb2 = ConsistentHashLoadBalance::new();
    let a = lb2.select(&s01, &arg_call("m", json!(["arg1", "arg2", "arg3"])));
    let b = lb2.select(&s01, &arg_call("m", json!(["arg1arg2"])));
    assert_eq!(a.map(|i| s01.get(i).unwrap().url().port()), Some(4));
    assert_eq!(b, lb2.select(&s01, &arg_call("m", json!(["arg1arg2", ""]))));
}

#[test]
fn consistent_hash_generic_call_hashes_real_method_and_args() {
    let lb = ConsistentHashLoadBalance::new();
    let s = ch_set(5, "");
    let generic = arg_call(
        "$invoke",
        json!(["method1", ["java.lang.String"], ["arg1", "arg2", "arg3"]]),
    );
    let direct = arg_call("method1", json!(["arg1", "arg2", "arg3"]));
    let g = lb.select(&s, &generic).unwrap();
    assert_eq!(Some(g), lb.select(&s, &direct));
    assert_eq!(s.get(g).unwrap().url().port(), 2);
}

#[test]
fn consistent_hash_removing_a_provider_moves_only_its_keys() {
    let lb = ConsistentHashLoadBalance::new();
    let full = ch_set(10, "");
    let removed_port = 4;
    let keep: Vec<SharedInvoker> = full
        .invokers()
        .iter()
        .filter(|i| i.url().port() != removed_port)
        .cloned()
        .collect();
    let fewer = InvokerSet::new_reusing(keep, &full);
    let calls: Vec<Invocation> = (0..2_000)
        .map(|k| arg_call("m", json!([format!("key-{k}")])))
        .collect();
    // One ring per (service, method) is cached: run every key on one set, then on the other.
    let before: Vec<i32> = calls
        .iter()
        .map(|c| full.get(lb.select(&full, c).unwrap()).unwrap().url().port())
        .collect();
    let after: Vec<i32> = calls
        .iter()
        .map(|c| {
            fewer
                .get(lb.select(&fewer, c).unwrap())
                .unwrap()
                .url()
                .port()
        })
        .collect();
    let mut moved = 0;
    for (k, (&before, &after)) in before.iter().zip(&after).enumerate() {
        if before != removed_port {
            assert_eq!(before, after, "key-{k} moved although its provider stayed");
        } else {
            moved += 1;
            assert_ne!(after, removed_port);
        }
    }
    assert!(moved > 50, "the removed provider owned some keys ({moved})");
}

#[test]
fn select_excluding_skips_tried_invokers() {
    let s = weighted("ex", &[1, 1, 1, 1]);
    let call = Invocation::new("m");
    for name in loadbalance::NAMES {
        let lb = loadbalance::seeded(name, 9);
        for _ in 0..50 {
            let i = lb.select_excluding(&s, &call, &|i| i != 2).unwrap();
            assert_eq!(i, 2, "{name}");
            let j = lb
                .select_excluding(&s, &call, &|i| i == 0 || i == 3)
                .unwrap();
            assert!(j == 1 || j == 2, "{name}");
        }
        assert_eq!(lb.select_excluding(&s, &call, &|_| true), None);
    }
}

mod props {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        #[test]
        fn every_balancer_returns_an_index_in_range(weights in proptest::collection::vec(-5i64..50, 1..40), seed in any::<u64>()) {
            let s = weighted("prop", &weights);
            let call = Invocation::new("m");
            for name in loadbalance::NAMES {
                let lb = loadbalance::seeded(name, seed);
                for _ in 0..20 {
                    let i = lb.select(&s, &call).unwrap();
                    prop_assert!(i < s.len());
                }
            }
        }

        #[test]
        fn weighted_pickers_skip_zero_weights(weights in proptest::collection::vec(0i64..5, 2..20), seed in any::<u64>()) {
            prop_assume!(weights.iter().any(|&w| w > 0));
            let s = weighted("prop0", &weights);
            let call = Invocation::new("m");
            let lb = RandomLoadBalance::seeded(seed);
            for _ in 0..50 {
                let i = lb.select(&s, &call).unwrap();
                let all_equal = weights.iter().all(|&w| w == weights[0]);
                prop_assert!(all_equal || weights[i] > 0);
            }
        }

        #[test]
        fn roundrobin_hits_exact_proportions(weights in proptest::collection::vec(1i64..6, 2..8)) {
            let tag = format!("prop-rr-{}", weights.iter().map(|w| w.to_string()).collect::<Vec<_>>().join("-"));
            let s = weighted(&tag, &weights);
            let lb = RoundRobinLoadBalance::new();
            let call = Invocation::new("m");
            let total: i64 = weights.iter().sum();
            let mut c = vec![0i64; weights.len()];
            for _ in 0..total * 3 {
                c[lb.select(&s, &call).unwrap()] += 1;
            }
            let want: Vec<i64> = weights.iter().map(|w| w * 3).collect();
            prop_assert_eq!(c, want);
        }
    }
}

#[test]
fn new_reusing_keeps_metadata_of_unchanged_invokers() {
    let s = weighted("reuse", &[1, 2, 3, 4, 5, 6]);
    // One replaced, one removed: every other invoker keeps its metadata object.
    let mut list = s.invokers().to_vec();
    list.remove(1);
    list[2] = inv("test://reuse-new:9/DemoService?weight=7");
    let again = InvokerSet::new_reusing(list.clone(), &s);
    for (k, i) in list.iter().enumerate() {
        match s.invokers().iter().position(|o| Arc::ptr_eq(o, i)) {
            Some(o) => assert!(
                Arc::ptr_eq(&again.meta()[k], &s.meta()[o]),
                "meta of {k} reused"
            ),
            None => assert_eq!(again.meta()[k].configured_weight("m"), 7),
        }
    }
    // Reordered lists: metadata equal in content (reused through the pointer map once the
    // cursor gives up).
    for n in [6usize, 300] {
        let big = weighted(&format!("reuse-{n}"), &(1..=n as i64).collect::<Vec<_>>());
        let mut shuffled = big.invokers().to_vec();
        shuffled.reverse();
        let r = InvokerSet::new_reusing(shuffled.clone(), &big);
        for (k, i) in shuffled.iter().enumerate() {
            let o = big
                .invokers()
                .iter()
                .position(|x| Arc::ptr_eq(x, i))
                .unwrap();
            assert_eq!(r.meta()[k].identity(), big.meta()[o].identity());
            assert_eq!(
                r.meta()[k].configured_weight("m"),
                big.meta()[o].configured_weight("m")
            );
        }
        assert_eq!(r.content_hash(), InvokerSet::new(shuffled).content_hash());
    }
}

#[test]
fn random_with_warming_invokers_matches_warm_weights() {
    let t0 = 1_700_000_000_000i64;
    // 20 invokers: even ones started 60 s ago (weight 10 of 100), odd ones long warm; the
    // last one's clock is ahead (weight 1).
    let mut urls: Vec<String> = (0..20)
        .map(|i| {
            let ts = if i % 2 == 0 {
                t0 - 60_000
            } else {
                t0 - 6_000_000
            };
            format!("test://warm-many:{}/S?timestamp={ts}", i + 1)
        })
        .collect();
    urls[19] = format!("test://warm-many:20/S?timestamp={}", t0 + 5_000);
    let s = set(&urls);
    let lb = RandomLoadBalance::seeded(11).with_clock(Clock::manual(t0));
    let c = counts(&lb, &s, &Invocation::new("m"), 60_000);
    // Weights: 10 × 10 + 9 × 100 + 1 = 1001.
    for (i, &got) in c.iter().enumerate() {
        let w: f64 = if i == 19 {
            1.0
        } else if i % 2 == 0 {
            10.0
        } else {
            100.0
        };
        let want = 60_000.0 * w / 1001.0;
        let tol = (want * 0.12).max(5.0 * want.sqrt());
        assert!(
            (got as f64 - want).abs() <= tol,
            "invoker {i}: {got} vs {want:.0} ({c:?})"
        );
    }
}

#[test]
fn consistent_hash_reselect_walks_the_ring() {
    let lb = ConsistentHashLoadBalance::new();
    let s = ch_set(8, "");
    let key = s.service_key().clone();
    for k in 0..200 {
        let call = arg_call("m", json!([format!("user-{k}")]));
        let first = lb.select(&s, &call).unwrap();
        let next = lb.select_excluding(&s, &call, &|i| i == first).unwrap();
        assert_ne!(next, first);
        // Deterministic, and the full ring stays cached (no rebuild for the sub-list).
        assert_eq!(lb.select_excluding(&s, &call, &|i| i == first), Some(next));
        assert_eq!(lb.ring_size(&key, "m"), Some((160, 8 * 160)));
        assert_eq!(lb.select(&s, &call), Some(first));
    }
}

#[test]
fn consistent_hash_bounds_what_hash_nodes_asks_for() {
    // A provider URL (or an override) may ask for any number of virtual nodes per invoker
    // (Java builds them all: `hash.nodes=2147483647` is billions of TreeMap entries); here
    // the ring stops at the limits (100,000 asked for: 16,384 built).
    let lb = ConsistentHashLoadBalance::new();
    let s = ch_set(3, "&hash.nodes=100000");
    let key = s.service_key().clone();
    let call = arg_call("m", json!(["user-1"]));
    let first = lb.select(&s, &call).unwrap();
    assert_eq!(lb.select(&s, &call), Some(first));
    let (replicas, points) = lb.ring_size(&key, "m").unwrap();
    assert_eq!(replicas, DEFAULT_MAX_REPLICAS);
    assert!(points <= 3 * DEFAULT_MAX_REPLICAS as usize, "{points}");

    // Tighter limits: the ring shrinks with the number of invokers, never below 4 nodes each.
    let lb = ConsistentHashLoadBalance::with_limits(1024, 2048);
    let s = ch_set(8, "&hash.nodes=1000000");
    let key = s.service_key().clone();
    lb.select(&s, &call).unwrap();
    assert_eq!(lb.ring_size(&key, "m").map(|r| r.0), Some(256));
}
