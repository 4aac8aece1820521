//! A ZooKeeper ensemble loses its leader (killed, later restarted) while `dubbo-registry
//! invoke --repeat` calls a real Java Dubbo 3.3.6 provider found through it: no call fails
//! (the providers list is kept while the client moves to another member), and
//! `watch --status` shows the registry reconnecting and connected again.
//!
//! The ensemble is private to this test (3 members at `DUBBO_TEST_ZK_ENSEMBLE_PRIVATE_BASE`,
//! default 23170, started and stopped here through `zk-server.sh`); the shared servers are
//! never touched.

#![allow(clippy::expect_used, clippy::unwrap_used)]

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::Value;
use tests::peers::{JavaProvider, ProviderOptions};

const DEMO: &str = "com.example.peer.DemoService";

/// Runs `zk-server.sh`; panics when it fails.
fn zk(script: &str, args: &[&str]) -> String {
    let out = Command::new("bash")
        .arg(script)
        .args(args)
        .output()
        .expect("run zk-server.sh");
    assert!(
        out.status.success(),
        "zk-server.sh {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Stops the private ensemble on drop (also when the test fails).
struct Ensemble {
    script: String,
    base: String,
}

impl Drop for Ensemble {
    fn drop(&mut self) {
        let _ = Command::new("bash")
            .arg(&self.script)
            .args(["ensemble-stop", &self.base])
            .output();
    }
}

/// Kills the child on drop.
struct Proc(std::process::Child);

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn status_lines(registry: &str) -> (Proc, mpsc::Receiver<Value>) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_dubbo-registry"))
        .args(["watch", registry, DEMO, "--status", "--json"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let out = child.stdout.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(out).lines() {
            let Ok(line) = line else { return };
            let Ok(v) = serde_json::from_str::<Value>(&line) else {
                return;
            };
            if tx.send(v).is_err() {
                return;
            }
        }
    });
    (Proc(child), rx)
}

/// Reads status lines until one satisfies `ok`; no directory line may lose the provider.
fn until(rx: &mpsc::Receiver<Value>, what: &str, within: Duration, ok: impl Fn(&Value) -> bool) {
    let deadline = Instant::now() + within;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let v = rx
            .recv_timeout(left)
            .unwrap_or_else(|e| panic!("no status line for {what}: {e}"));
        if v["kind"] == "directory" && v["phase"] != "waiting" {
            assert_eq!(v["providers"], 1, "while waiting for {what}: {v}");
        }
        if ok(&v) {
            return;
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invoke_repeat_loses_no_call_when_the_ensemble_leader_dies() {
    let test = "zk_ensemble_invoke";
    let Some(_) = tests::zk_addr(test) else {
        return;
    };
    let Some(dir) = std::env::var("DUBBO_TEST_SCRIPTS")
        .ok()
        .filter(|d| !d.is_empty())
    else {
        assert!(!tests::servers_required(), "DUBBO_TEST_SCRIPTS is not set");
        eprintln!("\n*** SKIPPED {test}: DUBBO_TEST_SCRIPTS is not set ***\n");
        return;
    };
    let script = format!("{dir}/zk-server.sh");
    let base =
        std::env::var("DUBBO_TEST_ZK_ENSEMBLE_PRIVATE_BASE").unwrap_or_else(|_| "23170".into());
    let ensemble = Ensemble {
        script: script.clone(),
        base: base.clone(),
    };
    let out = tokio::task::block_in_place(|| zk(&script, &["ensemble-start", "3", &base]));
    let connect = out.lines().last().unwrap().trim().to_owned();
    let (first, rest) = connect.split_once(',').unwrap();
    let root = tests::unique("ens-invoke").replace('_', "-");
    let registry = format!("zookeeper://{first}?backup={rest}&group={root}");

    let opts = ProviderOptions {
        registry: Some(registry.clone()),
        app: tests::unique("ens-prov").replace('_', "-"),
        version: Some("1.0.0".into()),
        protocols: vec!["dubbo".into()],
        services: vec!["demo".into()],
        ..ProviderOptions::default()
    };
    let Some(_provider) = JavaProvider::start(test, &opts).await else {
        return;
    };
    let (_watch, status) = status_lines(&registry);
    until(&status, "the provider", Duration::from_secs(60), |v| {
        v["kind"] == "directory" && v["providers"] == 1
    });

    // 1000 calls of 20 ms, 4 in flight: at least 5 s of calls across the leader's loss.
    let mut calls = tokio::process::Command::new(env!("CARGO_BIN_EXE_dubbo-registry"))
        .args([
            "invoke",
            &registry,
            DEMO,
            "sleep",
            "[20]",
            "--types",
            "int",
            "--version",
            "1.0.0",
            "--protocol",
            "dubbo",
            "--repeat",
            "1000",
            "--concurrency",
            "4",
            "--json",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let leader = tokio::task::block_in_place(|| zk(&script, &["leader", &base, "30"]))
        .trim()
        .to_owned();
    tokio::task::block_in_place(|| zk(&script, &["member-kill", &leader]));
    until(&status, "reconnecting", Duration::from_secs(30), |v| {
        v["kind"] == "registry" && v["state"] == "reconnecting"
    });
    until(&status, "connected again", Duration::from_secs(60), |v| {
        v["kind"] == "registry" && v["state"] == "connected" && v["reconnects"].as_u64() >= Some(1)
    });

    let out = tokio::time::timeout(Duration::from_secs(120), async {
        let mut stdout = String::new();
        let mut stderr = String::new();
        use tokio::io::AsyncReadExt;
        calls
            .stdout
            .take()
            .unwrap()
            .read_to_string(&mut stdout)
            .await
            .unwrap();
        calls
            .stderr
            .take()
            .unwrap()
            .read_to_string(&mut stderr)
            .await
            .unwrap();
        (calls.wait().await.unwrap(), stdout, stderr)
    })
    .await
    .expect("invoke --repeat ended");
    let (code, stdout, stderr) = out;
    let v: Value =
        serde_json::from_str(stdout.trim()).unwrap_or_else(|e| panic!("{e}: {stdout} / {stderr}"));
    assert_eq!(v["errors"], 0, "{v} / {stderr}");
    assert_eq!(v["calls"], 1000, "{v}");
    assert!(code.success(), "{v} / {stderr}");

    // The member comes back and the ensemble is whole again.
    tokio::task::block_in_place(|| zk(&script, &["member-start", &leader]));
    drop(ensemble);
}
