//! The directory's precomputed routing answers exactly what the reference chain
//! (`Chain::route`, which matches URLs on every call as Java does) answers: random provider
//! lists, rules and calls, in both dialects, through `RegistryDirectory::list` (the table,
//! the remembered first calls and the per-call path) and through `CompiledChain` directly.

#![allow(clippy::expect_used, clippy::unwrap_used)] // test fixtures

use std::sync::Arc;

use invoker::directory::{
    ConfiguratorScope, Directory, DirectoryOptions, DubboCompat, RegistryDirectory,
};
use invoker::router::compiled::CompiledChain;
use invoker::router::target::Target;
use invoker::router::RuleKey;
use invoker::rpc::Invocation;
use invoker::rules::Dialect;
use invoker::rules::RouteCall;
use invoker::rules::{Chain, ChainMode, RuleSet};
use invoker::testutil::providers::NoopFactory;
use registry_core::Url;
use serde_json::json;

const S: &str = "demo.Service";

const CONDITIONS: &[&str] = &[
    "method = sayHello => host != 10.0.1.*",
    "method = sayHello,sayBye => region = $region",
    "method != sayHello => region = bj",
    "=> region = hz & host != 10.0.0.3",
    "host = 10.0.0.9 => weight = 1~60",
    "method = say* => env != gray",
    "region = hz => region = sh",
    "method = sayBye => false",
    "arguments[0] = vip => host = 10.0.0.*",
    "attachments[user] = a => region = bj",
];

const TAGS: &[&str] = &[
    "tags:\n  - name: gray\n    addresses: [\"10.0.1.0/24\"]\n",
    "force: true\ntags:\n  - name: gray\n    addresses: [\"10.0.0.1:20880\", \"10.0.2.*\"]\n  - name: blue\n    addresses: [\"0.0.0.0:20881\"]\n",
    "tags:\n  - name: blue\n    match:\n      - key: region\n        value:\n          exact: bj\n",
    "tags:\n  - name: gray|a\n    addresses: [\"10.0.0.2-9\"]\n",
];

fn provider(i: usize, rng: &mut fastrand::Rng) -> Url {
    let region = ["hz", "bj", "sh"][rng.usize(0..3)];
    let tag = ["", "&dubbo.tag=gray", "&dubbo.tag=blue", "&dubbo.tag=red"][rng.usize(0..4)];
    let env = if rng.bool() { "&env=gray" } else { "" };
    let port = if rng.usize(0..5) == 0 { 20881 } else { 20880 };
    let methods = if rng.bool() {
        "&methods=sayHello,sayBye"
    } else {
        "&methods=sayHello,other"
    };
    Url::parse(&format!(
        "dubbo://10.0.{}.{}:{port}/{S}?interface={S}&application=prov&region={region}&weight={}{tag}{env}{methods}",
        i / 11,
        i % 11,
        rng.usize(1..100)
    ))
    .unwrap()
}

fn condition_rule(rng: &mut fastrand::Rng) -> String {
    let mut s = String::from("configVersion: v3.0\n");
    if rng.bool() {
        s.push_str("force: true\n");
    }
    s.push_str("conditions:\n");
    for _ in 0..rng.usize(1..3) {
        s.push_str(&format!(
            "  - {}\n",
            CONDITIONS[rng.usize(0..CONDITIONS.len())]
        ));
    }
    s
}

fn calls() -> Vec<Invocation> {
    let mut out = Vec::new();
    for m in ["sayHello", "sayBye", "other", "undeclared"] {
        out.push(Invocation::new(m));
        out.push(Invocation::new(m).with_attachment("dubbo.tag", "gray"));
        out.push(
            Invocation::new(m)
                .with_attachment("dubbo.tag", "blue")
                .with_attachment("dubbo.force.tag", "true"),
        );
        out.push(Invocation::new(m).with_attachment("dubbo.tag", "gray|a"));
        out.push(Invocation::new(m).with_attachment("dubbo.tag", "nobody"));
        out.push(
            Invocation::new(m)
                .with_attachment("dubbo.tag", "red")
                .with_attachment("user", "a"),
        );
        out.push(
            Invocation::new(m).with_arguments(vec!["java.lang.String".into()], vec![json!("vip")]),
        );
    }
    out
}

fn key(url: &Url) -> String {
    format!("{}:{}", url.host().unwrap_or(""), url.port())
}

