//! Applying a config-centre override rule (`<service>.configurators`) to a directory of
//! 1k / 10k providers: the rule is parsed, the configurators rebuilt, only the providers the
//! old or new rule may touch are merged again, and a new snapshot is published.
//! Each iteration switches between two versions of the rule, so every iteration is a change.
//! Run: `cargo bench -p invoker --bench rules`.

use criterion::{criterion_group, criterion_main, Criterion};
use invoker::directory::bench_support::{directory_with, provider_list};
use invoker::directory::ConfiguratorScope;

fn host(i: usize) -> String {
    format!("10.{}.{}.{}", (i >> 16) & 255, (i >> 8) & 255, i & 255)
}

fn one_provider(i: usize, params: &str) -> String {
    format!(
        "configVersion: v3.0\nscope: service\nkey: com.example.DemoService\nconfigs:\n- side: consumer\n  addresses: [0.0.0.0]\n  providerAddresses: ['{}:20880']\n  parameters: {{{params}}}\n",
        host(i)
    )
}

fn all_providers(params: &str) -> String {
    format!(
        "configVersion: v3.0\nscope: service\nkey: com.example.DemoService\nconfigs:\n- side: consumer\n  addresses: [0.0.0.0]\n  parameters: {{{params}}}\n"
    )
}

fn rules(c: &mut Criterion) {
    let mut g = c.benchmark_group("rule_change");
    g.sample_size(10);
    for n in [1_000usize, 10_000] {
        let list = provider_list(n);
        let mid = n / 2;
        let cases = [
            (
                "weight_one_provider",
                one_provider(mid, "weight: 200"),
                one_provider(mid, "weight: 300"),
            ),
            (
                "disable_one_provider",
                one_provider(mid, "disabled: true"),
                one_provider(mid + 1, "disabled: true"),
            ),
            (
                "timeout_all_providers",
                all_providers("timeout: 1000"),
                all_providers("timeout: 2000"),
            ),
        ];
        for (name, a, b) in cases {
            let dir = directory_with(&list);
            let mut flip = false;
            g.bench_function(format!("{name}/{n}"), |bench| {
                bench.iter(|| {
                    flip = !flip;
                    let rule = if flip { &a } else { &b };
                    dir.set_dynamic_configurators(ConfiguratorScope::Service, Some(rule))
                        .map(|_| ())
                })
            });
        }
    }
    g.finish();
}

criterion_group!(benches, rules);
criterion_main!(benches);
