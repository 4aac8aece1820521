//! `dubbo-registry watch --status --json`: the health of the registry connection and of the
//! service's directory flips as a private registry server (ZooKeeper, Nacos over gRPC, each
//! on its own port, never a shared one) is stopped and started again, and the providers list
//! is kept meanwhile. Skipped loudly without the servers' env unless
//! `DUBBO_TEST_REQUIRE_SERVERS=1` (then a failure).

#![allow(clippy::expect_used, clippy::unwrap_used)]

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use registry_core::{Registry, Url};
use serde_json::Value;

const T: Duration = Duration::from_secs(60);

/// Kills the child on drop.
struct Proc(Child);

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Stops a private server on drop (also when the test fails).
struct Server {
    script: String,
    port: u16,
}

impl Server {
    fn run(&self, cmd: &str) {
        let out = Command::new("bash")
            .arg(&self.script)
            .arg(cmd)
            .arg(self.port.to_string())
            .output()
            .expect("run the server script");
        assert!(
            out.status.success(),
            "{} {cmd} {}: {}",
            self.script,
            self.port,
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = Command::new("bash")
            .arg(&self.script)
            .arg("stop")
            .arg(self.port.to_string())
            .output();
    }
}

fn scripts(test: &str) -> Option<String> {
    match std::env::var("DUBBO_TEST_SCRIPTS") {
        Ok(v) if !v.is_empty() => Some(v),
        _ => {
            assert!(
                !tests::servers_required(),
                "DUBBO_TEST_SCRIPTS is not set but DUBBO_TEST_REQUIRE_SERVERS=1"
            );
            eprintln!("\n*** SKIPPED {test}: DUBBO_TEST_SCRIPTS is not set ***\n");
            None
        }
    }
}

/// A port that was free a moment ago (with `plus` free too, for Nacos' gRPC port).
fn free_port(plus: u16) -> u16 {
    loop {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let p = l.local_addr().unwrap().port();
        if plus == 0 {
            return p;
        }
        if p < 60000 && std::net::TcpListener::bind(("127.0.0.1", p + plus)).is_ok() {
            return p;
        }
    }
}

/// `watch --status --json`, and its lines as they come.
fn watch(registry: &str, service: &str) -> (Proc, mpsc::Receiver<Value>) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_dubbo-registry"))
        .args(["watch", registry, service, "--status", "--json"])
        .stdout(Stdio::piped())
        .spawn()
        .expect("start dubbo-registry watch");
    let out = child.stdout.take().expect("stdout");
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(out).lines() {
            let Ok(line) = line else { return };
            let v: Value = serde_json::from_str(&line).expect("one JSON object per line");
            if tx.send(v).is_err() {
                return;
            }
        }
    });
    (Proc(child), rx)
}

/// Reads lines until one satisfies `ok`; every directory line read on the way must satisfy
/// `each` (the list is never lost).
fn until(
    rx: &mpsc::Receiver<Value>,
    what: &str,
    each: impl Fn(&Value) -> bool,
    ok: impl Fn(&Value) -> bool,
) -> Value {
    let deadline = Instant::now() + T;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let v = rx
            .recv_timeout(left)
            .unwrap_or_else(|e| panic!("no line for {what}: {e}"));
        if v["kind"] == "directory" {
            assert!(each(&v), "while waiting for {what}: {v}");
        }
        if ok(&v) {
            return v;
        }
    }
}

fn registry_is(state: &'static str) -> impl Fn(&Value) -> bool {
    move |v| v["kind"] == "registry" && v["state"] == state
}

/// The flips both registries must show: connected with the provider listed, reconnecting
/// (with a reason) while the server is down and the list kept, connected again after.
async fn flips(
    server: &Server,
    registry: &str,
    service: &str,
    provider: Url,
    register: impl std::future::Future<Output = Box<dyn Registry>>,
) {
    let p = register.await;
    p.register(&provider).await.unwrap();
    let (_watch, rx) = watch(registry, service);
    until(&rx, "connected", |_| true, registry_is("connected"));
    let ready = until(
        &rx,
        "the provider",
        |_| true,
        |v| v["kind"] == "directory" && v["providers"] == 1,
    );
    assert_eq!(ready["phase"], "ready", "{ready}");
    assert_eq!(ready["available"], 1, "{ready}");
    assert!(ready["last_notify_unix_ms"].as_u64().is_some(), "{ready}");

    let kept = |v: &Value| v["providers"] == 1 && v["phase"] == "ready";
    tokio::task::block_in_place(|| server.run("stop"));
    let down = until(&rx, "reconnecting", kept, registry_is("reconnecting"));
    assert!(
        down["reason"].as_str().is_some_and(|r| !r.is_empty()),
        "{down}"
    );
    tokio::task::block_in_place(|| server.run("start"));
    let up = until(&rx, "connected again", kept, registry_is("connected"));
    assert!(up["reconnects"].as_u64().unwrap() >= 1, "{up}");
    p.destroy().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_flips_as_a_zookeeper_server_stops_and_starts() {
    let test = "watch_status_zk";
    let Some(_) = tests::zk_addr(test) else {
        return;
    };
    let Some(dir) = scripts(test) else {
        return;
    };
    let server = Server {
        script: format!("{dir}/zk-server.sh"),
        port: free_port(0),
    };
    tokio::task::block_in_place(|| server.run("start"));
    let root = tests::unique("watch-status");
    let registry = format!(
        "zookeeper://127.0.0.1:{}?group={root}&session=60000",
        server.port
    );
    let iface = "org.status.ZkService";
    let url = Url::parse(&registry).unwrap();
    let provider = tests::contract::provider_url(iface, 20001, "");
    flips(&server, &registry, iface, provider, async move {
        Box::new(registry_zk::ZookeeperRegistry::connect(&url).await.unwrap()) as Box<dyn Registry>
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_flips_as_a_nacos_server_stops_and_starts() {
    let test = "watch_status_nacos";
    let Some(_) = tests::nacos_addr(test) else {
        return;
    };
    let Some(dir) = scripts(test) else {
        return;
    };
    let server = Server {
        script: format!("{dir}/nacos-server.sh"),
        port: free_port(1000),
    };
    tokio::task::block_in_place(|| server.run("start"));
    let ns = tests::unique("watch-status");
    let registry = format!("nacos://127.0.0.1:{}?namespace={ns}", server.port);
    let iface = "org.status.NacosService";
    let url = Url::parse(&registry).unwrap();
    let provider = tests::contract::provider_url(iface, 20001, "");
    flips(&server, &registry, iface, provider, async move {
        Box::new(registry_nacos::NacosRegistry::new(&url).unwrap()) as Box<dyn Registry>
    })
    .await;
}
