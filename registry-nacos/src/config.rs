//! Settings read from the registry URL
//! `nacos://[user:pass@]host:port[?backup=h2:p2,h3:p3&namespace=..&group=..&...]`.
//!
//! | param | default | meaning |
//! |---|---|---|
//! | `backup` | — | more servers (`host:port,...`); requests fail over across all of them |
//! | `namespace` | `public` | Nacos namespace id, sent as `namespaceId` on every call |
//! | `group` | `DEFAULT_GROUP` | Nacos group of every service name |
//! | `username`, `password` | user info | open-API credentials (user info wins) |
//! | `nacos.poll-interval` | 1000 ms | how often a subscribed service's instance list is polled |
//! | `nacos.scan-interval` | 30000 ms | how often wildcard/range subscriptions re-scan `service/list` |
//! | `nacos.request-timeout` | 3000 ms | per HTTP request |
//! | `nacos.beat-interval` | server's `clientBeatInterval` | fixed heartbeat interval (ms) |
//! | `nacos.register-compatible` | false | also register `category:interface[:version][:group]` |
//! | `nacos.subscribe.legacy-name` | false | also subscribe `providers[:interface][:version][:group]` |
//! | `register-consumer-url` | false | register consumer URLs too (Dubbo only registers providers) |
//! | `enable-empty-protection` | false | never publish `empty://` for providers |
//! | `nacos.transport` | `grpc` | `grpc` (Nacos 2.x/3.x, pushes) or `http` (the v1 open API, Nacos 1.x) |
//! | `nacos.grpc-port-offset` | 1000 | gRPC port = server port + this |
//! | `nacos.query-interval` | off | gRPC only: also query every subscribed service this often (ms), for changes sooner than the server's ~500 ms push merge |
//! | `application` | `dubbo-registry` | the `AppName` label of the gRPC connection |
//! | `nacos.remote.client.rpc.tls.enable` | false | gRPC over TLS (ALPN h2); with `.trustCollectionChainPath`, `.mutualAuth` + `.certChainFile` + `.certPrivateKey`, `.serverName`, `.trustAll` (see `transport_tls::keys`) |
//! | `tls.enable` | false | the HTTP open API over `https` (login, v1 transport); `tls.client.trustCertPath`, `tls.client.certPath`, `tls.client.keyPath` |

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use registry_core::Url;

use crate::error::NacosError;

/// Nacos' default group.
pub const DEFAULT_GROUP: &str = "DEFAULT_GROUP";
/// Nacos' default namespace id.
pub const DEFAULT_NAMESPACE: &str = "public";
/// Default instance-list poll interval (see `BENCHMARKS.md` for the measurements behind it).
pub const DEFAULT_POLL_INTERVAL: Duration = Duration::from_millis(1000);
/// Default re-scan interval of wildcard/range subscriptions (Dubbo's admin lookup interval).
pub const DEFAULT_SCAN_INTERVAL: Duration = Duration::from_secs(30);
/// Default timeout of one HTTP request.
pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_millis(3000);

/// A secret string (password, access token): `Debug` and `Display` print the mask of
/// [`registry_core::url::secret::MASK`], as every shown secret.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(Arc<str>);

impl Secret {
    /// Wraps a secret.
    pub fn new(s: &str) -> Self {
        Secret(Arc::from(s))
    }

    /// The secret itself; call only where it is sent to the server.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(registry_core::url::secret::MASK)
    }
}

impl fmt::Display for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(registry_core::url::secret::MASK)
    }
}

/// How the backend talks to Nacos.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Transport {
    /// Nacos 2.x/3.x gRPC (port + `nacos.grpc-port-offset`): pushes, connection-bound instances.
    Grpc,
    /// The v1 HTTP open API (Nacos 1.x, and 2.x/3.0/3.1 servers that keep it): polling and beats.
    Http,
}

/// Default gRPC port offset (Nacos' `SDK_GRPC_PORT_DEFAULT_OFFSET`).
pub const DEFAULT_GRPC_PORT_OFFSET: i32 = 1000;

/// Open-API credentials.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Credentials {
    /// User name (not secret).
    pub username: String,
    /// Password (never printed).
    pub password: Secret,
}

