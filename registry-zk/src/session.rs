//! The connection supervisor: one ZooKeeper session at a time, its state published to every
//! watch task, a new session after expiry.
//!
//! [`ConnState::epoch`] increases on every `SyncConnected` (a reconnect of the same session or
//! a new session): watch tasks then re-add their persistent watch (zookeeper-client 0.11.2
//! does not re-send persistent watches after a reconnect) and re-list. [`ConnState::session_gen`]
//! increases only with a new session: ephemeral registrations are gone and are re-created.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use registry_core::backoff::Backoff;

use parking_lot::Mutex;
use registry_core::{HealthReporter, RegistryHealth};
use tokio::sync::watch;
use tokio_util::sync::{CancellationToken, DropGuard};
use zookeeper_client::{Acls, Client, CreateMode, SessionState};

use crate::config::ZkConfig;
use crate::error::{Result, ZkError};

/// What watch tasks see of the connection.
#[derive(Clone, Debug, Default)]
pub(crate) struct ConnState {
    /// The current session's client; `None` while no session exists.
    pub client: Option<Client>,
    /// Increases with every new session.
    pub session_gen: u64,
    /// Increases with every (re)connect.
    pub epoch: u64,
    /// True between `SyncConnected` and the next `Disconnected`/expiry.
    pub connected: bool,
}

/// One znode this client keeps registered.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Registration {
    /// Ephemeral (dies with the session) or persistent.
    pub ephemeral: bool,
    /// The node's data (empty for Dubbo's interface-level registrations).
    pub data: Arc<[u8]>,
}

impl Registration {
    /// A registration without data.
    pub(crate) fn empty(ephemeral: bool) -> Self {
        Registration {
            ephemeral,
            data: Arc::from(Vec::new()),
        }
    }
}

/// State shared by the backend, its supervisor and its watch tasks.
#[derive(Debug)]
pub(crate) struct Shared {
    pub cfg: ZkConfig,
    pub conn: watch::Sender<ConnState>,
    pub generation: watch::Sender<u64>,
    /// Registered znodes, re-created after reconnects and new sessions.
    pub registered: Mutex<BTreeMap<String, Registration>>,
    pub cancel: CancellationToken,
    /// The connection's health (server: the connect string; the client does not say which
    /// member it is connected to).
    pub health: HealthReporter,
}

impl Shared {
    pub(crate) fn acls(&self) -> Acls<'static> {
        if self.cfg.digest().is_some() {
            Acls::creator_all()
        } else {
            Acls::anyone_all()
        }
    }

    /// The current client when connected.
    pub(crate) fn client(&self) -> Result<Client> {
        if self.cancel.is_cancelled() {
            return Err(ZkError::Destroyed);
        }
        let st = self.conn.borrow();
        match (&st.client, st.connected) {
            (Some(c), true) => Ok(c.clone()),
            _ => Err(ZkError::Disconnected {
                address: self.cfg.connect_string.clone(),
            }),
        }
    }
}

/// Opens a session (bounded by the connect timeout); over TLS when the URL says so.
pub(crate) async fn open_session(cfg: &ZkConfig) -> Result<Client> {
    let mut c = Client::connector().with_session_timeout(cfg.session_timeout);
    if let Some(d) = cfg.digest() {
        c = c.with_auth("digest", d.as_bytes());
    }
    let not_connected = || ZkError::NotConnected {
        address: cfg.connect_string.clone(),
        timeout_ms: cfg.connect_timeout.as_millis() as u64,
    };
    let tls_options = match &cfg.tls {
        Some(tls) => Some(tls_options(cfg, tls)?),
        None => None,
    };
    let connect = async {
        match tls_options {
            None => c.connect(&cfg.connect_string).await,
            Some(options) => {
                c = c.with_tls(options);
                c.secure_connect(&cfg.connect_string).await
            }
        }
    };
    let failed = match tokio::time::timeout(cfg.connect_timeout, connect).await {
        Ok(Ok(client)) => return Ok(client),
        Ok(Err(e)) => {
            tracing::debug!(error = %e, "zookeeper connect failed");
            not_connected()
        }
        Err(_) => not_connected(),
    };
    // The client only says it could not connect; over TLS, a handshake of our own says why.
    if let Some(tls) = &cfg.tls {
        if let Some(e) = crate::tls_probe::explain(cfg, tls).await {
            return Err(e);
        }
    }
    Err(failed)
}

