//! Handshakes against an in-process rustls server with certificates made at test time: what
//! is accepted, and the error each bad certificate or refusal gives.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers panic on bad fixtures

use std::sync::Arc;

use tests::certs::TestCa;
use tests::tls_front::server_config;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio_rustls::TlsAcceptor;
use transport_tls::{Alpn, TlsClient, TlsConfig, TlsError, TlsMode};

/// Serves one TLS connection with `config`: reads "ping", answers "pong".
async fn serve_once(config: Arc<rustls::ServerConfig>) -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = l.local_addr().unwrap().port();
    tokio::spawn(async move {
        let (tcp, _) = l.accept().await.unwrap();
        if let Ok(mut tls) = TlsAcceptor::from(config).accept(tcp).await {
            let mut b = [0u8; 4];
            if tls.read_exact(&mut b).await.is_ok() && &b == b"ping" {
                let _ = tls.write_all(b"pong").await;
                let _ = tls.flush().await;
            }
        }
    });
    port
}

/// Handshake, then a round trip: the first error, classified.
async fn call(cfg: &TlsConfig, alpn: Alpn, port: u16) -> Result<(), TlsError> {
    let tls = TlsClient::new(cfg, alpn)?;
    let peer = format!("127.0.0.1:{port}");
    let tcp = TcpStream::connect(&peer).await.unwrap();
    let mut s = tls.handshake(tcp, "127.0.0.1", &peer).await?;
    let mut b = [0u8; 4];
    let r = async {
        s.write_all(b"ping").await?;
        s.flush().await?;
        s.read_exact(&mut b).await
    }
    .await;
    r.map_err(|e| tls.classify(&peer, e))?;
    assert_eq!(&b, b"pong");
    Ok(())
}

fn trusting(ca: &TestCa) -> TlsConfig {
    TlsConfig {
        mode: TlsMode::Always,
        trust: Some(ca.ca_pem().to_owned()),
        ..TlsConfig::default()
    }
}

#[tokio::test]
async fn a_certificate_for_the_address_is_accepted() {
    let ca = TestCa::new("ok");
    let server = ca.server("server", &["127.0.0.1"]);
    let port = serve_once(server_config(&server, None, &[])).await;
    call(&trusting(&ca), Alpn::None, port).await.unwrap();
}

#[tokio::test]
async fn another_ca_is_an_unknown_ca_error() {
    let ca = TestCa::new("right");
    let other = TestCa::new("wrong");
    let server = ca.server("server", &["127.0.0.1"]);
    let port = serve_once(server_config(&server, None, &[])).await;
    let e = call(&trusting(&other), Alpn::None, port).await.unwrap_err();
    assert!(matches!(e, TlsError::UnknownCa { .. }), "{e:?}");
    let msg = e.to_string();
    assert!(msg.contains(&format!("127.0.0.1:{port}")), "{msg}");
    assert!(msg.contains("not signed by a trusted CA"), "{msg}");
    assert!(msg.contains(&other.ca_pem().display().to_string()), "{msg}");
    assert!(!e.is_retryable());

    // Without a CA file only public CAs are trusted.
    let port = serve_once(server_config(&server, None, &[])).await;
    let e = call(&TlsConfig::default(), Alpn::None, port)
        .await
        .unwrap_err();
    assert!(e.to_string().contains("built-in Mozilla roots"), "{e}");
}

#[tokio::test]
async fn an_expired_certificate_says_when_it_expired() {
    let ca = TestCa::new("expired");
    let server = ca.expired_server("server", &["127.0.0.1"]);
    let port = serve_once(server_config(&server, None, &[])).await;
    let e = call(&trusting(&ca), Alpn::None, port).await.unwrap_err();
    assert!(matches!(e, TlsError::Expired { .. }), "{e:?}");
    assert!(
        e.to_string()
            .contains("has expired on 2021-01-01 00:00:00 UTC"),
        "{e}"
    );
}

#[tokio::test]
async fn a_certificate_for_another_name_fails_unless_that_name_is_expected() {
    let ca = TestCa::new("name");
    let server = ca.server("server", &["provider.internal"]);
    let port = serve_once(server_config(&server, None, &[])).await;
    let e = call(&trusting(&ca), Alpn::None, port).await.unwrap_err();
    assert!(matches!(e, TlsError::NameMismatch { .. }), "{e:?}");
    let msg = e.to_string();
    assert!(msg.contains("not valid for 127.0.0.1"), "{msg}");
    assert!(msg.contains("provider.internal"), "{msg}");

    let port = serve_once(server_config(&server, None, &[])).await;
    let cfg = TlsConfig {
        server_name: Some("provider.internal".into()),
        ..trusting(&ca)
    };
    call(&cfg, Alpn::None, port).await.unwrap();
}

