//! Select cost of every load balancer at 255 and 10,000 invokers.
//! Run: `cargo bench -p invoker --bench loadbalance` (filter e.g. `-- select/random`).

#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers panic on bad fixtures

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion};
use invoker::directory::bench_support::{provider, NoopFactory};
use invoker::invoker_set::InvokerSet;
use invoker::loadbalance::{self, NAMES};
use invoker::rpc::{Invocation, InvokerFactory};
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

criterion_group!(benches, select);
criterion_main!(benches);
