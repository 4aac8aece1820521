//! The configuration names of Dubbo, Nacos and ZooKeeper, turned into a [`TlsConfig`]. Each
//! ecosystem keeps its own names, so a setting copied from a Java deployment works as it is:
//!
//! | meaning | Dubbo (`dubbo.ssl.*`, `SslConfig`) | Nacos gRPC (`nacos.remote.client.rpc.tls.*`) | ZooKeeper (`zookeeper.*`) |
//! |---|---|---|---|
//! | on | `ssl-enabled=true` (every provider; else only providers registering it) | `tls.enable=true` | `zookeeper.client.secure=true` |
//! | CA file (PEM) | `client-trust-cert-collection-path` | `tls.trustCollectionChainPath` | `zookeeper.ssl.trustStore.location` |
//! | client certificate chain | `client-key-cert-chain-path` | `tls.certChainFile` (with `tls.mutualAuth=true`) | `zookeeper.ssl.keyStore.location` (one PEM file: key and chain) |
//! | client key | `client-private-key-path` | `tls.certPrivateKey` | (the same file) |
//! | server name to check (this project's addition) | `client-server-name` | `tls.serverName` | — (the host of the address) |
//! | accept any certificate | — | `tls.trustAll=true` | — |
//!
//! The Nacos HTTP open API (login, the v1 transport) has its own switch, the Nacos client's
//! `tls.enable=true` (`TlsSystemConfig`): `https` with `tls.client.trustCertPath` (else the gRPC
//! CA file) and `tls.client.certPath` + `tls.client.keyPath` for mutual TLS.
//!
//! Key passwords (`client-key-password`, `tls.certPrivateKeyPassword`,
//! `zookeeper.ssl.keyStore.password`) are refused with a clear error: rustls reads unencrypted
//! keys only (decrypt one with `openssl pkcs8 -in enc.pem -out key.pem`). Nacos' `tls.protocols`,
//! `tls.ciphers` and `tls.provider` are ignored: rustls speaks TLS 1.2 and 1.3 with its own
//! safe suites. Paths come only from the consumer's own configuration (its properties, the
//! registry URL it was given), never from a provider URL found in a registry.

use std::path::PathBuf;

use registry_core::Url;

use crate::config::{TlsConfig, TlsMode};
use crate::error::TlsError;

/// Prefix of Dubbo's `SslConfig` keys (`dubbo.ssl.client-trust-cert-collection-path`, ...).
pub const DUBBO_SSL_PREFIX: &str = "dubbo.ssl.";
/// Dubbo: the CA file (`SslConfig.clientTrustCertCollectionPath`).
pub const DUBBO_TRUST: &str = "client-trust-cert-collection-path";
/// Dubbo: our certificate chain (`SslConfig.clientKeyCertChainPath`).
pub const DUBBO_CERT_CHAIN: &str = "client-key-cert-chain-path";
/// Dubbo: our private key (`SslConfig.clientPrivateKeyPath`).
pub const DUBBO_PRIVATE_KEY: &str = "client-private-key-path";
/// Dubbo: the key's password (`SslConfig.clientKeyPassword`; refused, see the module docs).
pub const DUBBO_KEY_PASSWORD: &str = "client-key-password";
/// This project's addition: the name the provider's certificate must hold.
pub const DUBBO_SERVER_NAME: &str = "client-server-name";

/// Prefix of the Nacos client's gRPC TLS keys (`RpcConstants.NACOS_CLIENT_RPC` + `.tls.`).
pub const NACOS_PREFIX: &str = "nacos.remote.client.rpc.tls.";

/// Java's `Boolean.parseBoolean`: `true` in any case is true, everything else false.
fn java_bool(v: Option<&str>) -> bool {
    v.is_some_and(|v| v.trim().eq_ignore_ascii_case("true"))
}

fn path(v: Option<&str>) -> Option<PathBuf> {
    v.map(str::trim)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
}

fn non_empty(v: Option<&str>) -> Option<String> {
    v.map(str::trim)
        .filter(|v| !v.is_empty())
        .map(str::to_owned)
}

fn no_password(key: &str, v: Option<&str>) -> Result<(), TlsError> {
    match v {
        Some(p) if !p.is_empty() => Err(TlsError::Config(format!(
            "{key} is set, but encrypted private keys are not supported: give an unencrypted \
             PKCS#8 key (openssl pkcs8 -in encrypted.pem -out key.pem) and leave {key} out"
        ))),
        _ => Ok(()),
    }
}

