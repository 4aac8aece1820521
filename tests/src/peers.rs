//! Real third-party peers as child processes: the Apache Dubbo 3.3 Java provider and consumer,
//! the Java nacos-client driver (`scripts/peers/java-dubbo3.sh`) and the dubbo-go 3.3 provider
//! (`scripts/peers/go-dubbo.sh`).
//!
//! A peer runs in a process group of its own on 127.0.0.1 ports picked here, its stderr and
//! stdout go to a log file (named in every failure message, kept when the test fails), and
//! dropping the handle kills the whole group. A peer that is not installed is a loud skip (`None`), or a panic when
//! `DUBBO_TEST_REQUIRE_SERVERS=1`.
//!
//! ```no_run
//! # async fn t() {
//! use tests::peers::{JavaProvider, ProviderOptions};
//! let opts = ProviderOptions { version: Some("1.0.0".into()), ..ProviderOptions::default() };
//! let Some(provider) = JavaProvider::start("my_test", &opts).await else { return };
//! let target = provider.dubbo_target(); // "dubbo://127.0.0.1:PORT"
//! # let _ = target;
//! # }
//! ```

use std::fs::{File, OpenOptions};
use std::io::Write as _;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::time::{Duration, Instant};

use nix::sys::signal::{killpg, Signal};
use nix::unistd::Pid;
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, Command};
use tokio::sync::mpsc;

/// How long a peer may take to print its READY line (a JVM on a busy 2-core machine is slow).
pub const READY_WITHIN: Duration = Duration::from_secs(120);

/// The repository's `scripts` directory (`DUBBO_TEST_SCRIPTS`, else next to this crate).
pub fn scripts_dir() -> PathBuf {
    std::env::var_os("DUBBO_TEST_SCRIPTS")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts"))
}

/// Where `scripts/peers/*.sh install` put the peers (`DUBBO_TEST_PEERS_DIR`, else `<repo>/.peers`).
pub fn peers_dir() -> PathBuf {
    std::env::var_os("DUBBO_TEST_PEERS_DIR")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../.peers"))
}

/// True when peer `name` (`java-dubbo3`, `go-dubbo`) has been installed by its script; otherwise
/// a loud skip message, or a panic when servers are required.
pub fn installed(name: &str, test: &str) -> bool {
    let marker = peers_dir().join(name).join(".sum");
    if marker.exists() {
        return true;
    }
    let msg = format!(
        "{test}: test peer {name} is not installed ({} missing); run `bash scripts/peers/{name}.sh install`",
        marker.display()
    );
    assert!(
        !crate::servers_required(),
        "{msg} (DUBBO_TEST_REQUIRE_SERVERS=1)"
    );
    eprintln!("\n*** SKIPPED {msg} ***\n");
    false
}

/// A free TCP port on 127.0.0.1 (bound and released; another process could take it first, so
/// callers pick ports just before starting the peer).
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .unwrap_or_else(|e| panic!("no free port on 127.0.0.1: {e}"))
}

/// `n` distinct free ports (all held until every one is chosen).
pub fn free_ports(n: usize) -> Vec<u16> {
    let listeners: Vec<TcpListener> = (0..n)
        .map(|_| {
            TcpListener::bind("127.0.0.1:0")
                .unwrap_or_else(|e| panic!("no free port on 127.0.0.1: {e}"))
        })
        .collect();
    listeners
        .iter()
        .map(|l| {
            l.local_addr()
                .map(|a| a.port())
                .unwrap_or_else(|e| panic!("local_addr: {e}"))
        })
        .collect()
}

fn log_dir() -> PathBuf {
    let dir = std::env::temp_dir().join("dubbo-test-peers");
    let _ = std::fs::create_dir_all(&dir);
    dir
}

/// The last `n` lines of the file at `path` (for failure messages).
pub fn tail(path: &Path, n: usize) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

/// One running peer process (its own process group; killed with the group on drop).
#[derive(Debug)]
pub struct PeerProcess {
    name: String,
    child: Child,
    pgid: Option<Pid>,
    log: PathBuf,
    lines: mpsc::UnboundedReceiver<String>,
    stdin: Option<ChildStdin>,
    ready: Value,
}

