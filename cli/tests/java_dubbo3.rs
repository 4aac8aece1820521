//! Interop with a real Apache Dubbo 3.3.6 (Java) provider (`scripts/peers/java-dubbo3.sh`):
//! `dubbo-registry invoke` and `RegistryDirectory` call it over Dubbo2 and Triple, straight at
//! its ports and through ZooKeeper and Nacos, and every value comes back exactly as the real
//! Java consumer gets it for the same call; exceptions, attachments, timeouts and generic
//! `$invoke` behave as in Java.

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
        Arc::new(registry_nacos::NacosRegistry::new(&url).unwrap())
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
            Arc::new(dubbo_consumer::Protocols::new()),
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

/// `dubbo-registry register REGISTRY URL` running until dropped; returns once registered.
async fn register_with_cli(registry: &str, url: &str) -> tokio::process::Child {
    use tokio::io::AsyncBufReadExt;
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_dubbo-registry"))
        .args(["register", registry, url])
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = tokio::io::BufReader::new(child.stderr.take().unwrap()).lines();
    let line = tokio::time::timeout(T, lines.next_line())
        .await
        .unwrap_or_else(|_| panic!("register {url}: no answer"))
        .unwrap()
        .unwrap_or_default();
    assert!(line.starts_with("registered"), "register {url}: {line}");
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    child
}

