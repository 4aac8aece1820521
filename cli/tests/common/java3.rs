//! The real Apache Dubbo 3.3.6 Java peers of `scripts/peers/java-dubbo3.sh` as child processes:
//! a provider (waits for its `READY <json>` line) and the consumer's `--mode list` (the provider
//! list a Java consumer ends up with). Each runs in a process group of its own, logs to a file
//! named in every failure, and is killed with its group on drop. Not installed: a loud skip, or
//! a failure with `DUBBO_TEST_REQUIRE_SERVERS=1`.

use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::Value;
use tokio::io::{AsyncBufReadExt, BufReader};

/// How long a JVM may take to print READY on a busy 2-core machine.
pub const READY_WITHIN: Duration = Duration::from_secs(120);

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn peers_dir() -> PathBuf {
    std::env::var_os("DUBBO_TEST_PEERS_DIR")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| repo().join(".peers"))
}

/// True when the Java peers are installed; otherwise a loud skip (or a panic when servers
/// are required).
pub fn installed(test: &str) -> bool {
    if peers_dir().join("java-dubbo3").join(".sum").exists() {
        return true;
    }
    let msg = format!(
        "{test}: the Java Dubbo 3.3 peer is not installed; run `bash scripts/peers/java-dubbo3.sh install`"
    );
    assert!(
        !tests::servers_required(),
        "{msg} (DUBBO_TEST_REQUIRE_SERVERS=1)"
    );
    eprintln!("\n*** SKIPPED {msg} ***\n");
    false
}

fn log_path(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join("dubbo-test-peers");
    let _ = std::fs::create_dir_all(&dir);
    dir.join(format!("{}.log", tests::unique(name)))
}

fn tail(p: &Path) -> String {
    let t = std::fs::read_to_string(p).unwrap_or_default();
    let lines: Vec<&str> = t.lines().collect();
    lines[lines.len().saturating_sub(40)..].join("\n")
}

fn command(sub: &str, args: &[String], log: &Path) -> tokio::process::Command {
    let err = std::fs::File::create(log).expect("peer log");
    let mut std_cmd = std::process::Command::new("bash");
    std_cmd
        .arg(repo().join("scripts/peers/java-dubbo3.sh"))
        .arg(sub)
        .args(args)
        .env("DUBBO_TEST_PEERS_DIR", peers_dir())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::from(err))
        .process_group(0);
    let mut cmd = tokio::process::Command::from(std_cmd);
    cmd.kill_on_drop(true);
    cmd
}

/// Sends `signal` (a name: `TERM`, `KILL`) to the process group `pid` leads.
///
/// Careful: procps `kill -KILL -1234` parses `-1234` as a signal option and signals process
/// group 9 instead; only `kill -s KILL -- -1234` names the group.
fn kill_group(pid: Option<u32>, signal: &str) {
    if let Some(pid) = pid.filter(|p| *p > 1) {
        let _ = std::process::Command::new("kill")
            .args(["-s", signal, "--", &format!("-{pid}")])
            .stderr(Stdio::null())
            .status();
    }
}

/// A running Java provider.
#[derive(Debug)]
pub struct JavaProvider {
    child: tokio::process::Child,
    /// Its READY document.
    pub ready: Value,
    /// Its log file.
    pub log: PathBuf,
}

impl JavaProvider {
    /// Starts `java-dubbo3.sh provider ARGS` and waits for READY; panics with the log when it
    /// fails.
    pub async fn start(name: &str, args: &[&str]) -> JavaProvider {
        let log = log_path(name);
        let args: Vec<String> = args.iter().map(|s| (*s).to_owned()).collect();
        let mut child = command("provider", &args, &log)
            .spawn()
            .expect("spawn java provider");
        let out = child.stdout.take().expect("stdout");
        let mut lines = BufReader::new(out).lines();
        let deadline = Instant::now() + READY_WITHIN;
        let ready = loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match tokio::time::timeout(left, lines.next_line()).await {
                Ok(Ok(Some(l))) => {
                    if let Some(j) = l.strip_prefix("READY ") {
                        break serde_json::from_str(j).expect("READY json");
                    }
                    if l.starts_with("FAILED") {
                        panic!("{name}: provider failed: {l}\n{}", tail(&log));
                    }
                }
                _ => panic!("{name}: no READY within {READY_WITHIN:?}\n{}", tail(&log)),
            }
        };
        // Keep draining stdout so the peer never blocks on a full pipe.
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
        JavaProvider { child, ready, log }
    }

    /// The port of `protocol` (`dubbo`, `tri`, `metadata`).
    pub fn port(&self, protocol: &str) -> u16 {
        self.ready["ports"][protocol].as_u64().unwrap_or(0) as u16
    }

    /// The revision of its (first) application-level instance.
    pub fn revision(&self) -> String {
        self.ready["instances"][0]["metadata"]["dubbo.metadata.revision"]
            .as_str()
            .unwrap_or("")
            .to_owned()
    }

    /// Stops it with SIGTERM (Dubbo's shutdown hook unregisters) and waits, at most 30 s.
    pub async fn stop(mut self) {
        kill_group(self.child.id(), "TERM");
        let _ = tokio::time::timeout(Duration::from_secs(30), self.child.wait()).await;
    }
}

impl Drop for JavaProvider {
    fn drop(&mut self) {
        kill_group(self.child.id(), "KILL");
    }
}

/// Runs the Java consumer with `args` and returns its one JSON line.
pub async fn consumer(name: &str, args: &[&str], within: Duration) -> Value {
    let log = log_path(name);
    let args: Vec<String> = args.iter().map(|s| (*s).to_owned()).collect();
    let child = command("consumer", &args, &log)
        .spawn()
        .expect("spawn java consumer");
    let pid = child.id();
    let out = match tokio::time::timeout(within, child.wait_with_output()).await {
        Ok(Ok(o)) => o,
        _ => {
            kill_group(pid, "KILL");
            panic!(
                "{name}: consumer did not finish within {within:?}\n{}",
                tail(&log)
            );
        }
    };
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text
        .lines()
        .rev()
        .find(|l| l.starts_with('{'))
        .unwrap_or("");
    serde_json::from_str(line).unwrap_or_else(|e| {
        panic!(
            "{name}: consumer printed no JSON ({e}): {text}\n{}",
            tail(&log)
        )
    })
}
