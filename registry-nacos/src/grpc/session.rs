//! The gRPC session: **one task owns the connection** (as Nacos's `RpcClient`). It connects
//! (rotating across the server list with a 100 ms … 5 s backoff), redoes registrations,
//! subscriptions and config listeners after every (re)connect, answers every server request on the
//! stream (pushes acked with their `requestId`, ClientDetection, ConnectReset, SetupAck), sends a
//! HealthCheck after 5 s without traffic, and applies every snapshot in the order it arrived:
//! pushes, subscribe replies and config changes are all handled inside this one task, so a
//! subscription never sees an older list after a newer one.
//!
//! Other tasks send their own unary requests ([`Shared::request_expect`]) on the current [`Link`]
//! (registrations, lookups, service-list scans); a 301 or a transport error there asks the owner
//! to reconnect.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use registry_core::backoff::Backoff;
use tokio::sync::{mpsc, watch};
use tokio_util::sync::CancellationToken;
use tracing::{debug, info, warn};

use super::config::ConfigState;
use super::fuzzy::FuzzyState;
use super::link::{Inbound, Link, LinkSettings, Opened, Reply};
use super::naming::NamingState;
use super::proto::Payload;
use super::wire::{self, Ack, ConnectReset, ServerRequestHead, CODE_NO_RIGHT};
use crate::client::NacosClient;
use crate::config::{NacosConfig, Secret};
use crate::error::NacosError;

/// Idle time after which a HealthCheckRequest is sent (the Java client's `connectionKeepAlive`).
const KEEPALIVE_IDLE: Duration = Duration::from_secs(5);
/// The owner task's timer period (keepalive and redo checks).
const TICK: Duration = Duration::from_millis(500);
/// How often pending redo work (failed registrations/subscriptions) is retried.
const REDO_INTERVAL: Duration = Duration::from_secs(3);
/// Most commands waiting for the owner task (see `Shared::command`).
pub(crate) const COMMAND_QUEUE: usize = 1024;

/// Work the owner task does for other tasks.
#[derive(Debug)]
pub(crate) enum Command {
    /// The link of this generation failed: replace it.
    Reconnect(u64),
    /// Subscribe a service (a new watcher).
    Subscribe(String),
    /// Listen to a config key (a new watcher).
    Listen(super::config::ConfigKey),
    /// Start a fuzzy watch (a new group-key pattern).
    FuzzyWatch(String),
}

/// Request counters of one session (for measurements).
#[derive(Debug, Default)]
pub struct GrpcStats {
    /// Unary requests sent (all types).
    pub requests: AtomicU64,
    /// Requests that return an instance list (`SubscribeServiceRequest`, `ServiceQueryRequest`).
    pub instance_requests: AtomicU64,
    /// `HealthCheckRequest`s sent after the handshake.
    pub health_checks: AtomicU64,
    /// Server pushes received (`NotifySubscriberRequest`, `ConfigChangeNotifyRequest`).
    pub pushes: AtomicU64,
    /// Successful connections (1 + reconnects).
    pub connections: AtomicU64,
    /// Wall-clock time (µs since the Unix epoch) at which the session task read the last
    /// `NotifySubscriberRequest` (0: none yet); for telling the server's push delay apart
    /// from the client's own.
    pub last_push_unix_micros: AtomicU64,
}

/// State shared by the owner task and the callers.
#[derive(Debug)]
pub(crate) struct Shared {
    pub(crate) cfg: NacosConfig,
    settings: LinkSettings,
    pub(crate) http: Arc<NacosClient>,
    link: watch::Sender<Option<Link>>,
    cmd: mpsc::Sender<Command>,
    pub(crate) naming: NamingState,
    pub(crate) fuzzy: FuzzyState,
    pub(crate) config: ConfigState,
    pub(crate) cancel: CancellationToken,
    pub(crate) stats: GrpcStats,
    last_activity: Mutex<Instant>,
    last_error: Mutex<Option<NacosError>>,
    /// The connection's health: the server in use, losses and moves to another server.
    pub(crate) health: registry_core::HealthReporter,
}

/// Owns the session's task: dropping it ends the task and closes the connection.
#[derive(Debug)]
pub(crate) struct Session {
    pub(crate) shared: Arc<Shared>,
}

impl Drop for Session {
    fn drop(&mut self) {
        self.shared.cancel.cancel();
    }
}

