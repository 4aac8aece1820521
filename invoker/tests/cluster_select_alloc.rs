//! The cluster `select` hot path allocates nothing in steady state (own test binary: the
//! counting allocator sees the whole process).

use std::alloc::System;
use std::sync::Arc;

use invoker::cluster::core::{ClusterCore, DEFAULT_RESELECT_COUNT};
use invoker::directory::StaticDirectory;
use invoker::invoker_set::InvokerSet;
use invoker::loadbalance;
use invoker::rpc::{Invocation, SharedInvoker};
use invoker::testutil::*;
use stats_alloc::{Region, StatsAlloc, INSTRUMENTED_SYSTEM};

#[global_allocator]
static GLOBAL: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

/// The counter is process-wide: the tests of this binary run one at a time.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

#[test]
fn select_allocates_nothing_in_steady_state() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let inv: Vec<_> = (0..255).map(|i| ScriptedInvoker::new(i, ok("x"))).collect();
    let shared: Vec<SharedInvoker> = inv.iter().map(|i| i.clone() as SharedInvoker).collect();
    let dir = StaticDirectory::new(consumer(""), shared.clone());
    let core = ClusterCore::new(Arc::new(dir), None, DEFAULT_RESELECT_COUNT);
    let set = InvokerSet::new(shared);
    let call = Invocation::new("m");
    for name in ["random", "roundrobin", "leastactive"] {
        let lb = loadbalance::by_name(name);
        for _ in 0..100 {
            let _ = core.select(&*lb, &call, &set, &[]);
            let _ = core.load_balance(&set, &call);
        }
        const N: usize = 10_000;
        let region = Region::new(GLOBAL);
        for _ in 0..N {
            assert!(core.select(&*lb, &call, &set, &[]).is_some());
            let _ = core.load_balance(&set, &call);
        }
        let stats = region.change();
        // A stray allocation by the test harness thread is tolerated; one per call is not.
        assert!(
            stats.allocations <= 2,
            "{name}: {} allocations in {N} selects",
            stats.allocations
        );
    }
}

#[test]
fn sticky_select_allocates_nothing_and_keeps_its_invoker() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let inv: Vec<_> = (0..10_000)
        .map(|i| {
            ScriptedInvoker::with_url(
                &format!(
                    "test://10.0.{}.{}:20880/demo.Service?sticky=true",
                    i / 256,
                    i % 256
                ),
                ok("x"),
            )
        })
        .collect();
    let shared: Vec<SharedInvoker> = inv.iter().map(|i| i.clone() as SharedInvoker).collect();
    let dir = StaticDirectory::new(consumer(""), shared.clone());
    let core = ClusterCore::new(Arc::new(dir), None, DEFAULT_RESELECT_COUNT);
    let set = InvokerSet::new(shared);
    let call = Invocation::new("m");
    let lb = loadbalance::by_name("random");
    let first = core.select(&*lb, &call, &set, &[]).unwrap();
    let region = Region::new(GLOBAL);
    for _ in 0..10_000 {
        let got = core.select(&*lb, &call, &set, &[]).unwrap();
        assert!(Arc::ptr_eq(&got, &first));
    }
    assert!(region.change().allocations <= 2);
}