impl PeerProcess {
    /// Runs `bash scripts/peers/<script>.sh <sub> <args>` and waits (up to [`READY_WITHIN`])
    /// for its `READY <json>` line. Panics with the peer's log when it fails to start.
    pub async fn spawn(name: &str, script: &str, sub: &str, args: &[String]) -> PeerProcess {
        Self::spawn_with_env(name, script, sub, args, &[]).await
    }

    /// [`PeerProcess::spawn`] with extra environment variables.
    pub async fn spawn_with_env(
        name: &str,
        script: &str,
        sub: &str,
        args: &[String],
        env: &[(&str, &str)],
    ) -> PeerProcess {
        let log = log_dir().join(format!("{}.log", crate::unique(name)));
        let err = File::create(&log)
            .unwrap_or_else(|e| panic!("{name}: cannot create log {}: {e}", log.display()));
        let script_path = scripts_dir().join("peers").join(format!("{script}.sh"));
        let mut cmd = Command::new("bash");
        cmd.arg(&script_path)
            .arg(sub)
            .args(args)
            .env("DUBBO_TEST_PEERS_DIR", peers_dir())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::from(err))
            .process_group(0)
            .kill_on_drop(true);
        for (k, v) in env {
            cmd.env(k, v);
        }
        let mut child = cmd
            .spawn()
            .unwrap_or_else(|e| panic!("{name}: cannot run {}: {e}", script_path.display()));
        let pgid = child
            .id()
            .and_then(|id| i32::try_from(id).ok())
            .map(Pid::from_raw);
        let stdout = child
            .stdout
            .take()
            .unwrap_or_else(|| panic!("{name}: no stdout"));
        let stdin = child.stdin.take();
        let (tx, lines) = mpsc::unbounded_channel();
        let mut out_log = OpenOptions::new()
            .append(true)
            .open(&log)
            .unwrap_or_else(|e| panic!("{name}: cannot append to {}: {e}", log.display()));
        tokio::spawn(async move {
            let mut reader = BufReader::new(stdout).lines();
            while let Ok(Some(line)) = reader.next_line().await {
                let _ = writeln!(out_log, "[stdout] {line}");
                if tx.send(line).is_err() {
                    // Nobody listens any more; keep draining so the peer never blocks.
                    continue;
                }
            }
        });
        let mut peer = PeerProcess {
            name: name.to_owned(),
            child,
            pgid,
            log,
            lines,
            stdin,
            ready: Value::Null,
        };
        let line = peer
            .next_line_matching("its READY line", READY_WITHIN, |l| {
                l.starts_with("READY") || l.starts_with("FAILED")
            })
            .await;
        match line.strip_prefix("READY") {
            Some(rest) => {
                let rest = rest.trim();
                peer.ready = if rest.is_empty() {
                    Value::Null
                } else {
                    serde_json::from_str(rest).unwrap_or_else(|e| {
                        panic!("{name}: bad READY line {rest}: {e}\n{}", peer.log_tail(40))
                    })
                };
                peer
            }
            None => panic!(
                "{name}: {line}\n--- log {} ---\n{}",
                peer.log.display(),
                peer.log_tail(60)
            ),
        }
    }

    /// The JSON of the READY line.
    pub fn ready(&self) -> &Value {
        &self.ready
    }

    /// The peer's log file (stderr, and stdout lines prefixed `[stdout]`).
    pub fn log(&self) -> &Path {
        &self.log
    }

    /// The last `n` lines of the log.
    pub fn log_tail(&self, n: usize) -> String {
        tail(&self.log, n)
    }

    /// The next stdout line for which `pred` holds (others are skipped); panics with the log
    /// when none comes within `within` or the peer exits.
    pub async fn next_line_matching(
        &mut self,
        what: &str,
        within: Duration,
        pred: impl Fn(&str) -> bool,
    ) -> String {
        let deadline = Instant::now() + within;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match tokio::time::timeout(left, self.lines.recv()).await {
                Ok(Some(line)) if pred(&line) => return line,
                Ok(Some(_)) => {}
                Ok(None) => {
                    let status = self.child.try_wait().ok().flatten();
                    panic!(
                        "{}: exited ({status:?}) while waiting for {what}\n--- log {} ---\n{}",
                        self.name,
                        self.log.display(),
                        self.log_tail(60)
                    )
                }
                Err(_) => panic!(
                    "{}: no {what} within {within:?}\n--- log {} ---\n{}",
                    self.name,
                    self.log.display(),
                    self.log_tail(60)
                ),
            }
        }
    }

    /// The next stdout line that is a JSON value satisfying `pred`.
    pub async fn next_json(
        &mut self,
        what: &str,
        within: Duration,
        pred: impl Fn(&Value) -> bool,
    ) -> Value {
        let line = self
            .next_line_matching(what, within, |l| {
                serde_json::from_str::<Value>(l).is_ok_and(|v| pred(&v))
            })
            .await;
        serde_json::from_str(&line).unwrap_or(Value::Null)
    }

    /// Writes one line to the peer's stdin.
    pub async fn send_line(&mut self, line: &str) {
        let name = self.name.clone();
        let stdin = self
            .stdin
            .as_mut()
            .unwrap_or_else(|| panic!("{name}: stdin closed"));
        let mut buf = Vec::with_capacity(line.len() + 1);
        buf.extend_from_slice(line.as_bytes());
        buf.push(b'\n');
        stdin
            .write_all(&buf)
            .await
            .unwrap_or_else(|e| panic!("{name}: writing to stdin: {e}"));
        stdin
            .flush()
            .await
            .unwrap_or_else(|e| panic!("{name}: flushing stdin: {e}"));
    }

    /// The process id of the peer (the group leader).
    pub fn pid(&self) -> Option<u32> {
        self.child.id()
    }

    /// Sends SIGTERM to the peer's group and waits up to `within` for it to exit (a graceful
    /// stop: Java and Go peers unregister). Kills the group when it does not.
    pub async fn terminate(&mut self, within: Duration) -> Option<ExitStatus> {
        self.signal(Signal::SIGTERM);
        let status = match tokio::time::timeout(within, self.child.wait()).await {
            Ok(Ok(status)) => Some(status),
            _ => {
                self.signal(Signal::SIGKILL);
                let _ = self.child.wait().await;
                None
            }
        };
        self.pgid = None;
        status
    }

    /// Sends SIGKILL to the group and waits for the peer (no chance to unregister).
    pub async fn kill(&mut self) {
        self.signal(Signal::SIGKILL);
        let _ = self.child.wait().await;
        self.pgid = None;
    }

    /// Signals the peer's process group, but only while its leader has not been reaped: once
    /// reaped, its id may already name another process group (ids are recycled quickly).
    fn signal(&mut self, sig: Signal) {
        match self.child.try_wait() {
            Ok(None) => {
                if let Some(pgid) = self.pgid {
                    let _ = killpg(pgid, sig);
                }
            }
            _ => self.pgid = None,
        }
    }
}

