//! Nacos over TLS. rnacos serves no TLS, so a TLS front (`tests::tls_front`: rustls, ALPN h2)
//! terminates it on 127.0.0.1 and forwards to the real server: our gRPC connection
//! (`nacos.remote.client.rpc.tls.*`) and the HTTP open API (`tls.enable`, the login) go through
//! it. Registering and subscribing work over TLS, with mutual TLS and credentials too; an
//! untrusted server certificate is a clear error. Certificates are made at test time.

use std::time::Duration;

use registry_core::{Registry, Url};
use registry_nacos::NacosRegistry;
use tests::certs::TestCa;
use tests::contract::{consumer_url, provider_url, Watch};
use tests::nacos::{grpc_port, iface};
use tests::tls_front::{server_config, TlsFront};

const T: Duration = Duration::from_secs(20);

/// TLS fronts for the HTTP and gRPC ports of the server at `addr`.
struct Fronts {
    http: TlsFront,
    grpc: TlsFront,
}

impl Fronts {
    async fn start(addr: &str, ca: &TestCa, client_ca: Option<&TestCa>) -> Fronts {
        let server = ca.server("nacos", &["127.0.0.1"]);
        let host = addr.rsplit_once(':').map_or(addr, |(h, _)| h);
        let http = TlsFront::start(
            addr.to_owned(),
            server_config(&server, client_ca, &[b"http/1.1"]),
        )
        .await;
        let grpc = TlsFront::start(
            format!("{host}:{}", grpc_port(addr)),
            server_config(&server, client_ca, &[b"h2"]),
        )
        .await;
        Fronts { http, grpc }
    }

    /// `nacos://` through the fronts (the gRPC port offset pointing at the gRPC front).
    fn url(&self, ns: &str, extra: &str) -> Url {
        let offset = i32::from(self.grpc.port) - i32::from(self.http.port);
        Url::parse(&format!(
            "nacos://127.0.0.1:{}?namespace={ns}&nacos.grpc-port-offset={offset}\
             &nacos.request-timeout=3000&file-cache=false&nacos.remote.client.rpc.tls.enable=true{extra}",
            self.http.port
        ))
        .unwrap()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn register_and_subscribe_over_grpc_tls() {
    let test = "nacos_grpc_tls";
    let Some(addr) = tests::nacos_addr(test) else {
        return;
    };
    let ca = TestCa::new("nacos");
    let fronts = Fronts::start(&addr, &ca, None).await;
    let ns = tests::unique("nacos-tls");
    let trust = format!(
        "&nacos.remote.client.rpc.tls.trustCollectionChainPath={}",
        ca.ca_pem().display()
    );
    let provider_side = NacosRegistry::new(&fronts.url(&ns, &trust)).unwrap();
    let consumer_side = NacosRegistry::new(&fronts.url(&ns, &trust)).unwrap();
    let s = iface("Tls");
    provider_side
        .register(&provider_url(&s, 20880, ""))
        .await
        .expect("register over gRPC TLS");
    let mut watch = Watch::subscribe(&consumer_side, &consumer_url(&s, "providers", "")).await;
    watch
        .until_providers("the provider, over TLS", T, &["127.0.0.1:20880"])
        .await;
    assert!(
        fronts.grpc.handshakes() >= 2,
        "both registries reached the server through the TLS front"
    );
    assert_eq!(
        fronts.http.handshakes(),
        0,
        "without credentials the HTTP port is never contacted"
    );
    provider_side.destroy().await;
    watch
        .until_no_providers("the provider gone, over TLS", T)
        .await;
    consumer_side.destroy().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mutual_tls_and_a_login_over_https() {
    let test = "nacos_mtls_login";
    let Some(addr) = tests::server_addr("DUBBO_TEST_NACOS_AUTH", test) else {
        return;
    };
    let ca = TestCa::new("nacos-auth");
    let client = ca.client("nacos-client", "dubbo-consumer");
    let fronts = Fronts::start(&addr, &ca, Some(&ca)).await;
    let ns = tests::unique("nacos-mtls");
    let tls = format!(
        "&username=nacos&password=nacos\
         &nacos.remote.client.rpc.tls.trustCollectionChainPath={ca}\
         &nacos.remote.client.rpc.tls.mutualAuth=true\
         &nacos.remote.client.rpc.tls.certChainFile={cert}\
         &nacos.remote.client.rpc.tls.certPrivateKey={key}\
         &tls.enable=true&tls.client.certPath={cert}&tls.client.keyPath={key}",
        ca = ca.ca_pem().display(),
        cert = client.cert.display(),
        key = client.key.display(),
    );
    let r = NacosRegistry::new(&fronts.url(&ns, &tls)).unwrap();
    let s = iface("Mtls");
    r.register(&provider_url(&s, 20881, ""))
        .await
        .expect("register with mutual TLS and credentials");
    let mut watch = Watch::subscribe(&r, &consumer_url(&s, "providers", "")).await;
    watch
        .until_providers("the provider, over mutual TLS", T, &["127.0.0.1:20881"])
        .await;
    assert!(
        fronts.http.handshakes() >= 1,
        "the login went to the HTTP port over TLS"
    );
    r.destroy().await;

    // Without a client certificate the gRPC front refuses the connection.
    let no_cert = format!(
        "&username=nacos&password=nacos&tls.enable=true\
         &nacos.remote.client.rpc.tls.trustCollectionChainPath={}",
        ca.ca_pem().display()
    );
    let r = NacosRegistry::new(&fronts.url(&ns, &no_cert)).unwrap();
    let e = r
        .register(&provider_url(&s, 20882, ""))
        .await
        .expect_err("a server requiring client certificates refuses us");
    assert!(e.to_string().contains("client certificate"), "{e}");
    r.destroy().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_untrusted_server_certificate_is_a_clear_error() {
    let test = "nacos_tls_wrong_ca";
    let Some(addr) = tests::nacos_addr(test) else {
        return;
    };
    let ca = TestCa::new("nacos-right");
    let other = TestCa::new("nacos-wrong");
    let fronts = Fronts::start(&addr, &ca, None).await;
    let ns = tests::unique("nacos-tls-ca");
    let wrong = format!(
        "&nacos.remote.client.rpc.tls.trustCollectionChainPath={}",
        other.ca_pem().display()
    );
    let r = NacosRegistry::new(&fronts.url(&ns, &wrong)).unwrap();
    let e = r
        .register(&provider_url(&iface("WrongCa"), 20883, ""))
        .await
        .expect_err("an untrusted server certificate");
    assert!(e.to_string().contains("not signed by a trusted CA"), "{e}");
    r.destroy().await;

    // A CA file that does not exist is named when the registry is made.
    let missing = "&nacos.remote.client.rpc.tls.trustCollectionChainPath=/nonexistent/ca.pem";
    let e = NacosRegistry::new(&fronts.url(&ns, missing)).expect_err("a missing CA file");
    assert!(e.to_string().contains("/nonexistent/ca.pem"), "{e}");
}
