//! Test peers for protocol-triple: the grpcio peer (IDL + hand-made wrapper mode) and the
//! Node `@apachedubbo/dubbo-node` peer, started on free 127.0.0.1 ports and killed on drop.
//! Missing peers skip loudly, or fail with `DUBBO_TEST_REQUIRE_SERVERS=1`.

use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

/// A running peer process.
#[derive(Debug)]
pub struct Peer {
    child: Child,
    /// The port it listens on (127.0.0.1).
    pub port: u16,
}

impl Peer {
    /// `127.0.0.1:port`.
    pub fn addr(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// Kills the process now (to test provider loss).
    pub async fn kill(&mut self) {
        let _ = self.child.kill().await;
    }

    /// Sends the process `signal` (`STOP` hangs it: its sockets stay open and silent;
    /// `CONT` resumes it). Panics when the signal cannot be sent.
    pub fn signal(&self, signal: &str) {
        let pid = self.child.id().expect("the peer is running");
        let ok = std::process::Command::new("kill")
            .arg(format!("-{signal}"))
            .arg(pid.to_string())
            .status()
            .is_ok_and(|s| s.success());
        assert!(ok, "kill -{signal} {pid} failed");
        if signal == "STOP" {
            // A stop takes effect when the peer is next scheduled: wait until it is stopped,
            // so that nothing it was doing (answering a call) finishes after this returns.
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
            while !is_stopped(pid) {
                assert!(std::time::Instant::now() < deadline, "{pid} did not stop");
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
        }
    }
}

/// Whether process `pid` is stopped (state `T` in `/proc/PID/stat`; Linux).
fn is_stopped(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| {
            s.rsplit_once(')')
                .and_then(|(_, rest)| rest.split_whitespace().next().map(|st| st == "T"))
        })
        .unwrap_or(true)
}

/// The repository root.
pub fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(PathBuf::from)
        .unwrap_or_default()
}

/// Where `scripts/peers/*.sh` installed the peers.
pub fn peers_dir() -> PathBuf {
    std::env::var_os("DUBBO_TEST_PEERS_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo_root().join(".peers"))
}

/// `<repo>/protocol-triple` .
pub fn triple_dir() -> PathBuf {
    repo_root().join("protocol-triple")
}

/// The fixture `.proto` directory.
pub fn proto_dir() -> PathBuf {
    triple_dir().join("tests/fixtures/proto")
}

fn missing(test: &str, what: &str, install: &str) -> Option<Peer> {
    if crate::servers_required() {
        panic!("{test}: {what} is not installed but DUBBO_TEST_REQUIRE_SERVERS=1 (run {install})");
    }
    eprintln!("\n*** SKIPPED {test}: {what} is not installed. Run {install}. ***\n");
    None
}

async fn spawn(mut cmd: Command, test: &str) -> Peer {
    cmd.stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .stdin(Stdio::null())
        .kill_on_drop(true);
    let mut child = cmd
        .spawn()
        .unwrap_or_else(|e| panic!("{test}: cannot start peer: {e}"));
    let stdout = child.stdout.take().expect("stdout");
    let mut lines = BufReader::new(stdout).lines();
    let port = tokio::time::timeout(Duration::from_secs(60), async {
        while let Ok(Some(line)) = lines.next_line().await {
            if let Some(p) = line.strip_prefix("PORT ") {
                return p.trim().parse::<u16>().ok();
            }
        }
        None
    })
    .await
    .ok()
    .flatten()
    .unwrap_or_else(|| panic!("{test}: the peer did not report its port"));
    // Keep draining stdout so the peer never blocks on a full pipe.
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    Peer { child, port }
}

/// Starts `tests/peers/grpc_peer.py` (grpcio) on a free port; `port` 0 picks one.
pub async fn grpc_peer(test: &str, port: u16) -> Option<Peer> {
    grpc_peer_with(test, port, &[]).await
}

/// [`grpc_peer`] with extra arguments (`no-gzip`).
pub async fn grpc_peer_with(test: &str, port: u16, extra: &[&str]) -> Option<Peer> {
    let python = peers_dir().join("python-grpc/venv/bin/python");
    if !python.exists() {
        return missing(
            test,
            "the grpcio peer",
            "bash scripts/peers/python-grpc.sh install",
        );
    }
    let mut cmd = Command::new(python);
    cmd.arg(triple_dir().join("tests/peers/grpc_peer.py"))
        .arg(port.to_string())
        .arg(proto_dir())
        .args(extra);
    Some(spawn(cmd, test).await)
}

/// Starts `tests/peers/node_peer.js` (`@apachedubbo/dubbo-node`) on a free port.
pub async fn node_peer(test: &str) -> Option<Peer> {
    let dir = peers_dir().join("node-triple");
    if !dir.join("node_modules/@apachedubbo/dubbo-node").exists() {
        return missing(
            test,
            "the dubbo-node peer",
            "bash scripts/peers/node-triple.sh install",
        );
    }
    let mut cmd = Command::new("node");
    cmd.arg(triple_dir().join("tests/peers/node_peer.js"))
        .arg("0")
        .env("NODE_PATH", dir.join("node_modules"));
    Some(spawn(cmd, test).await)
}

/// A port that was free a moment ago on 127.0.0.1.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("free port")
}
