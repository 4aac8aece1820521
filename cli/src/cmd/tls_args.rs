//! The TLS options of the commands that call providers (`invoke`): one [`TlsConfig`] for
//! Dubbo2 and Triple connections. Registries take their TLS settings from their URL
//! (`zookeeper.client.secure=true&zookeeper.ssl.*`, `nacos.remote.client.rpc.tls.*`).

use std::path::PathBuf;

use transport_tls::{TlsConfig, TlsMode};

/// TLS to providers. Without options, providers whose URL says `ssl-enabled=true` are called
/// over TLS checked against the built-in Mozilla roots; the others in plaintext.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct TlsArgs {
    /// Call every provider over TLS (default: only those whose URL says ssl-enabled=true).
    #[arg(long)]
    pub tls: bool,
    /// PEM file of the CAs to trust for providers (Dubbo's
    /// client-trust-cert-collection-path; default: the built-in Mozilla roots).
    #[arg(long = "tls-ca", value_name = "FILE")]
    pub ca: Option<PathBuf>,
    /// PEM file of our certificate chain, for providers that require mutual TLS
    /// (client-key-cert-chain-path).
    #[arg(long = "tls-cert", value_name = "FILE", requires = "key")]
    pub cert: Option<PathBuf>,
    /// PEM file of our private key, unencrypted (client-private-key-path).
    #[arg(long = "tls-key", value_name = "FILE", requires = "cert")]
    pub key: Option<PathBuf>,
    /// The name providers' certificates must hold (default: the provider's host, e.g. its
    /// IP address).
    #[arg(long = "tls-server-name", value_name = "NAME")]
    pub server_name: Option<String>,
}

impl TlsArgs {
    /// The TLS configuration these options describe.
    pub fn config(&self) -> TlsConfig {
        TlsConfig {
            mode: if self.tls {
                TlsMode::Always
            } else {
                TlsMode::Auto
            },
            trust: self.ca.clone(),
            cert_chain: self.cert.clone(),
            private_key: self.key.clone(),
            server_name: self.server_name.clone(),
            trust_all: false,
        }
    }
}
