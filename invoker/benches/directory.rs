//! Notify apply at 1k / 10k / 100k providers: one change inside a full list vs. a
//! from-scratch rebuild. Run: `cargo bench -p invoker --bench directory`.

use criterion::{criterion_group, criterion_main, BatchSize, Criterion};
use invoker::testutil::providers::{directory_with, provider, provider_list};

fn apply(c: &mut Criterion) {
    let mut g = c.benchmark_group("directory_apply");
    g.sample_size(10);
    for n in [1_000usize, 10_000, 100_000] {
        let base = provider_list(n);
        let dir = directory_with(&base);
        let mid = n / 2;
        let mut a = base.clone();
        let mut b = base.clone();
        a[mid] = provider(mid + n, 1);
        b[mid] = provider(mid + 2 * n, 2);
        let mut flip = false;
        g.bench_function(format!("one_change/{n}"), |bench| {
            bench.iter(|| {
                flip = !flip;
                dir.notify_category("providers", if flip { &a } else { &b });
            })
        });
        g.bench_function(format!("rebuild/{n}"), |bench| {
            bench.iter_batched(|| (), |_| directory_with(&base), BatchSize::PerIteration)
        });
    }
    g.finish();
}

criterion_group!(benches, apply);
criterion_main!(benches);