/// The ZooKeeper client's TLS options from the URL's settings (the PEM files read through
/// `transport_tls`, so a bad file gives the same error as on any other connection).
fn tls_options(
    cfg: &ZkConfig,
    tls: &transport_tls::TlsConfig,
) -> Result<zookeeper_client::TlsOptions> {
    let failed = |reason: String| ZkError::Tls {
        address: cfg.connect_string.clone(),
        reason,
        retryable: false,
    };
    // The ZooKeeper client builds its rustls configuration with the process's default
    // crypto provider.
    transport_tls::install_default_provider();
    let pem = transport_tls::pem_texts(tls, "zookeeper.ssl.trustStore.location")
        .map_err(|e| failed(e.to_string()))?;
    let mut options = zookeeper_client::TlsOptions::new()
        .with_pem_ca(&pem.ca)
        .map_err(|e| failed(format!("TLS configuration: CA file: {e}")))?;
    if let Some((chain, key)) = &pem.identity {
        options = options
            .with_pem_identity(chain, key)
            .map_err(|e| failed(format!("TLS configuration: client certificate: {e}")))?;
    }
    Ok(options)
}

/// Creates (or replaces) one registration znode with the current client.
///
/// A node left by a dead session is deleted and re-created; a node this session already owns,
/// or an existing persistent node, is kept (its data set to `reg.data` when that is not
/// empty: an application-level instance updating its revision).
pub(crate) async fn create_node(shared: &Shared, path: &str, reg: &Registration) -> Result<()> {
    let client = shared.client()?;
    let ephemeral = reg.ephemeral;
    let set_data = || async {
        if reg.data.is_empty() {
            return Ok(());
        }
        match client.set_data(path, &reg.data, None).await {
            Ok(_) => Ok(()),
            Err(e) => Err(ZkError::op("set", path, e)),
        }
    };
    let acls = shared.acls();
    let mode = if ephemeral {
        CreateMode::Ephemeral
    } else {
        CreateMode::Persistent
    };
    let opts = mode.with_acls(acls);
    for _ in 0..3 {
        match client.create(path, &reg.data, &opts).await {
            Ok(_) => return Ok(()),
            Err(zookeeper_client::Error::NoNode) => {
                let parent = &path[..path.rfind('/').unwrap_or(0)];
                if !parent.is_empty() {
                    client
                        .mkdir(parent, &CreateMode::Persistent.with_acls(acls))
                        .await
                        .map_err(|e| ZkError::op("mkdir", parent, e))?;
                }
            }
            Err(zookeeper_client::Error::NodeExists) => {
                if !ephemeral {
                    return set_data().await;
                }
                match client.check_stat(path).await {
                    Ok(Some(stat)) if stat.ephemeral_owner == client.session_id().0 => {
                        return set_data().await;
                    }
                    Ok(Some(_)) => match client.delete(path, None).await {
                        Ok(()) | Err(zookeeper_client::Error::NoNode) => {}
                        Err(e) => return Err(ZkError::op("delete", path, e)),
                    },
                    Ok(None) => {}
                    Err(e) => return Err(ZkError::op("stat", path, e)),
                }
            }
            Err(e) => return Err(ZkError::op("create", path, e)),
        }
    }
    Err(ZkError::op(
        "create",
        path,
        zookeeper_client::Error::NodeExists,
    ))
}

/// Re-creates every registration (idempotent: nodes this session owns are kept).
async fn restore_registrations(shared: Arc<Shared>) {
    let all: Vec<(String, Registration)> = shared
        .registered
        .lock()
        .iter()
        .map(|(p, r)| (p.clone(), r.clone()))
        .collect();
    for (path, reg) in all {
        if !shared.registered.lock().contains_key(&path) {
            continue;
        }
        if let Err(e) = create_node(&shared, &path, &reg).await {
            tracing::warn!(error = %e, "re-registration failed; retried on the next reconnect");
            continue;
        }
        // An unregister that raced with the re-creation wins.
        if !shared.registered.lock().contains_key(&path) {
            if let Ok(c) = shared.client() {
                let _ = c.delete(&path, None).await;
            }
        }
    }
}

/// Installs a fresh session's client and announces it.
pub(crate) fn install(shared: &Shared, client: Client) {
    let mut gen = 0;
    shared.conn.send_modify(|st| {
        st.client = Some(client);
        st.session_gen += 1;
        st.epoch += 1;
        st.connected = true;
        gen = st.session_gen;
    });
    shared.generation.send_replace(gen);
    shared.health.connected(&shared.cfg.connect_string);
}

