//! The CLI against hostile registry and config-centre content, on a real ZooKeeper
//! (`DUBBO_TEST_ZK`; skipped loudly without it unless `DUBBO_TEST_REQUIRE_SERVERS=1`):
//!
//! - hostile governance rules (nested aliases, 10,000-deep nesting) present at start-up and
//!   published while `watch --method` runs: the providers are still listed, the process exits
//!   cleanly and its peak resident set (`tests::peak_rss`, which kills a regression at a cap
//!   before it takes the machine) stays under 256 MiB;
//! - `list` and `watch` write nothing to the registry;
//! - control characters in a provider URL never reach the terminal raw;
//! - secrets (user-info password, `password`/`token`/`secret*` parameters) never appear in
//!   output or errors; the registry URL can come from `$DUBBO_REGISTRY` or `--registry-file`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::Duration;

use registry_core::codec::encode;
use registry_zk::testing::client::{Acls, Client, CreateMode};
use tests::hostile::{billion_laughs, deep_sequence};
use tests::peak_rss::{self, Measured};
use tokio::io::AsyncBufReadExt;

const BIN: &str = env!("CARGO_BIN_EXE_dubbo-registry");
/// The peak resident set the CLI must stay under.
const PEAK_LIMIT: u64 = 256 * 1024 * 1024;
/// Where a measured run is killed (a runaway is stopped here, not by the machine).
const KILL_CAP: u64 = 1024 * 1024 * 1024;
/// How long a measured run may take.
const DEADLINE: Duration = Duration::from_secs(120);
const SVC: &str = "org.hostile.CliSvc";

/// The ZooKeeper address, or `None` after a loud skip.
fn zk_addr(test: &str) -> Option<String> {
    tests::zk_addr(test)
}

/// Asserts a measured run stayed small: a mark was read and it is under [`PEAK_LIMIT`].
fn assert_small(what: &str, m: &Measured) {
    eprintln!("{what}: peak RSS {:.1} MiB", m.peak_mib());
    assert!(m.peak_rss > 0, "{what}: no measurement");
    assert!(!m.over_cap && !m.timed_out, "{what}: killed: {m:?}");
    assert!(
        m.peak_rss < PEAK_LIMIT,
        "{what}: peak RSS {:.1} MiB >= 256 MiB",
        m.peak_mib()
    );
}

fn provider(port: u16, extra: &str) -> String {
    format!(
        "dubbo://127.0.0.1:{port}/{SVC}?application=hostile-provider&interface={SVC}\
         &methods=sayHello&side=provider{extra}"
    )
}

/// A fresh root with two providers (persistent nodes, as a provider's would be).
async fn setup(addr: &str, extra: &str) -> (Client, String) {
    let root = tests::unique("hostile-cli");
    let zk = Client::connect(addr).await.expect("connect");
    let opts = CreateMode::Persistent.with_acls(Acls::anyone_all());
    let dir = format!("/{root}/{SVC}/providers");
    zk.mkdir(&dir, &opts).await.expect("mkdir");
    for port in [21101, 21102] {
        let node = format!("{dir}/{}", encode(&provider(port, extra)));
        zk.create(&node, &[], &opts).await.expect("create");
    }
    (zk, root)
}

/// Writes a rule where Dubbo reads it: `/<root>/config/dubbo/<key>`.
async fn put_rule(zk: &Client, root: &str, key: &str, text: &str) {
    let path = format!("/{root}/config/dubbo/{key}");
    let opts = CreateMode::Persistent.with_acls(Acls::anyone_all());
    match zk.set_data(&path, text.as_bytes(), None).await {
        Ok(_) => {}
        Err(_) => {
            zk.mkdir(&format!("/{root}/config/dubbo"), &opts)
                .await
                .expect("mkdir config");
            zk.create(&path, text.as_bytes(), &opts)
                .await
                .expect("create rule");
        }
    }
}

fn hostile_rules() -> Vec<(String, String)> {
    vec![
        (
            format!("{SVC}::.condition-router"),
            billion_laughs("condition"),
        ),
        (
            "hostile-provider.tag-router".to_owned(),
            deep_sequence("tag", 10_000),
        ),
        (
            format!("{SVC}::.configurators"),
            billion_laughs("configurators"),
        ),
        (
            "dubbo-registry.condition-router".to_owned(),
            deep_sequence("condition", 10_000),
        ),
    ]
}

