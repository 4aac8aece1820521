//! `dubbo-registry invoke` over Dubbo2 against the Java Dubbo2 peer (real Java Hessian):
//! direct `dubbo://` targets and a ZooKeeper target (failover past a dead provider), exit codes
//! 0/1/2 and the `--json` shapes.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers panic on bad fixtures

mod common;

use std::sync::Arc;

use common::dubbo::{provider_url, JavaPeer, SERVICE};
use common::{free_port, invoke, invoke_parts, Out};
use registry_core::{Registry, Url};
use serde_json::json;

/// The options of a call to the peer's 1.0.0 service with a 5 s timeout.
const V1: [&str; 4] = ["--version", "1.0.0", "--timeout", "5000"];

/// `invoke <t> SERVICE <method> <args> --version 1.0.0 --timeout 5000 <extra...>`.
async fn call_v1(t: &str, method: &str, args: &str, extra: &[&str]) -> Out {
    invoke_parts(&[&[t, SERVICE, method, args], &V1, extra]).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn direct_calls_exit_codes_and_json() {
    let Some(peer) = JavaPeer::start("cli direct_calls", &[]).await else {
        return;
    };
    let t = format!("dubbo://{}", peer.addr());
    let o = call_v1(&t, "sayHello", r#"["cli"]"#, &["--json"]).await;
    assert_eq!(o.code, 0, "{}", o.stderr);
    let j = o.json();
    assert_eq!(j["result"], json!("Hello cli"));
    assert_eq!(j["provider"], json!(peer.addr()));
    assert_eq!(j["attachments"]["dubbo"], json!("2.0.2"));

    let o = call_v1(&t, "add", "[1,2]", &["--types", "int,int", "--json"]).await;
    assert_eq!(o.json()["result"], json!(3));

    // Attachments split at the first '='; the provider echoes what it received.
    let o = call_v1(
        &t,
        "attachments",
        "[]",
        &["--attachment", "k=a=b", "--json"],
    )
    .await;
    let a = &o.json()["result"];
    assert_eq!(a["k"], json!("a=b"));
    assert_eq!(a["timeout"], json!("5000"));
    assert_eq!(a["path"], json!(SERVICE));

    // A POJO argument, typed by its "class".
    let user = r#"[{"class":"org.apache.dubbo.demo.User","name":"eve","age":7}]"#;
    let o = call_v1(&t, "echoUser", user, &["--json"]).await;
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert_eq!(o.json()["result"]["name"], json!("eve"));

    // Business exception: exit 1 and the exception object.
    let o = call_v1(&t, "fail", r#"["boom"]"#, &["--json"]).await;
    assert_eq!(o.code, 1, "{}", o.stderr);
    assert_eq!(
        o.json()["exception"],
        json!({"class": "java.lang.IllegalStateException", "message": "boom"})
    );

    // Non-OK status with the provider's message: exit 2, stderr.
    let o = invoke(&[
        &t,
        SERVICE,
        "sayHello",
        r#"["x"]"#,
        "--version",
        "9.9.9",
        "--timeout",
        "5000",
        "--json",
    ])
    .await;
    assert_eq!(o.code, 2);
    assert!(o.stdout.is_empty());
    assert!(
        o.stderr.contains("status 70") && o.stderr.contains("Not found exported service"),
        "{}",
        o.stderr
    );

    // Timeout: exit 2.
    let o = invoke(&[
        &t,
        SERVICE,
        "sleep",
        "[3000]",
        "--version",
        "1.0.0",
        "--timeout",
        "200",
    ])
    .await;
    assert_eq!(o.code, 2);
    assert!(o.stderr.contains("timeout"), "{}", o.stderr);

    // Usage errors: exit 2 with a clear message.
    let o = invoke(&[&t, SERVICE, "sayHello", r#"{"a":1}"#]).await;
    assert_eq!(o.code, 2);
    assert!(o.stderr.contains("must be a JSON array"), "{}", o.stderr);
    let o = invoke(&[&t, SERVICE, "add", "[1,2]", "--types", "int"]).await;
    assert_eq!(o.code, 2);
    assert!(o.stderr.contains("1 types for 2 arguments"), "{}", o.stderr);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refused_connection_exits_2() {
    let t = format!("dubbo://127.0.0.1:{}", free_port());
    let o = invoke(&[&t, SERVICE, "sayHello", r#"["x"]"#]).await;
    assert_eq!(o.code, 2);
    assert!(o.stderr.contains("cannot connect"), "{}", o.stderr);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn through_zookeeper_with_failover() {
    let Some(zk) = tests::zk_addr("cli through_zookeeper_with_failover") else {
        return;
    };
    let Some(peer) = JavaPeer::start("cli through_zookeeper", &[]).await else {
        return;
    };
    let root = format!("/{}", tests::unique("cli-invoke"));
    let reg_url = format!("zookeeper://{zk}?group={root}&timeout=10000");
    let registry: Arc<dyn Registry> = Arc::new(
        registry_zk::ZookeeperRegistry::connect(&Url::parse(&reg_url).unwrap())
            .await
            .unwrap(),
    );
    // A dead provider next to the live one: failover (2 retries) always reaches the live one.
    let dead = free_port();
    registry.register(&provider_url(dead, "")).await.unwrap();
    registry.register(&peer.url("")).await.unwrap();
    for i in 0..4 {
        let name = format!("zk{i}");
        let arg = format!("[\"{name}\"]");
        let o = invoke(&[
            &reg_url,
            SERVICE,
            "sayHello",
            &arg,
            "--version",
            "1.0.0",
            "--timeout",
            "3000",
            "--json",
        ])
        .await;
        assert_eq!(o.code, 0, "{}", o.stderr);
        assert_eq!(o.json()["result"], json!(format!("Hello {name}")));
    }
    // Exactly the given version: none registered without one.
    let o = invoke(&[
        &reg_url,
        SERVICE,
        "sayHello",
        r#"["x"]"#,
        "--registry-timeout",
        "3",
    ])
    .await;
    assert_eq!(o.code, 2);
    assert!(
        o.stderr.contains("No provider available") && o.stderr.contains(SERVICE),
        "{}",
        o.stderr
    );
    registry.destroy().await;
}
