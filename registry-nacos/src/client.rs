//! A small Nacos v1 open-API client over HTTP (`reqwest`): instance register / deregister /
//! beat / list, service list, login. Every call carries the namespace, fails over across the
//! configured servers (connection errors, timeouts and 5xx move on to the next server; the
//! server that answered becomes the first choice), and logs in again on a 403.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use reqwest::{Method, StatusCode};
use tracing::{debug, warn};

use crate::auth::TokenManager;
use crate::config::{NacosConfig, Secret};
use crate::error::{snippet, NacosError};
use crate::model::{BeatInfo, BeatReply, LoginReply, ServiceList};

/// The Nacos cluster name Dubbo registers into.
pub const DEFAULT_CLUSTER: &str = "DEFAULT";
/// Login endpoints, newest first: Nacos 3.x, then the 1.x/2.x one (tried on 404/405/501).
const LOGIN_PATHS: [&str; 2] = ["/nacos/v3/auth/user/login", "/nacos/v1/auth/users/login"];
const INSTANCE_PATH: &str = "/nacos/v1/ns/instance";
const BEAT_PATH: &str = "/nacos/v1/ns/instance/beat";
const LIST_PATH: &str = "/nacos/v1/ns/instance/list";
const SERVICES_PATH: &str = "/nacos/v1/ns/service/list";

/// The instance identity and data a registration sends.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InstanceSpec {
    /// Service name as stored in Nacos (already `$`-encoded).
    pub service: String,
    /// Instance IP (the URL host).
    pub ip: String,
    /// Instance port.
    pub port: i32,
    /// Metadata (all URL params plus category, protocol, path).
    pub metadata: BTreeMap<String, String>,
    /// False for a persistent instance (provider URL `ephemeral=false`): kept by the server
    /// until deregistered, no heartbeats, not bound to a gRPC connection.
    pub ephemeral: bool,
}

impl InstanceSpec {
    /// `"true"` / `"false"`, as the v1 API wants it.
    fn ephemeral_param(&self) -> &'static str {
        if self.ephemeral {
            "true"
        } else {
            "false"
        }
    }
}

/// What a beat reply said.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BeatOutcome {
    /// The interval the server asks for (`clientBeatInterval`), if it said.
    pub interval: Option<Duration>,
    /// True when the server does not know the instance (code 20404): register again.
    pub unknown_instance: bool,
}

/// HTTP client of one registry: servers, namespace, group and credentials.
#[derive(Debug)]
pub struct NacosClient {
    http: reqwest::Client,
    /// `https` with `tls.enable=true`, else `http`.
    scheme: &'static str,
    servers: Vec<String>,
    current: AtomicUsize,
    namespace: String,
    group: String,
    auth: TokenManager,
    available: AtomicBool,
    requests: AtomicU64,
    /// The v1 HTTP side's health: connected after a request reached a server, reconnecting
    /// when every server failed.
    health: registry_core::HealthReporter,
}

impl NacosClient {
    /// A client for the servers, namespace, group and credentials of `cfg`.
    pub fn new(cfg: &NacosConfig) -> Result<Self, NacosError> {
        let mut builder = reqwest::Client::builder()
            .timeout(cfg.request_timeout)
            .connect_timeout(cfg.request_timeout.min(Duration::from_secs(2)))
            .no_proxy()
            .pool_idle_timeout(Duration::from_secs(30));
        let scheme = match &cfg.http_tls {
            Some(t) => {
                // The one rustls configuration of transport_tls (CA, client certificate).
                let tls = transport_tls::TlsClient::new(t, transport_tls::Alpn::None)
                    .map_err(|e| NacosError::InvalidConfig(e.to_string()))?;
                builder = builder.tls_backend_preconfigured((**tls.rustls_config()).clone());
                "https"
            }
            None => "http",
        };
        let http = builder
            .build()
            .map_err(|e| NacosError::InvalidConfig(format!("cannot build HTTP client: {e}")))?;
        Ok(NacosClient {
            http,
            scheme,
            servers: cfg.servers.clone(),
            current: AtomicUsize::new(0),
            namespace: cfg.namespace.clone(),
            group: cfg.group.clone(),
            auth: TokenManager::new(cfg.credentials.clone()),
            available: AtomicBool::new(false),
            requests: AtomicU64::new(0),
            health: registry_core::HealthReporter::new(registry_core::RegistryHealth::connecting(
                Some(cfg.servers.join(",")),
            )),
        })
    }

