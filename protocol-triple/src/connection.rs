//! [`Connection`]: one HTTP/2 (h2c, prior knowledge) connection to a provider address, shared
//! by every invoker of that address and multiplexing all their calls as streams.
//!
//! A background task (ended when the last handle drops, or by [`Connection::close`]) connects,
//! drives the h2 connection, and after it ends (GOAWAY, I/O error, peer gone) marks the
//! connection down and reconnects with exponential backoff (100 ms doubling to 5 s). Calls never
//! wait for a reconnect: while down they fail fast with a network error, so the cluster can
//! pick another provider. Only the very first connect is waited for (bounded by the call
//! timeout).
//!
//! TLS ([`Connection::open_tls`]): the TCP connection is wrapped in TLS offering ALPN `h2`
//! before the HTTP/2 handshake, and requests go out with `:scheme https`; the peer's
//! certificate is checked as `transport_tls` says (CA, validity, name).
//!
//! Dead peers (a provider that hangs, a host that vanished without a FIN): an HTTP/2 PING must
//! be acknowledged within [`ConnectionOptions::keepalive_timeout`] or the connection is given
//! up, marked down (the invoker turns unavailable, so the cluster routes around it) and
//! re-established. A PING is sent when calls are in flight and nothing was read for
//! [`ConnectionOptions::keepalive_interval`] (idle connections too with
//! `keepalive_while_idle`), and at once when a call times out. A new connection is only
//! ready after its first PING is acknowledged, so a reconnect to a hung peer does not make it
//! available again.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use h2::client::SendRequest;
use h2::{Ping, PingPong};
use registry_core::backoff::Backoff;
use tokio::net::TcpStream;
use tokio::sync::{watch, Notify, Semaphore};
use tokio_util::sync::CancellationToken;
use transport_tls::{Alpn, MaybeTlsStream, TlsClient};

use crate::coalesce::{CoalescingIo, FlushGate, InFlight};
use crate::error::TripleError;

/// The h2 connection type over the coalescing socket wrapper.
type H2Connection = h2::client::Connection<CoalescingIo<MaybeTlsStream>, Bytes>;

/// TLS for a connection: the client (ALPN `h2`) and the host the certificate must name.
#[derive(Debug, Clone)]
pub(crate) struct TlsTarget {
    pub(crate) client: TlsClient,
    pub(crate) host: Arc<str>,
}

/// HTTP/2 settings of a connection.
#[derive(Debug, Clone)]
pub struct ConnectionOptions {
    /// TCP connect + HTTP/2 handshake timeout.
    pub connect_timeout: Duration,
    /// Initial stream window (bytes) we advertise.
    pub stream_window: u32,
    /// Initial connection window (bytes) we advertise.
    pub connection_window: u32,
    /// First reconnect delay.
    pub backoff_min: Duration,
    /// Longest reconnect delay.
    pub backoff_max: Duration,
    /// Lets requests queued close together leave in one write when many calls are in flight
    /// (see `coalesce.rs`: only with 16 or more calls in flight, at most 0.5–1 ms, never for
    /// control frames). On by default.
    pub write_coalescing: bool,
    /// Send a PING after this long without reading while calls are in flight (default 60 s,
    /// Java's `heartbeat`; zero: only when a call times out).
    pub keepalive_interval: Duration,
    /// A PING not acknowledged within this long gives the connection up (default 20 s).
    pub keepalive_timeout: Duration,
    /// Also PING idle connections (default false: gRPC servers answer PINGs on idle
    /// connections more often than every 5 minutes with GOAWAY `too_many_pings`).
    pub keepalive_while_idle: bool,
    /// Connects in progress at once across the connections of one `TripleInvokerFactory`
    /// (default 16); the rest wait their turn.
    pub max_concurrent_connects: usize,
}

impl Default for ConnectionOptions {
    fn default() -> Self {
        ConnectionOptions {
            connect_timeout: Duration::from_secs(3),
            stream_window: 1 << 20,
            connection_window: 16 << 20,
            backoff_min: Duration::from_millis(100),
            backoff_max: Duration::from_secs(5),
            write_coalescing: true,
            keepalive_interval: Duration::from_secs(60),
            keepalive_timeout: Duration::from_secs(20),
            keepalive_while_idle: false,
            max_concurrent_connects: 16,
        }
    }
}

/// The state of a connection, as calls see it.
#[derive(Debug, Clone)]
pub(crate) enum State {
    /// The first connect is in progress.
    Connecting,
    /// Connected: new streams go to this sender; calls count themselves in the gate.
    Ready(SendRequest<Bytes>, Arc<FlushGate>),
    /// Lost or never made; reconnecting in the background. The last error.
    Down(Arc<str>),
    /// Closed for good.
    Closed,
}