impl Drop for PeerProcess {
    fn drop(&mut self) {
        self.signal(Signal::SIGKILL);
        let _ = self.child.start_kill();
        // The log is for failures: keep it only when the test is failing.
        if !std::thread::panicking() {
            let _ = std::fs::remove_file(&self.log);
        }
    }
}

/// Options of the Java Dubbo 3.3 provider (`scripts/peers/java-dubbo3.sh provider`) and of the
/// dubbo-go provider where they apply. `None` leaves Dubbo's default.
#[derive(Debug, Clone)]
pub struct ProviderOptions {
    /// Registry URL (`zookeeper://127.0.0.1:2181?group=ROOT`, `nacos://...`), `None` = direct only.
    pub registry: Option<String>,
    /// Application name.
    pub app: String,
    /// Protocols to export on (`dubbo`, `tri`).
    pub protocols: Vec<String>,
    /// Service group.
    pub group: Option<String>,
    /// Service version.
    pub version: Option<String>,
    /// Java `register-mode` (`interface`, `instance`, `all`); dubbo-go `registry-type`
    /// (`interface`, `service`, `all`).
    pub register_mode: Option<String>,
    /// `metadata-type` (`local`, `remote`).
    pub metadata_type: Option<String>,
    /// MetadataService protocol (Java: `dubbo` or `tri`).
    pub metadata_protocol: Option<String>,
    /// Services to export (Java: `demo`, `echo`, `proto`, `greeter`; Go: `demo`, `echo`).
    pub services: Vec<String>,
    /// Extra service URL parameters.
    pub params: Vec<(String, String)>,
    /// Further raw arguments for the peer program.
    pub extra: Vec<String>,
}

