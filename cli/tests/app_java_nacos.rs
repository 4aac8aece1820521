//! Application-level discovery against real Apache Dubbo 3.3.6 Java providers registered with
//! `register-mode=instance` only, on the Nacos-compatible test server (`DUBBO_TEST_NACOS`):
//! the application is the Nacos service `<app>`, the mapping a config (`<interface>`, group
//! `mapping`), `remote` metadata a config (`<app>`, group `<revision>`). `dubbo-registry list`
//! and `invoke` find and call them, as the Java consumer does.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::collections::BTreeSet;
use std::time::Duration;

use common::java3::{self, JavaProvider};

const DEMO: &str = "com.example.peer.DemoService";

async fn run(args: &[&str]) -> common::Out {
    let o = tokio::process::Command::new(env!("CARGO_BIN_EXE_dubbo-registry"))
        .args(args)
        .output()
        .await
        .unwrap();
    common::Out {
        code: o.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
    }
}

async fn found_and_called(tag: &str, extra: &[&str]) {
    let Some(addr) = tests::nacos_addr(tag) else {
        return;
    };
    if !java3::installed(tag) {
        return;
    }
    let ns = tests::unique(tag);
    let reg = format!("nacos://{addr}?namespace={ns}");
    let app = tests::unique("shop").replace('-', "_");
    let mut args = vec![
        "--registry",
        &reg,
        "--app",
        &app,
        "--register-mode",
        "instance",
        "--services",
        "demo,echo",
    ];
    args.extend_from_slice(extra);
    let p = JavaProvider::start(tag, &args).await;
    let want: BTreeSet<(String, String)> = [
        ("dubbo".to_owned(), format!("127.0.0.1:{}", p.port("dubbo"))),
        ("tri".to_owned(), format!("127.0.0.1:{}", p.port("tri"))),
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
            assert_eq!(r["revision"], p.revision().as_str(), "{r}");
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
    let java = java3::consumer(
        &format!("{tag}-java"),
        &[
            "--registry",
            &reg,
            "--interface",
            DEMO,
            "--mode",
            "list",
            "--expect",
            "2",
            "--stable-ms",
            "500",
        ],
        Duration::from_secs(120),
    )
    .await;
    let java_seen: BTreeSet<(String, String)> = java["providers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["protocol"].as_str().unwrap().to_owned(),
                p["address"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
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
