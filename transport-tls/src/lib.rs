//! # transport-tls
//!
//! TLS for every connection of the consumer engine (rustls, no OpenSSL): Dubbo2 and Triple
//! providers, Nacos gRPC, ZooKeeper. One configuration type, [`TlsConfig`], and one place that
//! turns it into a `rustls::ClientConfig`, [`TlsClient::new`]; the transports only call
//! [`TlsClient::handshake`] on the sockets they dial.
//!
//! ```text
//! Dubbo `dubbo.ssl.*` / Nacos `nacos.remote.client.rpc.tls.*` / ZooKeeper `zookeeper.ssl.*`
//!   / CLI --tls-* --> keys::from_* --> TlsConfig --TlsClient::new(cfg, Alpn)--> TlsClient
//!        (files read once: CA, client chain + key; rustls::ClientConfig; server-name rule)
//!   --> transport: TCP connect --> TlsClient::handshake(tcp, host, peer) --> TLS stream
//! ```
//!
//! Contract:
//! - The peer's certificate must chain to a trusted CA (a configured PEM file, else the
//!   built-in Mozilla roots), be valid now, and name the host that was dialled — a provider
//!   URL's IP address needs an IP entry in the certificate — or the configured
//!   [`TlsConfig::server_name`]. Only an explicit [`TlsConfig::trust_all`] skips the check.
//! - A client certificate and key (PEM; PKCS#8, PKCS#1 or SEC1, unencrypted) make it mutual
//!   TLS. Files are read when the [`TlsClient`] is built; a file that cannot be read or holds
//!   nothing usable is a [`TlsError`] naming the file, never its contents.
//! - Provider connections use TLS when the provider URL says `ssl-enabled=true` (what a Dubbo
//!   3.3 provider registers with `ProtocolConfig.sslEnabled`), or always with
//!   [`TlsMode::Always`]. Paths come only from the consumer's own configuration, never from
//!   a provider URL.
//! - Handshake failures are [`TlsError`]s that say which peer and why: an unknown CA, an
//!   expired or not-yet-valid certificate, a name the certificate does not hold, a refusal
//!   by the peer (with a hint when it wants a client certificate), a peer that does not speak
//!   TLS. [`TlsClient::classify`] does the same for a read after the handshake (with TLS 1.3 a
//!   server refuses a client certificate only then).
//! - [`Alpn::H2`] for Triple and gRPC (a peer selecting another protocol is refused);
//!   [`Alpn::None`] for Dubbo2 and ZooKeeper.
//!
//! ```no_run
//! use transport_tls::{Alpn, TlsClient, TlsConfig, TlsMode};
//!
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! let cfg = TlsConfig {
//!     mode: TlsMode::Always,
//!     trust: Some("ca.pem".into()),
//!     cert_chain: Some("client.pem".into()),
//!     private_key: Some("client.key".into()),
//!     ..TlsConfig::default()
//! };
//! let tls = TlsClient::new(&cfg, Alpn::None)?;
//! let tcp = tokio::net::TcpStream::connect("10.0.0.7:20880").await?;
//! let stream = tls.handshake(tcp, "10.0.0.7", "10.0.0.7:20880").await?;
//! # drop(stream);
//! # Ok(()) }
//! ```

mod client;
mod config;
mod error;
pub mod keys;
mod material;
mod stream;
mod time;
mod verify;

pub use client::{install_default_provider, Alpn, TlsClient};
pub use config::{provider_wants_tls, TlsConfig, TlsMode, SSL_ENABLED};
pub use error::TlsError;
pub use material::{pem_texts, PemTexts};
pub use stream::MaybeTlsStream;
pub use tokio_rustls::client::TlsStream;