/// The ports of a `--method --json` line (`[{"address": "127.0.0.1:21101", ...}]`).
fn ports_of(line: &str) -> Vec<u16> {
    let v: serde_json::Value = serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}"));
    let mut p: Vec<u16> = v
        .as_array()
        .unwrap_or_else(|| panic!("not a list: {line}"))
        .iter()
        .map(|r| {
            let a = r["address"].as_str().unwrap();
            a.rsplit(':').next().unwrap().parse().unwrap()
        })
        .collect();
    p.sort();
    p
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_with_hostile_rules_present_serves_and_stays_small() {
    let Some(addr) = zk_addr("list_with_hostile_rules_present") else {
        return;
    };
    let (zk, root) = setup(&addr, "").await;
    for (key, text) in hostile_rules() {
        put_rule(&zk, &root, &key, &text).await;
    }
    let reg = format!("zookeeper://{addr}?group={root}");
    let mut cmd = tokio::process::Command::new(BIN);
    cmd.args(["list", &reg, SVC, "--method", "sayHello", "--json"])
        .env_remove("DUBBO_REGISTRY");
    let m = peak_rss::run(cmd, KILL_CAP, DEADLINE).await;
    assert_eq!(m.code, Some(0), "list failed: {} {}", m.stdout, m.stderr);
    assert_eq!(ports_of(m.stdout.trim()), [21101, 21102], "{}", m.stdout);
    assert_small("list with hostile rules", &m);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watch_keeps_serving_while_hostile_rules_arrive() {
    let Some(addr) = zk_addr("watch_keeps_serving_while_hostile_rules_arrive") else {
        return;
    };
    let (zk, root) = setup(&addr, "").await;
    // One hostile rule is there from the start.
    let (k0, t0) = hostile_rules().remove(0);
    put_rule(&zk, &root, &k0, &t0).await;
    let reg = format!("zookeeper://{addr}?group={root}");
    let mut cmd = tokio::process::Command::new(BIN);
    cmd.args(["watch", &reg, SVC, "--method", "sayHello", "--json"])
        .env_remove("DUBBO_REGISTRY");
    let mut child = peak_rss::spawn(cmd, KILL_CAP, DEADLINE);
    let mut lines = tokio::io::BufReader::new(child.stdout.take().unwrap()).lines();
    let mut next = async |what: &str| {
        tokio::time::timeout(Duration::from_secs(30), lines.next_line())
            .await
            .unwrap_or_else(|_| panic!("no output for {what}"))
            .unwrap()
            .unwrap_or_else(|| panic!("watch ended before {what}"))
    };
    assert_eq!(ports_of(&next("the first list").await), [21101, 21102]);
    // The others arrive while it runs; then a good rule must still take effect.
    for (key, text) in hostile_rules().into_iter().skip(1) {
        put_rule(&zk, &root, &key, &text).await;
    }
    let good = format!("configVersion: v3.0\nkey: {SVC}\nconditions:\n  - => port = 21102\n");
    put_rule(&zk, &root, &format!("{SVC}::.condition-router"), &good).await;
    assert_eq!(
        ports_of(&next("the list after the good rule").await),
        [21102]
    );
    child.interrupt().unwrap();
    // Keep reading so the child never blocks on a full pipe while it ends.
    while let Ok(Some(_)) = lines.next_line().await {}
    let m = child.finish().await;
    assert_eq!(
        m.code,
        Some(0),
        "watch ended with {:?}: {}",
        m.code,
        m.stderr
    );
    assert_small("watch with hostile rules", &m);
}

/// Runs the CLI to completion: (exit code, stdout, stderr).
async fn run(args: &[&str], env: &[(&str, &str)]) -> (i32, String, String) {
    let mut c = tokio::process::Command::new(BIN);
    c.args(args).env_remove("DUBBO_REGISTRY");
    for (k, v) in env {
        c.env(k, v);
    }
    let o = c.output().await.unwrap();
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_and_watch_write_nothing_to_the_registry() {
    let Some(addr) = tests::zk_addr("list_and_watch_write_nothing") else {
        return;
    };
    let root = tests::unique("readonly-cli");
    let reg = format!("zookeeper://{addr}?group={root}");
    let (code, out, err) = run(&["list", &reg, "org.none.Svc"], &[]).await;
    assert_eq!(code, 0, "{out} {err}");
    let (code, out, err) = run(&["list", &reg, "org.none.Svc", "--method", "m"], &[]).await;
    assert_eq!(code, 0, "{out} {err}");
    // watch: until its first output, then Ctrl-C.
    let mut child = Command::new(BIN)
        .args(["watch", &reg, "org.none.Svc", "--json"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    assert!(first.contains("providers"), "{first}");
    Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    let status = child.wait().unwrap();
    assert!(status.success(), "watch ended with {status:?}");
    let zk = Client::connect(&addr).await.expect("connect");
    let root_stat = zk.check_stat(&format!("/{root}")).await.unwrap();
    assert!(
        root_stat.is_none(),
        "list/watch created /{root} in the registry"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn control_characters_and_secrets_never_reach_the_terminal() {
    let Some(addr) = tests::zk_addr("control_characters_and_secrets") else {
        return;
    };
    let (_zk, root) = setup(
        &addr,
        "&x=\x1b[2J\x1b]0 pwned\x07&password=hunter2&token=t0k3n&secretKey=s3cr3t",
    )
    .await;
    let reg = format!("zookeeper://{addr}?group={root}");
    let mut outputs = Vec::new();
    for args in [
        vec!["list", &reg, SVC],
        vec!["list", &reg, SVC, "--json"],
        vec!["list", &reg, SVC, "--method", "sayHello"],
    ] {
        let (code, out, err) = run(&args, &[]).await;
        assert_eq!(code, 0, "{args:?}: {out} {err}");
        outputs.push((args.join(" "), out, err));
    }
    // watch (human form): its first notification.
    let mut child = Command::new(BIN)
        .args(["watch", &reg, SVC, "--category", "providers"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut r = BufReader::new(child.stdout.take().unwrap());
    let mut watched = String::new();
    for _ in 0..3 {
        r.read_line(&mut watched).unwrap();
    }
    Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    let _ = child.wait();
    outputs.push(("watch".into(), watched, String::new()));
    for (what, out, err) in &outputs {
        for text in [out, err] {
            assert!(!text.contains('\x1b'), "{what}: raw ESC in {text:?}");
            assert!(!text.contains('\x07'), "{what}: raw BEL in {text:?}");
            for secret in ["hunter2", "t0k3n", "s3cr3t"] {
                assert!(!text.contains(secret), "{what}: {secret} in {text}");
            }
        }
        assert!(
            out.contains("******"),
            "{what}: secrets not shown masked: {out}"
        );
    }
    // Dubbo trims each parameter value as Java's `String.trim()` does (the
    // leading ESC and trailing BEL go); the ESC inside the value is escaped.
    assert!(
        outputs[0].1.contains("[2J\\u{1b}]0 pwned"),
        "{}",
        outputs[0].1
    );
    // JSON keeps the text exact but escaped by JSON itself.
    assert!(
        outputs[1].1.contains("[2J\\u001b]0 pwned"),
        "{}",
        outputs[1].1
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn registry_urls_in_errors_are_masked() {
    for args in [
        vec![
            "list",
            "zookeeper://bob:hunter2@127.0.0.1:notaport/x?password=hunter2",
            SVC,
        ],
        vec!["list", "foo://bob:hunter2@h:1?token=hunter2", SVC],
        vec![
            "register",
            "zookeeper://bob:hunter2@[::1:2181",
            "dubbo://h:1/S",
        ],
        vec![
            "invoke",
            "dubbo://bob:hunter2@127.0.0.1:1/S?password=hunter2",
            "S",
            "m",
            "--timeout",
            "200",
        ],
        vec!["config", "get", "zookeeper://bob:hunter2@:x", "k"],
    ] {
        let (code, out, err) = run(&args, &[]).await;
        assert_ne!(code, 0, "{args:?}: {out} {err}");
        assert!(
            !out.contains("hunter2") && !err.contains("hunter2"),
            "{args:?}: {out} {err}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_registry_can_come_from_the_environment_or_a_file() {
    let Some(addr) = tests::zk_addr("registry_from_env_or_file") else {
        return;
    };
    let (_zk, root) = setup(&addr, "").await;
    let reg = format!("zookeeper://{addr}?group={root}");
    let expect = ["127.0.0.1:21101", "127.0.0.1:21102"];
    let addresses = |out: &str| -> Vec<String> {
        let v: serde_json::Value =
            serde_json::from_str(out).unwrap_or_else(|e| panic!("{e}: {out}"));
        let mut a: Vec<String> = v
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["address"].as_str().unwrap().to_owned())
            .collect();
        a.sort();
        a
    };
    let (code, out, err) = run(&["list", SVC, "--json"], &[("DUBBO_REGISTRY", &reg)]).await;
    assert_eq!(code, 0, "{err}");
    assert_eq!(addresses(&out), expect);
    let file = std::env::temp_dir().join(format!("{}.registry", tests::unique("reg")));
    std::fs::write(&file, format!("# the test registry\n\n{reg}\n")).unwrap();
    let f = file.to_str().unwrap();
    let (code, out, err) = run(&["list", SVC, "--json", "--registry-file", f], &[]).await;
    assert_eq!(code, 0, "{err}");
    assert_eq!(addresses(&out), expect);
    // Given twice, or not at all: a clear error.
    let (code, _, err) = run(&["list", &reg, SVC, "--registry-file", f], &[]).await;
    assert_eq!(code, 2);
    assert!(err.contains("twice"), "{err}");
    let (code, _, err) = run(&["list", SVC], &[]).await;
    assert_eq!(code, 2);
    assert!(err.contains("DUBBO_REGISTRY"), "{err}");
    let _ = std::fs::remove_file(&file);
}
