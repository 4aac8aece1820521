//! Application-level discovery against real Apache Dubbo 3.3.6 Java providers registered with
//! `register-mode=instance` only, on the Nacos-compatible test server (`DUBBO_TEST_NACOS`):
//! the application is the Nacos service `<app>`, the mapping a config (`<interface>`, group
//! `mapping`), `remote` metadata a config (`<app>`, group `<revision>`). `dubbo-registry list`
//! and `invoke` find and call them, as the Java consumer does; the migration rule in the Nacos
//! config centre chooses the level.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::collections::BTreeSet;
use std::time::Duration;

use common::app::{java_list, java_provider, revision, run};

const DEMO: &str = "com.example.peer.DemoService";

async fn found_and_called(tag: &str, extra: &[&str]) {
    let Some(addr) = tests::nacos_addr(tag) else {
        return;
    };
    let ns = tests::unique(tag);
    let reg = format!("nacos://{addr}?namespace={ns}");
    let app = tests::unique("shop").replace('-', "_");
    let Some(p) = java_provider(tag, &reg, &app, "instance", &["demo", "echo"], extra).await else {
        return;
    };
    let want: BTreeSet<(String, String)> = [
        ("dubbo".to_owned(), format!("127.0.0.1:{}", p.dubbo_port)),
        ("tri".to_owned(), format!("127.0.0.1:{}", p.tri_port)),
    ]
    .into();
    // The mapping and the instance may reach the server a moment after READY.
    let mut rows = Vec::new();
    for _ in 0..60 {
        let listed = run(&["list", &reg, DEMO, "--json", "--level", "application"]).await;
        assert_eq!(listed.code, 0, "{}", listed.stderr);
        rows = listed.json().as_array().unwrap().clone();
        if rows.len() == 2 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    let seen: BTreeSet<(String, String)> = rows
        .iter()
        .map(|r| {
            assert_eq!(r["application"], app.as_str(), "{r}");
            assert_eq!(r["revision"], revision(&p).as_str(), "{r}");
            let url = r["url"].as_str().unwrap();
            (
                url.split("://").next().unwrap().to_owned(),
                r["address"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(seen, want, "{rows:?}");
    let called = run(&["invoke", &reg, DEMO, "sayHello", "[\"nacos\"]", "--json"]).await;
    assert_eq!(called.code, 0, "{} {}", called.stdout, called.stderr);
    let v = called.json();
    assert_eq!(v["result"], "Hello nacos");
    assert_eq!(v["level"], "application");
    assert_eq!(v["application"], app.as_str());
    let (java, java_seen) = java_list(&format!("{tag}-java"), &reg, DEMO, Some(2))
        .await
        .expect("the Java consumer");
    assert_eq!(java_seen, want, "the Java consumer saw {java}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nacos_instance_mode_with_local_metadata() {
    found_and_called("appjava-nacos-local", &[]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nacos_instance_mode_with_remote_metadata() {
    found_and_called("appjava-nacos-remote", &["--metadata-type", "remote"]).await;
}

/// The migration rule in the Nacos config centre (data id `<consumer app>.migration`, group
/// `DUBBO_SERVICEDISCOVERY_MIGRATION`) chooses the level `invoke` calls through, for a Java
/// provider registered at both levels (`register-mode=all`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nacos_migration_rule_chooses_the_level() {
    let tag = "appjava-nacos-mig";
    let Some(addr) = tests::nacos_addr(tag) else {
        return;
    };
    let reg = format!("nacos://{addr}?namespace={}", tests::unique(tag));
    let app = tests::unique("shop").replace('-', "_");
    let Some(_p) = java_provider(tag, &reg, &app, "all", &["demo"], &[]).await else {
        return;
    };
    // Both levels listed (registration and mapping may land a moment after READY).
    let mut levels = BTreeSet::new();
    for _ in 0..60 {
        let listed = run(&["list", &reg, DEMO, "--json", "--level", "all"]).await;
        levels = listed
            .json()
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["level"].as_str().unwrap().to_owned())
            .collect();
        if levels.len() == 2 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    assert_eq!(
        levels,
        ["application".to_owned(), "interface".to_owned()].into()
    );
    let consumer = tests::unique("nacos-mig-consumer");
    let key = format!("{consumer}.migration");
    for (step, level) in [
        ("FORCE_INTERFACE", "interface"),
        ("FORCE_APPLICATION", "application"),
    ] {
        let put = run(&[
            "config",
            "put",
            &reg,
            &key,
            "--group",
            "DUBBO_SERVICEDISCOVERY_MIGRATION",
            "--value",
            &format!("key: {consumer}\nstep: {step}\n"),
        ])
        .await;
        assert_eq!(put.code, 0, "{}", put.stderr);
        let called = run(&[
            "invoke",
            &reg,
            DEMO,
            "sayHello",
            "[\"mig\"]",
            "--application",
            &consumer,
            "--json",
        ])
        .await;
        assert_eq!(called.code, 0, "{} {}", called.stdout, called.stderr);
        let v = called.json();
        assert_eq!(v["result"], "Hello mig");
        assert_eq!(v["level"], level, "{step}: {v}");
    }
}
