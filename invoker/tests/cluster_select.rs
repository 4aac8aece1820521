//! `select` / `doSelect` / `reselect` (`AbstractClusterInvoker`): sticky, availablecheck,
//! already-selected avoidance, next-index fallback, and zero allocations on the hot path.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use invoker::cluster::core::{ClusterCore, DEFAULT_RESELECT_COUNT};
use invoker::directory::StaticDirectory;
use invoker::invoker_set::InvokerSet;
use invoker::loadbalance::LoadBalance;
use invoker::rpc::{Invocation, SharedInvoker};
use invoker::testutil::*;
use registry_core::Url;

/// Always picks index `k` (clamped): makes reselect paths deterministic.
#[derive(Debug)]
struct Fixed(usize);

impl LoadBalance for Fixed {
    fn select(&self, set: &InvokerSet, _i: &Invocation) -> Option<usize> {
        (!set.is_empty()).then(|| self.0.min(set.len() - 1))
    }
}

/// Cycles through the list.
#[derive(Debug, Default)]
struct Cycle(AtomicUsize);

impl LoadBalance for Cycle {
    fn select(&self, set: &InvokerSet, _i: &Invocation) -> Option<usize> {
        (!set.is_empty()).then(|| self.0.fetch_add(1, Ordering::SeqCst) % set.len())
    }
}

fn setup(invokers: &[Arc<ScriptedInvoker>], availablecheck: bool) -> (ClusterCore, InvokerSet) {
    let shared: Vec<SharedInvoker> = invokers
        .iter()
        .map(|i| i.clone() as SharedInvoker)
        .collect();
    let url = consumer("");
    let reg = url.with_param(
        "cluster.availablecheck",
        if availablecheck { "true" } else { "false" },
    );
    let dir = StaticDirectory::new(url, shared.clone()).with_registry_url(reg);
    (
        ClusterCore::new(Arc::new(dir), None, DEFAULT_RESELECT_COUNT),
        InvokerSet::new(shared),
    )
}

fn named(n: usize, sticky: bool) -> Vec<Arc<ScriptedInvoker>> {
    (0..n)
        .map(|i| {
            let s = if sticky { "&sticky=true" } else { "" };
            ScriptedInvoker::with_url(
                &format!("test://127.0.0.1:{}/demo.Service?name=p{i}{s}", 20880 + i),
                ok("x"),
            )
        })
        .collect()
}

fn name(i: &SharedInvoker) -> String {
    i.url().param("name").unwrap_or("").to_owned()
}

#[test]
fn single_invoker_is_returned_even_if_unavailable() {
    let inv = vec![ScriptedInvoker::new(0, ok("x")).unavailable()];
    let (core, set) = setup(&inv, true);
    let got = core
        .select(&Fixed(0), &Invocation::new("m"), &set, &[])
        .unwrap();
    assert_eq!(name(&got), "p0");
    assert!(core
        .select(
            &Fixed(0),
            &Invocation::new("m"),
            &InvokerSet::new(vec![]),
            &[]
        )
        .is_none());
}

#[test]
fn already_selected_and_unavailable_are_reselected() {
    let inv = named(4, false);
    let (core, set) = setup(&inv, true);
    let sel: Vec<SharedInvoker> = vec![inv[0].clone(), inv[1].clone()];
    for _ in 0..20 {
        let got = name(
            &core
                .select(&Fixed(0), &Invocation::new("m"), &set, &sel)
                .unwrap(),
        );
        assert!(got == "p2" || got == "p3", "{got}");
    }
    // Unavailable picks are skipped when checking.
    let inv = vec![
        ScriptedInvoker::new(0, ok("x")).unavailable(),
        ScriptedInvoker::new(1, ok("y")),
    ];
    let (core, set) = setup(&inv, true);
    for _ in 0..20 {
        assert_eq!(
            name(
                &core
                    .select(&Fixed(0), &Invocation::new("m"), &set, &[])
                    .unwrap()
            ),
            "p1"
        );
    }
    // ... and kept when not checking.
    let (core, set) = setup(&inv, false);
    assert_eq!(
        name(
            &core
                .select(&Fixed(0), &Invocation::new("m"), &set, &[])
                .unwrap()
        ),
        "p0"
    );
}

