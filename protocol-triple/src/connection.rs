//! [`Connection`]: one HTTP/2 (h2c, prior knowledge) connection to a provider address, shared
//! by every invoker of that address and multiplexing all their calls as streams.
//!
//! A background task (ended when the last handle drops, or by [`Connection::close`]) connects,
//! drives the h2 connection, and after it ends (GOAWAY, I/O error, peer gone) marks the
//! connection down and reconnects with exponential backoff (100 ms doubling to 5 s). Calls never
//! wait for a reconnect: while down they fail fast with a network error, so the cluster can
//! pick another provider. Only the very first connect is waited for (bounded by the call
//! timeout).

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use h2::client::SendRequest;
use tokio::net::TcpStream;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use crate::coalesce::{CoalescingIo, FlushGate, InFlight};
use crate::error::TripleError;

/// The h2 connection type over the coalescing socket wrapper.
type H2Connection = h2::client::Connection<CoalescingIo<TcpStream>, Bytes>;

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
    state: watch::Sender<State>,
    cancel: CancellationToken,
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
        let handle = tokio::runtime::Handle::try_current().map_err(|_| {
            TripleError::InvalidArgument("a Triple connection needs a tokio runtime".to_owned())
        })?;
        let (state, _) = watch::channel(State::Connecting);
        let conn = Arc::new(Connection {
            addr: Arc::from(addr),
            state,
            cancel: CancellationToken::new(),
        });
        handle.spawn(run(
            conn.addr.clone(),
            conn.state.clone(),
            conn.cancel.clone(),
            options,
        ));
        Ok(conn)
    }

    /// `host:port`.
    pub fn addr(&self) -> &str {
        &self.addr
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
) -> Result<(SendRequest<Bytes>, H2Connection, Arc<FlushGate>), String> {
    let fut = async {
        let tcp = TcpStream::connect(addr).await.map_err(|e| e.to_string())?;
        let _ = tcp.set_nodelay(true);
        let gate = Arc::new(FlushGate::new(options.write_coalescing));
        let (sender, conn) = h2::client::Builder::new()
            .initial_window_size(options.stream_window)
            .initial_connection_window_size(options.connection_window)
            .max_header_list_size(64 * 1024)
            .handshake::<_, Bytes>(CoalescingIo::new(tcp, gate.clone()))
            .await
            .map_err(|e| format!("HTTP/2 handshake: {e}"))?;
        Ok((sender, conn, gate))
    };
    match tokio::time::timeout(options.connect_timeout, fut).await {
        Ok(r) => r,
        Err(_) => Err(format!("timed out after {:?}", options.connect_timeout)),
    }
}

async fn run(
    addr: Arc<str>,
    state: watch::Sender<State>,
    cancel: CancellationToken,
    options: ConnectionOptions,
) {
    let mut backoff = options.backoff_min;
    loop {
        let attempt = tokio::select! {
            _ = cancel.cancelled() => break,
            r = connect(&addr, &options) => r,
        };
        match attempt {
            Ok((sender, conn, gate)) => {
                backoff = options.backoff_min;
                tracing::debug!(%addr, "triple connection established");
                state.send_replace(State::Ready(sender, gate));
                // Closing drops the last sender, which ends `conn` too: a close must win.
                let ended = tokio::select! {
                    biased;
                    _ = cancel.cancelled() => break,
                    r = conn => r,
                };
                if cancel.is_cancelled() {
                    break;
                }
                let reason = match ended {
                    Ok(()) => "connection closed by the peer".to_owned(),
                    Err(e) => format!("connection lost: {e}"),
                };
                tracing::warn!(%addr, %reason, "triple connection down; reconnecting");
                state.send_replace(State::Down(Arc::from(reason.as_str())));
            }
            Err(reason) => {
                tracing::warn!(%addr, %reason, retry_in = ?backoff, "triple connect failed");
                state.send_replace(State::Down(Arc::from(
                    format!("connect failed: {reason}").as_str(),
                )));
            }
        }
        tokio::select! {
            _ = cancel.cancelled() => break,
            _ = tokio::time::sleep(backoff) => {}
        }
        backoff = (backoff * 2).min(options.backoff_max);
    }
    state.send_replace(State::Closed);
}
