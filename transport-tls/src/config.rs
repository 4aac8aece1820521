//! [`TlsConfig`]: the one description of a client's TLS settings, whatever the transport.
//!
//! It is plain data (paths and flags): building it never reads a file. [`TlsClient::new`]
//! (crate::TlsClient::new) reads the files and builds the `rustls::ClientConfig`, once per
//! transport. The configuration names of Dubbo, Nacos and ZooKeeper become a `TlsConfig` in
//! [`crate::keys`].

use std::path::PathBuf;

use registry_core::Url;

/// When a provider connection uses TLS.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum TlsMode {
    /// TLS for the providers whose URL says `ssl-enabled=true` (what a Dubbo 3.3 provider with
    /// `ProtocolConfig.sslEnabled` registers); plaintext for the others. The default.
    #[default]
    Auto,
    /// TLS for every provider, whatever its URL says (Dubbo's `ssl-enabled=true` on the
    /// consumer side; `--tls` in the CLI).
    Always,
}

/// A client's TLS settings (see the module docs). `Default` is TLS for `ssl-enabled`
/// providers, verified against the built-in Mozilla roots, without a client certificate.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TlsConfig {
    /// Which provider connections use TLS (registry connections use TLS whenever a
    /// configuration is given for them).
    pub mode: TlsMode,
    /// PEM file of the CAs to trust (Dubbo's `client-trust-cert-collection-path`); `None`
    /// trusts the built-in Mozilla roots (`webpki-roots`), as the JDK trusts its `cacerts`.
    pub trust: Option<PathBuf>,
    /// PEM file of our certificate chain, for mutual TLS (`client-key-cert-chain-path`).
    pub cert_chain: Option<PathBuf>,
    /// PEM file of our private key (`client-private-key-path`: PKCS#8, PKCS#1 or SEC1, not
    /// encrypted). May be the same file as `cert_chain`.
    pub private_key: Option<PathBuf>,
    /// The name the peer's certificate must hold. `None` checks the address the connection
    /// goes to (the provider URL's host: an IP address needs an IP entry in the certificate).
    pub server_name: Option<String>,
    /// Accept any certificate without checking it (Nacos' `trustAll`). Encryption without
    /// authentication: anyone on the path can pretend to be the peer. Off by default.
    pub trust_all: bool,
}

/// The provider URL parameter a Dubbo provider with TLS on registers (`ProtocolConfig.sslEnabled`).
pub const SSL_ENABLED: &str = "ssl-enabled";

impl TlsConfig {
    /// True when a connection to `provider` uses TLS under this configuration: always in
    /// [`TlsMode::Always`], else when the provider URL says `ssl-enabled=true`.
    pub fn applies_to(&self, provider: &Url) -> bool {
        self.mode == TlsMode::Always || provider_wants_tls(provider)
    }

    /// True when a client certificate is configured.
    pub fn has_client_cert(&self) -> bool {
        self.cert_chain.is_some() || self.private_key.is_some()
    }
}

/// True when the provider URL says `ssl-enabled=true`.
pub fn provider_wants_tls(provider: &Url) -> bool {
    provider.param_bool(SSL_ENABLED, false)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn auto_follows_the_provider_url() {
        let plain = Url::parse("dubbo://10.0.0.1:20880/S").unwrap();
        let tls = Url::parse("dubbo://10.0.0.1:20880/S?ssl-enabled=true").unwrap();
        let auto = TlsConfig::default();
        assert!(!auto.applies_to(&plain));
        assert!(auto.applies_to(&tls));
        let always = TlsConfig {
            mode: TlsMode::Always,
            ..TlsConfig::default()
        };
        assert!(always.applies_to(&plain));
    }
}