#[test]
fn everything_selected_falls_back_to_selected_available_then_next_index() {
    let inv = named(3, false);
    let (core, set) = setup(&inv, true);
    let all: Vec<SharedInvoker> = inv.iter().map(|i| i.clone() as SharedInvoker).collect();
    // All tried and all available: reselect among the selected ones.
    assert!(core
        .select(&Fixed(1), &Invocation::new("m"), &set, &all)
        .is_some());
    // All tried, none available: the next index after the balancer's pick.
    let inv: Vec<_> = (0..3)
        .map(|i| ScriptedInvoker::new(i, ok("x")).unavailable())
        .collect();
    let (core, set) = setup(&inv, true);
    let all: Vec<SharedInvoker> = inv.iter().map(|i| i.clone() as SharedInvoker).collect();
    assert_eq!(
        name(
            &core
                .select(&Fixed(1), &Invocation::new("m"), &set, &all)
                .unwrap()
        ),
        "p2"
    );
    assert_eq!(
        name(
            &core
                .select(&Fixed(2), &Invocation::new("m"), &set, &all)
                .unwrap()
        ),
        "p0"
    );
}

#[test]
fn reselect_samples_large_lists() {
    let inv = named(200, false);
    let (core, set) = setup(&inv, true);
    let sel: Vec<SharedInvoker> = vec![inv[0].clone()];
    for _ in 0..50 {
        let got = core
            .select(&Fixed(0), &Invocation::new("m"), &set, &sel)
            .unwrap();
        assert_ne!(name(&got), "p0");
    }
}

#[test]
fn sticky_reuses_the_first_choice_only_with_availablecheck() {
    let inv = named(3, true);
    let (core, set) = setup(&inv, true);
    let lb = Cycle::default();
    let picks: Vec<String> = (0..6)
        .map(|_| name(&core.select(&lb, &Invocation::new("m"), &set, &[]).unwrap()))
        .collect();
    assert!(picks.iter().all(|p| p == &picks[0]), "{picks:?}");
    // A tried sticky invoker is not reused within the call.
    let sticky: SharedInvoker = inv.iter().find(|i| i.name() == picks[0]).unwrap().clone();
    let other = name(
        &core
            .select(&lb, &Invocation::new("m"), &set, &[sticky])
            .unwrap(),
    );
    assert_ne!(other, picks[0]);

    // cluster.availablecheck=false disables stickiness (Dubbo's `AbstractClusterInvoker.select`).
    let (core, set) = setup(&inv, false);
    let picks: Vec<String> = (0..6)
        .map(|_| name(&core.select(&lb, &Invocation::new("m"), &set, &[]).unwrap()))
        .collect();
    assert!(picks.iter().any(|p| p != &picks[0]), "{picks:?}");
}

#[test]
fn sticky_invoker_gone_from_the_list_is_forgotten() {
    let inv = named(3, true);
    let (core, set) = setup(&inv, true);
    let first = name(
        &core
            .select(&Fixed(0), &Invocation::new("m"), &set, &[])
            .unwrap(),
    );
    assert_eq!(first, "p0");
    let rest: Vec<SharedInvoker> = inv[1..]
        .iter()
        .map(|i| i.clone() as SharedInvoker)
        .collect();
    let smaller = InvokerSet::new(rest);
    assert_eq!(
        name(
            &core
                .select(&Fixed(1), &Invocation::new("m"), &smaller, &[])
                .unwrap()
        ),
        "p2"
    );
}

