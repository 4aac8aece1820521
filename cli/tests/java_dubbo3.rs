//! Interop with a real Apache Dubbo 3.3.6 (Java) provider (`scripts/peers/java-dubbo3.sh`):
//! `dubbo-registry invoke` and `RegistryDirectory` call it over Dubbo2 and Triple, straight at
//! its ports and through ZooKeeper and Nacos, and every value comes back exactly as the real
//! Java consumer gets it for the same call; exceptions, attachments, timeouts and generic
//! `$invoke` behave as in Java.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use common::interop::{self, BothProtocols, Case, DEMO, ECHO};
use invoker::cluster;
use invoker::directory::{Directory, DirectoryOptions, RegistryDirectory};
use invoker::rpc::Invocation;
use registry_core::Url;
use serde_json::{json, Value};
use tests::peers::{JavaProvider, ProviderOptions};

const T: Duration = Duration::from_secs(60);

fn opts(test: &str) -> ProviderOptions {
    ProviderOptions {
        // A unique application: Java's application-level nodes are not under the test's root.
        app: tests::unique(&format!("jp-{test}")).replace('_', "-"),
        version: Some("1.0.0".into()),
        ..ProviderOptions::default()
    }
}

/// Our answer to `c` must equal the Java consumer's (`java`) and the expected value.
fn check(label: &str, c: &Case, out: &common::Out, java: &Value) {
    assert_eq!(
        out.code, 0,
        "{label} {}: {} / {}",
        c.method, out.stdout, out.stderr
    );
    let ours = &out.json()["result"];
    assert_eq!(
        &java["result"], ours,
        "{label} {} {}: Java consumer {java} vs ours {ours}",
        c.method, c.args
    );
    assert_eq!(ours, &c.want, "{label} {} {}", c.method, c.args);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_value_round_trips_over_dubbo_and_tri_as_the_java_consumer_sees_it() {
    let test = "every_value_round_trips";
    let Some(p) = JavaProvider::start(test, &opts(test)).await else {
        return;
    };
    let cases = interop::value_cases();
    for target in [p.dubbo_target(), p.tri_target()] {
        let java = interop::java_answers(test, &["--url", &target, "--version", "1.0.0"], &cases)
            .await
            .unwrap();
        for (c, j) in cases.iter().zip(&java) {
            let out = interop::ours(&target, DEMO, c, &["--version", "1.0.0"]).await;
            check(&target, c, &out, j);
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exceptions_attachments_timeouts_and_generic_behave_as_in_java() {
    let test = "exceptions_attachments_timeouts_generic";
    let Some(p) = JavaProvider::start(test, &opts(test)).await else {
        return;
    };
    let v = ["--version", "1.0.0"];
    for target in [p.dubbo_target(), p.tri_target()] {
        let url = ["--url", target.as_str(), "--version", "1.0.0"];
        // A declared business exception: exit 1, its class and message, as Java gets it.
        let out =
            common::invoke_parts(&[&[&target, DEMO, "fail", r#"["boom"]"#], &v, &["--json"]]).await;
        assert_eq!(out.code, 1, "{target}: {} / {}", out.stdout, out.stderr);
        let e = &out.json()["exception"];
        assert_eq!(
            e["class"], "com.example.peer.DemoException",
            "{target}: {e}"
        );
        assert_eq!(e["message"], "boom", "{target}: {e}");
        let java = tests::peers::java_consumer(
            test,
            &[&url[..], &["--method", "fail", "--args", r#"["boom"]"#]].concat(),
            T,
        )
        .await
        .unwrap();
        assert_eq!(java.code, 1, "{}", java.json);
        assert_eq!(java.json["exception"]["class"], e["class"]);
        assert_eq!(java.json["exception"]["message"], e["message"]);
        assert_eq!(
            java.json["exception"]["code"], "E42",
            "the exception's own field"
        );

        // A JDK runtime exception travels as itself.
        let out = common::invoke_parts(&[
            &[&target, DEMO, "failRuntime", r#"["bang"]"#],
            &v,
            &["--json"],
        ])
        .await;
        assert_eq!(out.code, 1, "{target}: {} / {}", out.stdout, out.stderr);
        assert_eq!(
            out.json()["exception"]["class"],
            "java.lang.IllegalStateException"
        );
        assert_eq!(out.json()["exception"]["message"], "bang");

        // Attachments reach the provider; over dubbo its response attachments come back.
        let out = common::invoke_parts(&[
            &[&target, DEMO, "echoAttachments", "[]"],
            &v,
            &["--attachment", "trace-id=abc-123", "--json"],
        ])
        .await;
        assert_eq!(out.code, 0, "{target}: {} / {}", out.stdout, out.stderr);
        let seen = &out.json()["result"];
        assert_eq!(seen["trace-id"], "abc-123", "{target}: {seen}");
        let java = tests::peers::java_consumer(
            test,
            &[
                &url[..],
                &[
                    "--method",
                    "echoAttachments",
                    "--attachment",
                    "trace-id=abc-123",
                ],
            ]
            .concat(),
            T,
        )
        .await
        .unwrap();
        assert_eq!(java.json["result"]["trace-id"], "abc-123", "{}", java.json);
        assert_eq!(
            out.json()["attachments"]["echo-trace-id"],
            java.json["attachments"]["echo-trace-id"],
            "{target}: response attachments: ours {} / Java {}",
            out.json(),
            java.json
        );
        assert_eq!(
            out.json()["attachments"]["echo-trace-id"],
            "abc-123",
            "{target}"
        );

        // A call slower than its timeout fails as a timeout within the timeout, not after the
        // provider's 3 s.
        let start = Instant::now();
        let out = common::invoke_parts(&[
            &[&target, DEMO, "sleep", "[3000]", "--types", "int"],
            &v,
            &["--timeout", "300", "--json"],
        ])
        .await;
        let took = start.elapsed();
        assert_eq!(out.code, 2, "{target}: {} / {}", out.stdout, out.stderr);
        assert!(
            out.stderr.to_lowercase().contains("timeout") || out.stderr.contains("deadline"),
            "{}",
            out.stderr
        );
        assert!(
            took < Duration::from_millis(2500),
            "{target}: took {took:?}"
        );

        // Generic $invoke: the POJO comes back as Java's generic consumer sees it (a map with
        // "class").
        let out = common::invoke_parts(&[
            &[&target, DEMO, "getUser", r#"["gen"]"#],
            &v,
            &["--generic", "--json"],
        ])
        .await;
        assert_eq!(out.code, 0, "{target}: {} / {}", out.stdout, out.stderr);
        // Java's generic result turns an enum into its name (PojoUtils.generalize).
        let mut want = interop::full_user("gen");
        want["color"] = json!("GREEN");
        assert_eq!(out.json()["result"], want, "{target}");
        let java = tests::peers::java_consumer(
            test,
            &[
                &url[..],
                &[
                    "--generic",
                    "--interface",
                    DEMO,
                    "--method",
                    "getUser",
                    "--args",
                    r#"["gen"]"#,
                    "--types",
                    "java.lang.String",
                ],
            ]
            .concat(),
            T,
        )
        .await
        .unwrap();
        assert_eq!(
            java.json["result"],
            out.json()["result"],
            "generic: Java {} vs ours {}",
            java.json,
            out.json()
        );
    }
}

/// The registry URL of each registry the test servers offer, with a unique root/namespace.
fn registries(test: &str) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(zk) = tests::zk_addr(test) {
        out.push(format!(
            "zookeeper://{zk}?group={}",
            tests::unique("jp-root")
        ));
    }
    if let Some(nacos) = tests::nacos_addr(test) {
        out.push(format!(
            "nacos://{nacos}?namespace={}",
            tests::unique("jp-ns")
        ));
    }
    out
}

async fn connect(registry: &str) -> Arc<dyn registry_core::Registry> {
    let url = Url::parse(registry).unwrap();
    if registry.starts_with("zookeeper://") {
        Arc::new(registry_zk::ZookeeperRegistry::connect(&url).await.unwrap())
    } else {
        Arc::new(registry_nacos::nacos_registry(&url).unwrap())
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn through_zookeeper_and_nacos_invoke_reaches_each_protocol_of_a_java_provider() {
    let test = "through_registries_invoke_reaches_each_protocol";
    for registry in registries(test) {
        let mut o = opts(test);
        o.registry = Some(registry.clone());
        let Some(p) = JavaProvider::start(test, &o).await else {
            return;
        };
        for (proto, port) in [("dubbo", p.dubbo_port), ("tri", p.tri_port)] {
            let base = [registry.as_str(), DEMO];
            let flags = ["--version", "1.0.0", "--protocol", proto, "--json"];
            let out = common::invoke_parts(&[&base, &["whoAmI", "[]"], &flags]).await;
            assert_eq!(
                out.code, 0,
                "{registry} {proto}: {} / {}",
                out.stdout, out.stderr
            );
            assert_eq!(
                out.json()["result"],
                json!(format!("{}@{proto}://127.0.0.1:{port}", o.app)),
                "{registry}: --protocol {proto} picks that protocol's provider"
            );
            let out = common::invoke_parts(&[&base, &["getUser", r#"["reg"]"#], &flags]).await;
            assert_eq!(
                out.code, 0,
                "{registry} {proto}: {} / {}",
                out.stdout, out.stderr
            );
            assert_eq!(out.json()["result"], interop::full_user("reg"));
            // The application's second interface, registered beside the first.
            let out =
                common::invoke_parts(&[&[registry.as_str(), ECHO, "echo", r#"["two"]"#], &flags])
                    .await;
            assert_eq!(
                out.code, 0,
                "{registry} {proto}: {} / {}",
                out.stdout, out.stderr
            );
            assert_eq!(out.json()["result"], "two");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn registry_directory_calls_both_protocols_and_follows_the_provider_away() {
    let test = "registry_directory_follows_a_java_provider";
    for registry in registries(test) {
        let mut o = opts(test);
        o.registry = Some(registry.clone());
        let Some(mut p) = JavaProvider::start(test, &o).await else {
            return;
        };
        let consumer = Url::parse(&format!(
            "consumer://127.0.0.1/{DEMO}?interface={DEMO}&version=1.0.0&side=consumer\
             &category=providers,configurators,routers&check=false&loadbalance=roundrobin"
        ))
        .unwrap();
        let reg = connect(&registry).await;
        let dir = RegistryDirectory::subscribe(
            reg.clone(),
            consumer,
            Arc::new(BothProtocols::new()),
            DirectoryOptions {
                register: false,
                ..DirectoryOptions::default()
            },
        )
        .await
        .unwrap();
        tests::eventually("the provider's dubbo and tri URLs", T, || {
            let n = dir.provider_count();
            async move { (n == 2).then_some(()) }
        })
        .await;
        let mut protocols: Vec<String> = dir
            .invoker_urls()
            .iter()
            .map(|u| u.protocol().unwrap_or("").to_owned())
            .collect();
        protocols.sort();
        assert_eq!(protocols, ["dubbo", "tri"], "{registry}");

        // Round robin over both: each protocol's invoker answers, each as itself.
        let invoker = cluster::join(dir.clone() as Arc<dyn Directory>);
        let mut seen = std::collections::BTreeSet::new();
        for _ in 0..6 {
            let r = invoker
                .invoke(&Invocation::new("whoAmI").with_arguments(vec![], vec![]))
                .await
                .unwrap_or_else(|e| panic!("{registry}: whoAmI: {e}"));
            seen.insert(r.value.as_str().unwrap_or_default().to_owned());
        }
        let want: std::collections::BTreeSet<String> =
            [("dubbo", p.dubbo_port), ("tri", p.tri_port)]
                .iter()
                .map(|(proto, port)| format!("{}@{proto}://127.0.0.1:{port}", o.app))
                .collect();
        assert_eq!(seen, want, "{registry}");
        let r = invoker
            .invoke(&Invocation::new("addLong").with_arguments(
                vec!["long".into(), "long".into()],
                vec![json!(40), json!(2)],
            ))
            .await
            .unwrap();
        assert_eq!(r.value, json!(42));

        // SIGTERM: Dubbo's shutdown hook unregisters; the list empties (an empty:// notice).
        p.process.terminate(T).await;
        tests::eventually("the provider gone after SIGTERM", T, || {
            let n = dir.provider_count();
            async move { (n == 0).then_some(()) }
        })
        .await;
        dir.destroy();
        reg.destroy().await;
    }
}