impl Default for ProviderOptions {
    fn default() -> Self {
        ProviderOptions {
            registry: None,
            app: "java-dubbo3-peer".to_owned(),
            protocols: vec!["dubbo".to_owned(), "tri".to_owned()],
            group: None,
            version: None,
            register_mode: None,
            metadata_type: None,
            metadata_protocol: None,
            services: Vec::new(),
            params: Vec::new(),
            extra: Vec::new(),
        }
    }
}

impl ProviderOptions {
    fn common_args(&self, out: &mut Vec<String>) {
        let mut push = |k: &str, v: &str| {
            out.push(format!("--{k}"));
            out.push(v.to_owned());
        };
        if let Some(r) = &self.registry {
            push("registry", r);
        }
        push("app", &self.app);
        push("protocols", &self.protocols.join(","));
        if let Some(g) = &self.group {
            push("group", g);
        }
        if let Some(v) = &self.version {
            push("version", v);
        }
        if let Some(m) = &self.metadata_type {
            push("metadata-type", m);
        }
        if !self.services.is_empty() {
            push("services", &self.services.join(","));
        }
        for (k, v) in &self.params {
            push("param", &format!("{k}={v}"));
        }
    }
}

/// A running Java Dubbo 3.3 provider.
#[derive(Debug)]
pub struct JavaProvider {
    /// The process (READY JSON, log, stop).
    pub process: PeerProcess,
    /// Port of its `dubbo` protocol (0 when not exported).
    pub dubbo_port: u16,
    /// Port of its `tri` protocol (0 when not exported).
    pub tri_port: u16,
    /// Port of its MetadataService.
    pub metadata_port: u16,
}

impl JavaProvider {
    /// Starts the provider on free ports; `None` after a loud skip when it is not installed.
    pub async fn start(test: &str, opts: &ProviderOptions) -> Option<JavaProvider> {
        if !installed("java-dubbo3", test) {
            return None;
        }
        let ports = free_ports(3);
        let mut args = Vec::new();
        opts.common_args(&mut args);
        for (k, v) in [
            ("dubbo-port", ports[0].to_string()),
            ("tri-port", ports[1].to_string()),
            ("metadata-port", ports[2].to_string()),
        ] {
            args.push(format!("--{k}"));
            args.push(v);
        }
        if let Some(m) = &opts.register_mode {
            args.extend(["--register-mode".to_owned(), m.clone()]);
        }
        if let Some(m) = &opts.metadata_protocol {
            args.extend(["--metadata-protocol".to_owned(), m.clone()]);
        }
        args.extend(opts.extra.iter().cloned());
        let process = PeerProcess::spawn(
            &format!("{test}-java-provider"),
            "java-dubbo3",
            "provider",
            &args,
        )
        .await;
        let [dubbo_port, tri_port, metadata_port] = ready_ports(&process);
        Some(JavaProvider {
            process,
            dubbo_port,
            tri_port,
            metadata_port,
        })
    }

    /// `dubbo://127.0.0.1:PORT` (a direct target for `dubbo-registry invoke`).
    pub fn dubbo_target(&self) -> String {
        format!("dubbo://127.0.0.1:{}", self.dubbo_port)
    }

    /// `tri://127.0.0.1:PORT`.
    pub fn tri_target(&self) -> String {
        format!("tri://127.0.0.1:{}", self.tri_port)
    }

    /// The URLs the provider exported for `interface` (from its READY line).
    pub fn exported_urls(&self, interface: &str) -> Vec<String> {
        exported_urls(self.process.ready(), interface)
    }
}

fn exported_urls(ready: &Value, interface: &str) -> Vec<String> {
    ready["services"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|s| s["interface"] == interface)
        .flat_map(|s| s["urls"].as_array().cloned().unwrap_or_default())
        .filter_map(|u| u.as_str().map(str::to_owned))
        .collect()
}

