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
