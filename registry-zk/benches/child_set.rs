//! In-process cost of applying one provider change to a category's child set (criterion), at
//! 1k/10k/50k existing providers: the incremental path (`insert` of one event + `list` publish)
//! against the full re-list path (`replace_all` of the whole child list + `list`). No server.
//! Commands and results: `BENCHMARKS.md`.

#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, BatchSize, Criterion};
use registry_core::codec::encode;
use registry_core::Url;
use registry_zk::children::ChildSet;

fn child(i: usize) -> String {
    encode(&format!(
        "dubbo://10.{}.{}.{}:20880/org.bench.GreetingsService?anyhost=true&application=bench\
         &deprecated=false&dubbo=2.0.2&dynamic=true&generic=false\
         &interface=org.bench.GreetingsService&methods=sayHi,sayHello,sayGoodbye&pid=4242\
         &release=3.3.1&side=provider&timestamp=1732900000123&version=1.0.0&weight=100",
        (i >> 16) & 255,
        (i >> 8) & 255,
        i & 255
    ))
}

fn benches(c: &mut Criterion) {
    let consumer = Url::parse(
        "consumer://127.0.0.1/org.bench.GreetingsService?interface=org.bench.GreetingsService\
         &version=1.0.0&category=providers",
    )
    .unwrap();
    let path = "/dubbo/org.bench.GreetingsService/providers";
    for n in [1_000usize, 10_000, 50_000] {
        let children: Vec<String> = (0..n).map(child).collect();
        let extra = child(n + 1);
        let mut base = ChildSet::new(path, consumer.clone());
        base.replace_all(children.clone());
        let mut g = c.benchmark_group(format!("child_set/{n}"));
        g.sample_size(20);
        // One NodeCreated + publish of the full list, on a warm set.
        g.bench_function("incremental_insert_and_list", |b| {
            b.iter_batched_ref(
                || {
                    let mut s = ChildSet::new(path, consumer.clone());
                    s.replace_all(children.clone());
                    s.list();
                    s
                },
                |s| {
                    s.insert(black_box(&extra));
                    black_box(s.list());
                },
                BatchSize::LargeInput,
            )
        });
        // What a child-watch consumer does per change: take the whole new list and diff it in.
        let mut with_extra = children.clone();
        with_extra.push(extra.clone());
        g.bench_function("relist_replace_all_and_list", |b| {
            b.iter_batched_ref(
                || {
                    let mut s = ChildSet::new(path, consumer.clone());
                    s.replace_all(children.clone());
                    s.list();
                    (s, with_extra.clone())
                },
                |(s, list)| {
                    s.replace_all(std::mem::take(list));
                    black_box(s.list());
                },
                BatchSize::LargeInput,
            )
        });
        g.finish();
        black_box(base.len());
    }
}

criterion_group!(child_set, benches);
criterion_main!(child_set);