impl Session {
    /// Starts a session for `module` (`naming` or `config`); connecting happens in the
    /// background, requests wait for it up to the request timeout.
    pub(crate) fn start(
        cfg: &NacosConfig,
        http: Arc<NacosClient>,
        module: &'static str,
    ) -> Result<Self, NacosError> {
        let rt = tokio::runtime::Handle::try_current().map_err(|_| {
            NacosError::InvalidConfig(
                "the nacos gRPC transport must be created inside a tokio runtime".into(),
            )
        })?;
        let (cmd, cmd_rx) = mpsc::channel(COMMAND_QUEUE);
        let tls = match &cfg.grpc_tls {
            Some(t) => Some(
                transport_tls::TlsClient::new(t, transport_tls::Alpn::H2)
                    .map_err(|e| NacosError::InvalidConfig(e.to_string()))?,
            ),
            None => None,
        };
        let settings = LinkSettings {
            tls,
            grpc_port_offset: cfg.grpc_port_offset,
            timeout: cfg.request_timeout,
            module,
            app_name: cfg.app_name.clone(),
            tenant: (module == "config").then(|| cfg.namespace.clone()),
        };
        let shared = Arc::new(Shared {
            cfg: cfg.clone(),
            settings,
            http,
            link: watch::channel(None).0,
            cmd,
            naming: NamingState::default(),
            fuzzy: FuzzyState::default(),
            config: ConfigState::default(),
            cancel: CancellationToken::new(),
            stats: GrpcStats::default(),
            last_activity: Mutex::new(Instant::now()),
            last_error: Mutex::new(None),
            health: registry_core::HealthReporter::new(registry_core::RegistryHealth::connecting(
                Some(cfg.servers.join(",")),
            )),
        });
        rt.spawn(run(shared.clone(), cmd_rx));
        Ok(Session { shared })
    }
}

impl Shared {
    /// Queues work for the owner task. When [`COMMAND_QUEUE`] commands wait already (the
    /// owner is connecting, or busy), the command is dropped: the periodic redo subscribes
    /// and listens to everything known, and one queued reconnect is as good as many.
    pub(crate) fn command(&self, c: Command) {
        if let Err(mpsc::error::TrySendError::Full(c)) = self.cmd.try_send(c) {
            debug!(command = ?c, "nacos grpc command queue full; the redo will cover it");
        }
    }

    /// Commands waiting for the owner task.
    #[cfg(test)]
    pub(crate) fn queued_commands(&self) -> usize {
        self.cmd.max_capacity() - self.cmd.capacity()
    }

    /// True while a connection is established.
    pub(crate) fn is_connected(&self) -> bool {
        self.link.borrow().is_some()
    }

    fn touch(&self) {
        *self.last_activity.lock() = Instant::now();
    }

    /// True when `link` is the current connection.
    pub(crate) fn is_current(&self, link: &Link) -> bool {
        self.link
            .borrow()
            .as_ref()
            .is_some_and(|l| l.generation == link.generation)
    }

    /// The current link, waiting up to the request timeout for one.
    pub(crate) async fn current_link(&self, op: &'static str) -> Result<Link, NacosError> {
        let mut rx = self.link.subscribe();
        let wait = tokio::time::timeout(self.cfg.request_timeout, rx.wait_for(Option::is_some));
        tokio::select! {
            r = wait => match r {
                Ok(Ok(l)) => l.clone().ok_or(NacosError::Destroyed),
                Ok(Err(_)) => Err(NacosError::Destroyed),
                Err(_) => Err(self.last_error.lock().clone().unwrap_or_else(|| NacosError::Timeout {
                    server: self.cfg.servers.join(","),
                    op,
                })),
            },
            _ = self.cancel.cancelled() => Err(NacosError::Destroyed),
        }
    }

    async fn token(&self) -> Result<Option<Secret>, NacosError> {
        if self.http.has_credentials() {
            self.http.access_token().await
        } else {
            Ok(None)
        }
    }

    /// A unary request on `link`, with the access token; re-logs in once on 403, and asks
    /// for a reconnect on 301 or a transport error.
    pub(crate) async fn request_on<B: serde::Serialize>(
        &self,
        link: &Link,
        op: &'static str,
        ty: &str,
        body: &B,
    ) -> Result<Reply, NacosError> {
        let mut token = self.token().await?;
        for attempt in 0..2 {
            self.stats.requests.fetch_add(1, Ordering::Relaxed);
            let r = link
                .call(op, ty, body, token.as_ref().map(Secret::expose))
                .await;
            match r {
                Ok(reply) => {
                    self.touch();
                    return Ok(reply);
                }
                Err(NacosError::Grpc { code, .. }) if code == CODE_NO_RIGHT && attempt == 0 => {
                    let Some(t) = &token else {
                        return Err(r.err().unwrap_or(NacosError::Destroyed));
                    };
                    debug!(
                        op,
                        "nacos refused the access token over grpc; logging in again"
                    );
                    self.http.invalidate_token(t);
                    token = self.token().await?;
                }
                Err(e) => {
                    if e.needs_reconnect() {
                        self.command(Command::Reconnect(link.generation));
                    }
                    return Err(e);
                }
            }
        }
        Err(NacosError::Destroyed)
    }

