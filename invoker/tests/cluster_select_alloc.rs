//! The cluster `select` hot path allocates nothing in steady state (own test binary: the
//! counting allocator sees the whole process).

#[path = "cluster_support/mod.rs"]
mod support;

use std::alloc::System;
use std::sync::Arc;

use invoker::cluster::core::{ClusterCore, DEFAULT_RESELECT_COUNT};
use invoker::directory::static_directory::StaticDirectory;
use invoker::invoker_set::InvokerSet;
use invoker::loadbalance;
use invoker::rpc::{Invocation, SharedInvoker};
use stats_alloc::{Region, StatsAlloc, INSTRUMENTED_SYSTEM};
use support::*;

#[global_allocator]
static GLOBAL: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

#[test]
fn select_allocates_nothing_in_steady_state() {
    let inv: Vec<_> = (0..255).map(|i| Scripted::new(i, ok("x"))).collect();
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