/// `cluster.availablecheck=false` (registry URL) through a whole failover cluster: the
/// balancer's pick is called even though it reports itself unavailable; on failure the retry
/// avoids only what this call already tried, and unavailable invokers stay eligible. With the
/// check on, the same pick is replaced by an available invoker.
#[tokio::test]
async fn availablecheck_false_calls_the_unavailable_pick_and_avoids_only_tried_ones() {
    use invoker::cluster::{ClusterInvoker, ClusterKind, ClusterOptions};
    use invoker::rpc::Invoker;

    let cluster = |invokers: &[Arc<ScriptedInvoker>], check: bool| {
        let shared: Vec<SharedInvoker> = invokers
            .iter()
            .map(|i| i.clone() as SharedInvoker)
            .collect();
        let url = consumer("retries=2");
        let reg = Url::parse(&format!(
            "zookeeper://127.0.0.1:2181/org.apache.dubbo.registry.RegistryService?cluster.availablecheck={check}"
        ))
        .unwrap();
        let dir = StaticDirectory::new(url, shared).with_registry_url(reg);
        ClusterInvoker::new(
            Arc::new(dir),
            ClusterOptions {
                kind: Some(ClusterKind::Failover),
                loadbalance: Some(Arc::new(Fixed(0))),
                ..ClusterOptions::default()
            },
        )
    };
    // p0 unavailable but answering: called as the balancer picked it.
    let inv = vec![
        ScriptedInvoker::with_url("test://127.0.0.1:1/demo.Service?name=p0", ok("from p0"))
            .unavailable(),
        ScriptedInvoker::with_url("test://127.0.0.1:2/demo.Service?name=p1", ok("from p1")),
    ];
    let r = cluster(&inv, false)
        .invoke(&Invocation::new("m"))
        .await
        .unwrap();
    assert_eq!(r.value, serde_json::json!("from p0"));
    assert_eq!((inv[0].calls(), inv[1].calls()), (1, 0));
    // The check on: the unavailable pick is reselected away.
    let r = cluster(&inv, true)
        .invoke(&Invocation::new("m"))
        .await
        .unwrap();
    assert_eq!(r.value, serde_json::json!("from p1"));
    assert_eq!((inv[0].calls(), inv[1].calls()), (1, 1));

    // Everyone unavailable and failing but the last: attempts go p0, p1, p2 (never p0 twice).
    let inv = vec![
        ScriptedInvoker::with_url("test://127.0.0.1:1/demo.Service?name=p0", network())
            .unavailable(),
        ScriptedInvoker::with_url("test://127.0.0.1:2/demo.Service?name=p1", network())
            .unavailable(),
        ScriptedInvoker::with_url("test://127.0.0.1:3/demo.Service?name=p2", ok("from p2"))
            .unavailable(),
    ];
    let r = cluster(&inv, false)
        .invoke(&Invocation::new("m"))
        .await
        .unwrap();
    assert_eq!(r.value, serde_json::json!("from p2"));
    assert_eq!(
        inv.iter().map(|i| i.calls()).collect::<Vec<_>>(),
        vec![1, 1, 1]
    );
}

/// The balancer's pick is kept whenever it is allowed (not yet tried; available or not
/// checked): whatever index it names, select returns exactly that invoker.
#[test]
fn an_allowed_pick_is_kept() {
    let mut inv = named(4, false);
    inv[2] = ScriptedInvoker::with_url("test://127.0.0.1:20882/demo.Service?name=p2", ok("x"))
        .unavailable();
    for check in [true, false] {
        let (core, set) = setup(&inv, check);
        let tried: Vec<SharedInvoker> = vec![inv[3].clone() as SharedInvoker];
        for k in 0..4 {
            let got = name(
                &core
                    .select(&Fixed(k), &Invocation::new("m"), &set, &tried)
                    .unwrap(),
            );
            let allowed = k != 3 && (k != 2 || !check);
            if allowed {
                assert_eq!(got, format!("p{k}"), "check={check} pick {k}");
            } else {
                assert_ne!(got, "p3", "check={check} pick {k}: tried again");
                if check {
                    assert_ne!(got, "p2", "check={check} pick {k}: unavailable");
                }
            }
        }
    }
}

/// Reselect runs the balancer over the untried invokers: for consistent hash the pick equals
/// what Dubbo's ring over the sub-list gives (checked against a fresh balancer on the
/// sub-list), for many keys.
#[test]
fn consistent_hash_reselect_equals_the_ring_over_the_sub_list() {
    use invoker::loadbalance::ConsistentHashLoadBalance;
    let inv = named(5, false);
    let (core, set) = setup(&inv, true);
    let lb = ConsistentHashLoadBalance::new();
    for key in 0..200 {
        let call = Invocation::new("m").with_arguments(
            vec!["java.lang.String".into()],
            vec![serde_json::json!(format!("key-{key}"))],
        );
        let first = core.select(&lb, &call, &set, &[]).unwrap();
        let tried = vec![first.clone()];
        let again = core.select(&lb, &call, &set, &tried).unwrap();
        assert!(!Arc::ptr_eq(&first, &again), "key-{key}: tried again");
        let rest: Vec<SharedInvoker> = inv
            .iter()
            .map(|i| i.clone() as SharedInvoker)
            .filter(|i| !Arc::ptr_eq(i, &first))
            .collect();
        let sub = InvokerSet::new(rest);
        let java = ConsistentHashLoadBalance::new()
            .select(&sub, &call)
            .unwrap();
        assert_eq!(name(&again), name(&sub.invokers()[java]), "key-{key}");
    }
}