    /// [`Shared::request_on`] on the current link (waiting up to the request timeout for
    /// one), also checking the reply's type.
    pub(crate) async fn request_expect<B: serde::Serialize>(
        &self,
        op: &'static str,
        ty: &str,
        body: &B,
        reply_ty: &str,
    ) -> Result<Reply, NacosError> {
        let link = self.current_link(op).await?;
        let r = self.request_on(&link, op, ty, body).await?;
        expect_type(&link.server, op, r, reply_ty)
    }
}

/// `reply` if it has type `want`, else a clear error.
pub(crate) fn expect_type(
    server: &str,
    op: &'static str,
    reply: Reply,
    want: &str,
) -> Result<Reply, NacosError> {
    if reply.ty == want {
        Ok(reply)
    } else {
        Err(NacosError::Malformed {
            server: server.to_owned(),
            op,
            reason: format!("unexpected reply type {:?} (wanted {want})", reply.ty),
        })
    }
}

/// Aborts a task when dropped.
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Connects to the first server that completes the handshake, starting at `*next`.
async fn connect(shared: &Shared, next: &mut usize, generation: &mut u64) -> Option<Opened> {
    let servers = &shared.cfg.servers;
    let n = servers.len().max(1);
    // The Java client's pacing between rounds over the servers: 100 ms more each round, at
    // most 5 s.
    let mut rounds = Backoff::linear(Duration::from_millis(100), Duration::from_secs(5)).attempts();
    let mut warned = false;
    loop {
        for i in 0..n {
            let idx = (*next + i) % n;
            let Some(server) = servers.get(idx) else {
                continue;
            };
            *generation += 1;
            let attempt = tokio::select! {
                r = Link::open(server, *generation, &shared.settings) => r,
                _ = shared.cancel.cancelled() => return None,
            };
            match attempt {
                Ok(o) => {
                    *next = idx;
                    *shared.last_error.lock() = None;
                    return Some(o);
                }
                Err(e) => {
                    if warned {
                        debug!(server = %server, error = %e, "nacos grpc connect failed again");
                    } else {
                        warn!(server = %server, error = %e, "nacos grpc connect failed; retrying with backoff");
                        warned = true;
                    }
                    shared.health.error(&e.to_string());
                    *shared.last_error.lock() = Some(e);
                }
            }
        }
        let pause = rounds.next_delay();
        tokio::select! {
            _ = tokio::time::sleep(pause) => {}
            _ = shared.cancel.cancelled() => return None,
        }
    }
}

