//! The router chain inside a `RegistryDirectory`: config-centre rules set through
//! `set_router_rule`, static tags, the 2.x `condition://` URLs and multi-group references.

#![allow(clippy::expect_used)] // test helpers panic on bad fixtures

use std::sync::Arc;

use invoker::directory::{Directory, DirectoryOptions, DubboCompat, RegistryDirectory};
use invoker::router::{RouterError, RuleKey};
use invoker::rpc::Invocation;
use invoker::testutil::providers::NoopFactory;
use registry_core::Url;
use serde_json::json;

const S: &str = "com.foo.BarService";

fn u(s: &str) -> Url {
    Url::parse(s).unwrap_or_else(|e| panic!("{s}: {e}"))
}

fn consumer(extra: &str) -> Url {
    u(&format!(
        "consumer://10.0.0.9/{S}?interface={S}&application=shop&region=hangzhou{extra}"
    ))
}

fn provider(host: &str, params: &str) -> Url {
    u(&format!(
        "dubbo://{host}:20880/{S}?interface={S}&application=prov&side=provider{params}"
    ))
}

fn dir_with(compat: DubboCompat, extra: &str, providers: &[Url]) -> Arc<RegistryDirectory> {
    let d = RegistryDirectory::new(
        consumer(extra),
        u("zookeeper://127.0.0.1:2181"),
        Arc::new(NoopFactory),
        DirectoryOptions::for_compat(compat),
    );
    d.notify(providers);
    d
}

fn three() -> Vec<Url> {
    vec![
        provider("10.0.0.1", "&region=hangzhou"),
        provider("10.0.0.2", "&region=beijing"),
        provider("10.0.0.3", "&region=hangzhou&env=gray"),
    ]
}

fn hosts(d: &RegistryDirectory, inv: &Invocation) -> Vec<String> {
    let set = d.list(inv).expect("list");
    set.invokers()
        .iter()
        .map(|i| i.url().host().unwrap_or("").to_owned())
        .collect()
}

fn call(m: &str) -> Invocation {
    Invocation::new(m)
}

const ALL: [&str; 3] = ["10.0.0.1", "10.0.0.2", "10.0.0.3"];

#[test]
fn service_rule_changes_where_calls_go_and_removing_it_restores_the_spread() {
    let d = dir_with(DubboCompat::V3, "", &three());
    assert_eq!(hosts(&d, &call("sayHello")), ALL);
    let rule = "configVersion: v3.0\nforce: false\nenabled: true\nconditions:\n  - method = sayHello => region = $region\n  - => env != gray\n";
    d.set_router_rule(RuleKey::ServiceCondition, Some(rule))
        .expect("rule accepted");
    // region = $region keeps 1 and 3; `env != gray` then matches nobody (3 is gray, 1 has
    // no env and an absent key fails != in 3.x): not forced, so that condition is ignored.
    assert_eq!(hosts(&d, &call("sayHello")), ["10.0.0.1", "10.0.0.3"]);
    // sayBye: the first condition does not match, the second again matches nobody.
    assert_eq!(hosts(&d, &call("sayBye")), ALL);
    d.set_router_rule(RuleKey::ServiceCondition, None)
        .expect("delete");
    assert_eq!(hosts(&d, &call("sayHello")), ALL);
}

#[test]
fn bad_rules_change_nothing() {
    let d = dir_with(DubboCompat::V3, "", &three());
    let good = "configVersion: v3.0\nconditions:\n  - => region = beijing\n";
    d.set_router_rule(RuleKey::ServiceCondition, Some(good))
        .expect("good");
    assert_eq!(hosts(&d, &call("m")), ["10.0.0.2"]);
    for (bad, what) in [
        ("conditions: [\n", "malformed YAML"),
        ("configVersion: v3.0\nconditions: []\n", "no conditions"),
        ("configVersion: v3.2\nconditions:\n  - => region = hangzhou\n", "unknown version"),
        ("configVersion: v3.0\nconditions:\n  - a==b => region = hangzhou\n", "bad condition"),
        ("configVersion: 3.0\nconditions:\n  - => region = hangzhou\n", "float version"),
        ("- a\n- b\n", "not a map"),
        ("configVersion: v3.1\nconditions:\n  - to:\n      - match: region=hangzhou\n        weight: x\n", "bad weight"),
        ("script: function route(){}\ntype: javascript\n", "script"),
    ] {
        let err = d
            .set_router_rule(RuleKey::ServiceCondition, Some(bad))
            .expect_err(what);
        if what == "unknown version" {
            assert!(matches!(err, RouterError::UnsupportedVersion(ref v) if v == "v3.2"), "{err}");
        }
        if what == "script" {
            assert_eq!(err, RouterError::Script);
        }
        assert_eq!(hosts(&d, &call("m")), ["10.0.0.2"], "{what} changed routing");
    }
    assert!(d
        .set_router_rule(RuleKey::AppTag("prov".into()), Some("tags: []\n"))
        .is_err());
}

