//! Test helpers: the Java Dubbo2 provider peer (scripts/peers/java-dubbo.sh) started on a free
//! 127.0.0.1 port and killed on drop, and URL builders.

use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use invoker::rpc::Invocation;
use registry_core::Url;
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

#[allow(unused_imports)]
pub use crate::{eventually, servers_required};

/// The service the Java and Node peers export.
pub const SERVICE: &str = "org.apache.dubbo.demo.DemoService";
/// The methods the Java peer exports (the `methods` param: method-level params need it).
pub const METHODS: &str = "sayHello,whoami,add,addLong,echo,describe,attachments,sleep,hang,getUser,\
echoUser,users,fail,failWithCause,bigString,now,nothing,oneways,accepted,heartbeats,readonly,writable,\
dropConnections";

/// An invocation of `method` with the declared parameter `types` (empty: inferred) and `args`.
pub fn call(method: &str, types: &[&str], args: Vec<Value>) -> Invocation {
    Invocation::new(method).with_arguments(types.iter().map(|t| t.to_string()).collect(), args)
}

/// `sayHello(String name)`, which every peer answers with `Hello <name>`.
pub fn say_hello(name: &str) -> Invocation {
    call("sayHello", &["java.lang.String"], vec![Value::from(name)])
}

const JAR: &str = "/usr/share/java/hessian-4.0.38.jar";

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn peers_dir() -> PathBuf {
    std::env::var_os("DUBBO_TEST_PEERS_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo().join(".peers"))
}

fn skip_or_fail(test: &str, why: &str) -> Option<JavaPeer> {
    if servers_required() {
        panic!("{test}: the Java Dubbo2 peer is missing ({why}) but DUBBO_TEST_REQUIRE_SERVERS=1");
    }
    eprintln!(
        "\n*** SKIPPED {test}: Java Dubbo2 peer unavailable ({why}). Run `bash \
         scripts/peers/java-dubbo.sh install` (JDK 17 + libhessian-java). ***\n"
    );
    None
}

/// The classes directory, compiling it through the peer script when missing.
fn classes(test: &str) -> Result<PathBuf, String> {
    let dir = peers_dir().join("java-dubbo").join("classes");
    if dir.join("DubboPeer.class").exists() {
        return Ok(dir);
    }
    let _ = test;
    let st = std::process::Command::new("bash")
        .arg(repo().join("scripts/peers/java-dubbo.sh"))
        .arg("install")
        .status()
        .map_err(|e| format!("cannot run the peer script: {e}"))?;
    if st.success() && dir.join("DubboPeer.class").exists() {
        Ok(dir)
    } else {
        Err("scripts/peers/java-dubbo.sh install failed".into())
    }
}

/// A running Java Dubbo2 provider.
#[derive(Debug)]
pub struct JavaPeer {
    /// The peer process, killed on drop.
    child: Child,
    /// The provider's port on 127.0.0.1.
    pub port: u16,
}

impl JavaPeer {
    /// Starts the peer with `args` (e.g. `["--version", "1.0.0"]`) on a free port.
    pub async fn start(test: &str, args: &[&str]) -> Option<JavaPeer> {
        Self::start_on(test, 0, args).await
    }

    /// Starts the peer on `port` (0 = any free port).
    pub async fn start_on(test: &str, port: u16, args: &[&str]) -> Option<JavaPeer> {
        if !std::path::Path::new(JAR).exists() {
            return skip_or_fail(test, "no /usr/share/java/hessian-4.0.38.jar");
        }
        let classes = match classes(test) {
            Ok(c) => c,
            Err(e) => return skip_or_fail(test, &e),
        };
        let mut cmd = Command::new("java");
        cmd.arg("-Xss512k")
            .arg("-XX:TieredStopAtLevel=1")
            .arg("--add-opens")
            .arg("java.base/java.lang=ALL-UNNAMED")
            .arg("--add-opens")
            .arg("java.base/java.util=ALL-UNNAMED")
            .arg("-cp")
            .arg(format!("{JAR}:{}", classes.display()))
            .arg("DubboPeer")
            .arg("--port")
            .arg(port.to_string())
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true);
        let mut child = match cmd.spawn() {
            Ok(c) => c,
            Err(e) => return skip_or_fail(test, &format!("cannot start java: {e}")),
        };
        let Some(stdout) = child.stdout.take() else {
            panic!("{test}: no stdout from the Java peer");
        };
        let mut lines = BufReader::new(stdout).lines();
        let line = tokio::time::timeout(Duration::from_secs(60), lines.next_line())
            .await
            .unwrap_or_else(|_| panic!("{test}: the Java peer did not start within 60 s"))
            .unwrap_or_else(|e| panic!("{test}: reading the Java peer: {e}"))
            .unwrap_or_else(|| panic!("{test}: the Java peer exited before READY"));
        let port = line
            .strip_prefix("READY ")
            .and_then(|p| p.trim().parse().ok())
            .unwrap_or_else(|| panic!("{test}: unexpected first line from the Java peer: {line}"));
        // Keep draining stdout so the peer never blocks on a full pipe.
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
        Some(JavaPeer { child, port })
    }

    /// The provider URL (Dubbo-exact parameters) for `service` at this peer.
    pub fn url(&self, extra: &str) -> Url {
        provider_url(self.port, extra)
    }

    /// `127.0.0.1:port`.
    pub fn addr(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// Kills the peer and waits for it to exit.
    pub async fn kill(mut self) {
        let _ = self.child.start_kill();
        let _ = self.child.wait().await;
    }
}

/// A provider URL shaped like the ones Java 3.3 registers.
pub fn provider_url(port: u16, extra: &str) -> Url {
    let mut extra = extra.to_owned();
    if !extra.split('&').any(|kv| kv.starts_with("version=")) {
        extra.push_str(if extra.is_empty() {
            "version=1.0.0"
        } else {
            "&version=1.0.0"
        });
    }
    Url::parse(&format!(
        "dubbo://127.0.0.1:{port}/{SERVICE}?anyhost=true&application=demo-provider&dubbo=2.0.2\
         &interface={SERVICE}&methods={METHODS}&prefer.serialization=hessian2,fastjson2\
         &release=3.3.1&side=provider&{extra}"
    ))
    .expect("provider url")
}

/// A running Node Dubbo2 provider (sofa-rpc-node + dubbo-remoting, scripts/peers/node-dubbo.sh).
#[derive(Debug)]
pub struct NodePeer {
    /// Killed on drop.
    _child: Child,
    /// The provider's port on 127.0.0.1.
    pub port: u16,
}

impl NodePeer {
    /// Starts the Node provider (service version 1.0.0) on a free port.
    pub async fn start(test: &str) -> Option<NodePeer> {
        let dir = peers_dir().join("node-dubbo");
        if !dir.join("node_modules/sofa-rpc-node").exists() {
            let ok = std::process::Command::new("bash")
                .arg(repo().join("scripts/peers/node-dubbo.sh"))
                .arg("install")
                .status()
                .is_ok_and(|s| s.success());
            if !ok {
                if servers_required() {
                    panic!(
                        "{test}: the Node Dubbo2 peer is missing but DUBBO_TEST_REQUIRE_SERVERS=1"
                    );
                }
                eprintln!("\n*** SKIPPED {test}: Node Dubbo2 peer unavailable (bash scripts/peers/node-dubbo.sh install) ***\n");
                return None;
            }
        }
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map(|a| a.port())
            .expect("free port");
        let mut child = Command::new("node")
            .arg(dir.join("provider.js"))
            .arg(port.to_string())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .unwrap_or_else(|e| panic!("{test}: cannot start node: {e}"));
        let stdout = child.stdout.take().expect("stdout");
        let mut lines = BufReader::new(stdout).lines();
        let line = tokio::time::timeout(Duration::from_secs(60), lines.next_line())
            .await
            .unwrap_or_else(|_| panic!("{test}: the Node peer did not start within 60 s"))
            .ok()
            .flatten()
            .unwrap_or_else(|| panic!("{test}: the Node peer exited before READY"));
        assert_eq!(line.trim(), format!("READY {port}"), "{test}");
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
        Some(NodePeer {
            _child: child,
            port,
        })
    }

    /// The provider URL of this peer.
    pub fn url(&self, extra: &str) -> Url {
        provider_url(self.port, extra)
    }
}