/// Follows the session state until the backend is destroyed.
pub(crate) async fn supervise(shared: Arc<Shared>) {
    let mut backoff =
        Backoff::exponential(Duration::from_millis(200), Duration::from_secs(5)).attempts();
    loop {
        let client = shared.conn.borrow().client.clone();
        let Some(client) = client else {
            // No session: open one, retrying with backoff.
            let r = tokio::select! {
                _ = shared.cancel.cancelled() => return,
                r = open_session(&shared.cfg) => r,
            };
            match r {
                Ok(c) => {
                    tracing::info!(session = %c.session_id(), "zookeeper session established");
                    backoff.reset();
                    install(&shared, c);
                    tokio::spawn(restore_registrations(shared.clone()));
                }
                Err(e) => {
                    tracing::warn!(error = %e, "zookeeper session not established; retrying");
                    shared.health.error(&e.to_string());
                    tokio::select! {
                        _ = shared.cancel.cancelled() => return,
                        _ = tokio::time::sleep(backoff.next_delay()) => {}
                    }
                }
            }
            continue;
        };
        let mut states = client.state_watcher();
        drop(client);
        // A state change may have happened before the watcher existed.
        let mut st = states.peek_state();
        let mut observed = false;
        loop {
            match st {
                SessionState::SyncConnected | SessionState::ConnectedReadOnly => {
                    // Every observed SyncConnected is a reconnect (a Disconnected in between
                    // may have been coalesced away); the state seen at install time is not.
                    if observed || !shared.conn.borrow().connected {
                        tracing::info!("zookeeper connected");
                        shared.conn.send_modify(|s| {
                            s.connected = true;
                            s.epoch += 1;
                        });
                        tokio::spawn(restore_registrations(shared.clone()));
                    }
                    if st == SessionState::ConnectedReadOnly {
                        shared.health.degraded(
                            "connected to a read-only server (the ensemble has no quorum)",
                        );
                    } else {
                        shared.health.connected(&shared.cfg.connect_string);
                    }
                }
                SessionState::Disconnected => {
                    tracing::warn!("zookeeper disconnected; keeping the last lists");
                    shared.conn.send_modify(|s| s.connected = false);
                    shared.health.reconnecting(
                        "disconnected from the ensemble; the session is being resumed",
                    );
                }
                SessionState::Expired | SessionState::AuthFailed => {
                    tracing::warn!(state = %st, "zookeeper session lost; opening a new one");
                    shared.conn.send_modify(|s| {
                        s.client = None;
                        s.connected = false;
                    });
                    shared.health.reconnecting(if st == SessionState::Expired {
                        "the session expired; opening a new one"
                    } else {
                        "authentication failed; opening a new session"
                    });
                    break;
                }
                SessionState::Closed => {
                    shared.health.closed();
                    return;
                }
            }
            st = tokio::select! {
                _ = shared.cancel.cancelled() => return,
                s = states.changed() => s,
            };
            observed = true;
        }
    }
}

/// Opens the first session of `cfg` and starts its supervisor (reconnects, new session after
/// expiry): the shared state every user of one session (registry backend, config centre) holds,
/// and the guard whose drop stops it. With `cfg.check` an unreachable ensemble is an error;
/// otherwise it starts disconnected and keeps trying. `what` names the user in the warning.
pub(crate) async fn start(cfg: ZkConfig, what: &str) -> Result<(Arc<Shared>, DropGuard)> {
    let first = match open_session(&cfg).await {
        Ok(c) => Some(c),
        Err(e) if cfg.check => return Err(e),
        Err(e) => {
            tracing::warn!(error = %e, "{what} not connected (check=false); retrying in the background");
            None
        }
    };
    let cancel = CancellationToken::new();
    let health = HealthReporter::new(RegistryHealth::connecting(Some(cfg.connect_string.clone())));
    if first.is_none() {
        health.error(&format!("not connected to {} yet", cfg.connect_string));
    }
    let shared = Arc::new(Shared {
        cfg,
        conn: watch::Sender::new(ConnState::default()),
        generation: watch::Sender::new(0),
        registered: Mutex::new(BTreeMap::new()),
        cancel: cancel.clone(),
        health,
    });
    if let Some(c) = first {
        install(&shared, c);
    }
    tokio::spawn(supervise(shared.clone()));
    Ok((shared, cancel.drop_guard()))
}
