//! A TLS front: a rustls server on a free 127.0.0.1 port that terminates TLS and forwards the
//! plaintext to a real server that does not serve TLS itself (rnacos). The bytes after the
//! handshake are the real server's (HTTP/1.1, or gRPC over HTTP/2 with ALPN `h2`), so a client
//! talking to the front talks to the real server over TLS.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use rustls::server::WebPkiClientVerifier;
use rustls::{RootCertStore, ServerConfig};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;
use tokio_rustls::TlsAcceptor;

use crate::certs::{CertFiles, TestCa};

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::aws_lc_rs::default_provider())
}

/// A rustls server configuration with `cert`, offering `alpn`, and requiring a client
/// certificate signed by `client_ca` when given.
pub fn server_config(
    cert: &CertFiles,
    client_ca: Option<&TestCa>,
    alpn: &[&[u8]],
) -> Arc<ServerConfig> {
    let builder = ServerConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .expect("protocol versions");
    let builder = match client_ca {
        Some(ca) => {
            let mut roots = RootCertStore::empty();
            roots.add(ca.ca_der().clone()).expect("client CA");
            let verifier = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider())
                .build()
                .expect("client verifier");
            builder.with_client_cert_verifier(verifier)
        }
        None => builder.with_no_client_auth(),
    };
    let mut cfg = builder
        .with_single_cert(cert.chain(), cert.private_key())
        .expect("server certificate");
    cfg.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    Arc::new(cfg)
}

/// A TLS-terminating forwarder (see the module docs). Dropping it stops it.
#[derive(Debug)]
pub struct TlsFront {
    /// The port it listens on (127.0.0.1).
    pub port: u16,
    handshakes: Arc<AtomicU64>,
    task: JoinHandle<()>,
}

impl TlsFront {
    /// Serves TLS with `config` on a free port, forwarding each connection to `target`.
    pub async fn start(target: String, config: Arc<ServerConfig>) -> TlsFront {
        let l = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind the TLS front");
        let port = l.local_addr().expect("the front's address").port();
        let acceptor = TlsAcceptor::from(config);
        let handshakes = Arc::new(AtomicU64::new(0));
        let done = handshakes.clone();
        let task = tokio::spawn(async move {
            let mut conns = tokio::task::JoinSet::new();
            while let Ok((tcp, _)) = l.accept().await {
                let (acceptor, target, done) = (acceptor.clone(), target.clone(), done.clone());
                conns.spawn(async move {
                    let Ok(mut tls) = acceptor.accept(tcp).await else {
                        return;
                    };
                    done.fetch_add(1, Ordering::Relaxed);
                    if let Ok(mut plain) = TcpStream::connect(&target).await {
                        let _ = tokio::io::copy_bidirectional(&mut tls, &mut plain).await;
                    }
                });
                while conns.try_join_next().is_some() {}
            }
        });
        TlsFront {
            port,
            handshakes,
            task,
        }
    }

    /// `127.0.0.1:port`.
    pub fn addr(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// Handshakes completed so far (a client that reached the real server through TLS).
    pub fn handshakes(&self) -> u64 {
        self.handshakes.load(Ordering::Relaxed)
    }
}

impl Drop for TlsFront {
    fn drop(&mut self) {
        self.task.abort();
    }
}