/// Everything the Nacos backend reads from its registry URL.
#[derive(Clone, Debug)]
pub struct NacosConfig {
    /// `host:port` of every server, the primary first.
    pub servers: Vec<String>,
    /// Namespace id sent as `namespaceId`.
    pub namespace: String,
    /// Nacos group of every service name.
    pub group: String,
    /// Open-API credentials, if any.
    pub credentials: Option<Credentials>,
    /// Instance-list poll interval.
    pub poll_interval: Duration,
    /// Wildcard/range re-scan interval.
    pub scan_interval: Duration,
    /// Per-request timeout.
    pub request_timeout: Duration,
    /// A fixed heartbeat interval overriding the server's `clientBeatInterval`.
    pub beat_interval: Option<Duration>,
    /// Also register the compatible name.
    pub register_compatible: bool,
    /// Also subscribe the legacy name.
    pub subscribe_legacy_name: bool,
    /// Register consumer URLs too.
    pub register_consumer_url: bool,
    /// Hold back `empty://` for providers.
    pub empty_protection: bool,
    /// gRPC (default) or v1 HTTP.
    pub transport: Transport,
    /// gRPC port = server port + this.
    pub grpc_port_offset: i32,
    /// gRPC: also query every subscribed service this often (off by default).
    pub query_interval: Option<Duration>,
    /// The `AppName` label of gRPC connections.
    pub app_name: String,
    /// TLS of the gRPC connections (`nacos.remote.client.rpc.tls.*`), `None` for h2c.
    pub grpc_tls: Option<transport_tls::TlsConfig>,
    /// TLS of the HTTP open API (`tls.enable`), `None` for plain HTTP.
    pub http_tls: Option<transport_tls::TlsConfig>,
}

fn millis(url: &Url, key: &str, default: Duration) -> Result<Duration, NacosError> {
    match url.param(key).filter(|v| !v.is_empty()) {
        None => Ok(default),
        Some(v) => match v.trim().parse::<u64>() {
            Ok(ms) if ms > 0 => Ok(Duration::from_millis(ms)),
            _ => Err(NacosError::InvalidConfig(format!(
                "{key}={v:?} is not a positive number of milliseconds"
            ))),
        },
    }
}

