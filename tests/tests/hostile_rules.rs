//! Hostile governance rules never take a consumer down: a "billion laughs" document (nested
//! YAML aliases), a block sequence nested 10,000 levels deep, an oversized document and
//! regexes that are invalid or too big are refused by every rule kind (condition, tag,
//! configurators); the directory keeps its last good rule (or none) and keeps serving its
//! providers; the rule watcher parses off the async workers and logs a refusal once.
//!
//! The end-to-end forms (published through a real ZooKeeper and Nacos to a running consumer,
//! and present at start-up) are in `rules_e2e.rs`; the child-process memory checks of the
//! CLI are in `cli/tests/hostile_rules_cli.rs`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use invoker::directory::{ConfiguratorScope, Directory, RegistryDirectory, RuleWatcher};
use invoker::router::condition_rule::ConditionRule;
use invoker::router::RuleKey;
use invoker::rpc::Invocation;
use invoker::rules::parse_configurators;
use invoker::rules::tag::TagRule;
use invoker::rules::Dialect;
use registry_core::config_center::DEFAULT_CONFIG_GROUP;
use registry_core::{ConfigCenter, MemoryConfigCenter, MemoryRegistry, Registry};
use tests::contract::provider_url;
use tests::hostile::{billion_laughs, deep_sequence};

const KINDS: [&str; 3] = ["condition", "tag", "configurators"];

/// Parses `text` as a rule of `kind`; the error text when refused.
fn parse(kind: &str, text: &str) -> Result<(), String> {
    match kind {
        "condition" => ConditionRule::parse(text, Dialect::V3)
            .map(drop)
            .map_err(|e| {
                assert!(e.is_bad_rule(), "{e}");
                e.to_string()
            }),
        "tag" => TagRule::parse(text).map(drop).map_err(|e| {
            assert!(e.is_bad_rule(), "{e}");
            e.to_string()
        }),
        _ => parse_configurators(text).map(drop).map_err(|e| {
            assert!(e.is_bad_rule(), "{e}");
            e.to_string()
        }),
    }
}

#[test]
fn the_attacks_are_small() {
    for kind in KINDS {
        assert!(billion_laughs(kind).len() < 700, "{kind}");
        assert!(deep_sequence(kind, 10_000).len() < 21_000, "{kind}");
    }
}

#[test]
fn billion_laughs_is_refused_by_every_rule_kind() {
    for kind in KINDS {
        let e = parse(kind, &billion_laughs(kind)).expect_err(kind);
        // Stopped by the cost of the copies or by the alias count, whichever comes first.
        assert!(e.contains("alias") || e.contains("expands"), "{kind}: {e}");
    }
}

#[test]
fn deep_nesting_is_refused_by_every_rule_kind() {
    for kind in KINDS {
        let e = parse(kind, &deep_sequence(kind, 10_000)).expect_err(kind);
        assert!(e.contains("nest"), "{kind}: {e}");
    }
}

#[test]
fn nesting_within_snakeyaml_limit_is_read() {
    // SnakeYAML's default nesting limit (50) lets 50 nested sequences hold a scalar.
    for kind in KINDS {
        parse(kind, &deep_sequence(kind, 49)).unwrap_or_else(|e| panic!("{kind}: {e}"));
    }
}

#[test]
fn an_oversized_rule_is_refused_before_parsing() {
    for kind in KINDS {
        let mut text = deep_sequence(kind, 1);
        text.push_str("padding: '");
        text.push_str(&"x".repeat(2 * 1024 * 1024));
        text.push_str("'\n");
        let e = parse(kind, &text).expect_err(kind);
        assert!(e.contains("bytes"), "{kind}: {e}");
    }
}

#[test]
fn regexes_are_checked_when_the_rule_is_parsed() {
    let tag = |re: &str| {
        format!("configVersion: v3.0\nkey: app\ntags:\n  - name: gray\n    match:\n      - key: env\n        value:\n          regex: '{re}'\n")
    };
    let cfg = |re: &str| {
        format!("configVersion: v3.0\nscope: service\nkey: S\nconfigs:\n  - side: consumer\n    match:\n      param:\n        - key: env\n          value:\n            regex: '{re}'\n    parameters:\n      timeout: 1\n")
    };
    // Valid ones are accepted.
    parse("tag", &tag("gr(a|e)y")).unwrap();
    parse("configurators", &cfg("gr(a|e)y")).unwrap();
    // Invalid, too big when compiled, or nested too deep: refused as a whole.
    let huge = "(?:a{1000}){1000}";
    let nested = format!("{}a{}", "(".repeat(300), ")".repeat(300));
    for re in ["gr(ay", huge, nested.as_str()] {
        let e = parse("tag", &tag(re)).expect_err(re);
        assert!(e.contains("regex"), "{re}: {e}");
        let e = parse("configurators", &cfg(re)).expect_err(re);
        assert!(e.contains("regex"), "{re}: {e}");
    }
}

const S: &str = "org.hostile.Svc";
const PORTS: [u16; 3] = [21001, 21002, 21003];

fn ports(dir: &RegistryDirectory) -> Vec<u16> {
    let mut p: Vec<u16> = match dir.list(&Invocation::new("sayHello")) {
        Ok(set) => set
            .invokers()
            .iter()
            .map(|i| i.url().port() as u16)
            .collect(),
        Err(_) => Vec::new(),
    };
    p.sort();
    p
}