    /// The namespace id sent with every call.
    pub fn namespace(&self) -> &str {
        &self.namespace
    }

    /// The Nacos group of every service name.
    pub fn group(&self) -> &str {
        &self.group
    }

    /// True when the last request reached a server.
    pub fn is_available(&self) -> bool {
        self.available.load(Ordering::Relaxed)
    }

    /// The health of the HTTP side (see [`registry_core::health`]).
    pub fn health(&self) -> tokio::sync::watch::Receiver<registry_core::RegistryHealth> {
        self.health.subscribe()
    }

    /// Marks the HTTP side closed.
    pub(crate) fn close_health(&self) {
        self.health.closed();
    }

    /// HTTP requests sent so far (logins included); for measuring the poller's load.
    pub fn request_count(&self) -> u64 {
        self.requests.load(Ordering::Relaxed)
    }

    /// `POST /nacos/v1/ns/instance`: registers (or replaces) an instance (ephemeral or
    /// persistent, as `inst.ephemeral` says).
    pub async fn register_instance(&self, inst: &InstanceSpec) -> Result<(), NacosError> {
        let metadata = serde_json::to_string(&inst.metadata).unwrap_or_else(|_| "{}".into());
        let port = inst.port.to_string();
        let q = [
            ("serviceName", inst.service.as_str()),
            ("groupName", self.group.as_str()),
            ("namespaceId", self.namespace.as_str()),
            ("ip", inst.ip.as_str()),
            ("port", port.as_str()),
            ("clusterName", DEFAULT_CLUSTER),
            ("weight", "1.0"),
            ("enabled", "true"),
            ("healthy", "true"),
            ("ephemeral", inst.ephemeral_param()),
            ("metadata", metadata.as_str()),
        ];
        self.call("instance/register", Method::POST, INSTANCE_PATH, &q, None)
            .await
            .map(drop)
    }

    /// `DELETE /nacos/v1/ns/instance` (`ephemeral` as registered). Deleting an unknown
    /// instance is not an error.
    pub async fn deregister_instance(
        &self,
        service: &str,
        ip: &str,
        port: i32,
        ephemeral: bool,
    ) -> Result<(), NacosError> {
        let port = port.to_string();
        let q = [
            ("serviceName", service),
            ("groupName", self.group.as_str()),
            ("namespaceId", self.namespace.as_str()),
            ("ip", ip),
            ("port", port.as_str()),
            ("clusterName", DEFAULT_CLUSTER),
            ("ephemeral", if ephemeral { "true" } else { "false" }),
        ];
        self.call(
            "instance/deregister",
            Method::DELETE,
            INSTANCE_PATH,
            &q,
            None,
        )
        .await
        .map(drop)
    }

    /// `PUT /nacos/v1/ns/instance/beat` with the full beat JSON (ip, port, serviceName,
    /// cluster, weight, metadata), so a server that lost the instance re-creates it whole.
    pub async fn beat(
        &self,
        inst: &InstanceSpec,
        period: Duration,
    ) -> Result<BeatOutcome, NacosError> {
        let grouped = format!("{}@@{}", self.group, inst.service);
        let info = BeatInfo {
            service_name: &grouped,
            ip: &inst.ip,
            port: inst.port,
            cluster: DEFAULT_CLUSTER,
            weight: 1.0,
            metadata: &inst.metadata,
            scheduled: false,
            period: i64::try_from(period.as_millis()).unwrap_or(i64::MAX),
            stopped: false,
        };
        let beat = serde_json::to_string(&info).unwrap_or_default();
        let port = inst.port.to_string();
        let q = [
            ("serviceName", grouped.as_str()),
            ("groupName", self.group.as_str()),
            ("namespaceId", self.namespace.as_str()),
            ("ip", inst.ip.as_str()),
            ("port", port.as_str()),
            ("clusterName", DEFAULT_CLUSTER),
        ];
        let (server, body) = self
            .call_with_server(
                "instance/beat",
                Method::PUT,
                BEAT_PATH,
                &q,
                Some(&[("beat", beat.as_str())]),
            )
            .await?;
        let reply: BeatReply = serde_json::from_str(&body).map_err(|e| NacosError::Malformed {
            server,
            op: "instance/beat",
            reason: e.to_string(),
        })?;
        Ok(BeatOutcome {
            interval: reply
                .client_beat_interval
                .filter(|ms| *ms > 0)
                .map(|ms| Duration::from_millis(ms.unsigned_abs())),
            unknown_instance: reply.code == Some(crate::model::CODE_RESOURCE_NOT_FOUND),
        })
    }

