//! One connection slot to a provider address: lazy or eager connect, reconnect with backoff.
//!
//! A [`Client`] owns at most one live [`Conn`]. Calls get it with [`Client::conn`], which
//! connects first when there is none (bounded by the call's deadline). When the connection
//! drops, the client becomes unavailable and a background task reconnects it, first after
//! 100 ms, then doubling up to the `reconnect` period (2 s by default), until it succeeds or
//! the client is closed or dropped (the task holds only a weak reference).
//!
//! Background connects (at creation unless lazy, and every reconnect attempt) first take a
//! permit of the factory's connect limit, so thousands of providers referred at once do not
//! open thousands of connects at once. A connect a call needs does not wait for a permit.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;

use arc_swap::ArcSwapOption;
use registry_core::backoff::Backoff;
use tokio::sync::Semaphore;
use tokio::time::Instant;

use crate::config::{ConnConfig, FIRST_RECONNECT_DELAY};
use crate::connection::{Conn, TlsTarget};
use crate::error::DubboError;

/// A connection slot (see the module docs).
pub(crate) struct Client {
    addr: Arc<str>,
    cfg: ConnConfig,
    serialization: u8,
    current: ArcSwapOption<Conn>,
    connect_lock: tokio::sync::Mutex<()>,
    /// The last connect attempt failed or the connection was lost (not yet reconnected).
    failed: AtomicBool,
    closed: AtomicBool,
    reconnecting: AtomicBool,
    /// Permits of background connects, shared by the factory.
    connects: Arc<Semaphore>,
    /// TLS for every connection of this slot, when the provider uses it.
    tls: Option<TlsTarget>,
    me: Weak<Client>,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("addr", &self.addr)
            .field("connected", &self.is_connected())
            .field("closed", &self.closed.load(Ordering::Relaxed))
            .field("tls", &self.tls.is_some())
            .finish_non_exhaustive()
    }
}

impl Client {
    /// A new slot (TLS when `tls` is given); unless `lazy`, it starts connecting now (once a
    /// permit of `connects` is free) when a tokio runtime is running.
    pub(crate) fn new(
        addr: Arc<str>,
        cfg: ConnConfig,
        serialization: u8,
        connects: Arc<Semaphore>,
        tls: Option<TlsTarget>,
    ) -> Arc<Client> {
        Self::with_probe(addr, cfg, serialization, connects, tls, false)
    }

    /// [`Client::new`]; with `probe`, a heartbeat is sent as soon as the first connect
    /// succeeds (a connection opened ahead of its first call: the provider has handled one
    /// request on it before that call comes).
    pub(crate) fn with_probe(
        addr: Arc<str>,
        cfg: ConnConfig,
        serialization: u8,
        connects: Arc<Semaphore>,
        tls: Option<TlsTarget>,
        probe: bool,
    ) -> Arc<Client> {
        let c = Arc::new_cyclic(|me| Client {
            addr,
            cfg,
            serialization,
            current: ArcSwapOption::empty(),
            connect_lock: tokio::sync::Mutex::new(()),
            failed: AtomicBool::new(false),
            closed: AtomicBool::new(false),
            reconnecting: AtomicBool::new(false),
            connects,
            tls,
            me: me.clone(),
        });
        if !c.cfg.lazy {
            if let Ok(rt) = tokio::runtime::Handle::try_current() {
                let weak = c.me.clone();
                let permits = c.connects.clone();
                rt.spawn(async move {
                    // Queued without holding the client: a client dropped meanwhile is gone.
                    let Ok(_permit) = permits.acquire_owned().await else {
                        return;
                    };
                    let Some(c) = weak.upgrade() else { return };
                    if c.closed.load(Ordering::Acquire) || c.live().is_some() {
                        return;
                    }
                    let deadline = Instant::now() + c.cfg.connect_timeout;
                    match c.conn(deadline).await {
                        Ok(conn) if probe => conn.heartbeat(),
                        Ok(_) => {}
                        Err(e) => {
                            tracing::warn!(addr = %c.addr, "initial connect failed, will reconnect: {e}")
                        }
                    }
                });
            }
        }
        c
    }

    /// True with a live connection.
    pub(crate) fn is_connected(&self) -> bool {
        self.current.load().as_ref().is_some_and(|c| c.is_alive())
    }

    /// Dubbo's `isAvailable`: connected and not readonly. Before the first connect attempt
    /// completes (and for a lazy client never used) it is available, as Java's lazy client is.
    pub(crate) fn is_available(&self) -> bool {
        if self.closed.load(Ordering::Acquire) {
            return false;
        }
        match &*self.current.load() {
            Some(c) if c.is_alive() => !c.is_readonly(),
            _ => !self.failed.load(Ordering::Acquire),
        }
    }

    /// Bytes queued for writing on the live connection.
    pub(crate) fn queued_bytes(&self) -> usize {
        self.current.load().as_ref().map_or(0, |c| c.queued_bytes())
    }

    /// Calls waiting on the live connection.
    pub(crate) fn pending_count(&self) -> usize {
        self.current
            .load()
            .as_ref()
            .map_or(0, |c| c.pending_count())
    }

