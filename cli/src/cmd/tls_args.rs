//! The TLS options of the commands that call providers (`invoke`): one [`TlsConfig`] for
//! Dubbo2 and Triple connections, from Dubbo's own names on the TARGET URL
//! (`ssl-enabled`, `[dubbo.ssl.]client-trust-cert-collection-path`, ...:
//! [`transport_tls::keys::from_dubbo`]) with the `--tls*` flags taking precedence. Registries
//! take their own TLS settings from their URL (`zookeeper.client.secure=true&zookeeper.ssl.*`,
//! `nacos.remote.client.rpc.tls.*`, `tls.enable`).

use std::path::PathBuf;

use anyhow::Context;
use registry_core::Url;
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
    /// The TLS configuration of `target` (a registry or provider URL carrying Dubbo's
    /// `SslConfig` names), each option given on the command line replacing the URL's value.
    ///
    /// Errors: the URL's TLS settings are inconsistent (a certificate without its key, a key
    /// password).
    pub fn config_for(&self, target: &Url) -> anyhow::Result<TlsConfig> {
        let base = transport_tls::keys::from_dubbo(|k| target.param(k))
            .with_context(|| format!("TLS settings of {}", target.to_masked_identity_string()))?;
        Ok(self.over(base))
    }

    fn over(&self, base: TlsConfig) -> TlsConfig {
        let (cert_chain, private_key) = match (&self.cert, &self.key) {
            (Some(c), Some(k)) => (Some(c.clone()), Some(k.clone())),
            _ => (base.cert_chain, base.private_key),
        };
        TlsConfig {
            mode: if self.tls { TlsMode::Always } else { base.mode },
            trust: self.ca.clone().or(base.trust),
            cert_chain,
            private_key,
            server_name: self.server_name.clone().or(base.server_name),
            trust_all: false,
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn url(s: &str) -> Url {
        Url::parse(s).unwrap()
    }

    #[test]
    fn the_target_url_carries_dubbo_names() {
        let none = TlsArgs::default();
        let c = none
            .config_for(&url(
                "zookeeper://127.0.0.1:2181?dubbo.ssl.client-trust-cert-collection-path=/ca.pem\
                 &dubbo.ssl.client-key-cert-chain-path=/c.pem&dubbo.ssl.client-private-key-path=/k.pem",
            ))
            .unwrap();
        assert_eq!(c.mode, TlsMode::Auto);
        assert_eq!(c.trust, Some(PathBuf::from("/ca.pem")));
        assert_eq!(c.cert_chain, Some(PathBuf::from("/c.pem")));
        assert_eq!(c.private_key, Some(PathBuf::from("/k.pem")));
        let c = none
            .config_for(&url(
                "dubbo://10.0.0.1:20880/S?ssl-enabled=true&client-server-name=p.test",
            ))
            .unwrap();
        assert_eq!(c.mode, TlsMode::Always);
        assert_eq!(c.server_name.as_deref(), Some("p.test"));
        assert_eq!(
            none.config_for(&url("dubbo://10.0.0.1:20880/S")).unwrap(),
            TlsConfig::default()
        );
    }

    #[test]
    fn flags_replace_the_url_values() {
        let flags = TlsArgs {
            tls: true,
            ca: Some("/flag-ca.pem".into()),
            cert: Some("/flag-c.pem".into()),
            key: Some("/flag-k.pem".into()),
            server_name: Some("flag.test".into()),
        };
        let c = flags
            .config_for(&url(
                "dubbo://10.0.0.1:20880/S?client-trust-cert-collection-path=/ca.pem\
                 &client-key-cert-chain-path=/c.pem&client-private-key-path=/k.pem\
                 &client-server-name=url.test",
            ))
            .unwrap();
        assert_eq!(c, flags.over(TlsConfig::default()));
        assert_eq!(c.mode, TlsMode::Always);
        assert_eq!(c.trust, Some(PathBuf::from("/flag-ca.pem")));
        assert_eq!(c.private_key, Some(PathBuf::from("/flag-k.pem")));
        assert_eq!(c.server_name.as_deref(), Some("flag.test"));
    }

    #[test]
    fn an_inconsistent_url_is_an_error() {
        let e = TlsArgs::default()
            .config_for(&url(
                "dubbo://10.0.0.1:20880/S?client-key-cert-chain-path=/c.pem",
            ))
            .unwrap_err();
        assert!(
            format!("{e:#}").contains("client-private-key-path"),
            "{e:#}"
        );
        let e = TlsArgs::default()
            .config_for(&url("dubbo://10.0.0.1:20880/S?client-key-password=secret"))
            .unwrap_err();
        assert!(!format!("{e:#}").contains("secret"), "{e:#}");
    }
}
