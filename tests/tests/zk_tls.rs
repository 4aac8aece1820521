//! ZooKeeper over TLS: a real ZooKeeper (the Debian 3.8 package, `scripts/zk-server.sh` with
//! `ZK_SECURE_PORT`: `secureClientPort`, Netty, PEM stores) requiring client certificates, and
//! our registry connecting to it with the ZooKeeper client's own names on the URL. Registering
//! and subscribing work over TLS; a missing client certificate and an untrusted server
//! certificate are clear errors. Certificates are made at test time.

use std::path::PathBuf;
use std::time::Duration;

use registry_core::{Registry, Url};
use registry_zk::ZookeeperRegistry;
use tests::certs::TestCa;
use tests::contract::{consumer_url, provider_url, Watch};

const T: Duration = Duration::from_secs(20);

/// A ZooKeeper of its own with a TLS port, stopped on drop.
struct SecureZk {
    state: PathBuf,
    plain: u16,
    secure: u16,
}

impl SecureZk {
    /// Starts it with `ca`'s server certificate, asking for client certificates signed by `ca`.
    fn start(test: &str, ca: &TestCa) -> Option<SecureZk> {
        // The same servers as the other ZooKeeper tests: skipped (or failed) with them.
        tests::zk_addr(test)?;
        let server = ca.server("zk-server", &["127.0.0.1", "localhost"]);
        let ports = tests::peers::free_ports(2);
        let state = ca.dir().join("zk-state");
        let zk = SecureZk {
            state,
            plain: ports[0],
            secure: ports[1],
        };
        let out = std::process::Command::new("bash")
            .arg(tests::peers::scripts_dir().join("zk-server.sh"))
            .arg("start")
            .arg(zk.plain.to_string())
            .env("ZK_STATE_DIR", &zk.state)
            .env("ZK_SECURE_PORT", zk.secure.to_string())
            .env("ZK_SSL_KEYSTORE", &server.combined)
            .env("ZK_SSL_TRUSTSTORE", ca.ca_pem())
            .env("ZK_SSL_CLIENT_AUTH", "need")
            .output()
            .expect("run zk-server.sh");
        assert!(
            out.status.success(),
            "{test}: the TLS ZooKeeper did not start: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        Some(zk)
    }

    fn url(&self, root: &str, tls: &str) -> Url {
        Url::parse(&format!(
            "zookeeper://127.0.0.1:{}?group={root}&timeout=3000&session=10000\
             &zookeeper.client.secure=true{tls}",
            self.secure
        ))
        .unwrap()
    }
}

impl Drop for SecureZk {
    fn drop(&mut self) {
        let _ = std::process::Command::new("bash")
            .arg(tests::peers::scripts_dir().join("zk-server.sh"))
            .arg("stop")
            .arg(self.plain.to_string())
            .env("ZK_STATE_DIR", &self.state)
            .output();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn register_and_subscribe_over_tls_with_a_client_certificate() {
    let test = "zk_tls";
    let ca = TestCa::new("zk");
    let Some(zk) = SecureZk::start(test, &ca) else {
        return;
    };
    let client = ca.client("zk-client", "dubbo-consumer");
    let root = tests::unique("zk-tls");
    let good = format!(
        "&zookeeper.ssl.trustStore.location={}&zookeeper.ssl.keyStore.location={}\
         &zookeeper.ssl.keyStore.type=PEM",
        ca.ca_pem().display(),
        client.combined.display()
    );
    let registry = ZookeeperRegistry::connect(&zk.url(&root, &good))
        .await
        .expect("connect over TLS");
    let iface = "org.example.tls.Greeter";
    let provider = provider_url(iface, 20880, "");
    registry.register(&provider).await.expect("register");
    let mut watch = Watch::subscribe(&registry, &consumer_url(iface, "providers", "")).await;
    watch
        .until_providers("the provider, over TLS", T, &["127.0.0.1:20880"])
        .await;
    registry.destroy().await;

    // No client certificate: the server refuses, and the error says so.
    let no_cert = format!(
        "&zookeeper.ssl.trustStore.location={}",
        ca.ca_pem().display()
    );
    let e = ZookeeperRegistry::connect(&zk.url(&root, &no_cert))
        .await
        .expect_err("a server requiring client certificates refuses us");
    assert!(
        e.to_string().contains("requires a client certificate"),
        "{e}"
    );

    // A CA that did not sign the server's certificate.
    let other = TestCa::new("zk-other");
    let wrong_ca = format!(
        "&zookeeper.ssl.trustStore.location={}&zookeeper.ssl.keyStore.location={}",
        other.ca_pem().display(),
        client.combined.display()
    );
    let e = ZookeeperRegistry::connect(&zk.url(&root, &wrong_ca))
        .await
        .expect_err("an untrusted server certificate");
    assert!(e.to_string().contains("not signed by a trusted CA"), "{e}");

    // A missing CA file is named.
    let missing = "&zookeeper.ssl.trustStore.location=/nonexistent/ca.pem";
    let e = ZookeeperRegistry::connect(&zk.url(&root, missing))
        .await
        .expect_err("a missing CA file");
    assert!(e.to_string().contains("/nonexistent/ca.pem"), "{e}");
}
