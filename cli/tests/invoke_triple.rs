//! `dubbo-registry invoke` against Triple peers: IDL mode (`--proto`), wrapper mode, exit
//! codes 0/1/2, JSON output, routing headers, and a registry target through ZooKeeper.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers panic on bad fixtures

mod common;

use common::triple::{grpc_peer, grpc_peer_with, node_peer, proto_dir};
use common::{invoke, invoke_parts, Out};
use serde_json::{json, Value};

/// The IDL service of the test `.proto` (package `tritest`).
const GREETER: &str = "tritest.Greeter";

fn proto() -> String {
    proto_dir().join("test.proto").display().to_string()
}

/// IDL mode: `invoke <target> <service> <method> <call...> --proto test.proto <opts...>`, where
/// `call` is the JSON arguments or nothing (the empty message).
async fn idl(target: &str, service: &str, method: &str, call: &[&str], opts: &[&str]) -> Out {
    let p = proto();
    invoke_parts(&[&[target, service, method], call, &["--proto", &p], opts]).await
}

#[tokio::test]
async fn idl_mode_with_proto_files() {
    let Some(peer) = grpc_peer("cli idl_mode_with_proto_files", 0).await else {
        return;
    };
    let target = format!("tri://{}", peer.addr());
    let o = idl(
        &target,
        GREETER,
        "SayHello",
        &[r#"[{"name":"cli"}]"#],
        &["--json"],
    )
    .await;
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert_eq!(o.json()["result"], json!({"message": "Hello cli"}));
    // java_package lookup, Java-style method name, proto3 JSON out.
    let echo = r#"[{"f_int64": 5, "fEnum": "RED", "fBytes": "AQ==", "oInt32": 0}]"#;
    let java_style = "org.apache.dubbo.tritest.Greeter";
    let o = idl(&target, java_style, "echo", &[echo], &["--json"]).await;
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert_eq!(
        o.json()["result"],
        json!({"fInt64": "5", "fEnum": "RED", "fBytes": "AQ==", "oInt32": 0})
    );
    // Omitted arguments = the empty message.
    let o = idl(&target, GREETER, "SayHello", &[], &["--json"]).await;
    assert_eq!(o.json()["result"], json!({"message": "Hello "}));
    // Unknown fields and wrong types: exit 2.
    for bad in [r#"[{"nope":1}]"#, r#"[{"name":5}]"#] {
        let o = idl(&target, GREETER, "SayHello", &[bad], &["--json"]).await;
        assert_eq!(o.code, 2, "{bad}: {}", o.stdout);
    }
    // A non-OK status: exit 2 with the percent-decoded grpc-message.
    let fail = r#"[{"code":14,"message":"später 100%"}]"#;
    let o = idl(&target, GREETER, "Fail", &[fail], &[]).await;
    assert_eq!(o.code, 2);
    assert!(
        o.stderr.contains("UNAVAILABLE") && o.stderr.contains("später 100%"),
        "{}",
        o.stderr
    );
    // Headers: timeout, version only when given, attachments lower-cased.
    let o = idl(
        &target,
        GREETER,
        "Headers",
        &["[{}]"],
        &[
            "--json",
            "--timeout",
            "1500",
            "--version",
            "1.0.0",
            "--attachment",
            "Trace-Id=a=b",
        ],
    )
    .await;
    assert_eq!(o.code, 0, "{}", o.stderr);
    let h = &o.json()["result"]["headers"];
    assert_eq!(h["tri-service-version"], "1.0.0");
    assert!(h.get("tri-service-group").is_none());
    assert_eq!(h["trace-id"], "a=b");
    let left: i64 = h["x-remaining-ms"].as_str().unwrap().parse().unwrap();
    assert!((500..=1500).contains(&left), "{left}");
    // The key's case travels in tri-header-convert; the provider's attachments (headers and
    // trailers) are the result's "attachments".
    let conv: Value = serde_json::from_str(h["tri-header-convert"].as_str().unwrap()).unwrap();
    assert_eq!(conv, json!({"trace-id": "Trace-Id"}));
    let a = &o.json()["attachments"];
    assert_eq!(a["x-from-headers"], "h", "{a}");
    assert_eq!(a["x-from-trailers"], "t", "{a}");
    assert_eq!(a["X-Case"], "restored", "{a}");
    assert_eq!(a["blob"], "hello", "{a}");
    assert!(
        a.get("grpc-status").is_none() && a.get("content-type").is_none(),
        "{a}"
    );
}

#[tokio::test]
async fn tri_compressor_gzip_and_its_errors() {
    let Some(strict) = grpc_peer_with("cli tri_compressor_gzip", 0, &["no-gzip"]).await else {
        return;
    };
    // `invoke <target> tritest.Greeter SayHello [{"name":"z"}] --proto .. --json <opts...>`.
    let say_z = |target: String, opts: &'static [&'static str]| async move {
        let z = [r#"[{"name":"z"}]"#];
        idl(
            &target,
            GREETER,
            "SayHello",
            &z,
            &[&["--json"], opts].concat(),
        )
        .await
    };
    let target = format!("tri://{}", strict.addr());
    // The gzip-disabled peer refuses compressed requests: proof that they were compressed.
    let o = say_z(target.clone(), &["--tri-compressor", "gzip"]).await;
    assert_eq!(o.code, 2, "{}", o.stdout);
    assert!(
        o.stderr.contains("UNIMPLEMENTED") && o.stderr.contains("gzip"),
        "{}",
        o.stderr
    );
    let o = say_z(target.clone(), &["--tri-compressor", "identity"]).await;
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert_eq!(o.json()["result"], json!({"message": "Hello z"}));
    let o = say_z(target, &["--tri-compressor", "bzip2"]).await;
    assert_ne!(o.code, 0);
    assert!(o.stderr.contains("--tri-compressor"), "{}", o.stderr);
    let Some(peer) = grpc_peer("cli tri_compressor_gzip", 0).await else {
        return;
    };
    let o = say_z(
        format!("tri://{}", peer.addr()),
        &["--tri-compressor", "gzip"],
    )
    .await;
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert_eq!(o.json()["result"], json!({"message": "Hello z"}));
}

/// `--repeat` with 64 in flight on one connection, with write coalescing (the default) and
/// without (`--tri-no-write-coalescing`): every call answers.
#[tokio::test]
async fn repeated_calls_with_and_without_write_coalescing() {
    let Some(peer) = grpc_peer("cli write_coalescing", 0).await else {
        return;
    };
    let target = format!("tri://{}", peer.addr());
    let z = [r#"[{"name":"z"}]"#];
    for extra in [&[][..], &["--tri-no-write-coalescing"][..]] {
        let opts = [
            &[
                "--json",
                "--repeat",
                "3000",
                "--concurrency",
                "64",
                "--timeout",
                "5000",
            ][..],
            extra,
        ]
        .concat();
        let o = idl(&target, GREETER, "SayHello", &z, &opts).await;
        assert_eq!(o.code, 0, "{extra:?}: {}", o.stderr);
        let v = o.json();
        assert_eq!(v["calls"], 3000, "{extra:?}: {v}");
        assert_eq!(v["errors"], 0, "{extra:?}: {v}");
    }
}

#[tokio::test]
async fn wrapper_mode_and_business_exceptions() {
    let Some(peer) = grpc_peer("cli wrapper_mode", 0).await else {
        return;
    };
    let target = format!("tri://{}", peer.addr());
    let svc = "org.apache.dubbo.tritest.DemoService";
    let o = invoke(&[
        &target,
        svc,
        "sayHello",
        r#"["w"]"#,
        "--types",
        "java.lang.String",
        "--json",
    ])
    .await;
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert_eq!(o.json()["result"], json!("Hello w"));
    let o = invoke(&[
        &target,
        svc,
        "describe",
        r#"[1, "x"]"#,
        "--types",
        "int,String",
        "--json",
    ])
    .await;
    assert_eq!(o.json()["result"], json!("hessian4|int,java.lang.String|2"));
    let o = invoke(&[&target, svc, "boom", r#"["x"]"#, "--json"]).await;
    assert_eq!(o.code, 1, "{} {}", o.stdout, o.stderr);
    assert_eq!(
        o.json()["exception"],
        json!({"class": "java.lang.IllegalStateException", "message": "boom: x"})
    );
    // tri-exception-code other than 3 is an RPC failure.
    let o = invoke(&[&target, svc, "denied", r#"["x"]"#, "--json"]).await;
    assert_eq!(o.code, 2);
    assert!(o.stderr.contains("no access for you"), "{}", o.stderr);
}

#[tokio::test]
async fn unmatched_routing_is_a_404_failure() {
    let Some(node) = node_peer("cli unmatched_routing").await else {
        return;
    };
    let target = format!("tri://{}", node.addr());
    let n = [r#"[{"name":"n"}]"#];
    let routed = ["--version", "1.0.0", "--group", "g1", "--json"];
    let o = idl(&target, GREETER, "SayHello", &n, &routed).await;
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert_eq!(
        o.json()["result"],
        json!({"message": "Hello n from 1.0.0/g1"})
    );
    let o = idl(&target, GREETER, "SayHello", &n, &["--group", "g1"]).await;
    assert_eq!(o.code, 2);
    assert!(
        o.stderr.contains("404") && o.stderr.contains("UNIMPLEMENTED"),
        "{}",
        o.stderr
    );
}

#[tokio::test]
async fn registry_target_through_zookeeper() {
    let Some(zk) = tests::zk_addr("cli registry_target_through_zookeeper") else {
        return;
    };
    let Some(peer) = grpc_peer("cli registry_target_through_zookeeper", 0).await else {
        return;
    };
    let root = tests::unique("tri-cli");
    let reg_url = format!("zookeeper://{zk}?group={root}");
    let provider = format!(
        "tri://127.0.0.1:{}/tritest.Greeter?application=p&interface=tritest.Greeter&methods=SayHello&proxy=nativestub&release=3.3.1&side=provider&version=1.0.0",
        peer.port
    );
    let reg =
        registry_zk::ZookeeperRegistry::connect(&registry_core::Url::parse(&reg_url).unwrap())
            .await
            .unwrap();
    use registry_core::Registry as _;
    reg.register(&registry_core::Url::parse(&provider).unwrap())
        .await
        .unwrap();
    let zk = [r#"[{"name":"zk"}]"#];
    let o = idl(
        &reg_url,
        GREETER,
        "SayHello",
        &zk,
        &["--version", "1.0.0", "--json"],
    )
    .await;
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert_eq!(o.json()["result"], json!({"message": "Hello zk"}));
    // The wrong version finds no provider: exit 2 naming the service.
    let wrong = ["--version", "9", "--registry-timeout", "2"];
    let o = idl(&reg_url, GREETER, "SayHello", &["[{}]"], &wrong).await;
    assert_eq!(o.code, 2);
    assert!(o.stderr.contains("tritest.Greeter"), "{}", o.stderr);
}
