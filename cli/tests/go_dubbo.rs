//! Interop with a real dubbo-go 3.3.2 provider (`scripts/peers/go-dubbo.sh`, new API, non-IDL
//! Hessian2): `dubbo-registry invoke` and `RegistryDirectory` call it over Dubbo2 and Triple,
//! straight and through ZooKeeper and Nacos, and get what the real Java consumer gets for the
//! same calls, including where dubbo-go cannot take an argument.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use common::interop::{self, Case, DEMO, ECHO};
use invoker::cluster;
use invoker::directory::{Directory, DirectoryOptions, RegistryDirectory};
use invoker::rpc::Invocation;
use registry_core::Url;
use serde_json::{json, Value};
use tests::peers::{GoProvider, ProviderOptions};

const T: Duration = Duration::from_secs(60);

fn opts(test: &str) -> ProviderOptions {
    ProviderOptions {
        app: tests::unique(&format!("gp-{test}")).replace('_', "-"),
        version: Some("1.0.0".into()),
        ..ProviderOptions::default()
    }
}

/// The value table as dubbo-go serves it: no overloads (`describe`), a Go enum field is never
/// null (its zero is the first constant, RED), and over Dubbo2 a `float` argument cannot be
/// bound (`reflect: Call using float64 as type float32`).
fn go_cases(protocol: &str) -> Vec<Case> {
    interop::value_cases()
        .into_iter()
        .filter(|c| c.method != "describe")
        .filter(|c| !(protocol == "dubbo" && c.method == "addFloat"))
        .map(|mut c| {
            if matches!(c.method, "listUsers" | "echoObject") {
                if let Value::Array(users) = &mut c.want {
                    for u in users {
                        u["color"] = json!({"class": "com.example.peer.Color", "name": "RED"});
                    }
                } else {
                    c.want["color"] = json!({"class": "com.example.peer.Color", "name": "RED"});
                }
            }
            c
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_value_dubbo_go_takes_round_trips_as_the_java_consumer_sees_it() {
    let test = "go_every_value_round_trips";
    // The Java consumer is the reference for every answer.
    if !tests::peers::installed("java-dubbo3", test) {
        return;
    }
    let Some(p) = GoProvider::start(test, &opts(test)).await else {
        return;
    };
    for (protocol, target) in [("dubbo", p.dubbo_target()), ("tri", p.tri_target())] {
        let cases = go_cases(protocol);
        let java = interop::java_answers(test, &["--url", &target, "--version", "1.0.0"], &cases)
            .await
            .unwrap();
        for (c, j) in cases.iter().zip(&java) {
            let out = interop::ours(&target, DEMO, c, &["--version", "1.0.0"]).await;
            assert_eq!(
                out.code, 0,
                "{target} {}: {} / {}",
                c.method, out.stdout, out.stderr
            );
            let ours = &out.json()["result"];
            assert_eq!(
                &j["result"], ours,
                "{target} {}: Java {j} vs ours {ours}",
                c.method
            );
            assert_eq!(ours, &c.want, "{target} {} {}", c.method, c.args);
        }
    }
    // What dubbo-go cannot bind fails for both consumers.
    let float = interop::value_cases()
        .into_iter()
        .find(|c| c.method == "addFloat")
        .unwrap();
    let target = p.dubbo_target();
    let out = interop::ours(&target, DEMO, &float, &["--version", "1.0.0"]).await;
    assert_eq!(out.code, 1, "{} / {}", out.stdout, out.stderr);
    assert!(
        out.json()["exception"]["message"]
            .as_str()
            .unwrap()
            .contains("float32"),
        "{}",
        out.stdout
    );
    let java = interop::java_answers(test, &["--url", &target, "--version", "1.0.0"], &[float])
        .await
        .unwrap();
    assert!(java[0]["exception"].is_object(), "{}", java[0]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dubbo_go_exceptions_attachments_and_timeouts() {
    let test = "go_exceptions_attachments_timeouts";
    // The Java consumer is the reference for every answer.
    if !tests::peers::installed("java-dubbo3", test) {
        return;
    }
    let Some(p) = GoProvider::start(test, &opts(test)).await else {
        return;
    };
    let v = ["--version", "1.0.0"];
    // Dubbo2: dubbo-go sends a Java exception object: a business exception, as from Java.
    let target = p.dubbo_target();
    let out =
        common::invoke_parts(&[&[&target, DEMO, "fail", r#"["boom"]"#], &v, &["--json"]]).await;
    assert_eq!(out.code, 1, "{} / {}", out.stdout, out.stderr);
    assert_eq!(
        out.json()["exception"]["class"],
        "com.example.peer.DemoException"
    );
    assert_eq!(out.json()["exception"]["message"], "boom");
    let java = tests::peers::java_consumer(
        test,
        &[
            "--url",
            &target,
            "--version",
            "1.0.0",
            "--method",
            "fail",
            "--args",
            r#"["boom"]"#,
        ],
        T,
    )
    .await
    .unwrap();
    assert_eq!(java.code, 1, "{}", java.json);
    assert_eq!(
        java.json["exception"]["class"],
        "com.example.peer.DemoException"
    );
    assert_eq!(java.json["exception"]["code"], "E42");
    let out = common::invoke_parts(&[
        &[&target, DEMO, "failRuntime", r#"["bang"]"#],
        &v,
        &["--json"],
    ])
    .await;
    assert_eq!(out.code, 1, "{} / {}", out.stdout, out.stderr);
    assert_eq!(
        out.json()["exception"]["class"],
        "java.lang.IllegalStateException"
    );

    // Triple: dubbo-go answers an error with grpc-status 2 and the message, no
    // tri-exception-code and no exception body: an RPC error, not a business exception.
    let target = p.tri_target();
    let out =
        common::invoke_parts(&[&[&target, DEMO, "fail", r#"["boom"]"#], &v, &["--json"]]).await;
    assert_eq!(out.code, 2, "{} / {}", out.stdout, out.stderr);
    assert!(out.stderr.contains("boom"), "{}", out.stderr);
    let java = tests::peers::java_consumer(
        test,
        &[
            "--url",
            &target,
            "--version",
            "1.0.0",
            "--method",
            "fail",
            "--args",
            r#"["boom"]"#,
        ],
        T,
    )
    .await
    .unwrap();
    assert_eq!(
        java.code, 2,
        "the Java consumer sees an RPC error too: {}",
        java.json
    );

    for target in [p.dubbo_target(), p.tri_target()] {
        // Generic $invoke: dubbo-go's generalizer keeps the enum as an object and loses the
        // BigDecimal's digits (value ""); both consumers see exactly that.
        let out = common::invoke_parts(&[
            &[&target, DEMO, "getUser", r#"["gen"]"#],
            &v,
            &["--generic", "--json"],
        ])
        .await;
        assert_eq!(out.code, 0, "{target}: {} / {}", out.stdout, out.stderr);
        let mut want = interop::full_user("gen");
        want["balance"]["value"] = json!("");
        assert_eq!(out.json()["result"], want, "{target}");
        let java = tests::peers::java_consumer(
            test,
            &[
                "--url",
                &target,
                "--version",
                "1.0.0",
                "--generic",
                "--method",
                "getUser",
                "--args",
                r#"["gen"]"#,
                "--types",
                "java.lang.String",
            ],
            T,
        )
        .await
        .unwrap();
        assert_eq!(
            java.json["result"],
            out.json()["result"],
            "{target}: generic, Java vs ours"
        );

        let out = common::invoke_parts(&[
            &[&target, DEMO, "echoAttachments", "[]"],
            &v,
            &["--attachment", "trace-id=abc-123", "--json"],
        ])
        .await;
        assert_eq!(out.code, 0, "{target}: {} / {}", out.stdout, out.stderr);
        assert_eq!(
            out.json()["result"]["trace-id"],
            "abc-123",
            "{target}: {}",
            out.stdout
        );

        let start = Instant::now();
        let out = common::invoke_parts(&[
            &[&target, DEMO, "sleep", "[3000]", "--types", "int"],
            &v,
            &["--timeout", "300", "--json"],
        ])
        .await;
        assert_eq!(out.code, 2, "{target}: {} / {}", out.stdout, out.stderr);
        assert!(start.elapsed() < Duration::from_millis(2500), "{target}");
    }
}

fn registries(test: &str) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(zk) = tests::zk_addr(test) {
        out.push(format!(
            "zookeeper://{zk}?group={}",
            tests::unique("gp-root")
        ));
    }
    if let Some(nacos) = tests::nacos_addr(test) {
        out.push(format!(
            "nacos://{nacos}?namespace={}",
            tests::unique("gp-ns")
        ));
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn through_zookeeper_and_nacos_we_call_a_dubbo_go_provider_and_see_it_leave() {
    let test = "go_through_registries";
    for registry in registries(test) {
        let mut o = opts(test);
        o.registry = Some(registry.clone());
        o.register_mode = Some("interface".into());
        let Some(mut p) = GoProvider::start(test, &o).await else {
            return;
        };
        for (proto, port) in [("dubbo", p.dubbo_port), ("tri", p.tri_port)] {
            let flags = ["--version", "1.0.0", "--protocol", proto, "--json"];
            let out =
                common::invoke_parts(&[&[registry.as_str(), DEMO, "whoAmI", "[]"], &flags]).await;
            assert_eq!(
                out.code, 0,
                "{registry} {proto}: {} / {}",
                out.stdout, out.stderr
            );
            assert_eq!(
                out.json()["result"],
                json!(format!("{}@{proto}://127.0.0.1:{port}", o.app)),
                "{registry}"
            );
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

        // Our directory holds both URLs, calls both, and empties when the provider stops.
        let url = Url::parse(&registry).unwrap();
        let reg: Arc<dyn registry_core::Registry> = if registry.starts_with("zookeeper://") {
            Arc::new(registry_zk::ZookeeperRegistry::connect(&url).await.unwrap())
        } else {
            Arc::new(registry_nacos::NacosRegistry::new(&url).unwrap())
        };
        let consumer = Url::parse(&format!(
            "consumer://127.0.0.1/{DEMO}?interface={DEMO}&version=1.0.0&side=consumer\
             &category=providers,configurators,routers&check=false"
        ))
        .unwrap();
        let dir = RegistryDirectory::subscribe(
            reg.clone(),
            consumer,
            Arc::new(dubbo_consumer::Protocols::new()),
            DirectoryOptions {
                register: false,
                ..DirectoryOptions::default()
            },
        )
        .await
        .unwrap();
        tests::eventually("both URLs of the Go provider", T, || {
            let n = dir.provider_count();
            async move { (n == 2).then_some(()) }
        })
        .await;
        let invoker = cluster::join(dir.clone() as Arc<dyn Directory>);
        // dubbo-go registers weight=0: Java's round robin then always takes the first provider,
        // random picks uniformly (all weights equal). Random reaches both.
        assert!(dir
            .invoker_urls()
            .iter()
            .all(|u| u.param("weight") == Some("0")));
        let mut seen = std::collections::BTreeSet::new();
        for _ in 0..100 {
            let r = invoker
                .invoke(&Invocation::new("whoAmI").with_arguments(vec![], vec![]))
                .await
                .unwrap_or_else(|e| panic!("{registry}: {e}"));
            seen.insert(r.value.as_str().unwrap_or_default().to_owned());
            if seen.len() == 2 {
                break;
            }
        }
        assert_eq!(
            seen.len(),
            2,
            "{registry}: random reaches both protocols: {seen:?}"
        );
        p.process.terminate(T).await;
        tests::eventually("the Go provider gone after SIGTERM", T, || {
            let n = dir.provider_count();
            async move { (n == 0).then_some(()) }
        })
        .await;
        dir.destroy();
        reg.destroy().await;
    }
}