/// A shared HTTP/2 connection with automatic reconnect. Cheap to clone handles via `Arc`.
#[derive(Debug)]
pub struct Connection {
    addr: Arc<str>,
    tls: bool,
    state: watch::Sender<State>,
    cancel: CancellationToken,
    /// Wakes the keepalive to PING at once (a call timed out).
    probe: Arc<Notify>,
}

impl Drop for Connection {
    fn drop(&mut self) {
        self.cancel.cancel();
    }
}

impl Connection {
    /// Starts connecting to `addr` (`host:port`) in the background on the current tokio
    /// runtime. Errors: called outside a runtime.
    pub fn open(addr: &str, options: ConnectionOptions) -> Result<Arc<Connection>, TripleError> {
        Self::open_with_permits(addr, options, None, None)
    }

    /// [`Connection::open`] over TLS: the certificate of the peer at `addr` must name `host`
    /// (or `tls`'s server name). Errors: `tls` was not built for ALPN `h2`, or called outside a
    /// tokio runtime.
    pub fn open_tls(
        addr: &str,
        host: &str,
        options: ConnectionOptions,
        tls: &TlsClient,
    ) -> Result<Arc<Connection>, TripleError> {
        if tls.alpn() != Alpn::H2 {
            return Err(TripleError::InvalidArgument(
                "a Triple connection needs a TLS client built for ALPN h2".to_owned(),
            ));
        }
        let target = TlsTarget {
            client: tls.clone(),
            host: host.into(),
        };
        Self::open_with_permits(addr, options, None, Some(target))
    }

    /// [`Connection::open`] (TLS when `tls` is given), each connect attempt first taking a
    /// permit of `permits` (shared by the connections of one factory).
    pub(crate) fn open_with_permits(
        addr: &str,
        options: ConnectionOptions,
        permits: Option<Arc<Semaphore>>,
        tls: Option<TlsTarget>,
    ) -> Result<Arc<Connection>, TripleError> {
        let handle = tokio::runtime::Handle::try_current().map_err(|_| {
            TripleError::InvalidArgument("a Triple connection needs a tokio runtime".to_owned())
        })?;
        let (state, _) = watch::channel(State::Connecting);
        let conn = Arc::new(Connection {
            addr: Arc::from(addr),
            tls: tls.is_some(),
            state,
            cancel: CancellationToken::new(),
            probe: Arc::new(Notify::new()),
        });
        handle.spawn(run(
            Shared {
                addr: conn.addr.clone(),
                state: conn.state.clone(),
                cancel: conn.cancel.clone(),
                probe: conn.probe.clone(),
                permits,
                tls,
            },
            options,
        ));
        Ok(conn)
    }

    /// `host:port`.
    pub fn addr(&self) -> &str {
        &self.addr
    }

    /// True for a TLS connection.
    pub fn is_tls(&self) -> bool {
        self.tls
    }