/// The owner task.
async fn run(shared: Arc<Shared>, mut cmds: mpsc::Receiver<Command>) {
    let mut next = 0usize;
    let mut generation = 0u64;
    loop {
        let Some(Opened {
            link,
            mut inbound,
            reader,
            early,
        }) = connect(&shared, &mut next, &mut generation).await
        else {
            break;
        };
        let _reader = AbortOnDrop(reader);
        shared.stats.connections.fetch_add(1, Ordering::Relaxed);
        shared.touch();
        shared.link.send_replace(Some(link.clone()));
        shared.health.connected(&link.server);
        info!(server = %link.server, connection_id = %link.connection_id, "nacos grpc connected");
        let mut reset = None;
        for p in early {
            if let Some(r) = handle_server_request(&shared, &link, p).await {
                reset = Some(r);
            }
        }
        if link.generation > 1 {
            shared.naming.on_reconnect();
        }
        shared.naming.redo(&shared, &link).await;
        shared.fuzzy.redo(&shared, &link).await;
        shared.config.redo(&shared, &link).await;
        // 500 ms, or the query interval when that is shorter.
        let period = shared
            .cfg
            .query_interval
            .map_or(TICK, |q| q.min(TICK))
            .max(Duration::from_millis(10));
        let mut tick = tokio::time::interval(period);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut last_redo = Instant::now();
        let mut last_query = Instant::now();
        let why: String = loop {
            if let Some(target) = reset.take() {
                next = reset_target(&shared.cfg.servers, next, target);
                break "the server asked to reconnect (ConnectResetRequest)".into();
            }
            tokio::select! {
                _ = shared.cancel.cancelled() => {
                    shared.link.send_replace(None);
                    shared.health.closed();
                    return;
                }
                m = inbound.recv() => match m {
                    Some(Inbound::Message(p)) => {
                        shared.touch();
                        reset = handle_server_request(&shared, &link, p).await;
                    }
                    Some(Inbound::Closed(why)) => break why,
                    None => break "stream reader ended".into(),
                },
                c = cmds.recv() => match c {
                    Some(Command::Reconnect(g)) if g == link.generation => {
                        break "the connection failed or the server no longer knows it".into();
                    }
                    Some(Command::Reconnect(_)) => {}
                    Some(Command::Subscribe(s)) => shared.naming.subscribe_one(&shared, &link, &s).await,
                    Some(Command::Listen(k)) => shared.config.listen_one(&shared, &link, &k).await,
                    Some(Command::FuzzyWatch(p)) => shared.fuzzy.watch_one(&shared, &link, &p).await,
                    None => return,
                },
                _ = tick.tick() => {
                    shared.naming.release_held(&shared, &link).await;
                    let idle = shared.last_activity.lock().elapsed();
                    if idle >= KEEPALIVE_IDLE {
                        if let Err(e) = keepalive(&shared, &link).await {
                            break format!("health check failed: {e}");
                        }
                    }
                    if last_redo.elapsed() >= REDO_INTERVAL {
                        last_redo = Instant::now();
                        shared.naming.sweep(&shared, &link).await;
                        shared.naming.redo(&shared, &link).await;
                        shared.fuzzy.sweep(&shared, &link).await;
                        shared.fuzzy.redo(&shared, &link).await;
                        shared.config.sweep(&shared, &link).await;
                        shared.config.redo(&shared, &link).await;
                    }
                    if let Some(q) = shared.cfg.query_interval {
                        if last_query.elapsed() >= q {
                            last_query = Instant::now();
                            shared.naming.query_all(&shared, &link).await;
                        }
                    }
                }
            }
        };
        shared.link.send_replace(None);
        shared
            .health
            .reconnecting(&format!("lost {}: {why}", link.server));
        shared.naming.on_disconnect();
        shared.fuzzy.on_disconnect();
        shared.config.on_disconnect();
        warn!(server = %link.server, reason = %why, "nacos grpc connection lost; reconnecting (lists are kept)");
    }
    shared.link.send_replace(None);
    shared.health.closed();
}

/// Three HealthChecks (3 s timeout each, random pause ≤ 500 ms between) before giving up.
async fn keepalive(shared: &Shared, link: &Link) -> Result<(), NacosError> {
    let mut last = None;
    for i in 0..3 {
        if i > 0 {
            tokio::time::sleep(Duration::from_millis(fastrand::u64(0..500))).await;
        }
        shared.stats.health_checks.fetch_add(1, Ordering::Relaxed);
        match link.health_check().await {
            Ok(()) => {
                shared.touch();
                return Ok(());
            }
            Err(e) if e.needs_reconnect() && !matches!(e, NacosError::Connect { .. }) => {
                return Err(e)
            }
            Err(e) => last = Some(e),
        }
    }
    Err(last.unwrap_or(NacosError::Destroyed))
}

/// Where to reconnect after a ConnectResetRequest: the named server if it is in the list,
/// else the next one.
fn reset_target(servers: &[String], current: usize, target: Option<String>) -> usize {
    target
        .and_then(|t| servers.iter().position(|s| *s == t))
        .unwrap_or((current + 1) % servers.len().max(1))
}