    /// `GET /nacos/v1/ns/instance/list` (all instances, healthy or not): the raw JSON reply
    /// and the server that gave it.
    pub async fn list_instances_raw(&self, service: &str) -> Result<(String, String), NacosError> {
        let q = [
            ("serviceName", service),
            ("groupName", self.group.as_str()),
            ("namespaceId", self.namespace.as_str()),
            ("healthyOnly", "false"),
        ];
        self.call_with_server("instance/list", Method::GET, LIST_PATH, &q, None)
            .await
    }

    /// One cheap authenticated request (`service/list`, one name) to check that a server is
    /// reachable and accepts the credentials and namespace.
    pub async fn probe(&self) -> Result<(), NacosError> {
        let q = [
            ("pageNo", "1"),
            ("pageSize", "1"),
            ("groupName", self.group.as_str()),
            ("namespaceId", self.namespace.as_str()),
        ];
        self.call("service/list", Method::GET, SERVICES_PATH, &q, None)
            .await
            .map(drop)
    }

    /// Every service name of the group (`service/list`, paged by `page_size`).
    pub async fn list_services(&self, page_size: usize) -> Result<Vec<String>, NacosError> {
        let mut out = Vec::new();
        let size = page_size.max(1).to_string();
        for page in 1usize.. {
            let page_s = page.to_string();
            let q = [
                ("pageNo", page_s.as_str()),
                ("pageSize", size.as_str()),
                ("groupName", self.group.as_str()),
                ("namespaceId", self.namespace.as_str()),
            ];
            let (server, body) = self
                .call_with_server("service/list", Method::GET, SERVICES_PATH, &q, None)
                .await?;
            let list: ServiceList =
                serde_json::from_str(&body).map_err(|e| NacosError::Malformed {
                    server,
                    op: "service/list",
                    reason: e.to_string(),
                })?;
            let got = list.doms.len();
            out.extend(list.doms);
            if got == 0 || out.len() >= list.count || got < page_size {
                break;
            }
        }
        Ok(out)
    }

    async fn call(
        &self,
        op: &'static str,
        method: Method,
        path: &str,
        query: &[(&str, &str)],
        form: Option<&[(&str, &str)]>,
    ) -> Result<String, NacosError> {
        self.call_with_server(op, method, path, query, form)
            .await
            .map(|(_, b)| b)
    }

    /// Sends one request, failing over across the servers; returns the server and the body.
    async fn call_with_server(
        &self,
        op: &'static str,
        method: Method,
        path: &str,
        query: &[(&str, &str)],
        form: Option<&[(&str, &str)]>,
    ) -> Result<(String, String), NacosError> {
        let n = self.servers.len();
        let start = self.current.load(Ordering::Relaxed) % n.max(1);
        let mut last = NacosError::Connect {
            server: String::new(),
            reason: "no servers".into(),
        };
        for i in 0..n {
            let idx = (start + i) % n;
            let server = &self.servers[idx];
            match self
                .call_server(server, op, &method, path, query, form)
                .await
            {
                Ok(body) => {
                    self.current.store(idx, Ordering::Relaxed);
                    self.available.store(true, Ordering::Relaxed);
                    self.health.connected(server);
                    return Ok((server.clone(), body));
                }
                Err(e) if e.should_fail_over() => {
                    debug!(server = %server, op, error = %e, "nacos request failed, trying the next server");
                    last = e;
                }
                Err(e) => {
                    // The server answered: it is reachable even though it said no.
                    self.available.store(true, Ordering::Relaxed);
                    self.health.connected(server);
                    return Err(e);
                }
            }
        }
        self.available.store(false, Ordering::Relaxed);
        self.health.reconnecting(&last.to_string());
        Err(last)
    }