/// The Java consumer's provider list for DEMO 1.0.0 in `registry` (interface-level discovery),
/// by protocol.
async fn java_sees(test: &str, registry: &str) -> std::collections::BTreeMap<String, Value> {
    let run = tests::peers::java_consumer(
        test,
        &[
            "--registry",
            registry,
            "--version",
            "1.0.0",
            "--mode",
            "list",
            "--migration",
            "FORCE_INTERFACE",
            "--expect",
            "2",
            "--stable-ms",
            "1000",
        ],
        T * 2,
    )
    .await
    .unwrap();
    assert_eq!(run.code, 0, "{registry}: {}", run.json);
    run.json["providers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| (p["protocol"].as_str().unwrap().to_owned(), p.clone()))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_java_consumer_reads_what_we_register_as_what_java_registers() {
    let test = "java_consumer_reads_what_we_register";
    let (Some(zk), Some(nacos)) = (tests::zk_addr(test), tests::nacos_addr(test)) else {
        return;
    };
    let pairs = [
        (
            format!("zookeeper://{zk}?group={}", tests::unique("java-wrote")),
            format!("zookeeper://{zk}?group={}", tests::unique("we-wrote")),
        ),
        (
            format!("nacos://{nacos}?namespace={}", tests::unique("java-wrote")),
            format!("nacos://{nacos}?namespace={}", tests::unique("we-wrote")),
        ),
    ];
    for (java_reg, our_reg) in pairs {
        let mut o = opts(test);
        o.registry = Some(java_reg.clone());
        o.register_mode = Some("interface".into());
        let Some(p) = JavaProvider::start(test, &o).await else {
            return;
        };
        // The URLs exactly as the Java provider wrote them ...
        let reg = connect(&java_reg).await;
        let consumer = Url::parse(&format!(
            "consumer://127.0.0.1/{DEMO}?interface={DEMO}&version=1.0.0&category=providers"
        ))
        .unwrap();
        let written = tests::eventually("the Java provider's two URLs", T, || {
            let (reg, consumer) = (reg.clone(), consumer.clone());
            async move {
                let urls = reg.lookup(&consumer).await.ok()?;
                (urls.len() == 2).then_some(urls)
            }
        })
        .await;
        reg.destroy().await;
        // ... written again by `dubbo-registry register` into a registry of their own.
        let mut ours = Vec::new();
        for u in &written {
            ours.push(register_with_cli(&our_reg, &u.to_string()).await);
        }
        let from_java = java_sees(test, &java_reg).await;
        let from_us = java_sees(test, &our_reg).await;
        for proto in ["dubbo", "tri"] {
            let (j, u) = (&from_java[proto], &from_us[proto]);
            assert_eq!(j["provider_params"]["application"], json!(o.app), "{j}");
            assert_eq!(j["provider_params"]["interface"], DEMO, "{j}");
            assert_eq!(j["address"], u["address"], "{our_reg} {proto}");
            assert_eq!(j["path"], u["path"], "{our_reg} {proto}");
            assert_eq!(
                j["provider_params"], u["provider_params"],
                "{our_reg} {proto}: the provider URL Java reads from our registration"
            );
            assert_eq!(
                j["params"], u["params"],
                "{our_reg} {proto}: after merging with the consumer"
            );
        }
        // And it calls the provider through our registration, over each protocol.
        for proto in ["dubbo", "tri"] {
            let run = tests::peers::java_consumer(
                test,
                &[
                    "--registry",
                    &our_reg,
                    "--version",
                    "1.0.0",
                    "--migration",
                    "FORCE_INTERFACE",
                    "--protocol",
                    proto,
                    "--method",
                    "whoAmI",
                ],
                T * 2,
            )
            .await
            .unwrap();
            assert_eq!(run.code, 0, "{our_reg} {proto}: {}", run.json);
            assert_eq!(
                run.json["result"],
                json!(format!(
                    "{}@{proto}://127.0.0.1:{}",
                    o.app,
                    if proto == "dubbo" {
                        p.dubbo_port
                    } else {
                        p.tri_port
                    }
                ))
            );
        }
        drop(ours);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idl_greeter_answers_on_its_proto_and_java_package_names_as_to_java() {
    let test = "idl_greeter_on_both_names";
    let Some(p) = JavaProvider::start(test, &opts(test)).await else {
        return;
    };
    let proto = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../tests/peers/java-dubbo3/src/main/proto/greet.proto"
    );
    let target = p.tri_target();
    let request = json!({"name": "idl", "count": 3, "big": "9007199254740993", "ratio": 0.5,
                         "share": 0.25, "flag": true, "tags": ["a", "b"], "labels": {"k": "v"},
                         "blob": "AAEC", "mood": "GRUMPY"});
    let java = tests::peers::java_consumer(
        test,
        &[
            "--url",
            &target,
            "--version",
            "1.0.0",
            "--interface",
            "com.example.peer.greet.Greeter",
            "--method",
            "greet",
            "--types",
            "com.example.peer.greet.GreetRequest",
            "--args",
            &json!([request]).to_string(),
        ],
        T,
    )
    .await
    .unwrap();
    assert_eq!(java.code, 0, "{}", java.json);
    assert_eq!(
        java.json["result"]["echo"], request,
        "the Java stub consumer: {}",
        java.json
    );
    // The proto package (`dubbo.peer.greet`) and the java_package (`com.example.peer.greet`)
    // differ: the stub provider answers on both service names.
    for service in ["dubbo.peer.greet.Greeter", "com.example.peer.greet.Greeter"] {
        let args = json!([request]).to_string();
        let out = common::invoke(&[
            &target,
            service,
            "Greet",
            &args,
            "--proto",
            proto,
            "--version",
            "1.0.0",
            "--json",
        ])
        .await;
        assert_eq!(out.code, 0, "{service}: {} / {}", out.stdout, out.stderr);
        let r = &out.json()["result"];
        assert_eq!(r["message"], "Hello idl", "{service}");
        assert_eq!(
            r["echo"], java.json["result"]["echo"],
            "{service}: as the Java consumer"
        );
        assert_eq!(r["provider"], java.json["result"]["provider"], "{service}");
    }
    // A failing IDL method is a non-OK grpc-status with the provider's message.
    let out = common::invoke(&[
        &target,
        "dubbo.peer.greet.Greeter",
        "Fail",
        r#"[{"name": "x"}]"#,
        "--proto",
        proto,
        "--version",
        "1.0.0",
    ])
    .await;
    assert_eq!(out.code, 2, "{} / {}", out.stdout, out.stderr);
    assert!(out.stderr.contains("greet failed: x"), "{}", out.stderr);
}
