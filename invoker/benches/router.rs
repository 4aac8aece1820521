//! Routing cost: `RegistryDirectory::list` with and without rules (the no-rule rows are the
//! baseline of the same run, for untagged and tagged calls), and applying a rule change to a
//! 10k-provider directory; `router_select` is what a call pays before it is sent: the directory's
//! `list` plus the cluster's `select` (random balancer, no retry), without and with rules on the same
//! directory in the same run. Run: `cargo bench -p invoker --bench router`.

use criterion::{criterion_group, criterion_main, Criterion};
use invoker::cluster::core::{ClusterCore, DEFAULT_RESELECT_COUNT};
use invoker::directory::Directory;
use invoker::loadbalance;
use invoker::router::RuleKey;
use invoker::rpc::Invocation;
use invoker::testutil::providers::{directory_with, provider_list};
use serde_json::json;

const RULE_A: &str =
    "configVersion: v3.0\nconditions:\n  - method = sayHello => host != 10.0.1.*\n";
const RULE_B: &str =
    "configVersion: v3.0\nconditions:\n  - method = sayHello => host != 10.0.2.*\n";
const TAG_RULE: &str = "tags:\n  - name: gray\n    addresses: [\"10.0.3.0/24\"]\n";
const ARG_RULE: &str =
    "configVersion: v3.0\nconditions:\n  - arguments[0] = vip => host = 10.0.0.*\n";

fn list(c: &mut Criterion) {
    let mut g = c.benchmark_group("router_list");
    for n in [1_000usize, 10_000] {
        let dir = directory_with(&provider_list(n));
        let call = Invocation::new("sayHello");
        let tagged = Invocation::new("sayHello").with_attachment("dubbo.tag", "gray");
        g.bench_function(format!("no_rules/{n}"), |b| {
            b.iter(|| dir.list(&call).map(|s| s.len()))
        });
        g.bench_function(format!("no_rules_tagged_call/{n}"), |b| {
            b.iter(|| dir.list(&tagged).map(|s| s.len()))
        });
        dir.set_router_rule(RuleKey::ServiceCondition, Some(RULE_A))
            .ok();
        dir.set_router_rule(RuleKey::AppTag("bench-provider".into()), Some(TAG_RULE))
            .ok();
        g.bench_function(format!("service_and_tag_rules/{n}"), |b| {
            b.iter(|| dir.list(&call).map(|s| s.len()))
        });
        g.bench_function(format!("service_and_tag_rules_tagged_call/{n}"), |b| {
            b.iter(|| dir.list(&tagged).map(|s| s.len()))
        });
        if n == 1_000 {
            dir.set_router_rule(RuleKey::ServiceCondition, Some(ARG_RULE))
                .ok();
            let vip = Invocation::new("sayHello")
                .with_arguments(vec!["java.lang.String".into()], vec![json!("vip")]);
            g.bench_function(format!("argument_rule_per_call/{n}"), |b| {
                b.iter(|| dir.list(&vip).map(|s| s.len()))
            });
        }
    }
    g.finish();
}

fn rule_change(c: &mut Criterion) {
    let mut g = c.benchmark_group("router_rule_change");
    g.sample_size(20);
    let n = 10_000;
    let dir = directory_with(&provider_list(n));
    dir.set_router_rule(RuleKey::AppTag("bench-provider".into()), Some(TAG_RULE))
        .ok();
    let call = Invocation::new("sayHello");
    let mut flip = false;
    g.bench_function(format!("set_rule/{n}"), |b| {
        b.iter(|| {
            flip = !flip;
            dir.set_router_rule(
                RuleKey::ServiceCondition,
                Some(if flip { RULE_A } else { RULE_B }),
            )
        })
    });
    g.bench_function(format!("set_rule_and_first_list/{n}"), |b| {
        b.iter(|| {
            flip = !flip;
            let _ = dir.set_router_rule(
                RuleKey::ServiceCondition,
                Some(if flip { RULE_A } else { RULE_B }),
            );
            dir.list(&call).map(|s| s.len())
        })
    });
    g.finish();
}

/// List + select, the whole routing-and-balancing step of a call: no rules, then a service
/// condition rule and a tag rule, then the same with a tagged call.
fn select(c: &mut Criterion) {
    let mut g = c.benchmark_group("router_select");
    let n = 10_000;
    let dir = directory_with(&provider_list(n));
    let core = ClusterCore::new(dir.clone(), None, DEFAULT_RESELECT_COUNT);
    let lb = loadbalance::by_name("random");
    let call = Invocation::new("sayHello");
    let tagged = Invocation::new("sayHello").with_attachment("dubbo.tag", "gray");
    let step = |inv: &Invocation| {
        dir.list(inv)
            .ok()
            .and_then(|set| core.select(&*lb, inv, &set, &[]))
            .is_some()
    };
    g.bench_function(format!("no_rules/{n}"), |b| b.iter(|| step(&call)));
    g.bench_function(format!("no_rules_tagged_call/{n}"), |b| {
        b.iter(|| step(&tagged))
    });
    dir.set_router_rule(RuleKey::ServiceCondition, Some(RULE_A))
        .ok();
    dir.set_router_rule(RuleKey::AppTag("bench-provider".into()), Some(TAG_RULE))
        .ok();
    g.bench_function(format!("service_and_tag_rules/{n}"), |b| {
        b.iter(|| step(&call))
    });
    g.bench_function(format!("service_and_tag_rules_tagged_call/{n}"), |b| {
        b.iter(|| step(&tagged))
    });
    g.finish();
}

criterion_group!(benches, list, rule_change, select);
criterion_main!(benches);