/// What one run of the Java consumer printed.
#[derive(Debug)]
pub struct ConsumerRun {
    /// Its exit code (0 result, 1 business exception, 2 RPC or usage error).
    pub code: i32,
    /// Its JSON line (`result`/`exception`, numbers, providers; or the provider list).
    pub json: Value,
    /// Its log file (removed with this value unless the test is failing).
    pub log: PathBuf,
}

impl Drop for ConsumerRun {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            let _ = std::fs::remove_file(&self.log);
        }
    }
}

/// Runs the Java Dubbo 3.3 consumer (`scripts/peers/java-dubbo3.sh consumer ARGS`) to the end
/// (at most `within`); `None` after a loud skip when it is not installed. Panics with its log
/// when it prints no JSON line.
pub async fn java_consumer(test: &str, args: &[&str], within: Duration) -> Option<ConsumerRun> {
    java_consumer_with_env(test, args, within, &[]).await
}

/// [`java_consumer`] with extra environment (e.g. `JAVA_JIT=` for throughput runs).
pub async fn java_consumer_with_env(
    test: &str,
    args: &[&str],
    within: Duration,
    env: &[(&str, &str)],
) -> Option<ConsumerRun> {
    if !installed("java-dubbo3", test) {
        return None;
    }
    let log = log_dir().join(format!(
        "{}.log",
        crate::unique(&format!("{test}-java-consumer"))
    ));
    let err = File::create(&log).unwrap_or_else(|e| panic!("{test}: log {}: {e}", log.display()));
    let mut cmd = Command::new("bash");
    cmd.arg(scripts_dir().join("peers/java-dubbo3.sh"))
        .arg("consumer")
        .args(args)
        .env("DUBBO_TEST_PEERS_DIR", peers_dir())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::from(err))
        .process_group(0)
        .kill_on_drop(true);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let mut child = cmd
        .spawn()
        .unwrap_or_else(|e| panic!("{test}: cannot run the Java consumer: {e}"));
    let pgid = child
        .id()
        .and_then(|id| i32::try_from(id).ok())
        .map(Pid::from_raw);
    let mut pipe = child
        .stdout
        .take()
        .unwrap_or_else(|| panic!("{test}: no stdout from the Java consumer"));
    let reader = tokio::spawn(async move {
        let mut buf = Vec::new();
        let _ = tokio::io::AsyncReadExt::read_to_end(&mut pipe, &mut buf).await;
        buf
    });
    let status = match tokio::time::timeout(within, child.wait()).await {
        Ok(Ok(status)) => status,
        Ok(Err(e)) => panic!("{test}: Java consumer: {e}"),
        Err(_) => {
            // Still running (not reaped): its group id is its own.
            if let Some(p) = pgid {
                let _ = killpg(p, Signal::SIGKILL);
            }
            let _ = child.wait().await;
            panic!(
                "{test}: the Java consumer did not finish within {within:?} ({args:?})\n--- log {} ---\n{}",
                log.display(),
                tail(&log, 60)
            )
        }
    };
    let out_bytes = reader.await.unwrap_or_default();
    let stdout = String::from_utf8_lossy(&out_bytes);
    if let Ok(mut f) = OpenOptions::new().append(true).open(&log) {
        let _ = writeln!(f, "[stdout] {stdout}");
    }
    let json = stdout
        .lines()
        .rev()
        .find_map(|l| serde_json::from_str::<Value>(l).ok())
        .unwrap_or_else(|| {
            panic!(
                "{test}: the Java consumer printed no JSON ({args:?}, {status:?})\n--- log {} ---\n{}",
                log.display(),
                tail(&log, 60)
            )
        });
    Some(ConsumerRun {
        code: status.code().unwrap_or(-1),
        json,
        log,
    })
}

/// The Java nacos-client 2.5.1 driver: one JSON command per line in, one JSON answer per line
/// out (`tests/peers/java-dubbo3/README.md`).
#[derive(Debug)]
pub struct NacosClientPeer {
    /// The driver process.
    pub process: PeerProcess,
}

