//! Shared setup of the Nacos tests on real rnacos servers: unique interface names, registries
//! from URLs, the gRPC port of a server, a private server a test starts and stops itself, and
//! the instance lists as the server stores them (straight over the v1 HTTP API).

use registry_core::Url;
use registry_nacos::NacosRegistry;
use serde_json::Value;

/// A unique interface name `org.nacos.<tag>-...` (with `_` for `-`, as Java names have).
pub fn iface(tag: &str) -> String {
    crate::unique(&format!("org.nacos.{tag}")).replace('-', "_")
}

/// The Nacos registry of `url` (`nacos://...`); panics on a bad URL.
pub fn registry(url: &str) -> NacosRegistry {
    let parsed = Url::parse(url).unwrap_or_else(|e| panic!("bad registry URL {url}: {e}"));
    NacosRegistry::new(&parsed).unwrap_or_else(|e| panic!("registry {url}: {e}"))
}

/// The gRPC port of the Nacos server at `addr` (`host:port`): the HTTP port + 1000.
pub fn grpc_port(addr: &str) -> u16 {
    let port = addr.rsplit_once(':').map_or(addr, |(_, p)| p);
    port.parse::<u16>()
        .unwrap_or_else(|e| panic!("no port in {addr}: {e}"))
        + 1000
}

/// An HTTP client that never goes through a proxy (the servers are on 127.0.0.1).
pub fn http() -> reqwest::Client {
    reqwest::Client::builder()
        .no_proxy()
        .build()
        .expect("an HTTP client")
}

/// `GET /nacos/v1/ns/instance/list` of `service` in namespace `ns` (all instances, healthy
/// or not): the status and the body.
pub async fn raw_list_status(addr: &str, ns: &str, service: &str) -> (u16, String) {
    let r = http()
        .get(format!("http://{addr}/nacos/v1/ns/instance/list"))
        .query(&[
            ("serviceName", service),
            ("namespaceId", ns),
            ("healthyOnly", "false"),
        ])
        .send()
        .await
        .unwrap_or_else(|e| panic!("instance/list of {service}: {e}"));
    let status = r.status().as_u16();
    (status, r.text().await.expect("the instance/list body"))
}

/// The (port, `ephemeral`) pairs of the hosts in an `instance/list` reply, sorted; no hosts
/// gives an empty list, a missing port 0 and a missing flag `true`.
pub fn ephemeral_flags(body: &str) -> Vec<(i64, bool)> {
    let v: Value =
        serde_json::from_str(body).unwrap_or_else(|e| panic!("instance/list {body}: {e}"));
    let mut out: Vec<(i64, bool)> = v["hosts"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .iter()
        .map(|h| {
            (
                h["port"].as_i64().unwrap_or(0),
                h["ephemeral"].as_bool().unwrap_or(true),
            )
        })
        .collect();
    out.sort_unstable();
    out
}

/// A private rnacos server on its own port, run through `$DUBBO_TEST_SCRIPTS/nacos-server.sh`
/// (never one of the shared servers), stopped when this is dropped (also on panic).
#[derive(Debug)]
pub struct PrivateServer {
    scripts: String,
    /// The HTTP port it listens on (127.0.0.1); gRPC is on this + 1000.
    pub port: u16,
}

impl PrivateServer {
    /// A server on the port in env var `port_var`, else on a free port (HTTP and gRPC,
    /// [`crate::server_port`]); `scripts` is the folder of `nacos-server.sh`. Nothing is
    /// started yet.
    pub fn new(scripts: String, port_var: &str) -> Self {
        let port = crate::server_port(port_var, &[1000]);
        PrivateServer { scripts, port }
    }

    /// Its address, `127.0.0.1:<port>`.
    pub fn addr(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// Runs `nacos-server.sh <cmd> <port>` (`start`, `stop`) and panics when it fails;
    /// `fresh` starts from wiped state. Blocks: call it in `block_in_place` from async code.
    pub fn run(&self, cmd: &str, fresh: bool) {
        let st = std::process::Command::new("bash")
            .arg(format!("{}/nacos-server.sh", self.scripts))
            .arg(cmd)
            .arg(self.port.to_string())
            .env("NACOS_FRESH", if fresh { "1" } else { "0" })
            .status()
            .expect("run nacos-server.sh");
        assert!(st.success(), "nacos-server.sh {cmd} {} failed", self.port);
    }
}

impl Drop for PrivateServer {
    fn drop(&mut self) {
        let _ = std::process::Command::new("bash")
            .arg(format!("{}/nacos-server.sh", self.scripts))
            .arg("stop")
            .arg(self.port.to_string())
            .status();
    }
}