/// Dubbo's names (`SslConfig` and `ssl-enabled`), looked up with `get` with the `dubbo.ssl.`
/// prefix first, then without it: application properties, or a consumer URL's parameters.
/// `ssl-enabled=true` (or `dubbo.protocol.ssl-enabled=true`) gives [`TlsMode::Always`];
/// otherwise TLS is used for the providers that register `ssl-enabled=true`.
pub fn from_dubbo<'a>(get: impl Fn(&str) -> Option<&'a str>) -> Result<TlsConfig, TlsError> {
    let key = |name: &str| get(&format!("{DUBBO_SSL_PREFIX}{name}")).or_else(|| get(name));
    no_password(DUBBO_KEY_PASSWORD, key(DUBBO_KEY_PASSWORD))?;
    let always =
        java_bool(get(crate::config::SSL_ENABLED)) || java_bool(get("dubbo.protocol.ssl-enabled"));
    let cfg = TlsConfig {
        mode: if always {
            TlsMode::Always
        } else {
            TlsMode::Auto
        },
        trust: path(key(DUBBO_TRUST)),
        cert_chain: path(key(DUBBO_CERT_CHAIN)),
        private_key: path(key(DUBBO_PRIVATE_KEY)),
        server_name: non_empty(key(DUBBO_SERVER_NAME)),
        trust_all: false,
    };
    pair_check(&cfg, DUBBO_CERT_CHAIN, DUBBO_PRIVATE_KEY)?;
    Ok(cfg)
}

/// The Nacos client's gRPC TLS names on a `nacos://` registry URL, `None` when
/// `nacos.remote.client.rpc.tls.enable` is not true. `mutualAuth=true` needs `certChainFile`
/// and `certPrivateKey` (Nacos refuses it without them too). Unlike the Java client, whose
/// `trustAll` defaults to true, certificates are checked unless `trustAll=true` is given, and
/// without `trustCollectionChainPath` the built-in Mozilla roots are trusted.
pub fn from_nacos(url: &Url) -> Result<Option<TlsConfig>, TlsError> {
    let key = |name: &str| url.param(&format!("{NACOS_PREFIX}{name}"));
    if !java_bool(key("enable")) {
        return Ok(None);
    }
    no_password(
        &format!("{NACOS_PREFIX}certPrivateKeyPassword"),
        key("certPrivateKeyPassword"),
    )?;
    let mutual = java_bool(key("mutualAuth"));
    let (cert_chain, private_key) = if mutual {
        let chain = path(key("certChainFile"));
        let private_key = path(key("certPrivateKey"));
        if chain.is_none() || private_key.is_none() {
            return Err(TlsError::Config(format!(
                "{NACOS_PREFIX}mutualAuth=true needs {NACOS_PREFIX}certChainFile and \
                 {NACOS_PREFIX}certPrivateKey"
            )));
        }
        (chain, private_key)
    } else {
        (None, None)
    };
    Ok(Some(TlsConfig {
        mode: TlsMode::Always,
        trust: path(key("trustCollectionChainPath")),
        cert_chain,
        private_key,
        server_name: non_empty(key("serverName")),
        trust_all: java_bool(key("trustAll")),
    }))
}

/// The Nacos client's HTTP TLS names (`TlsSystemConfig`) on a `nacos://` registry URL, `None`
/// when `tls.enable` is not true. The CA file falls back to the gRPC one
/// (`nacos.remote.client.rpc.tls.trustCollectionChainPath`); unlike the Java client, whose
/// `tls.client.authServer` defaults to false, the server's certificate is always checked.
pub fn from_nacos_http(url: &Url) -> Result<Option<TlsConfig>, TlsError> {
    if !java_bool(url.param("tls.enable")) {
        return Ok(None);
    }
    no_password(
        "tls.client.keyPassword",
        url.param("tls.client.keyPassword"),
    )?;
    let cfg = TlsConfig {
        mode: TlsMode::Always,
        trust: path(url.param("tls.client.trustCertPath"))
            .or_else(|| path(url.param(&format!("{NACOS_PREFIX}trustCollectionChainPath")))),
        cert_chain: path(url.param("tls.client.certPath")),
        private_key: path(url.param("tls.client.keyPath")),
        server_name: None,
        trust_all: false,
    };
    pair_check(&cfg, "tls.client.certPath", "tls.client.keyPath")?;
    Ok(Some(cfg))
}

