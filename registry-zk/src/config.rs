//! What a `zookeeper://` registry URL says: ensemble, root, timeouts, credentials, options.
//!
//! `zookeeper://[user:pass@]host:port[?backup=h2:p2,h3:p3&group=dubbo&timeout=30000&session=60000]`
//!
//! TLS to the ensemble's `secureClientPort` takes the ZooKeeper client's own names
//! (`zookeeper.client.secure=true`, `zookeeper.ssl.trustStore.location`, ...; see
//! `transport_tls::keys::from_zookeeper`).

use std::fmt;
use std::time::Duration;

use registry_core::Url;

use crate::error::{Result, ZkError};
use crate::paths;

/// Default ZooKeeper client port.
pub const DEFAULT_PORT: i32 = 2181;
/// Default connect timeout (`timeout`, ms), as Dubbo's Curator client.
pub const DEFAULT_CONNECT_TIMEOUT_MS: u64 = 30_000;
/// Default session timeout (`session`, ms), as Dubbo's Curator client.
pub const DEFAULT_SESSION_TIMEOUT_MS: u64 = 60_000;

/// The settings of one ZooKeeper registry, parsed from its URL.
#[derive(Clone, PartialEq, Eq)]
pub struct ZkConfig {
    /// `host:port[,host:port...]` (address first, then `backup`).
    pub connect_string: String,
    /// Root path (`/` + `group`, default `/dubbo`).
    pub root: String,
    /// How long the first connection may take (`timeout`).
    pub connect_timeout: Duration,
    /// Requested session timeout (`session`); the server may clamp it.
    pub session_timeout: Duration,
    /// `user:password` for the `digest` scheme; nodes are then created with CREATOR_ALL_ACL.
    digest: Option<String>,
    /// `check` (default true): fail construction when the first connection does not succeed.
    pub check: bool,
    /// `enable-empty-protection` (default false): never publish an empty providers list.
    pub empty_protection: bool,
    /// `subscribe.create-paths` (default true, as Dubbo's consumer does): create the watched
    /// category directories as persistent nodes. `false` subscribes without writing anything
    /// (a persistent watch needs no node; a missing path lists as empty).
    pub create_paths: bool,
    /// TLS to every member (`zookeeper.client.secure=true`), `None` for plaintext.
    pub tls: Option<transport_tls::TlsConfig>,
}

impl ZkConfig {
    /// Parses a registry URL. An anyhost address (`0.0.0.0` or `anyhost=true`) is rejected
    /// with "registry address == null", as Dubbo does.
    pub fn from_url(url: &Url) -> Result<ZkConfig> {
        let host = url.host().unwrap_or("");
        if host.is_empty() || host == "0.0.0.0" || url.param_bool("anyhost", false) {
            return Err(ZkError::InvalidUrl("registry address == null".into()));
        }
        let port = if url.port() > 0 {
            url.port()
        } else {
            DEFAULT_PORT
        };
        let mut connect_string = format!("{host}:{port}");
        for b in url.param_list("backup") {
            if b.is_empty() {
                continue;
            }
            connect_string.push(',');
            connect_string.push_str(b);
            if !b.contains(':') {
                connect_string.push_str(&format!(":{DEFAULT_PORT}"));
            }
        }
        let ms = |k: &str, d: u64| -> u64 { url.param_positive_i64(k, d as i64) as u64 };
        let digest = url
            .username()
            .filter(|u| !u.is_empty())
            .map(|u| format!("{u}:{}", url.password().unwrap_or("")));
        Ok(ZkConfig {
            connect_string,
            root: paths::root(url),
            connect_timeout: Duration::from_millis(ms("timeout", DEFAULT_CONNECT_TIMEOUT_MS)),
            session_timeout: Duration::from_millis(ms("session", DEFAULT_SESSION_TIMEOUT_MS)),
            digest,
            check: url.param_bool("check", true),
            empty_protection: url.param_bool("enable-empty-protection", false),
            create_paths: url.param_bool("subscribe.create-paths", true),
            tls: transport_tls::keys::from_zookeeper(url)
                .map_err(|e| ZkError::InvalidUrl(e.to_string()))?,
        })
    }

    /// The `digest` auth bytes (`user:password`), if credentials were given.
    pub(crate) fn digest(&self) -> Option<&str> {
        self.digest.as_deref()
    }
}

impl fmt::Debug for ZkConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ZkConfig")
            .field("connect_string", &self.connect_string)
            .field("root", &self.root)
            .field("connect_timeout", &self.connect_timeout)
            .field("session_timeout", &self.session_timeout)
            .field("digest", &self.digest.as_ref().map(|_| "<redacted>"))
            .field("check", &self.check)
            .field("empty_protection", &self.empty_protection)
            .field("create_paths", &self.create_paths)
            .field("tls", &self.tls)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses() {
        let u = Url::parse(
            "zookeeper://bob:secret@10.0.0.1:2181?backup=10.0.0.2:2182,10.0.0.3&group=g&timeout=500&session=4000",
        )
        .unwrap();
        let c = ZkConfig::from_url(&u).unwrap();
        assert_eq!(
            c.connect_string,
            "10.0.0.1:2181,10.0.0.2:2182,10.0.0.3:2181"
        );
        assert_eq!(c.root, "/g");
        assert_eq!(c.connect_timeout, Duration::from_millis(500));
        assert_eq!(c.session_timeout, Duration::from_millis(4000));
        assert_eq!(c.digest(), Some("bob:secret"));
        assert!(!format!("{c:?}").contains("secret"));
        let any = Url::parse("multicast://0.0.0.0/").unwrap();
        let e = ZkConfig::from_url(&any).unwrap_err();
        assert!(e.to_string().contains("registry address == null"));
    }
}
