//! Triple over TLS against the grpcio peer serving TLS (`grpc.ssl_server_credentials`, ALPN
//! h2): IDL calls with `ssl-enabled=true` provider URLs, 64 calls in flight on one TLS
//! connection, mutual TLS, and what a consumer sees when its TLS does not match the server's.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers panic on bad fixtures

use tests::triple_peers as common;

use std::sync::Arc;

use invoker::rpc::{Invocation, Invoker};
use protocol_triple::{IdlService, PayloadMode, ProtoSchema, TripleInvoker, TripleInvokerFactory};
use registry_core::Url;
use serde_json::json;
use tests::certs::{CertFiles, TestCa};
use transport_tls::{TlsConfig, TlsMode};

fn factory(tls: &TlsConfig) -> TripleInvokerFactory {
    let schema = ProtoSchema::load(&[common::proto_dir().join("test.proto")]).unwrap();
    TripleInvokerFactory::new(PayloadMode::Idl(IdlService::new(
        Arc::new(schema),
        "tritest.Greeter",
    )))
    .with_tls(tls)
    .unwrap()
}

fn invoker(f: &TripleInvokerFactory, addr: &str, query: &str) -> Arc<TripleInvoker> {
    let url = Url::parse(&format!(
        "tri://{addr}/tritest.Greeter?interface=tritest.Greeter{query}"
    ))
    .unwrap();
    f.refer_triple(&url).unwrap()
}

fn hello(name: &str) -> Invocation {
    Invocation::new("SayHello").with_arguments(vec![], vec![json!({ "name": name })])
}

fn trusting(ca: &TestCa) -> TlsConfig {
    TlsConfig {
        trust: Some(ca.ca_pem().to_owned()),
        ..TlsConfig::default()
    }
}

async fn tls_peer(
    test: &str,
    server: &CertFiles,
    client_ca: Option<&TestCa>,
) -> Option<common::Peer> {
    let cert = format!("tls-cert={}", server.cert.display());
    let key = format!("tls-key={}", server.key.display());
    let mut extra = vec![cert, key];
    if let Some(ca) = client_ca {
        extra.push(format!("tls-client-ca={}", ca.ca_pem().display()));
    }
    let extra: Vec<&str> = extra.iter().map(String::as_str).collect();
    common::grpc_peer_with(test, 0, &extra).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idl_calls_over_tls_to_an_ssl_enabled_provider() {
    let test = "idl_calls_over_tls";
    let ca = TestCa::new("grpc-tls");
    let server = ca.server("server", &["127.0.0.1"]);
    let Some(peer) = tls_peer(test, &server, None).await else {
        return;
    };
    let f = factory(&trusting(&ca));
    // ssl-enabled=true on the provider URL: TLS (the default mode follows the URL).
    let inv = invoker(&f, &peer.addr(), "&ssl-enabled=true");
    assert_eq!(
        inv.call(&hello("tls")).await.unwrap(),
        json!({"message": "Hello tls"})
    );
    // 64 calls in flight on the one TLS connection (write coalescing engages at 16).
    let calls = (0..64).map(|i| {
        let inv = inv.clone();
        tokio::spawn(async move { inv.call(&hello(&format!("n{i}"))).await })
    });
    for (i, c) in futures::future::join_all(calls)
        .await
        .into_iter()
        .enumerate()
    {
        assert_eq!(
            c.unwrap().unwrap(),
            json!({ "message": format!("Hello n{i}") })
        );
    }

    // The same provider URL without ssl-enabled is called in plaintext, which a TLS server
    // does not understand: the call fails, the invoker turns unavailable.
    let plain = invoker(&f, &peer.addr(), "");
    let e = plain.call(&hello("plain")).await.unwrap_err();
    assert!(e.is_retryable(), "{e}");
    assert!(!plain.is_available());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_requiring_client_certificates() {
    let test = "grpc_mtls";
    let ca = TestCa::new("grpc-mtls");
    let server = ca.server("server", &["127.0.0.1"]);
    let client = ca.client("client", "rust-consumer");
    let Some(peer) = tls_peer(test, &server, Some(&ca)).await else {
        return;
    };
    let always = |cfg: TlsConfig| TlsConfig {
        mode: TlsMode::Always,
        ..cfg
    };
    let with_cert = always(TlsConfig {
        cert_chain: Some(client.cert.clone()),
        private_key: Some(client.key.clone()),
        ..trusting(&ca)
    });
    let inv = invoker(&factory(&with_cert), &peer.addr(), "");
    assert_eq!(
        inv.call(&hello("mtls")).await.unwrap(),
        json!({"message": "Hello mtls"})
    );

    let without = invoker(&factory(&always(trusting(&ca))), &peer.addr(), "");
    // grpcio (BoringSSL) closes the connection without an alert.
    let e = without.call(&hello("x")).await.unwrap_err();
    assert!(
        e.to_string().contains("requires a client certificate"),
        "{e}"
    );

    // A CA we do not trust signed the server's certificate.
    let other = TestCa::new("grpc-other");
    let wrong = invoker(&factory(&always(trusting(&other))), &peer.addr(), "");
    let e = wrong.call(&hello("x")).await.unwrap_err();
    assert!(e.to_string().contains("not signed by a trusted CA"), "{e}");
}
