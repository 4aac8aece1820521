//! TLS against a real Apache Dubbo 3.3.6 (Java) provider with Dubbo's `SslConfig` on
//! (`scripts/peers/java-dubbo3.sh provider --ssl-server-cert ..`): `dubbo-registry invoke`
//! calls it over Dubbo2 and Triple (ALPN h2) over TLS, with mutual TLS when the provider
//! requires it, finds `ssl-enabled=true` providers in ZooKeeper and uses TLS for them, and a
//! wrong CA, an expired certificate, a wrong name or a missing client certificate are clear
//! errors. Certificates are made at test time.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use serde_json::json;
use tests::certs::{CertFiles, TestCa};
use tests::peers::{JavaProvider, ProviderOptions};

const DEMO: &str = "com.example.peer.DemoService";

fn opts(test: &str, server: &CertFiles, client_ca: Option<&TestCa>) -> ProviderOptions {
    let mut extra = vec![
        "--ssl-server-cert".to_owned(),
        server.cert.display().to_string(),
        "--ssl-server-key".to_owned(),
        server.key.display().to_string(),
        "--ssl-enabled".to_owned(),
        "true".to_owned(),
    ];
    if let Some(ca) = client_ca {
        extra.extend([
            "--ssl-server-trust".to_owned(),
            ca.ca_pem().display().to_string(),
        ]);
    }
    ProviderOptions {
        app: tests::unique(&format!("tls-{test}")).replace('_', "-"),
        version: Some("1.0.0".into()),
        services: vec!["demo".into()],
        extra,
        ..ProviderOptions::default()
    }
}

/// `invoke TARGET DemoService sayHello [who] --version 1.0.0 FLAGS...`.
async fn say_hello(target: &str, who: &str, flags: &[&str]) -> common::Out {
    let args = format!("[\"{who}\"]");
    common::invoke_parts(&[
        &[target, DEMO, "sayHello", &args],
        &["--version", "1.0.0", "--timeout", "5000", "--json"],
        flags,
    ])
    .await
}

fn ok(out: &common::Out, who: &str, what: &str) {
    assert_eq!(out.code, 0, "{what}: {} / {}", out.stdout, out.stderr);
    assert_eq!(
        out.json()["result"],
        json!(format!("Hello {who}")),
        "{what}"
    );
}

