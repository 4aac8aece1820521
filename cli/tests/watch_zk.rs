//! `dubbo-registry watch` against the real ZooKeeper (`DUBBO_TEST_ZK`): the NDJSON form prints
//! the full list after every change, the human form prints what changed, both with the cached
//! printable forms of unchanged providers. Skipped loudly without `DUBBO_TEST_ZK` unless
//! `DUBBO_TEST_REQUIRE_SERVERS=1` (then a failure).

#![allow(clippy::expect_used, clippy::unwrap_used)]

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use registry_core::codec::encode;
use registry_core::Url;
use registry_zk::testing::client::{Acls, Client, CreateMode};

fn zk_addr() -> Option<String> {
    match std::env::var("DUBBO_TEST_ZK") {
        Ok(v) if !v.is_empty() => Some(v),
        _ => {
            assert!(
                std::env::var("DUBBO_TEST_REQUIRE_SERVERS").as_deref() != Ok("1"),
                "DUBBO_TEST_ZK is not set but DUBBO_TEST_REQUIRE_SERVERS=1"
            );
            eprintln!("\n*** SKIPPED watch_zk: DUBBO_TEST_ZK is not set ***\n");
            None
        }
    }
}

/// Kills the child on drop.
struct Proc(Child);

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn start(args: &[&str]) -> (Proc, mpsc::Receiver<String>) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_dubbo-registry"))
        .args(args)
        .stdout(Stdio::piped())
        .spawn()
        .expect("start dubbo-registry watch");
    let out = child.stdout.take().expect("stdout");
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(out).lines() {
            let Ok(line) = line else { return };
            if tx.send(line).is_err() {
                return;
            }
        }
    });
    (Proc(child), rx)
}

fn next_line(rx: &mpsc::Receiver<String>, what: &str) -> String {
    rx.recv_timeout(Duration::from_secs(20))
        .unwrap_or_else(|e| panic!("no output for {what}: {e}"))
}

/// The `urls` of the next NDJSON line, as a set.
fn next_json(rx: &mpsc::Receiver<String>, what: &str) -> BTreeSet<String> {
    let line = next_line(rx, what);
    let v: serde_json::Value = serde_json::from_str(&line).expect("NDJSON line");
    assert_eq!(v["category"], "providers", "{line}");
    v["urls"]
        .as_array()
        .expect("urls")
        .iter()
        .map(|u| u.as_str().expect("string").to_owned())
        .collect()
}

/// The next human header line (`HH:MM:SS.mmm providers (N urls)`).
fn next_header(rx: &mpsc::Receiver<String>, what: &str) -> String {
    let header = next_line(rx, what);
    assert!(header.contains(" providers ("), "not a header: {header}");
    header
}

fn provider(i: usize) -> String {
    format!(
        "dubbo://10.0.0.{i}:20880/t.WatchSvc?application=p&interface=t.WatchSvc&methods=a,b\
         &side=provider&timestamp=170000000000{i}"
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watch_prints_full_lists_and_diffs() {
    let Some(addr) = zk_addr() else { return };
    let root = format!(
        "watchcli-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_millis())
            .unwrap_or(0)
    );
    let dir = format!("/{root}/t.WatchSvc/providers");
    let zk = Client::connect(&addr).await.expect("connect");
    let opts = CreateMode::Persistent.with_acls(Acls::anyone_all());
    zk.mkdir(&dir, &opts).await.expect("mkdir");
    let node = |i: usize| format!("{dir}/{}", encode(&provider(i)));
    let text = |i: usize| Url::parse(&provider(i)).expect("url").to_string();
    for i in 1..=3 {
        zk.create(&node(i), &[], &opts).await.expect("create");
    }
    let reg = format!("zookeeper://{addr}?group={root}");
    let args = ["watch", &reg, "t.WatchSvc", "--category", "providers"];
    let (_json_proc, json) = start(&[&args[..], &["--json"]].concat());
    let (_human_proc, human) = start(&args);

    let expect = |ids: &[usize]| ids.iter().map(|&i| text(i)).collect::<BTreeSet<_>>();
    assert_eq!(next_json(&json, "initial list"), expect(&[1, 2, 3]));
    let h = next_header(&human, "initial list");
    assert!(h.ends_with("providers (3 urls)"), "{h}");
    let mut first: Vec<String> = (0..3).map(|_| next_line(&human, "initial +")).collect();
    first.sort();
    let mut want: Vec<String> = (1..=3).map(|i| format!("  + {}", text(i))).collect();
    want.sort();
    assert_eq!(first, want);

    zk.create(&node(4), &[], &opts).await.expect("create");
    assert_eq!(next_json(&json, "after add"), expect(&[1, 2, 3, 4]));
    let h = next_header(&human, "after add");
    assert!(h.ends_with("providers (4 urls)"), "{h}");
    assert_eq!(next_line(&human, "added"), format!("  + {}", text(4)));

    zk.delete(&node(2), None).await.expect("delete");
    assert_eq!(next_json(&json, "after delete"), expect(&[1, 3, 4]));
    let h = next_header(&human, "after delete");
    assert!(h.ends_with("providers (3 urls)"), "{h}");
    assert_eq!(next_line(&human, "removed"), format!("  - {}", text(2)));

    for i in [1, 3, 4] {
        zk.delete(&node(i), None).await.expect("delete");
    }
    // The last one gone: the empty:// marker, and a count of 0 in the human form.
    let mut last = next_json(&json, "emptying");
    while last.iter().any(|u| !u.starts_with("empty://")) {
        last = next_json(&json, "emptying");
    }
    assert_eq!(last.len(), 1);
    let mut h = next_header(&human, "emptying");
    while !h.ends_with("providers (0 urls)") {
        h = next_line(&human, "emptying");
    }
    for p in [
        dir.clone(),
        format!("/{root}/t.WatchSvc"),
        format!("/{root}"),
    ] {
        let _ = zk.delete(&p, None).await;
    }
}