async fn directory(service: &str) -> Arc<RegistryDirectory> {
    let registry: Arc<dyn Registry> = Arc::new(MemoryRegistry::new());
    for p in PORTS {
        registry
            .register(&provider_url(service, p, "warmup=0"))
            .await
            .unwrap();
    }
    let (_f, dir) = tests::recording::subscribe(registry, service).await;
    tests::eventually("three providers", Duration::from_secs(10), || {
        let ok = ports(&dir) == PORTS;
        async move { ok.then_some(()) }
    })
    .await;
    dir
}

#[tokio::test]
async fn the_directory_keeps_its_last_good_rule_and_its_providers() {
    let dir = directory(S).await;
    let attacks: Vec<(&str, String)> = KINDS
        .iter()
        .flat_map(|k| [(*k, billion_laughs(k)), (*k, deep_sequence(k, 10_000))])
        .collect();
    let apply = |kind: &str, text: Option<&str>| match kind {
        "condition" => dir.set_router_rule(RuleKey::ServiceCondition, text),
        "tag" => dir.set_router_rule(RuleKey::AppTag("contract-provider".into()), text),
        _ => dir
            .set_dynamic_configurators(ConfiguratorScope::Service, text)
            .map(drop),
    };
    // No rule yet: refused, and every provider still listed.
    for (kind, text) in &attacks {
        apply(kind, Some(text)).expect_err(kind);
        assert_eq!(ports(&dir), PORTS, "{kind}");
    }
    // A good rule, then the attacks: the good rule stays.
    let good = format!("configVersion: v3.0\nkey: {S}\nconditions:\n  - => port = 21002\n");
    apply("condition", Some(&good)).unwrap();
    assert_eq!(ports(&dir), [21002]);
    for (kind, text) in &attacks {
        apply(kind, Some(text)).expect_err(kind);
        assert_eq!(ports(&dir), [21002], "{kind}");
    }
    apply("condition", None).unwrap();
    assert_eq!(ports(&dir), PORTS);
    dir.destroy();
}

/// Records the thread of every event whose message says "refused" and whose `key` names
/// the watched service.
#[derive(Default, Clone)]
struct RefusalThreads(Arc<Mutex<Vec<std::thread::ThreadId>>>);

const WATCHED: &str = "org.hostile.Watched";

impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for RefusalThreads {
    fn on_event(
        &self,
        event: &tracing::Event<'_>,
        _ctx: tracing_subscriber::layer::Context<'_, S>,
    ) {
        #[derive(Default)]
        struct Fields {
            refused: bool,
            watched: bool,
        }
        impl tracing::field::Visit for Fields {
            fn record_debug(&mut self, f: &tracing::field::Field, v: &dyn std::fmt::Debug) {
                let text = format!("{v:?}");
                match f.name() {
                    "message" => self.refused |= text.contains("refused"),
                    "key" => self.watched |= text.contains(WATCHED),
                    _ => {}
                }
            }
            fn record_str(&mut self, f: &tracing::field::Field, v: &str) {
                self.record_debug(f, &v);
            }
        }
        let mut m = Fields::default();
        event.record(&mut m);
        if m.refused && m.watched {
            self.0.lock().unwrap().push(std::thread::current().id());
        }
    }
}

/// The watcher parses a rule on a blocking thread, never on the runtime's own thread (a
/// current-thread runtime: the test's thread), logs the refusal once, and the consumer keeps
/// serving every provider.
#[test]
fn the_rule_watcher_parses_off_the_runtime_thread() {
    use tracing_subscriber::layer::SubscriberExt;
    let threads = RefusalThreads::default();
    // Global: the events of blocking threads are wanted too (no other test sets one).
    tracing::subscriber::set_global_default(tracing_subscriber::registry().with(threads.clone()))
        .unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let dir = directory(WATCHED).await;
        let cc = Arc::new(MemoryConfigCenter::new());
        let key = format!("{WATCHED}::.condition-router");
        cc.publish(
            &key,
            DEFAULT_CONFIG_GROUP,
            &deep_sequence("condition", 10_000),
        )
        .await
        .unwrap();
        let rules = RuleWatcher::start(cc.clone(), &dir, Duration::from_secs(10)).await;
        let refusals = |n: usize| {
            let threads = threads.clone();
            move || {
                let ok = threads.0.lock().unwrap().len() >= n;
                async move { ok.then_some(()) }
            }
        };
        tests::eventually("the first refusal", Duration::from_secs(10), refusals(1)).await;
        assert_eq!(ports(&dir), PORTS);
        cc.publish(&key, DEFAULT_CONFIG_GROUP, &billion_laughs("condition"))
            .await
            .unwrap();
        tests::eventually("the second refusal", Duration::from_secs(10), refusals(2)).await;
        assert_eq!(ports(&dir), PORTS);
        // A good rule after them is applied (and shows nothing more was logged meanwhile).
        let good =
            format!("configVersion: v3.0\nkey: {WATCHED}\nconditions:\n  - => port = 21002\n");
        cc.publish(&key, DEFAULT_CONFIG_GROUP, &good).await.unwrap();
        tests::eventually("the good rule", Duration::from_secs(10), || {
            let ok = ports(&dir) == [21002];
            async move { ok.then_some(()) }
        })
        .await;
        drop(rules);
        dir.destroy();
    });
    let seen = threads.0.lock().unwrap().clone();
    assert_eq!(
        seen.len(),
        2,
        "one refusal logged per refused value: {seen:?}"
    );
    let me = std::thread::current().id();
    assert!(
        seen.iter().all(|t| *t != me),
        "a rule was parsed on the runtime thread"
    );
}
