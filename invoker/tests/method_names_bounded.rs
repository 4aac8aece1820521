//! Method names come from callers (a gateway forwards them, a CLI user types them): per-method
//! state (RpcStatus counters per provider identity, the per-set counters and least-active
//! indexes) is kept for at most `MAX_TRACKED_METHODS` names; further names share one overflow
//! entry, so calls with ever new names cannot grow memory without bound.

use std::sync::Arc;

use invoker::invoker_set::InvokerSet;
use invoker::rpc::SharedInvoker;
use invoker::status::{ServiceStatus, MAX_TRACKED_METHODS, OVERFLOW_METHOD};
use invoker::testutil::*;

#[test]
fn rpc_status_keeps_a_bounded_number_of_method_names() {
    let s = ServiceStatus::for_identity("test://bounded-status:1/demo.Service");
    for i in 0..(10 * MAX_TRACKED_METHODS) {
        let _ = s.begin(&format!("m{i}")); // counted and released
    }
    assert_eq!(s.tracked_methods(), MAX_TRACKED_METHODS + 1);
    assert!(Arc::ptr_eq(
        &s.method("a-new-name"),
        &s.method(OVERFLOW_METHOD)
    ));
    assert!(!Arc::ptr_eq(&s.method("m0"), &s.method(OVERFLOW_METHOD)));
    assert_eq!(
        s.method("m0").total(),
        1,
        "an early name keeps its own counters"
    );
    assert_eq!(
        s.method(OVERFLOW_METHOD).total(),
        (9 * MAX_TRACKED_METHODS) as u64,
        "later names share the overflow counters"
    );
}

#[test]
fn invoker_sets_keep_a_bounded_number_of_method_names() {
    let providers: Vec<SharedInvoker> = (0..3)
        .map(|i| {
            ScriptedInvoker::with_url(
                &format!(
                    "test://127.0.0.1:{}/demo.Service?name=bounded-set{i}",
                    21300 + i
                ),
                ok("x"),
            ) as SharedInvoker
        })
        .collect();
    let set = InvokerSet::new(providers.clone());
    for i in 0..(10 * MAX_TRACKED_METHODS) {
        set.with_method_statuses(&format!("m{i}"), |s| assert_eq!(s.len(), 3));
    }
    assert_eq!(set.tracked_methods(), MAX_TRACKED_METHODS + 1);
    for p in &providers {
        let s = ServiceStatus::for_url(p.url());
        assert_eq!(s.tracked_methods(), MAX_TRACKED_METHODS + 1);
    }
}