    /// The `:scheme` of requests: `https` over TLS, else `http`.
    pub fn scheme(&self) -> &'static str {
        if self.tls {
            "https"
        } else {
            "http"
        }
    }

    /// True while connected, or while the first connect is still in progress (calls wait
    /// for it); false when down, reconnecting or closed.
    pub fn is_available(&self) -> bool {
        matches!(&*self.state.borrow(), State::Ready(..) | State::Connecting)
    }

    /// True once connected (and not lost since).
    pub fn is_connected(&self) -> bool {
        matches!(&*self.state.borrow(), State::Ready(..))
    }

    /// Calls in flight on the current HTTP/2 connection (begun and not ended; 0 while not
    /// connected). For metrics; write coalescing sizes its batches from it.
    pub fn in_flight(&self) -> usize {
        match &*self.state.borrow() {
            State::Ready(_, gate) => gate.in_flight(),
            _ => 0,
        }
    }

    /// Closes the connection and stops reconnecting. Idempotent.
    pub fn close(&self) {
        self.cancel.cancel();
        self.state.send_replace(State::Closed);
    }

    /// Waits until connected or `timeout` passes; true when connected.
    pub async fn wait_connected(&self, timeout: Duration) -> bool {
        let mut rx = self.state.subscribe();
        tokio::time::timeout(timeout, async {
            loop {
                if matches!(&*rx.borrow_and_update(), State::Ready(..)) {
                    return true;
                }
                if rx.changed().await.is_err() {
                    return false;
                }
            }
        })
        .await
        .unwrap_or(false)
    }

    /// A sender for a new stream, and the call counted as in flight on that connection:
    /// immediately when connected, after the first connect when still connecting; an error
    /// when down or closed.
    pub(crate) async fn sender(&self) -> Result<(SendRequest<Bytes>, InFlight), TripleError> {
        if let Some(r) = self.now() {
            return r;
        }
        let mut rx = self.state.subscribe();
        loop {
            if let Some(r) = self.now() {
                return r;
            }
            if rx.changed().await.is_err() {
                return Err(TripleError::Destroyed(self.addr.to_string()));
            }
        }
    }

    fn now(&self) -> Option<Result<(SendRequest<Bytes>, InFlight), TripleError>> {
        match &*self.state.borrow() {
            State::Ready(s, gate) => Some(Ok((s.clone(), gate.begin()))),
            State::Connecting => None,
            State::Down(reason) => Some(Err(TripleError::Unavailable {
                addr: self.addr.to_string(),
                reason: reason.to_string(),
            })),
            State::Closed => Some(Err(TripleError::Destroyed(self.addr.to_string()))),
        }
    }

    /// A call on this connection timed out: PING the peer now, so that a hung peer is found
    /// within the keepalive timeout (a peer that answers stays available; it is just slow).
    pub(crate) fn suspect(&self) {
        self.probe.notify_one();
    }

    /// Marks the connection down after a call saw it fail at the connection level, so the
    /// invoker turns unavailable at once (the task reconnects when the h2 connection ends).
    pub(crate) fn invalidate(&self, reason: &str) {
        self.state.send_if_modified(|s| {
            if matches!(s, State::Ready(..)) {
                *s = State::Down(Arc::from(reason));
                true
            } else {
                false
            }
        });
    }
}

async fn connect(
    addr: &str,
    options: &ConnectionOptions,
    tls: Option<&TlsTarget>,
) -> Result<(SendRequest<Bytes>, H2Connection, Arc<FlushGate>), String> {
    let fut = async {
        let tcp = TcpStream::connect(addr).await.map_err(|e| e.to_string())?;
        let _ = tcp.set_nodelay(true);
        let io = match tls {
            None => MaybeTlsStream::Plain(tcp),
            Some(t) => t
                .client
                .handshake(tcp, &t.host, addr)
                .await
                .map(MaybeTlsStream::from)
                .map_err(|e| e.to_string())?,
        };
        let gate = Arc::new(FlushGate::new(options.write_coalescing));
        let (sender, conn) = h2::client::Builder::new()
            .initial_window_size(options.stream_window)
            .initial_connection_window_size(options.connection_window)
            .max_header_list_size(64 * 1024)
            .handshake::<_, Bytes>(CoalescingIo::new(io, gate.clone()))
            .await
            .map_err(|e| h2_failure("HTTP/2 handshake", e, addr, tls))?;
        Ok((sender, conn, gate))
    };
    match tokio::time::timeout(options.connect_timeout, fut).await {
        Ok(r) => r,
        Err(_) => Err(format!("timed out after {:?}", options.connect_timeout)),
    }
}

/// An h2 error as a reason; over TLS an I/O error is explained (a refused client certificate
/// shows only once the server answers, after the TLS handshake).
fn h2_failure(what: &str, e: h2::Error, addr: &str, tls: Option<&TlsTarget>) -> String {
    match tls {
        Some(t) if e.is_io() => match e.into_io() {
            Some(io) => format!("{what}: {}", t.client.classify_first_exchange(addr, io)),
            None => format!("{what}: I/O error"),
        },
        _ => format!("{what}: {e}"),
    }
}

/// What the connection task shares with the handles.
struct Shared {
    addr: Arc<str>,
    state: watch::Sender<State>,
    cancel: CancellationToken,
    probe: Arc<Notify>,
    permits: Option<Arc<Semaphore>>,
    tls: Option<TlsTarget>,
}

/// One connect attempt, within the shared connect permits: TCP, the HTTP/2 handshake, and a
/// first PING acknowledged (a peer that accepts but does not answer is not ready).
async fn establish(
    sh: &Shared,
    options: &ConnectionOptions,
) -> Result<
    (
        SendRequest<Bytes>,
        H2Connection,
        Option<PingPong>,
        Arc<FlushGate>,
    ),
    String,