#[test]
fn rules_of_other_applications_are_ignored() {
    let d = dir_with(DubboCompat::V3, "", &three());
    let rule = "configVersion: v3.0\nforce: true\nconditions:\n  - => region = nowhere\n";
    d.set_router_rule(RuleKey::AppCondition("someone-else".into()), Some(rule))
        .expect("ok");
    assert_eq!(hosts(&d, &call("m")), ALL);
    // The consumer's own application rule applies...
    d.set_router_rule(RuleKey::AppCondition("shop".into()), Some(rule))
        .expect("ok");
    assert!(hosts(&d, &call("m")).is_empty());
    d.set_router_rule(RuleKey::AppCondition("shop".into()), None)
        .expect("ok");
    // ...and so does the provider application's (ProviderAppStateRouter).
    let to_beijing = "configVersion: v3.0\nconditions:\n  - => region = beijing\n";
    d.set_router_rule(RuleKey::AppCondition("prov".into()), Some(to_beijing))
        .expect("ok");
    assert_eq!(hosts(&d, &call("m")), ["10.0.0.2"]);
    assert_eq!(d.provider_applications(), ["prov"]);
}

#[test]
fn static_tags_hide_tagged_providers_from_untagged_calls() {
    let mut ps = three();
    ps.push(provider("10.0.0.4", "&dubbo.tag=gray"));
    let d = dir_with(DubboCompat::V3, "", &ps);
    assert_eq!(hosts(&d, &call("m")), ALL);
    assert_eq!(
        hosts(&d, &call("m").with_attachment("dubbo.tag", "gray")),
        ["10.0.0.4"]
    );
    // An unknown tag falls back to the untagged providers unless forced.
    assert_eq!(
        hosts(&d, &call("m").with_attachment("dubbo.tag", "blue")),
        ALL
    );
    let forced = call("m")
        .with_attachment("dubbo.tag", "blue")
        .with_attachment("dubbo.force.tag", "true");
    assert!(hosts(&d, &forced).is_empty());
}

#[test]
fn forced_tag_without_tagged_providers_is_empty() {
    let d = dir_with(DubboCompat::V3, "", &three());
    let forced = call("m")
        .with_attachment("dubbo.tag", "blue")
        .with_attachment("dubbo.force.tag", "true");
    assert!(hosts(&d, &forced).is_empty());
    assert_eq!(
        hosts(&d, &call("m").with_attachment("dubbo.tag", "blue")),
        ALL
    );
}

#[test]
fn dynamic_tag_rule_of_the_provider_application() {
    let d = dir_with(DubboCompat::V3, "", &three());
    let rule = "force: false\nenabled: true\nkey: prov\ntags:\n  - name: gray\n    addresses: [\"10.0.0.3:20880\"]\n";
    // A rule for another provider application is not used.
    d.set_router_rule(RuleKey::AppTag("other".into()), Some(rule))
        .expect("ok");
    assert_eq!(hosts(&d, &call("m")), ALL);
    d.set_router_rule(RuleKey::AppTag("prov".into()), Some(rule))
        .expect("ok");
    assert_eq!(hosts(&d, &call("m")), ["10.0.0.1", "10.0.0.2"]);
    assert_eq!(
        hosts(&d, &call("m").with_attachment("dubbo.tag", "gray")),
        ["10.0.0.3"]
    );
    d.set_router_rule(RuleKey::AppTag("prov".into()), None)
        .expect("ok");
    assert_eq!(hosts(&d, &call("m")), ALL);
}