    /// The live connection, connecting first if needed (within `deadline`).
    pub(crate) async fn conn(&self, deadline: Instant) -> Result<Arc<Conn>, DubboError> {
        if let Some(c) = self.live() {
            return Ok(c);
        }
        self.check_open()?;
        let Ok(_guard) = tokio::time::timeout_at(deadline, self.connect_lock.lock()).await else {
            return Err(DubboError::ConnectTimeout {
                addr: self.addr.to_string(),
                ms: self.cfg.connect_timeout.as_millis() as u64,
            });
        };
        if let Some(c) = self.live() {
            return Ok(c);
        }
        self.check_open()?;
        match self.connect_raw(deadline).await {
            Ok(c) => Ok(c),
            Err(e) => {
                self.failed.store(true, Ordering::Release);
                self.schedule_reconnect();
                Err(e)
            }
        }
    }

    /// Closes the slot for good: the connection closes, pending calls fail.
    pub(crate) fn close(&self) {
        self.closed.store(true, Ordering::Release);
        if let Some(c) = self.current.swap(None) {
            c.close("client closed");
        }
    }

    fn check_open(&self) -> Result<(), DubboError> {
        if self.closed.load(Ordering::Acquire) {
            return Err(DubboError::Closed {
                addr: self.addr.to_string(),
            });
        }
        Ok(())
    }

    fn live(&self) -> Option<Arc<Conn>> {
        let g = self.current.load();
        match &*g {
            Some(c) if c.is_alive() => Some(c.clone()),
            _ => None,
        }
    }

    /// One connect attempt (the caller holds `connect_lock`).
    async fn connect_raw(&self, deadline: Instant) -> Result<Arc<Conn>, DubboError> {
        let left = deadline.saturating_duration_since(Instant::now());
        let limit = self
            .cfg
            .connect_timeout
            .min(left)
            .max(Duration::from_millis(1));
        let weak = self.me.clone();
        let conn = Conn::connect(
            self.addr.clone(),
            &self.cfg,
            self.serialization,
            limit,
            self.tls.as_ref(),
            move |conn, reason| {
                if let Some(c) = weak.upgrade() {
                    c.on_closed(conn, &reason);
                }
            },
        )
        .await?;
        if self.closed.load(Ordering::Acquire) {
            conn.close("client closed");
            return Err(DubboError::Closed {
                addr: self.addr.to_string(),
            });
        }
        self.current.store(Some(conn.clone()));
        self.failed.store(false, Ordering::Release);
        tracing::debug!(addr = %self.addr, "connected");
        Ok(conn)
    }

    fn on_closed(&self, conn: &Arc<Conn>, reason: &str) {
        let cur = self.current.load();
        let is_current = cur.as_ref().is_some_and(|c| Arc::ptr_eq(c, conn));
        drop(cur);
        if !is_current {
            return;
        }
        self.current.store(None);
        if self.closed.load(Ordering::Acquire) {
            return;
        }
        self.failed.store(true, Ordering::Release);
        tracing::warn!(addr = %conn.addr(), "dubbo connection lost: {reason}; reconnecting");
        self.schedule_reconnect();
    }

    fn schedule_reconnect(&self) {
        let Some(max) = self.cfg.reconnect else {
            return;
        };
        if self.closed.load(Ordering::Acquire) || self.reconnecting.swap(true, Ordering::AcqRel) {
            return;
        }
        let Ok(rt) = tokio::runtime::Handle::try_current() else {
            self.reconnecting.store(false, Ordering::Release);
            return;
        };
        let weak = self.me.clone();
        let permits = self.connects.clone();
        rt.spawn(async move {
            let mut delays = Backoff::exponential(FIRST_RECONNECT_DELAY.min(max), max).attempts();
            loop {
                tokio::time::sleep(delays.next_delay()).await;
                let Ok(_permit) = permits.clone().acquire_owned().await else {
                    return;
                };
                let Some(c) = weak.upgrade() else { return };
                if c.closed.load(Ordering::Acquire) || c.live().is_some() {
                    break;
                }
                let deadline = Instant::now() + c.cfg.connect_timeout;
                let guard = c.connect_lock.lock().await;
                if c.live().is_some() {
                    break;
                }
                match c.connect_raw(deadline).await {
                    Ok(_) => {
                        tracing::info!(addr = %c.addr, "reconnected");
                        break;
                    }
                    Err(e) => tracing::debug!(addr = %c.addr, "reconnect failed: {e}"),
                }
                drop(guard);
            }
            if let Some(c) = weak.upgrade() {
                c.reconnecting.store(false, Ordering::Release);
                // A loss between the last check and the flag reset must not go unnoticed.
                if c.failed.load(Ordering::Acquire) && c.live().is_none() {
                    c.schedule_reconnect();
                }
            }
        });
    }
}

impl Drop for Client {
    fn drop(&mut self) {
        self.closed.store(true, Ordering::Release);
        if let Some(c) = self.current.swap(None) {
            c.close("client dropped");
        }
    }
}
