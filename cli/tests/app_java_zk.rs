//! Application-level discovery against real Apache Dubbo 3.3.6 Java providers registered with
//! `register-mode=instance` only, on the real ZooKeeper (`DUBBO_TEST_ZK`): `dubbo-registry list`
//! and `invoke` find and call them with every way of publishing metadata (MetadataService v2
//! over Triple — Java's default —, v1 over Dubbo/Hessian2, `remote` storage), see what a Java
//! consumer sees, and follow revision changes.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::collections::BTreeSet;

use common::app::{java_list, java_provider, revision, run};
use serde_json::Value;
use tests::peers::JavaProvider;

const DEMO: &str = "com.example.peer.DemoService";

/// A registry URL with a ZooKeeper root of its own (`group`: Dubbo puts instances, mapping and
/// metadata under it).
fn registry(addr: &str, tag: &str) -> String {
    format!("zookeeper://{addr}?group={}", tests::unique(tag))
}

/// `(protocol, address)` of the application-level rows of `list --json`, checking that each
/// says its application and revision.
fn app_rows(out: &common::Out, app: &str, revision: &str) -> BTreeSet<(String, String)> {
    assert_eq!(out.code, 0, "{}", out.stderr);
    let rows = out.json();
    rows.as_array()
        .unwrap()
        .iter()
        .filter(|r| r["level"] == "application")
        .map(|r| {
            assert_eq!(r["application"], app, "{r}");
            assert_eq!(r["revision"], revision, "{r}");
            assert_eq!(r["interface"], DEMO);
            let url = r["url"].as_str().unwrap();
            (
                url.split("://").next().unwrap().to_owned(),
                r["address"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

async fn provider(name: &str, reg: &str, app: &str, extra: &[&str]) -> Option<JavaProvider> {
    java_provider(
        name,
        reg,
        app,
        "instance",
        &["demo", "echo", "greeter"],
        extra,
    )
    .await
}

/// Lists, calls and compares with the Java consumer, for one provider.
async fn check_found_and_called(name: &str, reg: &str, app: &str, p: &JavaProvider) {
    let want: BTreeSet<(String, String)> = [
        ("dubbo".to_owned(), format!("127.0.0.1:{}", p.dubbo_port)),
        ("tri".to_owned(), format!("127.0.0.1:{}", p.tri_port)),
    ]
    .into();
    let listed = run(&["list", reg, DEMO, "--json"]).await;
    assert_eq!(
        app_rows(&listed, app, &revision(p)),
        want,
        "{name}: {}",
        listed.stdout
    );
    // Nothing at interface level: this is the case only application-level discovery finds.
    assert!(listed
        .json()
        .as_array()
        .unwrap()
        .iter()
        .all(|r| r["level"] == "application"));

    let called = run(&["invoke", reg, DEMO, "sayHello", "[\"world\"]", "--json"]).await;
    assert_eq!(
        called.code, 0,
        "{name}: {} {}",
        called.stdout, called.stderr
    );
    let v = called.json();
    assert_eq!(v["result"], "Hello world", "{v}");
    assert_eq!(v["level"], "application");
    assert_eq!(v["application"], app);
    assert_eq!(v["revision"], revision(p).as_str());

    // `apps`: the application, its instance and the services of its revision.
    let apps = run(&["apps", reg, "--json"]).await;
    assert_eq!(apps.code, 0, "{}", apps.stderr);
    let listed_apps = apps.json();
    assert!(
        listed_apps
            .as_array()
            .unwrap()
            .iter()
            .any(|a| a["application"] == app && a["instances"] == 1),
        "{listed_apps}"
    );
    let one = run(&["apps", reg, app, "--json"]).await.json();
    assert_eq!(
        one["revisions"][0]["revision"],
        revision(p).as_str(),
        "{one}"
    );
    let keys: BTreeSet<String> = one["revisions"][0]["services"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["match_key"].as_str().unwrap().to_owned())
        .collect();
    assert!(
        keys.contains("com.example.peer.DemoService:dubbo")
            && keys.contains("com.example.peer.DemoService:tri"),
        "{keys:?}"
    );
    let mapped = run(&["apps", reg, "--interface", DEMO, "--json"])
        .await
        .json();
    assert_eq!(mapped["applications"], serde_json::json!([app]));

    // The Java consumer (APPLICATION_FIRST) sees the same providers.
    let (java, seen) = java_list(name, reg, DEMO, Some(2))
        .await
        .expect("the Java consumer");
    assert_eq!(seen, want, "{name}: the Java consumer saw {java}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn instance_mode_with_metadata_service_v2_over_triple() {
    let Some(addr) = tests::zk_addr("instance_mode_v2") else {
        return;
    };
    let reg = registry(&addr, "appjava-v2");
    let app = tests::unique("shop-v2");
    let Some(p) = provider("appjava-v2", &reg, &app, &[]).await else {
        return;
    };
    assert_eq!(
        common::app::instance_metadata(&p)["meta-v"],
        "2.0.0",
        "Java 3.3.6's default"
    );
    check_found_and_called("v2", &reg, &app, &p).await;

    // The same registry written as an application-level registry: no interface level.
    let sd = format!(
        "{}&registry=zookeeper",
        reg.replace("zookeeper://", "service-discovery-registry://")
    );
    let listed = run(&["list", &sd, DEMO, "--json"]).await;
    assert_eq!(listed.code, 0, "{}", listed.stderr);
    assert_eq!(app_rows(&listed, &app, &revision(&p)).len(), 2);
    let called = run(&["invoke", &sd, DEMO, "sayHello", "[\"sd\"]", "--json"]).await;
    assert_eq!(called.json()["result"], "Hello sd", "{}", called.stderr);
    let typed = format!("{reg}&registry-type=service");
    let refused = run(&["list", &typed, DEMO, "--level", "interface"]).await;
    assert_eq!(refused.code, 2, "{}", refused.stdout);
    assert!(
        refused.stderr.contains("no interface level"),
        "{}",
        refused.stderr
    );

    // `watch --json`: the application level's line says so.
    let mut w = tokio::process::Command::new(env!("CARGO_BIN_EXE_dubbo-registry"))
        .args(["watch", &reg, DEMO, "--json"])
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines =
        tokio::io::AsyncBufReadExt::lines(tokio::io::BufReader::new(w.stdout.take().unwrap()));
    let line = tokio::time::timeout(std::time::Duration::from_secs(30), async {
        loop {
            let l = lines.next_line().await.unwrap().expect("watch ended");
            let v: Value = serde_json::from_str(&l).unwrap();
            if v["level"] == "application" {
                return v;
            }
        }
    })
    .await
    .expect("an application-level watch line");
    assert_eq!(line["category"], "providers");
    assert_eq!(line["urls"].as_array().unwrap().len(), 2, "{line}");
    let _ = w.kill().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn instance_mode_with_metadata_service_v1_over_dubbo() {
    let Some(addr) = tests::zk_addr("instance_mode_v1") else {
        return;
    };
    let reg = registry(&addr, "appjava-v1");
    let app = tests::unique("shop-v1");
    let Some(p) = provider("appjava-v1", &reg, &app, &["--metadata-protocol", "dubbo"]).await
    else {
        return;
    };
    assert_eq!(common::app::instance_metadata(&p)["meta-v"], "1.0.0");
    check_found_and_called("v1", &reg, &app, &p).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn instance_mode_with_remote_metadata() {
    let Some(addr) = tests::zk_addr("instance_mode_remote") else {
        return;
    };
    let reg = registry(&addr, "appjava-remote");
    let app = tests::unique("shop-remote");
    let Some(p) = provider("appjava-remote", &reg, &app, &["--metadata-type", "remote"]).await
    else {
        return;
    };
    assert_eq!(
        common::app::instance_metadata(&p)["dubbo.metadata.storage-type"],
        "remote"
    );
    check_found_and_called("remote", &reg, &app, &p).await;
}

/// An IDL service whose path (`dubbo.peer.greet.Greeter`) differs from its interface: Java's
/// consumer looks application-level addresses up by path and finds nothing; we match by
/// interface (docs/compatibility.md).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idl_service_is_found_by_interface() {
    let Some(addr) = tests::zk_addr("idl_by_interface") else {
        return;
    };
    let reg = registry(&addr, "appjava-idl");
    let app = tests::unique("shop-idl");
    let Some(p) = provider("appjava-idl", &reg, &app, &[]).await else {
        return;
    };
    let iface = "com.example.peer.greet.Greeter";
    let listed = run(&["list", &reg, iface, "--json"]).await;
    let rows: Vec<Value> = listed.json().as_array().unwrap().clone();
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(
        rows[0]["url"].as_str().unwrap().split('?').next().unwrap(),
        format!("tri://127.0.0.1:{}/dubbo.peer.greet.Greeter", p.tri_port)
    );
    let (java, seen) = java_list("idl-java", &reg, iface, None)
        .await
        .expect("the Java consumer");
    assert!(seen.is_empty(), "Java's path lookup misses it: {java}");
}