#[test]
fn argument_rules_route_every_call() {
    let d = dir_with(DubboCompat::V3, "", &three());
    let rule = "configVersion: v3.0\nforce: true\nconditions:\n  - arguments[0] = vip => region = beijing\n";
    d.set_router_rule(RuleKey::ServiceCondition, Some(rule))
        .expect("ok");
    let with = |a: &str| call("m").with_arguments(vec!["java.lang.String".into()], vec![json!(a)]);
    assert_eq!(hosts(&d, &with("vip")), ["10.0.0.2"]);
    assert_eq!(hosts(&d, &with("normal")), ALL);
    assert_eq!(hosts(&d, &with("vip")), ["10.0.0.2"]);
}

#[test]
fn provider_changes_keep_the_rules() {
    let d = dir_with(DubboCompat::V3, "", &three());
    let rule = "configVersion: v3.0\nconditions:\n  - => region = hangzhou\n";
    d.set_router_rule(RuleKey::ServiceCondition, Some(rule))
        .expect("ok");
    assert_eq!(hosts(&d, &call("m")), ["10.0.0.1", "10.0.0.3"]);
    let mut ps = three();
    ps.push(provider("10.0.0.5", "&region=hangzhou"));
    d.notify(&ps);
    assert_eq!(hosts(&d, &call("m")), ["10.0.0.1", "10.0.0.3", "10.0.0.5"]);
}

#[test]
fn rules_set_before_the_first_list_apply_to_it() {
    let d = RegistryDirectory::new(
        consumer(""),
        u("zookeeper://127.0.0.1:2181"),
        Arc::new(NoopFactory),
        DirectoryOptions::default(),
    );
    let rule = "configVersion: v3.0\nconditions:\n  - => region = beijing\n";
    d.set_router_rule(RuleKey::ServiceCondition, Some(rule))
        .expect("ok");
    d.notify(&three());
    assert_eq!(hosts(&d, &call("m")), ["10.0.0.2"]);
}

#[test]
fn multi_group_references_skip_routing() {
    let ps = vec![
        provider("10.0.0.1", "&group=a&dubbo.tag=gray"),
        provider("10.0.0.2", "&group=b"),
    ];
    let d = dir_with(DubboCompat::V3, "&group=a,b", &ps);
    let rule = "configVersion: v3.0\nforce: true\nconditions:\n  - => region = nowhere\n";
    d.set_router_rule(RuleKey::ServiceCondition, Some(rule))
        .expect("ok");
    assert_eq!(d.list(&call("m")).expect("list").len(), 2);
}

fn condition_url(rule: &str) -> Url {
    let enc = rule
        .replace(' ', "%20")
        .replace('=', "%3D")
        .replace('>', "%3E");
    u(&format!(
        "condition://0.0.0.0/{S}?category=routers&dynamic=false&force=true&rule={enc}"
    ))
}

#[test]
fn registry_condition_urls_apply_only_in_2x_modes() {
    let rule = condition_url("=> env = gray");
    let d3 = dir_with(DubboCompat::V3, "", &three());
    d3.notify(std::slice::from_ref(&rule));
    assert_eq!(hosts(&d3, &call("m")), ALL, "3.3 ignores condition:// URLs");
    // 2.x matches the consumer-merged provider URL (consumer values win), so the rule
    // uses a key the consumer does not set.
    let d27 = dir_with(DubboCompat::V27, "", &three());
    d27.notify(std::slice::from_ref(&rule));
    assert_eq!(hosts(&d27, &call("m")), ["10.0.0.3"]);
    // A malformed rule URL keeps the previous one.
    d27.notify(&[condition_url("a==b => region = hangzhou")]);
    assert_eq!(hosts(&d27, &call("m")), ["10.0.0.3"]);
    let d26 = dir_with(DubboCompat::V26, "&methods=m", &three());
    d26.notify(&[rule]);
    assert_eq!(hosts(&d26, &call("m")), ["10.0.0.3"]);
}

#[test]
fn provider_applications_follow_the_list() {
    let d = dir_with(DubboCompat::V3, "", &three());
    let mut rx = d.watch_provider_applications();
    assert_eq!(*rx.borrow_and_update(), ["prov"]);
    d.notify(&[u(&format!(
        "dubbo://10.0.0.7:20880/{S}?interface={S}&application=prov2&side=provider"
    ))]);
    assert!(rx.has_changed().unwrap_or(false));
    assert_eq!(d.provider_applications(), ["prov2"]);
}
