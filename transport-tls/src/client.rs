//! [`TlsClient`]: a [`TlsConfig`] made ready for one transport — the `rustls::ClientConfig`
//! (built here and nowhere else), the server name rule, the handshake and its errors.

use std::fmt;
use std::io;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use rustls::client::WebPkiServerVerifier;
use rustls::crypto::CryptoProvider;
use rustls::ClientConfig;
use rustls_pki_types::ServerName;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio_rustls::client::TlsStream;
use tokio_rustls::TlsConnector;

use crate::config::{TlsConfig, TlsMode};
use crate::error::{classify, Context, TlsError};
use crate::material;
use crate::verify::AcceptAnyCertificate;

/// The application protocol offered in the handshake (ALPN).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Alpn {
    /// None (Dubbo2, ZooKeeper): the server picks what it serves on the port.
    None,
    /// `h2` (Triple, gRPC): a server that selects another protocol is refused.
    H2,
}

impl Alpn {
    fn protocols(self) -> Vec<Vec<u8>> {
        match self {
            Alpn::None => Vec::new(),
            Alpn::H2 => vec![b"h2".to_vec()],
        }
    }
}

/// The crypto provider of every configuration built here (aws-lc-rs, rustls' default).
fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::aws_lc_rs::default_provider())
}

/// Makes the aws-lc-rs provider the process default when no default is set yet, for
/// libraries that build their own `rustls::ClientConfig` with `ClientConfig::builder()`
/// (the ZooKeeper client). Idempotent.
pub fn install_default_provider() {
    if CryptoProvider::get_default().is_none() {
        // Another thread may have installed one in between: that one stays, which is fine.
        let _ = rustls::crypto::aws_lc_rs::default_provider().install_default();
    }
}

struct Inner {
    config: Arc<ClientConfig>,
    connector: TlsConnector,
    mode: TlsMode,
    alpn: Alpn,
    server_name: Option<ServerName<'static>>,
    ctx: Context,
}

/// A client's TLS, ready for the handshakes of one transport. Cheap to clone (one `Arc`).
///
/// Built by [`TlsClient::new`] from a [`TlsConfig`]: reads its files once, checks that the
/// client certificate and key go together, and fixes the ALPN protocols. Each connection then
/// calls [`TlsClient::handshake`] with the host it dialled: the peer's certificate must chain
/// to a trusted CA, be valid now, and name that host (or the configured server name).
#[derive(Clone)]
pub struct TlsClient {
    inner: Arc<Inner>,
}

impl fmt::Debug for TlsClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TlsClient")
            .field("mode", &self.inner.mode)
            .field("alpn", &self.inner.alpn)
            .field("trust", &self.inner.ctx.trust)
            .field("client_cert", &self.inner.ctx.client_cert)
            .field("server_name", &self.inner.server_name)
            .finish_non_exhaustive()
    }
}

impl TlsClient {
    /// Builds the client configuration of `cfg` for a transport speaking `alpn`. Errors: a
    /// file cannot be read or holds nothing usable, the certificate and key do not go
    /// together, the server name is not a valid DNS name or IP address.
    pub fn new(cfg: &TlsConfig, alpn: Alpn) -> Result<TlsClient, TlsError> {
        let provider = provider();
        let builder = ClientConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()
            .map_err(|e| TlsError::Config(format!("protocol versions: {e}")))?;
        let (builder, trust) = if cfg.trust_all {
            tracing::warn!(
                "TLS: trust-all is configured: peer certificates are not checked, so the peer \
                 is not authenticated"
            );
            let verifier = AcceptAnyCertificate::new(provider.signature_verification_algorithms);
            (
                builder
                    .dangerous()
                    .with_custom_certificate_verifier(Arc::new(verifier)),
                "any certificate (trust-all)".to_owned(),
            )
        } else {
            let (roots, trust) = match &cfg.trust {
                Some(p) => (
                    material::trust_store(p)?,
                    format!("CA file {}", p.display()),
                ),
                None => (
                    material::mozilla_roots(),
                    "the built-in Mozilla roots; configure a CA file for a private CA".to_owned(),
                ),
            };
            let verifier = WebPkiServerVerifier::builder_with_provider(roots, provider.clone())
                .build()
                .map_err(|e| TlsError::Config(format!("certificate verifier: {e}")))?;
            (builder.with_webpki_verifier(verifier), trust)
        };
        let mut config = match (&cfg.cert_chain, &cfg.private_key) {
            (None, None) => builder.with_no_client_auth(),
            (Some(chain), Some(key)) => {
                let certs = material::certificates("client certificate", chain)?;
                let k = material::private_key(key)?;
                builder
                    .with_client_auth_cert(certs, k)
                    .map_err(|e| mismatch(chain, key, &e))?
            }
            (Some(_), None) => {
                return Err(TlsError::Config(
                    "a client certificate is configured without its private key".into(),
                ))
            }
            (None, Some(_)) => {
                return Err(TlsError::Config(
                    "a client private key is configured without its certificate chain".into(),
                ))
            }
        };
        config.alpn_protocols = alpn.protocols();
        let server_name = match &cfg.server_name {
            Some(n) => Some(parse_name(n)?),
            None => None,
        };
        let config = Arc::new(config);
        Ok(TlsClient {
            inner: Arc::new(Inner {
                connector: TlsConnector::from(config.clone()),
                config,
                mode: cfg.mode,
                alpn,
                server_name,
                ctx: Context {
                    trust,
                    client_cert: cfg.cert_chain.is_some(),
                },
            }),
        })
    }