#[tokio::test]
async fn mutual_tls_needs_a_client_certificate_the_server_trusts() {
    let ca = TestCa::new("mtls");
    let server = ca.server("server", &["127.0.0.1"]);
    let client = ca.client("client", "consumer");
    let config = server_config(&server, Some(&ca), &[]);

    let port = serve_once(config.clone()).await;
    let e = call(&trusting(&ca), Alpn::None, port).await.unwrap_err();
    assert!(matches!(e, TlsError::Refused { .. }), "{e:?}");
    assert!(
        e.to_string().contains("requires a client certificate"),
        "{e}"
    );

    let port = serve_once(config.clone()).await;
    let with_cert = TlsConfig {
        cert_chain: Some(client.cert.clone()),
        private_key: Some(client.key.clone()),
        ..trusting(&ca)
    };
    call(&with_cert, Alpn::None, port).await.unwrap();

    // A client certificate from a CA the server does not trust.
    let stranger_ca = TestCa::new("stranger");
    let stranger = stranger_ca.client("client", "stranger");
    let port = serve_once(config).await;
    let wrong = TlsConfig {
        cert_chain: Some(stranger.cert.clone()),
        private_key: Some(stranger.key.clone()),
        ..trusting(&ca)
    };
    let e = call(&wrong, Alpn::None, port).await.unwrap_err();
    assert!(
        e.to_string().contains("rejected our client certificate"),
        "{e}"
    );
}

#[tokio::test]
async fn a_plaintext_server_is_not_tls() {
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = l.local_addr().unwrap().port();
    tokio::spawn(async move {
        let (mut tcp, _) = l.accept().await.unwrap();
        let mut b = [0u8; 64];
        let _ = tcp.read(&mut b).await;
        let _ = tcp.write_all(b"HTTP/1.1 400 Bad Request\r\n\r\n").await;
    });
    let ca = TestCa::new("plain");
    let e = call(&trusting(&ca), Alpn::None, port).await.unwrap_err();
    assert!(matches!(e, TlsError::NotTls { .. }), "{e:?}");
}

#[tokio::test]
async fn h2_is_offered_and_required() {
    let ca = TestCa::new("alpn");
    let server = ca.server("server", &["127.0.0.1"]);
    let port = serve_once(server_config(&server, None, &[b"h2"])).await;
    call(&trusting(&ca), Alpn::H2, port).await.unwrap();

    let port = serve_once(server_config(&server, None, &[b"http/1.1"])).await;
    let e = call(&trusting(&ca), Alpn::H2, port).await.unwrap_err();
    assert!(matches!(e, TlsError::Refused { .. }), "{e:?}");
}

#[tokio::test]
async fn trust_all_accepts_any_certificate() {
    let ca = TestCa::new("any");
    let server = ca.expired_server("server", &["elsewhere.example"]);
    let port = serve_once(server_config(&server, None, &[])).await;
    let cfg = TlsConfig {
        trust_all: true,
        ..TlsConfig::default()
    };
    call(&cfg, Alpn::None, port).await.unwrap();
}

#[test]
fn a_client_certificate_with_the_wrong_key_is_a_configuration_error() {
    let ca = TestCa::new("pair");
    let a = ca.client("a", "a");
    let b = ca.client("b", "b");
    let cfg = TlsConfig {
        cert_chain: Some(a.cert.clone()),
        private_key: Some(b.key.clone()),
        ..trusting(&ca)
    };
    let e = TlsClient::new(&cfg, Alpn::None).unwrap_err();
    assert!(e.is_config(), "{e:?}");
    let key_text = std::fs::read_to_string(&b.key).unwrap();
    let body = key_text.lines().nth(1).unwrap();
    assert!(
        !e.to_string().contains(body),
        "key material never appears in an error"
    );
    assert!(!format!("{e:?}").contains(body));
}

#[test]
fn a_peer_that_drops_the_first_exchange_after_the_handshake_is_explained() {
    // BoringSSL refuses a missing client certificate by closing without an alert; the first
    // write after the handshake then fails with a broken pipe or a reset, not an end of stream.
    let ca = TestCa::new("first-exchange");
    let client = TlsClient::new(&trusting(&ca), Alpn::H2).unwrap();
    for kind in [
        std::io::ErrorKind::BrokenPipe,
        std::io::ErrorKind::ConnectionReset,
        std::io::ErrorKind::UnexpectedEof,
    ] {
        let e = client.classify_first_exchange("p:1", std::io::Error::new(kind, "closed"));
        assert!(
            e.to_string().contains("requires a client certificate"),
            "{kind:?}: {e}"
        );
    }
    // Later on the connection a reset stays a plain, retryable I/O error.
    let e = client.classify(
        "p:1",
        std::io::Error::from(std::io::ErrorKind::ConnectionReset),
    );
    assert!(e.is_retryable(), "{e}");
}