impl NacosClientPeer {
    /// Connects a nacos-client to `server` (`host:port`, HTTP port) in namespace `ns`.
    pub async fn start(test: &str, server: &str, ns: &str) -> Option<NacosClientPeer> {
        if !installed("java-dubbo3", test) {
            return None;
        }
        let args = vec![
            "--server".to_owned(),
            server.to_owned(),
            "--namespace".to_owned(),
            ns.to_owned(),
        ];
        let process = PeerProcess::spawn(
            &format!("{test}-nacos-client"),
            "java-dubbo3",
            "nacos",
            &args,
        )
        .await;
        Some(NacosClientPeer { process })
    }

    /// Sends `cmd` and returns its answer (events arriving meanwhile are skipped; use
    /// [`NacosClientPeer::event`] for those). Panics when the answer is `{"op":"error"}`.
    pub async fn cmd(&mut self, cmd: Value) -> Value {
        self.process.send_line(&cmd.to_string()).await;
        let answer = self
            .process
            .next_json(
                &format!("the answer to {cmd}"),
                Duration::from_secs(60),
                |v| !matches!(v["op"].as_str(), Some("event" | "config-changed")),
            )
            .await;
        assert_ne!(
            answer["op"], "error",
            "nacos-client: {cmd} failed: {answer}"
        );
        answer
    }

    /// The next pushed event (`{"op":"event"}` or `{"op":"config-changed"}`) satisfying `pred`.
    pub async fn event(
        &mut self,
        what: &str,
        within: Duration,
        pred: impl Fn(&Value) -> bool,
    ) -> Value {
        self.process
            .next_json(what, within, |v| {
                matches!(v["op"].as_str(), Some("event" | "config-changed")) && pred(v)
            })
            .await
    }
}

/// A running dubbo-go 3.3 provider (`scripts/peers/go-dubbo.sh provider`).
#[derive(Debug)]
pub struct GoProvider {
    /// The process (READY JSON, log, stop).
    pub process: PeerProcess,
    /// Port of its `dubbo` protocol (0 when not exported).
    pub dubbo_port: u16,
    /// Port of its `tri` protocol (0 when not exported).
    pub tri_port: u16,
    /// Port of its MetadataService.
    pub metadata_port: u16,
}

impl GoProvider {
    /// Starts the Go provider on free ports; `None` after a loud skip when it is not installed.
    /// `opts.register_mode` is dubbo-go's `registry-type` (`interface`, `service`, `all`).
    pub async fn start(test: &str, opts: &ProviderOptions) -> Option<GoProvider> {
        if !installed("go-dubbo", test) {
            return None;
        }
        let ports = free_ports(3);
        let mut args = Vec::new();
        opts.common_args(&mut args);
        for (k, v) in [
            ("dubbo-port", ports[0].to_string()),
            ("tri-port", ports[1].to_string()),
            ("metadata-port", ports[2].to_string()),
        ] {
            args.push(format!("--{k}"));
            args.push(v);
        }
        if let Some(m) = &opts.register_mode {
            args.extend(["--registry-type".to_owned(), m.clone()]);
        }
        args.extend(opts.extra.iter().cloned());
        let process = PeerProcess::spawn(
            &format!("{test}-go-provider"),
            "go-dubbo",
            "provider",
            &args,
        )
        .await;
        let [dubbo_port, tri_port, metadata_port] = ready_ports(&process);
        Some(GoProvider {
            process,
            dubbo_port,
            tri_port,
            metadata_port,
        })
    }

    /// `dubbo://127.0.0.1:PORT`.
    pub fn dubbo_target(&self) -> String {
        format!("dubbo://127.0.0.1:{}", self.dubbo_port)
    }

    /// `tri://127.0.0.1:PORT`.
    pub fn tri_target(&self) -> String {
        format!("tri://127.0.0.1:{}", self.tri_port)
    }
}

/// The dubbo, tri and metadata ports a provider peer announced in its READY line (0 when
/// it announced none).
fn ready_ports(process: &PeerProcess) -> [u16; 3] {
    ["dubbo", "tri", "metadata"].map(|p| {
        process.ready()["ports"][p]
            .as_u64()
            .and_then(|p| u16::try_from(p).ok())
            .unwrap_or(0)
    })
}