fn fails_with(out: &common::Out, text: &str, what: &str) {
    assert_eq!(out.code, 2, "{what}: {} / {}", out.stdout, out.stderr);
    assert!(
        out.stderr.contains(text),
        "{what}: expected {text:?} in: {}",
        out.stderr
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_java_provider_with_tls_is_called_over_dubbo_and_tri() {
    let test = "java_provider_with_tls";
    let ca = TestCa::new("java-tls");
    let server = ca.server("provider", &["127.0.0.1", "provider.test"]);
    let Some(p) = JavaProvider::start(test, &opts(test, &server, None)).await else {
        return;
    };
    // It registers ssl-enabled=true on both protocols.
    for url in p.exported_urls(DEMO) {
        assert!(url.contains("ssl-enabled=true"), "{url}");
    }
    let ca_file = ca.ca_pem().display().to_string();
    let other = TestCa::new("java-tls-other");
    let other_file = other.ca_pem().display().to_string();
    for target in [p.dubbo_target(), p.tri_target()] {
        // The provider URL's ssl-enabled=true turns TLS on (as the registry's URL would).
        let tls_url = format!("{target}?ssl-enabled=true");
        ok(
            &say_hello(&tls_url, "auto", &["--tls-ca", &ca_file]).await,
            "auto",
            &tls_url,
        );
        // Dubbo's SslConfig names on the TARGET URL, without a flag.
        let dubbo_names = format!("{tls_url}&client-trust-cert-collection-path={ca_file}");
        ok(
            &say_hello(&dubbo_names, "dubbo-names", &[]).await,
            "dubbo-names",
            &dubbo_names,
        );
        // --tls: TLS whatever the URL says.
        ok(
            &say_hello(&target, "always", &["--tls", "--tls-ca", &ca_file]).await,
            "always",
            &target,
        );
        // The certificate's DNS name, checked instead of the address.
        let named = [
            "--tls",
            "--tls-ca",
            &ca_file,
            "--tls-server-name",
            "provider.test",
        ];
        ok(&say_hello(&target, "named", &named).await, "named", &target);

        // Plaintext to a TLS provider: the provider closes the connection.
        let out = say_hello(&target, "plain", &[]).await;
        assert_eq!(out.code, 2, "{target}: {} / {}", out.stdout, out.stderr);
        // Its certificate is not signed by the CA we trust.
        fails_with(
            &say_hello(&target, "x", &["--tls", "--tls-ca", &other_file]).await,
            "its certificate is not signed by a trusted CA",
            &target,
        );
        // Without a CA file only public CAs are trusted.
        fails_with(
            &say_hello(&target, "x", &["--tls"]).await,
            "built-in Mozilla roots",
            &target,
        );
        // A name the certificate does not hold.
        let wrong = [
            "--tls",
            "--tls-ca",
            &ca_file,
            "--tls-server-name",
            "other.test",
        ];
        fails_with(
            &say_hello(&target, "x", &wrong).await,
            "its certificate is not valid for other.test (it names 127.0.0.1, provider.test)",
            &target,
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_java_provider_requiring_client_certificates_gets_ours() {
    let test = "java_provider_mtls";
    let ca = TestCa::new("java-mtls");
    let server = ca.server("provider", &["127.0.0.1"]);
    let client = ca.client("consumer", "rust-consumer");
    let stranger_ca = TestCa::new("java-mtls-stranger");
    let stranger = stranger_ca.client("stranger", "stranger");
    let Some(p) = JavaProvider::start(test, &opts(test, &server, Some(&ca))).await else {
        return;
    };
    let ca_file = ca.ca_pem().display().to_string();
    let cert = client.cert.display().to_string();
    let key = client.key.display().to_string();
    for target in [p.dubbo_target(), p.tri_target()] {
        let with_cert = [
            "--tls",
            "--tls-ca",
            &ca_file,
            "--tls-cert",
            &cert,
            "--tls-key",
            &key,
        ];
        ok(
            &say_hello(&target, "mtls", &with_cert).await,
            "mtls",
            &target,
        );
        // No client certificate: refused, with a hint at mutual TLS.
        fails_with(
            &say_hello(&target, "x", &["--tls", "--tls-ca", &ca_file]).await,
            "it probably requires a client certificate",
            &target,
        );
        // A client certificate from a CA the provider does not trust.
        let s_cert = stranger.cert.display().to_string();
        let s_key = stranger.key.display().to_string();
        let flags = [
            "--tls",
            "--tls-ca",
            &ca_file,
            "--tls-cert",
            &s_cert,
            "--tls-key",
            &s_key,
        ];
        fails_with(
            &say_hello(&target, "x", &flags).await,
            "rejected our client certificate",
            &target,
        );
    }

    // The real Java 3.3.6 consumer with the same client certificate cannot connect: Netty 4.2
    // checks the server's name by default and Dubbo's SslClientTlsHandler gives it none
    // ("Hostname or IP address is undefined"), so no answer of Java's can be compared here.
    let java = tests::peers::java_consumer(
        test,
        &[
            "--url",
            &p.dubbo_target(),
            "--version",
            "1.0.0",
            "--method",
            "sayHello",
            "--args",
            r#"["java"]"#,
            "--retries",
            "0",
            "--ssl-client-cert",
            &cert,
            "--ssl-client-key",
            &key,
            "--ssl-client-trust",
            &ca_file,
        ],
        std::time::Duration::from_secs(120),
    )
    .await;
    if let Some(run) = java {
        assert!(
            run.json["exception"].is_object(),
            "the Java 3.3.6 consumer was expected to fail its TLS handshake: {}",
            run.json
        );
        assert!(
            std::fs::read_to_string(&run.log)
                .unwrap_or_default()
                .contains("Hostname or IP address is undefined"),
            "the Java consumer's handshake failure: see {}",
            run.log.display()
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_expired_provider_certificate_is_a_clear_error() {
    let test = "java_provider_expired";
    let ca = TestCa::new("java-expired");
    let server = ca.expired_server("provider", &["127.0.0.1"]);
    let Some(p) = JavaProvider::start(test, &opts(test, &server, None)).await else {
        return;
    };
    let ca_file = ca.ca_pem().display().to_string();
    for target in [p.dubbo_target(), p.tri_target()] {
        fails_with(
            &say_hello(&target, "x", &["--tls", "--tls-ca", &ca_file]).await,
            "its certificate has expired on 2021-01-01 00:00:00 UTC",
            &target,
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_providers_found_in_zookeeper_are_called_over_tls() {
    let test = "tls_providers_in_zookeeper";
    let Some(zk) = tests::zk_addr(test) else {
        return;
    };
    let ca = TestCa::new("java-zk-tls");
    let server = ca.server("provider", &["127.0.0.1"]);
    let registry = format!("zookeeper://{zk}?group={}", tests::unique("tls-root"));
    let mut o = opts(test, &server, None);
    o.registry = Some(registry.clone());
    let Some(p) = JavaProvider::start(test, &o).await else {
        return;
    };
    let ca_file = ca.ca_pem().display().to_string();
    for (proto, port) in [("dubbo", p.dubbo_port), ("tri", p.tri_port)] {
        // No --tls: the registered URL's ssl-enabled=true chooses TLS.
        let out = common::invoke_parts(&[
            &[registry.as_str(), DEMO, "whoAmI", "[]"],
            &["--version", "1.0.0", "--protocol", proto, "--json"],
            &["--tls-ca", &ca_file],
        ])
        .await;
        assert_eq!(out.code, 0, "{proto}: {} / {}", out.stdout, out.stderr);
        assert_eq!(
            out.json()["result"],
            json!(format!("{}@{proto}://127.0.0.1:{port}", o.app))
        );
    }
}