    /// Which provider connections use TLS.
    pub fn mode(&self) -> TlsMode {
        self.inner.mode
    }

    /// The ALPN protocol offered.
    pub fn alpn(&self) -> Alpn {
        self.inner.alpn
    }

    /// True when a client certificate is presented (mutual TLS).
    pub fn has_client_cert(&self) -> bool {
        self.inner.ctx.client_cert
    }

    /// True when a connection to `provider` uses TLS: always in [`TlsMode::Always`], else when
    /// the provider URL says `ssl-enabled=true`.
    pub fn applies_to(&self, provider: &registry_core::Url) -> bool {
        self.inner.mode == TlsMode::Always || crate::config::provider_wants_tls(provider)
    }

    /// The `rustls` configuration (for a library that takes one).
    pub fn rustls_config(&self) -> &Arc<ClientConfig> {
        &self.inner.config
    }

    /// The name the certificate of a peer at `host` must hold: the configured server name,
    /// else `host` itself (a DNS name or an IP address, brackets of an IPv6 literal removed).
    pub fn server_name(&self, host: &str) -> Result<ServerName<'static>, TlsError> {
        match &self.inner.server_name {
            Some(n) => Ok(n.clone()),
            None => parse_name(host),
        }
    }

    /// The TLS handshake over `io`, a connection to `peer` (`host:port`, for messages) at
    /// `host`. With [`Alpn::H2`], a peer that selects another protocol is refused (one that
    /// selects none is accepted: it may still speak HTTP/2, as a Java Dubbo port-unification
    /// server does). Bound it with the caller's connect timeout.
    pub async fn handshake<IO>(
        &self,
        io: IO,
        host: &str,
        peer: &str,
    ) -> Result<TlsStream<IO>, TlsError>
    where
        IO: AsyncRead + AsyncWrite + Unpin,
    {
        let name = self.server_name(host)?;
        let stream = self
            .inner
            .connector
            .connect(name, io)
            .await
            .map_err(|e| self.classify(peer, e))?;
        if self.inner.alpn == Alpn::H2 {
            if let Some(p) = stream.get_ref().1.alpn_protocol() {
                if p != b"h2" {
                    return Err(TlsError::Protocol {
                        peer: peer.to_owned(),
                        detail: format!(
                            "the peer selected application protocol {:?}, not h2",
                            String::from_utf8_lossy(p)
                        ),
                    });
                }
            }
        }
        Ok(stream)
    }

    /// Why TLS to `peer` (`host:port`, certificate checked against `host`) fails, found with a
    /// handshake of its own and a short wait for a refusal after it (a TLS 1.3 server refuses
    /// a client certificate only once the client's side of the handshake is done). For
    /// libraries that only report "could not connect": `None` when the handshake works and
    /// nothing is refused within the wait (the cause is elsewhere), or the peer cannot be
    /// reached at all. Takes at most `within`.
    pub async fn diagnose(&self, peer: &str, host: &str, within: Duration) -> Option<TlsError> {
        use tokio::io::AsyncReadExt;
        let probe = async {
            let tcp = tokio::net::TcpStream::connect(peer).await.ok()?;
            let mut stream = match self.handshake(tcp, host, peer).await {
                Ok(s) => s,
                Err(e) => return Some(e),
            };
            let mut byte = [0u8; 1];
            let wait = (within / 4).max(Duration::from_millis(100));
            match tokio::time::timeout(wait, stream.read(&mut byte)).await {
                Ok(Err(e)) => Some(self.classify(peer, e)),
                _ => None,
            }
        };
        tokio::time::timeout(within, probe).await.ok().flatten()
    }

    /// An I/O error of a TLS connection to `peer` (during the handshake, or a read or write
    /// after it: with TLS 1.3 a server refuses a client certificate after the client's side
    /// of the handshake is done) as a [`TlsError`] naming the cause.
    pub fn classify(&self, peer: &str, err: io::Error) -> TlsError {
        classify(peer, err, &self.inner.ctx)
    }

    /// As [`classify`](Self::classify), for the first exchange right after the handshake (an
    /// application protocol's own handshake, such as HTTP/2's preface and SETTINGS): a peer that
    /// checks our certificate only then and closes without an alert (BoringSSL does) makes that
    /// first write fail with a broken pipe or a reset rather than an end of stream, and it means
    /// the same thing.
    pub fn classify_first_exchange(&self, peer: &str, err: io::Error) -> TlsError {
        let err = match err.kind() {
            io::ErrorKind::BrokenPipe | io::ErrorKind::ConnectionReset => {
                io::Error::new(io::ErrorKind::UnexpectedEof, err)
            }
            _ => err,
        };
        classify(peer, err, &self.inner.ctx)
    }
}

fn parse_name(name: &str) -> Result<ServerName<'static>, TlsError> {
    let n = name.trim();
    let n = n
        .strip_prefix('[')
        .and_then(|n| n.strip_suffix(']'))
        .unwrap_or(n);
    ServerName::try_from(n.to_owned()).map_err(|_| {
        TlsError::Config(format!(
            "server name {name:?} is neither a DNS name nor an IP address"
        ))
    })
}

fn mismatch(chain: &Path, key: &Path, e: &rustls::Error) -> TlsError {
    TlsError::Config(format!(
        "client certificate {} and private key {} cannot be used together: {e}",
        chain.display(),
        key.display()
    ))
}