/// The ZooKeeper client's TLS names (its Java system properties) on a `zookeeper://`
/// registry URL, `None` when `zookeeper.client.secure` is not true. Stores must be PEM
/// (`zookeeper.ssl.{trust,key}Store.type` absent or `PEM`); the key store file holds the
/// private key and the certificate chain, as ZooKeeper's PEM key store does. ZooKeeper's
/// `zookeeper.ssl.hostnameVerification=false` is refused: the certificate must name the host
/// of the address (an IP address needs an IP entry).
pub fn from_zookeeper(url: &Url) -> Result<Option<TlsConfig>, TlsError> {
    if !java_bool(url.param("zookeeper.client.secure")) {
        return Ok(None);
    }
    for store in ["trustStore", "keyStore"] {
        let k = format!("zookeeper.ssl.{store}.type");
        if let Some(t) = url.param(&k).map(str::trim).filter(|t| !t.is_empty()) {
            if !t.eq_ignore_ascii_case("pem") {
                return Err(TlsError::Config(format!(
                    "{k}={t} is not supported: only PEM stores can be read (convert with \
                     `openssl pkcs12 -in store.p12 -nodes -out store.pem`)"
                )));
            }
        }
    }
    no_password(
        "zookeeper.ssl.keyStore.password",
        url.param("zookeeper.ssl.keyStore.password"),
    )?;
    if url
        .param("zookeeper.ssl.hostnameVerification")
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("false"))
    {
        return Err(TlsError::Config(
            "zookeeper.ssl.hostnameVerification=false is not supported: the server's \
             certificate must name the host (or IP address) of the registry address"
                .into(),
        ));
    }
    let key_store = path(url.param("zookeeper.ssl.keyStore.location"));
    Ok(Some(TlsConfig {
        mode: TlsMode::Always,
        trust: path(url.param("zookeeper.ssl.trustStore.location")),
        cert_chain: key_store.clone(),
        private_key: key_store,
        server_name: None,
        trust_all: false,
    }))
}

