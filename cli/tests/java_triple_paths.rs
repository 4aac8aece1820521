//! Triple `:path`s against a real Java Dubbo 3.3.6 provider, with `invoke --proto`:
//! - a plain Java interface whose methods take protobuf messages
//!   (`com.example.peer.ProtoService#greet(GreetRequest)`) is served at
//!   `/com.example.peer.ProtoService/greet`; the .proto defines only the messages, and
//!   `--proto-messages` (or the only rpc of that name) gives their types. The answer equals the
//!   real Java consumer's;
//! - a service the provider does not have is called at its own name and fails with
//!   `UNIMPLEMENTED` (`METHOD_NOT_FOUND`, code 11), even when the .proto has an rpc of the same name in
//!   another service or package;
//! - a method the provider's service lacks fails as Java 3.3.6 answers it: `UNKNOWN` (code 0, the
//!   provider's own `NullPointerException` text), not `UNIMPLEMENTED`, and never reaches another
//!   method.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::Duration;

use serde_json::json;
use tests::peers::{JavaProvider, ProviderOptions};

const PROTO: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../tests/peers/java-dubbo3/src/main/proto/greet.proto"
);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_java_interface_taking_protobuf_messages_is_called_at_its_own_path() {
    let test = "java_triple_interface_path";
    let opts = ProviderOptions {
        app: tests::unique("jtp").replace('_', "-"),
        version: Some("1.0.0".into()),
        protocols: vec!["tri".into()],
        services: vec!["proto".into(), "greeter".into()],
        ..ProviderOptions::default()
    };
    let Some(p) = JavaProvider::start(test, &opts).await else {
        return;
    };
    let target = p.tri_target();
    let request = json!({"name": "iface", "count": 2, "ratio": 0.25, "tags": ["x"]});
    let args = json!([request]).to_string();
    let java = tests::peers::java_consumer(
        test,
        &[
            "--url",
            &target,
            "--version",
            "1.0.0",
            "--interface",
            "com.example.peer.ProtoService",
            "--method",
            "greet",
            "--types",
            "com.example.peer.greet.GreetRequest",
            "--args",
            &args,
        ],
        Duration::from_secs(60),
    )
    .await
    .unwrap();
    assert_eq!(java.code, 0, "the Java consumer: {}", java.json);
    assert_eq!(
        java.json["result"]["message"], "Hello iface (proto interface)",
        "{}",
        java.json
    );

    let messages = "dubbo.peer.greet.GreetRequest,dubbo.peer.greet.GreetReply";
    for extra in [&["--proto-messages", messages][..], &[]] {
        let out = common::invoke_parts(&[
            &[
                &target,
                "com.example.peer.ProtoService",
                "greet",
                &args,
                "--proto",
                PROTO,
                "--version",
                "1.0.0",
                "--json",
            ],
            extra,
        ])
        .await;
        assert_eq!(out.code, 0, "{extra:?}: {} / {}", out.stdout, out.stderr);
        let r = &out.json()["result"];
        assert_eq!(r["message"], java.json["result"]["message"], "{extra:?}");
        assert_eq!(r["echo"], java.json["result"]["echo"], "{extra:?}");
        assert_eq!(r["provider"], java.json["result"]["provider"], "{extra:?}");
    }

    // A wrong message name is refused before any call.
    let out = common::invoke(&[
        &target,
        "com.example.peer.ProtoService",
        "greet",
        &args,
        "--proto",
        PROTO,
        "--proto-messages",
        "dubbo.peer.greet.Nope,dubbo.peer.greet.GreetReply",
    ])
    .await;
    assert_ne!(out.code, 0);
    assert!(
        out.stderr.contains("no message dubbo.peer.greet.Nope"),
        "{}",
        out.stderr
    );

    // Services the provider does not have: called at their own names, never at the schema's
    // Greeter, whatever their package.
    for (service, method) in [
        ("com.example.peer.Nope", "greet"),
        ("other.pkg.Greeter", "Greet"),
        ("com.example.peer.ProtoService2", "greet"),
    ] {
        let out = common::invoke(&[
            &target,
            service,
            method,
            &args,
            "--proto",
            PROTO,
            "--version",
            "1.0.0",
            "--json",
        ])
        .await;
        assert_ne!(out.code, 0, "{service}: {}", out.stdout);
        assert!(
            out.stderr.contains("(code 11)"),
            "{service}/{method}: {} / {}",
            out.stdout,
            out.stderr
        );
        assert!(
            !out.stdout.contains("Hello iface"),
            "{service}: reached another service: {}",
            out.stdout
        );
    }

    // A method the service lacks: Java 3.3.6 answers UNKNOWN (its lookup of the method's
    // descriptors fails with a NullPointerException), which maps to UNKNOWN_EXCEPTION (0) as in
    // Java's `TriRpcStatus.triCodeToDubboCode`.
    let out = common::invoke(&[
        &target,
        "com.example.peer.ProtoService",
        "nope",
        &args,
        "--proto",
        PROTO,
        "--proto-messages",
        messages,
        "--version",
        "1.0.0",
        "--json",
    ])
    .await;
    assert_ne!(out.code, 0, "{}", out.stdout);
    assert!(
        out.stderr.contains("UNKNOWN") && out.stderr.contains("(code 0)"),
        "{} / {}",
        out.stdout,
        out.stderr
    );
    assert!(!out.stdout.contains("Hello iface"), "{}", out.stdout);
}
