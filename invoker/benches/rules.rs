//! Applying a config-centre override rule (`<service>.configurators`) to a directory of
//! 1k / 10k providers: the rule is parsed, the configurators rebuilt, only the providers the
//! old or new rule may touch are merged again, and a new snapshot is published.
//! Each iteration switches between two versions of the rule, so every iteration is a change.
//! The `..._with_routers` rows do the same on a directory that also has a service condition
//! rule and a tag rule, and include the first routed `list` after the change (the routing of the
//! new snapshot is built then).
//! Run: `cargo bench -p invoker --bench rules`.

use criterion::{criterion_group, criterion_main, Criterion};
use invoker::directory::{ConfiguratorScope, Directory};
use invoker::router::RuleKey;
use invoker::rpc::Invocation;
use invoker::testutil::providers::{directory_with, provider_list};

const CONDITION_RULE: &str =
    "configVersion: v3.0\nconditions:\n  - method = sayHello => host != 10.0.1.*\n";
const TAG_RULE: &str = "tags:\n  - name: gray\n    addresses: [\"10.0.3.0/24\"]\n";

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
        for (name, a, b) in &cases {
            let dir = directory_with(&list);
            let mut flip = false;
            g.bench_function(format!("{name}/{n}"), |bench| {
                bench.iter(|| {
                    flip = !flip;
                    let rule = if flip { a } else { b };
                    dir.set_dynamic_configurators(ConfiguratorScope::Service, Some(rule))
                        .map(|_| ())
                })
            });
        }
        let call = Invocation::new("sayHello");
        for (name, a, b) in cases.iter().take(2) {
            let dir = directory_with(&list);
            dir.set_router_rule(RuleKey::ServiceCondition, Some(CONDITION_RULE))
                .ok();
            dir.set_router_rule(RuleKey::AppTag("bench-provider".into()), Some(TAG_RULE))
                .ok();
            let mut flip = false;
            g.bench_function(format!("{name}_with_routers/{n}"), |bench| {
                bench.iter(|| {
                    flip = !flip;
                    let rule = if flip { a } else { b };
                    let _ = dir.set_dynamic_configurators(ConfiguratorScope::Service, Some(rule));
                    dir.list(&call).map(|s| s.len())
                })
            });
        }
    }
    g.finish();
}

criterion_group!(benches, rules);
criterion_main!(benches);