#[test]
fn directory_list_equals_the_reference_chain() {
    let mut rng = fastrand::Rng::with_seed(12);
    for round in 0..60 {
        let compat = if round % 3 == 2 {
            DubboCompat::V27
        } else {
            DubboCompat::V3
        };
        let ctag = match round % 5 {
            0 => "&dubbo.tag=gray",
            1 => "&dubbo.tag=blue&dubbo.force.tag=true",
            _ => "",
        };
        let consumer = Url::parse(&format!(
            "consumer://10.0.0.9/{S}?interface={S}&application=shop&region=hz&methods=sayHello,sayBye{ctag}"
        ))
        .unwrap();
        let n = rng.usize(1..60);
        let providers: Vec<Url> = (0..n).map(|i| provider(i, &mut rng)).collect();
        let d = RegistryDirectory::new(
            consumer,
            Url::parse("zookeeper://127.0.0.1:2181").unwrap(),
            Arc::new(NoopFactory),
            DirectoryOptions::for_compat(compat),
        );
        d.notify(&providers);
        let mut rules = RuleSet::default();
        let dialect = if compat == DubboCompat::V3 {
            Dialect::V3
        } else {
            Dialect::V27
        };
        if rng.usize(0..4) != 0 {
            let r = condition_rule(&mut rng);
            d.set_router_rule(RuleKey::ServiceCondition, Some(&r))
                .expect("rule");
            rules
                .apply(&RuleKey::ServiceCondition, Some(&r), dialect)
                .expect("rule");
        }
        if rng.bool() {
            let r = condition_rule(&mut rng);
            d.set_router_rule(RuleKey::AppCondition("shop".into()), Some(&r))
                .expect("rule");
            rules
                .apply(&RuleKey::AppCondition("shop".into()), Some(&r), dialect)
                .expect("rule");
        }
        if rng.usize(0..3) != 0 {
            let r = TAGS[rng.usize(0..TAGS.len())];
            d.set_router_rule(RuleKey::AppTag("prov".into()), Some(r))
                .expect("tag rule");
            rules
                .apply(&RuleKey::AppTag("prov".into()), Some(r), dialect)
                .expect("tag rule");
        }
        check(&d, &providers, &rules, compat, round);
        // Provider changes on top of the routing just built (the new routing reuses what the
        // old one read of unchanged providers): one provider changed, one gone, one new.
        let mut next = providers.clone();
        let i = rng.usize(0..next.len());
        next[i] = provider(i, &mut rng);
        if next.len() > 2 {
            next.remove(rng.usize(0..next.len()));
        }
        next.push(provider(n + 1, &mut rng));
        d.notify(&next);
        check(&d, &next, &rules, compat, round);
        // An override of one provider's params (region and static tag) and its removal.
        let target = key(&next[rng.usize(0..next.len())]);
        let rule = format!(
            "configVersion: v3.0\nscope: service\nkey: {S}\nconfigs:\n- side: consumer\n  addresses: [0.0.0.0]\n  providerAddresses: ['{target}']\n  parameters: {{region: sh, dubbo.tag: blue}}\n"
        );
        d.set_dynamic_configurators(ConfiguratorScope::Service, Some(&rule))
            .expect("override");
        check(&d, &next, &rules, compat, round);
        d.set_dynamic_configurators(ConfiguratorScope::Service, None)
            .expect("override removed");
        check(&d, &next, &rules, compat, round);
    }
}

/// `d.list` and the compiled chain answer every call as the reference chain does over the
/// directory's current provider list (merged URLs in list order, raw URLs from `providers`).
fn check(
    d: &RegistryDirectory,
    providers: &[Url],
    rules: &RuleSet,
    compat: DubboCompat,
    round: usize,
) {
    // The reference: the directory's own provider list (merged URLs, in list order),
    // routed on every call.
    let targets: Vec<Target> = d
        .invoker_urls()
        .into_iter()
        .map(|merged| {
            let raw = providers
                .iter()
                .find(|p| key(p) == key(&merged))
                .cloned()
                .expect("raw provider");
            Target {
                invoker: None,
                sample: if compat == DubboCompat::V3 {
                    raw.clone()
                } else {
                    merged.clone()
                },
                raw,
                tag: merged
                    .param("dubbo.tag")
                    .filter(|t| !t.is_empty())
                    .map(Box::from),
            }
        })
        .collect();
    let mode = if compat == DubboCompat::V3 {
        ChainMode::V3
    } else {
        ChainMode::V27
    };
    let dir_url = d.consumer_url();
    let chain = Chain::build(rules, &targets, "shop", mode, false);
    let compiled = CompiledChain::new(Arc::new(chain.clone()), &targets, &dir_url);
    // Twice: the first pass fills the remembered answers, the second reads them.
    for pass in 0..2 {
        for inv in calls() {
            let call = RouteCall::of(&inv);
            let mut want: Vec<u32> = (0..targets.len() as u32).collect();
            chain.route(&targets, &mut want, &dir_url, &call, &mut |_| 0);
            let mut got_c: Vec<u32> = (0..targets.len() as u32).collect();
            compiled.route(&mut got_c, &call, &mut |_| 0);
            assert_eq!(got_c, want, "compiled, round {round}, {inv:?}");
            let want: Vec<String> = want
                .iter()
                .map(|&i| key(&targets[i as usize].raw))
                .collect();
            let got: Vec<String> = d
                .list(&inv)
                .expect("list")
                .invokers()
                .iter()
                .map(|i| key(i.url()))
                .collect();
            assert_eq!(got, want, "directory, round {round} pass {pass}, {inv:?}");
        }
    }
}
