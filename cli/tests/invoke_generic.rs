//! `dubbo-registry invoke --generic` (`$invoke(method, types, args)` with `generic=true`) over
//! Dubbo2 against the Java Dubbo2 peer, whose `$invoke` dispatches to the named method: the
//! result and business-exception exit codes (0 / 1) and the exact `--json` shapes; and against
//! the Node peer (sofa-rpc-node), which has no generic service: a clear error, exit 2 or 1.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers panic on bad fixtures

mod common;

use common::dubbo::{JavaPeer, NodePeer, SERVICE};
use common::{invoke, invoke_parts};
use serde_json::{json, Value};

fn keys(v: &Value) -> Vec<&str> {
    let mut k: Vec<&str> = v
        .as_object()
        .map(|o| o.keys().map(String::as_str).collect())
        .unwrap_or_default();
    k.sort_unstable();
    k
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn generic_calls_against_the_java_peer() {
    let Some(peer) = JavaPeer::start("cli generic_calls_against_the_java_peer", &[]).await else {
        return;
    };
    let t = format!("dubbo://{}", peer.addr());
    let base = ["--version", "1.0.0", "--timeout", "5000", "--generic"];
    let call = |method: &'static str, args: &'static str, extra: &'static [&'static str]| {
        let mut v: Vec<&str> = vec![&t, SERVICE, method, args];
        v.extend(base);
        v.extend(extra);
        v
    };

    // A result: exit 0, {result, provider, elapsed_ms, attachments}.
    let o = invoke(&call("sayHello", r#"["gen"]"#, &["--json"])).await;
    assert_eq!(o.code, 0, "{}", o.stderr);
    let j = o.json();
    assert_eq!(
        keys(&j),
        ["attachments", "elapsed_ms", "provider", "result"],
        "{j}"
    );
    assert_eq!(j["result"], json!("Hello gen"));
    assert_eq!(j["provider"], json!(peer.addr()));
    assert!(j["elapsed_ms"].as_f64().is_some_and(|ms| ms >= 0.0), "{j}");
    assert_eq!(j["attachments"]["dubbo"], json!("2.0.2"));

    // Without --json: the plain value on stdout, exit 0.
    let o = invoke(&call("sayHello", r#"["plain"]"#, &[])).await;
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert_eq!(o.stdout.trim(), "Hello plain");

    // The arguments travel in the `Object[]` of $invoke as their JSON kinds (integers as
    // longs; a Dubbo provider's GenericFilter realizes them to the declared types), the
    // declared types in the `String[]`: the peer's `describe` shows what Java decoded.
    let o = invoke(&call(
        "describe",
        r#"[1,"s",true]"#,
        &["--types", "int,java.lang.String,boolean", "--json"],
    ))
    .await;
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert_eq!(
        o.json()["result"],
        json!([
            "java.lang.Long:1",
            "java.lang.String:s",
            "java.lang.Boolean:true"
        ])
    );

    // A POJO result comes back as an object with its class.
    let o = invoke(&call("getUser", r#"["bob"]"#, &["--json"])).await;
    assert_eq!(o.code, 0, "{}", o.stderr);
    let u = &o.json()["result"];
    assert_eq!(u["class"], json!("org.apache.dubbo.demo.User"));
    assert_eq!((&u["name"], &u["age"]), (&json!("bob"), &json!(42)));

    // A business exception: exit 1, {exception: {class, message}, elapsed_ms}.
    let o = invoke(&call("fail", r#"["boom"]"#, &["--json"])).await;
    assert_eq!(o.code, 1, "{}", o.stderr);
    let j = o.json();
    assert_eq!(keys(&j), ["elapsed_ms", "exception"], "{j}");
    assert_eq!(
        j["exception"],
        json!({"class": "java.lang.IllegalStateException", "message": "boom"})
    );
    // The same without --json: one line on stdout, exit 1.
    let o = invoke(&call("fail", r#"["boom"]"#, &[])).await;
    assert_eq!(o.code, 1, "{}", o.stderr);
    assert_eq!(
        o.stdout.trim(),
        "exception java.lang.IllegalStateException: boom"
    );

    // An unknown method behind $invoke is the provider's exception too: exit 1.
    let o = invoke(&call("noSuchMethod", "[]", &["--json"])).await;
    assert_eq!(o.code, 1, "{} / {}", o.stdout, o.stderr);
    assert!(
        o.json()["exception"]["class"]
            .as_str()
            .is_some_and(|c| !c.is_empty()),
        "{}",
        o.stdout
    );
    peer.kill().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn generic_call_against_the_node_peer_fails_clearly() {
    let Some(peer) = NodePeer::start("cli generic_call_against_the_node_peer").await else {
        return;
    };
    let t = format!("dubbo://127.0.0.1:{}", peer.port);
    // The plain call works ...
    let call = [
        t.as_str(),
        SERVICE,
        "sayHello",
        r#"["node"]"#,
        "--version",
        "1.0.0",
    ];
    let o = invoke_parts(&[&call, &["--timeout", "5000", "--json"]]).await;
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert_eq!(o.json()["result"], json!("Hello node"));
    // ... `$invoke` does not exist there: not a result, and a message naming the problem.
    let o = invoke_parts(&[&call, &["--timeout", "5000", "--generic", "--json"]]).await;
    assert_ne!(o.code, 0, "{} / {}", o.stdout, o.stderr);
    let text = format!("{}{}", o.stdout, o.stderr);
    assert!(text.contains("$invoke"), "{text}");
}