fn pair_check(cfg: &TlsConfig, chain_key: &str, key_key: &str) -> Result<(), TlsError> {
    match (&cfg.cert_chain, &cfg.private_key) {
        (Some(_), None) => Err(TlsError::Config(format!(
            "{chain_key} is set without {key_key}: a client certificate needs its private key"
        ))),
        (None, Some(_)) => Err(TlsError::Config(format!(
            "{key_key} is set without {chain_key}: a private key needs its certificate chain"
        ))),
        _ => Ok(()),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::collections::HashMap;

    use super::*;

    fn props<'a>(m: &'a HashMap<&'a str, &'a str>) -> impl Fn(&str) -> Option<&'a str> + 'a {
        move |k| m.get(k).copied()
    }

    #[test]
    fn dubbo_names_with_and_without_prefix() {
        let m = HashMap::from([
            ("dubbo.ssl.client-trust-cert-collection-path", "/ca.pem"),
            ("client-key-cert-chain-path", "/c.pem"),
            ("dubbo.ssl.client-private-key-path", "/k.pem"),
        ]);
        let c = from_dubbo(props(&m)).unwrap();
        assert_eq!(c.mode, TlsMode::Auto);
        assert_eq!(c.trust, Some(PathBuf::from("/ca.pem")));
        assert_eq!(c.cert_chain, Some(PathBuf::from("/c.pem")));
        assert_eq!(c.private_key, Some(PathBuf::from("/k.pem")));

        let m = HashMap::from([("ssl-enabled", "TRUE")]);
        assert_eq!(from_dubbo(props(&m)).unwrap().mode, TlsMode::Always);

        let m = HashMap::from([("dubbo.ssl.client-key-cert-chain-path", "/c.pem")]);
        let e = from_dubbo(props(&m)).unwrap_err().to_string();
        assert!(e.contains("without client-private-key-path"), "{e}");

        let m = HashMap::from([("dubbo.ssl.client-key-password", "hunter2")]);
        let e = from_dubbo(props(&m)).unwrap_err().to_string();
        assert!(
            e.contains("encrypted private keys are not supported"),
            "{e}"
        );
        assert!(
            !e.contains("hunter2"),
            "a password never appears in an error: {e}"
        );
    }

    #[test]
    fn nacos_names() {
        let u = Url::parse("nacos://127.0.0.1:8848").unwrap();
        assert_eq!(from_nacos(&u).unwrap(), None);
        let u = Url::parse(
            "nacos://127.0.0.1:8848?nacos.remote.client.rpc.tls.enable=true\
             &nacos.remote.client.rpc.tls.trustCollectionChainPath=/ca.pem\
             &nacos.remote.client.rpc.tls.mutualAuth=true\
             &nacos.remote.client.rpc.tls.certChainFile=/c.pem\
             &nacos.remote.client.rpc.tls.certPrivateKey=/k.pem\
             &nacos.remote.client.rpc.tls.serverName=nacos.internal",
        )
        .unwrap();
        let c = from_nacos(&u).unwrap().unwrap();
        assert_eq!(c.trust, Some(PathBuf::from("/ca.pem")));
        assert_eq!(c.cert_chain, Some(PathBuf::from("/c.pem")));
        assert_eq!(c.server_name.as_deref(), Some("nacos.internal"));
        assert!(!c.trust_all);
        // Without mutualAuth the certificate files are not used (as nacos-client).
        let u = Url::parse(
            "nacos://h:8848?nacos.remote.client.rpc.tls.enable=true\
             &nacos.remote.client.rpc.tls.certChainFile=/c.pem",
        )
        .unwrap();
        assert_eq!(from_nacos(&u).unwrap().unwrap().cert_chain, None);
        let u = Url::parse(
            "nacos://h:8848?nacos.remote.client.rpc.tls.enable=true\
             &nacos.remote.client.rpc.tls.mutualAuth=true",
        )
        .unwrap();
        assert!(from_nacos(&u).is_err());
    }

    #[test]
    fn nacos_http_names() {
        let u = Url::parse(
            "nacos://h:8848?nacos.remote.client.rpc.tls.enable=true\
             &nacos.remote.client.rpc.tls.trustCollectionChainPath=/grpc-ca.pem",
        )
        .unwrap();
        assert_eq!(from_nacos_http(&u).unwrap(), None);
        let u = Url::parse(
            "nacos://h:8848?tls.enable=true\
             &nacos.remote.client.rpc.tls.trustCollectionChainPath=/grpc-ca.pem",
        )
        .unwrap();
        let c = from_nacos_http(&u).unwrap().unwrap();
        assert_eq!(c.trust, Some(PathBuf::from("/grpc-ca.pem")));
        let u = Url::parse(
            "nacos://h:8848?tls.enable=true&tls.client.trustCertPath=/ca.pem\
             &tls.client.certPath=/c.pem&tls.client.keyPath=/k.pem",
        )
        .unwrap();
        let c = from_nacos_http(&u).unwrap().unwrap();
        assert_eq!(c.trust, Some(PathBuf::from("/ca.pem")));
        assert_eq!(c.private_key, Some(PathBuf::from("/k.pem")));
    }

    #[test]
    fn zookeeper_names() {
        let u = Url::parse("zookeeper://127.0.0.1:2181").unwrap();
        assert_eq!(from_zookeeper(&u).unwrap(), None);
        let u = Url::parse(
            "zookeeper://127.0.0.1:2281?zookeeper.client.secure=true\
             &zookeeper.ssl.trustStore.location=/ca.pem\
             &zookeeper.ssl.keyStore.location=/client.pem&zookeeper.ssl.keyStore.type=PEM",
        )
        .unwrap();
        let c = from_zookeeper(&u).unwrap().unwrap();
        assert_eq!(c.trust, Some(PathBuf::from("/ca.pem")));
        assert_eq!(c.cert_chain, c.private_key);
        let u = Url::parse(
            "zookeeper://h:2281?zookeeper.client.secure=true&zookeeper.ssl.trustStore.type=JKS",
        )
        .unwrap();
        assert!(from_zookeeper(&u)
            .unwrap_err()
            .to_string()
            .contains("only PEM"));
        let u = Url::parse(
            "zookeeper://h:2281?zookeeper.client.secure=true&zookeeper.ssl.hostnameVerification=false",
        )
        .unwrap();
        assert!(from_zookeeper(&u).is_err());
    }
}