    async fn call_server(
        &self,
        server: &str,
        op: &'static str,
        method: &Method,
        path: &str,
        query: &[(&str, &str)],
        form: Option<&[(&str, &str)]>,
    ) -> Result<String, NacosError> {
        let mut token = self.token(server).await?;
        for attempt in 0..2 {
            let mut req = self
                .http
                .request(method.clone(), format!("{}://{server}{path}", self.scheme))
                .query(query);
            if let Some(f) = form {
                req = req.form(f);
            }
            if let Some(t) = &token {
                req = req.bearer_auth(t.expose());
            }
            self.requests.fetch_add(1, Ordering::Relaxed);
            let resp = req.send().await.map_err(|e| classify(server, op, &e))?;
            let status = resp.status();
            let body = resp.text().await.map_err(|e| classify(server, op, &e))?;
            if status.is_success() {
                return Ok(body);
            }
            if matches!(status, StatusCode::FORBIDDEN | StatusCode::UNAUTHORIZED) {
                if let (0, Some(t)) = (attempt, &token) {
                    // The token expired or the server restarted and forgot it: log in again.
                    debug!(
                        server,
                        op, "nacos refused the access token, logging in again"
                    );
                    self.auth.invalidate(t);
                    token = self.token(server).await?;
                    continue;
                }
                return Err(NacosError::Auth {
                    server: server.to_owned(),
                    op,
                    status: status.as_u16(),
                });
            }
            let body = snippet(&body);
            return Err(if status.is_server_error() {
                NacosError::Server {
                    server: server.to_owned(),
                    op,
                    status: status.as_u16(),
                    body,
                }
            } else {
                NacosError::Rejected {
                    server: server.to_owned(),
                    op,
                    status: status.as_u16(),
                    body,
                }
            });
        }
        Err(NacosError::Auth {
            server: server.to_owned(),
            op,
            status: 403,
        })
    }

    /// True when the registry URL carries credentials.
    pub(crate) fn has_credentials(&self) -> bool {
        self.auth.credentials().is_some()
    }

    /// The access token (logging in over HTTP when needed, failing over across the servers);
    /// `None` without credentials. Used by the gRPC transport.
    pub(crate) async fn access_token(&self) -> Result<Option<Secret>, NacosError> {
        if self.auth.credentials().is_none() {
            return Ok(None);
        }
        if let Some(t) = self.auth.current() {
            return Ok(Some(t));
        }
        let n = self.servers.len();
        let start = self.current.load(Ordering::Relaxed) % n.max(1);
        let mut last = NacosError::Connect {
            server: String::new(),
            reason: "no servers".into(),
        };
        for i in 0..n {
            let idx = (start + i) % n;
            match self.token(&self.servers[idx]).await {
                Ok(t) => {
                    self.current.store(idx, Ordering::Relaxed);
                    return Ok(t);
                }
                Err(e) if e.should_fail_over() => last = e,
                Err(e) => return Err(e),
            }
        }
        Err(last)
    }

    /// Forgets `token` after the server refused it (403), so the next call logs in again.
    pub(crate) fn invalidate_token(&self, token: &Secret) {
        self.auth.invalidate(token);
    }