> {
    let _permit = match &sh.permits {
        Some(p) => Some(
            p.clone()
                .acquire_owned()
                .await
                .map_err(|_| "closed".to_owned())?,
        ),
        None => None,
    };
    let (sender, mut conn, gate) = connect(&sh.addr, options, sh.tls.as_ref()).await?;
    let mut pings = conn.ping_pong();
    if let Some(p) = pings.as_mut() {
        let answered = tokio::time::timeout(options.connect_timeout, async {
            tokio::select! {
                r = &mut conn => Err(match r {
                    Ok(()) => "closed by the peer right after the handshake".to_owned(),
                    Err(e) => h2_failure("HTTP/2 handshake", e, &sh.addr, sh.tls.as_ref()),
                }),
                r = p.ping(Ping::opaque()) => r
                    .map(|_| ())
                    .map_err(|e| h2_failure("first PING", e, &sh.addr, sh.tls.as_ref())),
            }
        })
        .await;
        match answered {
            Ok(Ok(())) => {}
            Ok(Err(e)) => return Err(e),
            Err(_) => {
                return Err(format!(
                    "no answer to the first PING within {:?}",
                    options.connect_timeout
                ))
            }
        }
    }
    Ok((sender, conn, pings, gate))
}

/// Runs until the peer fails to acknowledge a PING in time (the reason is returned): PINGs
/// when calls are in flight and nothing was read for the keepalive interval (idle connections
/// too with `keepalive_while_idle`), and at once on a probe (a call timed out). Never returns
/// without PINGs to send.
async fn keepalive(
    pings: Option<PingPong>,
    gate: &FlushGate,
    probe: &Notify,
    options: &ConnectionOptions,
) -> String {
    let Some(mut pings) = pings else {
        return std::future::pending().await;
    };
    let interval = options.keepalive_interval;
    let mut tick = (!interval.is_zero()).then(|| {
        let mut t = tokio::time::interval_at(tokio::time::Instant::now() + interval, interval);
        t.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        t
    });
    let mut reads = gate.reads();
    loop {
        let probed = tokio::select! {
            _ = async {
                match tick.as_mut() {
                    Some(t) => {
                        t.tick().await;
                    }
                    None => std::future::pending::<()>().await,
                }
            } => false,
            _ = probe.notified() => true,
        };
        let now = gate.reads();
        let quiet = now == reads;
        reads = now;
        let due = quiet && (gate.in_flight() > 0 || options.keepalive_while_idle);
        if !(probed || due) {
            continue;
        }
        match tokio::time::timeout(options.keepalive_timeout, pings.ping(Ping::opaque())).await {
            Ok(Ok(_)) => reads = gate.reads(),
            Ok(Err(e)) => return format!("keepalive PING failed: {e}"),
            Err(_) => {
                return format!(
                    "no PING acknowledgement within {:?} (keepalive timeout)",
                    options.keepalive_timeout
                )
            }
        }
    }
}

async fn run(sh: Shared, options: ConnectionOptions) {
    let addr = sh.addr.clone();
    let state = &sh.state;
    let cancel = &sh.cancel;
    let mut backoff = Backoff::exponential(options.backoff_min, options.backoff_max).attempts();
    loop {
        let attempt = tokio::select! {
            _ = cancel.cancelled() => break,
            r = establish(&sh, &options) => r,
        };
        let pause = match attempt {
            Ok((sender, conn, pings, gate)) => {
                backoff.reset();
                tracing::debug!(%addr, "triple connection established");
                state.send_replace(State::Ready(sender, gate.clone()));
                // Closing drops the last sender, which ends `conn` too: a close must win.
                let reason = tokio::select! {
                    biased;
                    _ = cancel.cancelled() => break,
                    r = conn => match r {
                        Ok(()) => "connection closed by the peer".to_owned(),
                        Err(e) => h2_failure("connection lost", e, &addr, sh.tls.as_ref()),
                    },
                    dead = keepalive(pings, &gate, &sh.probe, &options) => dead,
                };
                if cancel.is_cancelled() {
                    break;
                }
                tracing::warn!(%addr, %reason, "triple connection down; reconnecting");
                state.send_replace(State::Down(Arc::from(reason.as_str())));
                backoff.next_delay()
            }
            Err(reason) => {
                let pause = backoff.next_delay();
                tracing::warn!(%addr, %reason, retry_in = ?pause, "triple connect failed");
                state.send_replace(State::Down(Arc::from(
                    format!("connect failed: {reason}").as_str(),
                )));
                pause
            }
        };
        tokio::select! {
            _ = cancel.cancelled() => break,
            _ = tokio::time::sleep(pause) => {}
        }
    }
    state.send_replace(State::Closed);
}