impl NacosConfig {
    /// Reads the settings from a registry URL (see the module docs for the parameters).
    pub fn from_url(url: &Url) -> Result<Self, NacosError> {
        let mut servers = Vec::new();
        match (url.host().filter(|h| !h.is_empty()), url.port()) {
            (Some(h), p) if p > 0 => servers.push(format!("{h}:{p}")),
            (Some(h), _) => servers.push(format!("{h}:8848")),
            (None, _) => return Err(NacosError::InvalidConfig(format!("{url} has no host"))),
        }
        for b in url.param_list("backup") {
            let b = b.trim();
            if b.is_empty() {
                continue;
            }
            let s = if b.contains(':') {
                b.to_owned()
            } else {
                format!("{b}:8848")
            };
            if !servers.contains(&s) {
                servers.push(s);
            }
        }
        if servers.iter().any(|s| s.starts_with("0.0.0.0:")) {
            return Err(NacosError::InvalidConfig(
                "registry address == null (0.0.0.0)".into(),
            ));
        }
        let username = url
            .username()
            .filter(|u| !u.is_empty())
            .or_else(|| url.param("username").filter(|u| !u.is_empty()));
        let password = if url.username().is_some_and(|u| !u.is_empty()) {
            url.password()
        } else {
            url.param("password")
        };
        let credentials = username.map(|u| Credentials {
            username: u.to_owned(),
            password: Secret::new(password.unwrap_or("")),
        });
        Ok(NacosConfig {
            servers,
            namespace: url
                .param("namespace")
                .filter(|v| !v.is_empty())
                .unwrap_or(DEFAULT_NAMESPACE)
                .to_owned(),
            group: url
                .param("group")
                .filter(|v| !v.is_empty())
                .unwrap_or(DEFAULT_GROUP)
                .to_owned(),
            credentials,
            poll_interval: millis(url, "nacos.poll-interval", DEFAULT_POLL_INTERVAL)?,
            scan_interval: millis(url, "nacos.scan-interval", DEFAULT_SCAN_INTERVAL)?,
            request_timeout: millis(url, "nacos.request-timeout", DEFAULT_REQUEST_TIMEOUT)?,
            beat_interval: match url.param("nacos.beat-interval").filter(|v| !v.is_empty()) {
                Some(_) => Some(millis(url, "nacos.beat-interval", DEFAULT_REQUEST_TIMEOUT)?),
                None => None,
            },
            register_compatible: url.param_bool("nacos.register-compatible", false),
            subscribe_legacy_name: url.param_bool("nacos.subscribe.legacy-name", false),
            register_consumer_url: url.param_bool("register-consumer-url", false),
            empty_protection: url.param_bool("enable-empty-protection", false),
            transport: match url.param("nacos.transport").map(str::trim) {
                None | Some("") => Transport::Grpc,
                Some(t) if t.eq_ignore_ascii_case("grpc") => Transport::Grpc,
                Some(t) if t.eq_ignore_ascii_case("http") => Transport::Http,
                Some(t) => {
                    return Err(NacosError::InvalidConfig(format!(
                        "nacos.transport={t:?}: use grpc or http"
                    )))
                }
            },
            grpc_port_offset: match url.param("nacos.grpc-port-offset").map(str::trim) {
                None | Some("") => DEFAULT_GRPC_PORT_OFFSET,
                Some(v) => v
                    .parse::<i32>()
                    .ok()
                    .filter(|o| (-65535..=65535).contains(o))
                    .ok_or_else(|| {
                        NacosError::InvalidConfig(format!(
                            "nacos.grpc-port-offset={v:?} is not a port offset"
                        ))
                    })?,
            },
            query_interval: match url.param("nacos.query-interval").filter(|v| !v.is_empty()) {
                Some(_) => Some(millis(url, "nacos.query-interval", DEFAULT_POLL_INTERVAL)?),
                None => None,
            },
            app_name: url
                .param("application")
                .filter(|v| !v.is_empty())
                .unwrap_or("dubbo-registry")
                .to_owned(),
            grpc_tls: transport_tls::keys::from_nacos(url)
                .map_err(|e| NacosError::InvalidConfig(e.to_string()))?,
            http_tls: transport_tls::keys::from_nacos_http(url)
                .map_err(|e| NacosError::InvalidConfig(e.to_string()))?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_registry_url() {
        let u = Url::parse("nacos://alice:s3cret@127.0.0.1:8848?backup=127.0.0.1:8849,10.0.0.1&namespace=dev&nacos.poll-interval=200").unwrap();
        let c = NacosConfig::from_url(&u).unwrap();
        assert_eq!(
            c.servers,
            ["127.0.0.1:8848", "127.0.0.1:8849", "10.0.0.1:8848"]
        );
        assert_eq!(c.namespace, "dev");
        assert_eq!(c.group, DEFAULT_GROUP);
        assert_eq!(c.poll_interval, Duration::from_millis(200));
        let cr = c.credentials.clone().unwrap();
        assert_eq!(cr.username, "alice");
        assert_eq!(cr.password.expose(), "s3cret");
        let dbg = format!("{c:?}");
        assert!(!dbg.contains("s3cret"), "{dbg}");
        let p = Url::parse("nacos://127.0.0.1:8848?username=bob&password=pw&group=G").unwrap();
        let c = NacosConfig::from_url(&p).unwrap();
        assert_eq!(c.credentials.unwrap().username, "bob");
        assert_eq!(c.group, "G");
        assert_eq!(c.namespace, DEFAULT_NAMESPACE);
        let bad = Url::parse("nacos://127.0.0.1:8848?nacos.poll-interval=abc").unwrap();
        assert!(NacosConfig::from_url(&bad).is_err());
        assert_eq!(c_transport("").0, Transport::Grpc);
        assert_eq!(c_transport("&nacos.transport=HTTP").0, Transport::Http);
        assert_eq!(c_transport("&nacos.grpc-port-offset=1001").1, 1001);
        let bad = Url::parse("nacos://127.0.0.1:8848?nacos.transport=udp").unwrap();
        assert!(NacosConfig::from_url(&bad).is_err());
    }

    fn c_transport(extra: &str) -> (Transport, i32) {
        let u = Url::parse(&format!("nacos://127.0.0.1:8848?a=b{extra}")).unwrap();
        let c = NacosConfig::from_url(&u).unwrap();
        (c.transport, c.grpc_port_offset)
    }
}