    /// The access token to send, logging in when needed (`None` without credentials).
    async fn token(&self, server: &str) -> Result<Option<Secret>, NacosError> {
        let Some(creds) = self.auth.credentials() else {
            return Ok(None);
        };
        if let Some(t) = self.auth.current() {
            return Ok(Some(t));
        }
        let _guard = self.auth.login_lock().lock().await;
        if let Some(t) = self.auth.current() {
            return Ok(Some(t));
        }
        let op = "auth/login";
        let form = [
            ("username", creds.username.as_str()),
            ("password", creds.password.expose()),
        ];
        let mut found = None;
        for (i, path) in LOGIN_PATHS.into_iter().enumerate() {
            let last = i + 1 == LOGIN_PATHS.len();
            self.requests.fetch_add(1, Ordering::Relaxed);
            let resp = self
                .http
                .post(format!("{}://{server}{path}", self.scheme))
                .query(&[("username", creds.username.as_str())])
                .form(&form)
                .send()
                .await
                .map_err(|e| classify(server, op, &e))?;
            let status = resp.status();
            // 404/405/501: no such endpoint (a 2.x server). A server with auth on may also
            // refuse an unknown path with 401/403: try the older endpoint before giving up.
            if !last
                && matches!(
                    status,
                    StatusCode::NOT_FOUND
                        | StatusCode::METHOD_NOT_ALLOWED
                        | StatusCode::NOT_IMPLEMENTED
                        | StatusCode::UNAUTHORIZED
                        | StatusCode::FORBIDDEN
                )
            {
                debug!(
                    server,
                    path,
                    status = status.as_u16(),
                    "nacos login endpoint missing, trying the older one"
                );
                continue;
            }
            let body = resp.text().await.map_err(|e| classify(server, op, &e))?;
            found = Some((status, body));
            break;
        }
        let Some((status, body)) = found else {
            return Err(NacosError::Rejected {
                server: server.to_owned(),
                op,
                status: 404,
                body: "no login endpoint (tried /nacos/v3/auth/user/login and /nacos/v1/auth/users/login)".into(),
            });
        };
        if matches!(status, StatusCode::FORBIDDEN | StatusCode::UNAUTHORIZED) {
            warn!(server, user = %creds.username, "nacos login refused");
            return Err(NacosError::Auth {
                server: server.to_owned(),
                op,
                status: status.as_u16(),
            });
        }
        if !status.is_success() {
            // Never echo a login reply: keep the body out of the error.
            return Err(if status.is_server_error() {
                NacosError::Server {
                    server: server.to_owned(),
                    op,
                    status: status.as_u16(),
                    body: String::new(),
                }
            } else {
                NacosError::Rejected {
                    server: server.to_owned(),
                    op,
                    status: status.as_u16(),
                    body: String::new(),
                }
            });
        }
        let reply: LoginReply = serde_json::from_str(&body).map_err(|_| NacosError::Malformed {
            server: server.to_owned(),
            op,
            reason: "not a login reply".into(),
        })?;
        let Some(tok) = reply.access_token.filter(|t| !t.is_empty()) else {
            return Err(NacosError::Malformed {
                server: server.to_owned(),
                op,
                reason: "no accessToken".into(),
            });
        };
        let ttl = Duration::from_secs(
            reply
                .token_ttl
                .filter(|t| *t > 0)
                .map_or(18_000, i64::unsigned_abs),
        );
        let secret = Secret::new(&tok);
        self.auth.store(secret.clone(), ttl);
        debug!(server, ttl_secs = ttl.as_secs(), "nacos login ok");
        Ok(Some(secret))
    }
}

fn classify(server: &str, op: &'static str, e: &reqwest::Error) -> NacosError {
    if e.is_timeout() {
        return NacosError::Timeout {
            server: server.to_owned(),
            op,
        };
    }
    // reqwest's own message names the request URL (query params included): use only the kind
    // and the underlying causes.
    let mut reason = String::from(if e.is_connect() {
        "connect failed"
    } else if e.is_body() || e.is_decode() {
        "reading the reply failed"
    } else {
        "request failed"
    });
    let mut src = std::error::Error::source(e);
    while let Some(x) = src {
        reason.push_str(": ");
        reason.push_str(&x.to_string());
        src = x.source();
    }
    NacosError::Connect {
        server: server.to_owned(),
        reason,
    }
}
