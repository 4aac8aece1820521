//! Select cost of every load balancer at 255 and 10,000 invokers.
//! Run: `cargo bench -p invoker --bench loadbalance` (filter e.g. `-- select/random`);
//! `select_under_load/*` measures leastactive / shortestresponse with calls beginning and
//! ending around every select.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers panic on bad fixtures

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion};
use invoker::invoker_set::InvokerSet;
use invoker::loadbalance::{self, NAMES};
use invoker::rpc::{Invocation, InvokerFactory};
use invoker::testutil::providers::{provider, NoopFactory};
use serde_json::Value;

fn set(n: usize) -> InvokerSet {
    let f = NoopFactory;
    InvokerSet::new(
        (0..n)
            .map(|i| f.refer(&provider(i, 1_700_000_000_000 + i as u64)).unwrap())
            .collect(),
    )
}

fn select(c: &mut Criterion) {
    let calls: Vec<Invocation> = (0..1024)
        .map(|k| {
            Invocation::new("sayHello").with_arguments(
                vec!["java.lang.String".into()],
                vec![Value::String(format!("user-{k}"))],
            )
        })
        .collect();
    let mut g = c.benchmark_group("select");
    for n in [255usize, 10_000] {
        let s = set(n);
        for name in NAMES {
            let lb = loadbalance::by_name(name);
            let mut k = 0usize;
            g.bench_function(format!("{name}/{n}"), |b| {
                b.iter(|| {
                    k = (k + 1) & 1023;
                    black_box(lb.select(&s, black_box(&calls[k])))
                })
            });
        }
    }
    g.finish();
}

/// leastactive / shortestresponse with calls in flight: every iteration selects, begins a call
/// on the pick (RpcStatus updates the balancer's index) and ends the call begun 64 iterations
/// earlier, so the counters keep moving as under real load.
fn select_under_load(c: &mut Criterion) {
    let call = Invocation::new("sayHello");
    let mut g = c.benchmark_group("select_under_load");
    for n in [255usize, 10_000] {
        let s = set(n);
        for name in ["leastactive", "shortestresponse"] {
            let lb = loadbalance::by_name(name);
            let mut ring: std::collections::VecDeque<invoker::status::CallGuard> =
                std::collections::VecDeque::with_capacity(65);
            g.bench_function(format!("{name}/{n}"), |b| {
                b.iter(|| {
                    let i = lb.select(&s, black_box(&call)).unwrap_or(0);
                    ring.push_back(s.meta()[i].status().begin("sayHello"));
                    if ring.len() > 64 {
                        if let Some(old) = ring.pop_front() {
                            old.finish(true);
                        }
                    }
                })
            });
        }
    }
    g.finish();
}

criterion_group!(benches, select, select_under_load);
criterion_main!(benches);