/// Answers one server request; `Some` when the server asked to reconnect (with its target).
async fn handle_server_request(shared: &Shared, link: &Link, p: Payload) -> Option<Option<String>> {
    let ty = p.type_name().to_owned();
    let json = p.json();
    let head: ServerRequestHead = match serde_json::from_slice(json) {
        Ok(h) => h,
        Err(e) => {
            warn!(server = %link.server, ty = %ty, error = %e, "nacos sent a server request that is not JSON; ignored");
            return None;
        }
    };
    let id = head.request_id.as_deref();
    let (reply_ty, ok, reset) = match ty.as_str() {
        "NotifySubscriberRequest" => {
            shared.stats.pushes.fetch_add(1, Ordering::Relaxed);
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| u64::try_from(d.as_micros()).unwrap_or(u64::MAX));
            shared
                .stats
                .last_push_unix_micros
                .store(now, Ordering::Relaxed);
            shared.naming.on_push(&shared.cfg.group, json);
            ("NotifySubscriberResponse", true, None)
        }
        "ClientDetectionRequest" => ("ClientDetectionResponse", true, None),
        // The Java client answers both fuzzy-watch pushes with this type.
        "NamingFuzzyWatchSyncRequest" => {
            shared.stats.pushes.fetch_add(1, Ordering::Relaxed);
            shared.fuzzy.on_sync(json);
            ("NamingFuzzyWatchChangeNotifyResponse", true, None)
        }
        "NamingFuzzyWatchChangeNotifyRequest" => {
            shared.stats.pushes.fetch_add(1, Ordering::Relaxed);
            shared.fuzzy.on_change(json);
            ("NamingFuzzyWatchChangeNotifyResponse", true, None)
        }
        "ConnectResetRequest" => {
            let r: ConnectReset = serde_json::from_slice(json).unwrap_or_default();
            let target = match (r.server_ip.filter(|s| !s.is_empty()), r.server_port) {
                (Some(ip), Some(port)) => {
                    let port = match port {
                        serde_json::Value::String(s) => s,
                        v => v.to_string(),
                    };
                    Some(format!("{ip}:{port}"))
                }
                _ => None,
            };
            ("ConnectResetResponse", true, Some(target))
        }
        "SetupAckRequest" => return None,
        "ConfigChangeNotifyRequest" => {
            shared.stats.pushes.fetch_add(1, Ordering::Relaxed);
            // Ack first: the query below can take a round trip.
            let ack = ack_json(true, id);
            if let Err(e) = link.send_stream("ConfigChangeNotifyResponse", ack).await {
                warn!(server = %link.server, error = %e, "cannot answer a nacos push; reconnecting");
                shared.command(Command::Reconnect(link.generation));
                return None;
            }
            shared.config.on_notify(shared, link, json).await;
            return None;
        }
        other => {
            warn!(server = %link.server, ty = %other, "nacos sent an unknown server request; answered with an error");
            ("ErrorResponse", false, None)
        }
    };
    if let Err(e) = link.send_stream(reply_ty, ack_json(ok, id)).await {
        // A stream that takes no replies is dead: a new connection redoes everything.
        warn!(server = %link.server, error = %e, "cannot answer a nacos server request; reconnecting");
        shared.command(Command::Reconnect(link.generation));
    }
    reset
}

fn ack_json(ok: bool, id: Option<&str>) -> Vec<u8> {
    let a = Ack {
        result_code: if ok { wire::SUCCESS } else { 500 },
        error_code: if ok { 0 } else { wire::CODE_NO_HANDLER },
        request_id: id,
        message: (!ok).then_some("request type not supported by this client"),
    };
    serde_json::to_vec(&a).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reset_targets() {
        let s = vec!["a:1".to_owned(), "b:2".to_owned()];
        assert_eq!(reset_target(&s, 0, Some("b:2".into())), 1);
        assert_eq!(reset_target(&s, 0, Some("c:3".into())), 1);
        assert_eq!(reset_target(&s, 1, None), 0);
    }

    /// The owner task reads commands only while connected: while it is not (no server
    /// here), the queue stays bounded.
    #[tokio::test]
    async fn the_command_queue_is_bounded() {
        let url =
            registry_core::Url::parse("nacos://127.0.0.1:1?nacos.request-timeout=200").unwrap();
        let cfg = crate::config::NacosConfig::from_url(&url).unwrap();
        let http = Arc::new(crate::client::NacosClient::new(&cfg).unwrap());
        let session = Session::start(&cfg, http, "naming").unwrap();
        for i in 0..(4 * COMMAND_QUEUE) {
            session
                .shared
                .command(Command::Subscribe(format!("svc-{i}")));
        }
        assert!(session.shared.queued_commands() <= COMMAND_QUEUE);
    }

    #[test]
    fn acks_echo_the_request_id() {
        let v: serde_json::Value = serde_json::from_slice(&ack_json(true, Some("42"))).unwrap();
        assert_eq!(v["resultCode"], 200);
        assert_eq!(v["requestId"], "42");
        let v: serde_json::Value = serde_json::from_slice(&ack_json(false, None)).unwrap();
        assert_eq!(v["errorCode"], 302);
    }
}
