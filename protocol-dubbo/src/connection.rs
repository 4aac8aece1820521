//! One TCP connection to a provider: a writer task, a reader task, and the map of pending
//! calls keyed by request id.
//!
//! - Callers [`Conn::register`] a request id, then [`Conn::send_frame`]: the frame is appended to
//!   a shared write buffer and the writer task flushes whatever has accumulated (many in-flight
//!   calls share syscalls). They await [`Conn::reply`]. The buffer is bounded
//!   (`max_queued_bytes`: past it a call fails at once), and a write that makes no progress
//!   for `write_stall_timeout` (a provider that stopped reading) closes the connection, so
//!   its calls fail over instead of waiting out their timeouts one after another.
//! - Each pending call is a slot in the pending map (the caller's waker, then the reply), so a
//!   call allocates no channel: the map keeps its capacity and the reply moves through it.
//! - The reader task splits the stream into frames, completes the pending call of each
//!   response (an unknown id is logged and dropped), answers the provider's heartbeats and
//!   follows its readonly events (`"R"`/`"W"`).
//! - Every `heartbeat / 3` it checks the clocks: after `heartbeat` without reading or writing it
//!   sends a heartbeat; after `heartbeat.timeout` without reading it closes the connection (the
//!   owning client then reconnects), as Dubbo's `HeartbeatTimerTask` / `ReconnectTimerTask` do.
//! - When the connection ends (EOF, error, corrupt frame, idle, close) every pending call fails
//!   at once with [`DubboError::ConnectionLost`], and both tasks end.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use bytes::BytesMut;
use parking_lot::Mutex;
use rustc_hash::FxHashMap;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::Notify;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use transport_tls::TlsClient;

use crate::config::ConnConfig;
use crate::error::DubboError;
use crate::frame::{Decoded, Frame, FrameDecoder};
use crate::header::{Header, HEADER_LEN};
use crate::request::{heartbeat_request, heartbeat_response};

/// What a pending call receives: the response frame, or why there is none.
pub(crate) type Reply = Result<Frame, DubboError>;

/// Write buffers larger than this are not kept for reuse.
const KEEP_BUFFER: usize = 1024 * 1024;

static NEXT_ID: AtomicI64 = AtomicI64::new(0);

/// A new request id (process-wide, like Java's `Request.INVOKE_ID`).
pub(crate) fn next_id() -> i64 {
    NEXT_ID.fetch_add(1, Ordering::Relaxed)
}

/// TLS for a connection: the client configuration and the host the certificate must name.
#[derive(Debug, Clone)]
pub(crate) struct TlsTarget {
    pub(crate) client: TlsClient,
    pub(crate) host: Arc<str>,
}

/// A dialled socket, before the reader and writer take it.
enum Dialled {
    Plain(TcpStream),
    Tls(Box<transport_tls::TlsStream<TcpStream>>),
}

/// One pending call: waiting (with the waker of its last poll), or answered.
enum Slot {
    Waiting(Option<Waker>),
    Done(Reply),
}

struct Pending {
    alive: bool,
    calls: FxHashMap<i64, Slot>,
}

/// A live connection (see the module docs).
pub(crate) struct Conn {
    addr: Arc<str>,
    serialization: u8,
    pending: Mutex<Pending>,
    out: Mutex<Vec<u8>>,
    wake: Notify,
    alive: AtomicBool,
    readonly: AtomicBool,
    epoch: Instant,
    last_read: AtomicU64,
    last_write: AtomicU64,
    /// Bytes queued and not yet taken by the writer.
    queued: AtomicU64,
    max_queued: usize,
    cancel: CancellationToken,
    /// The TLS client, when the connection is TLS (to explain read and write errors).
    tls: Option<TlsClient>,
}

impl std::fmt::Debug for Conn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Conn")
            .field("addr", &self.addr)
            .field("alive", &self.is_alive())
            .field("readonly", &self.is_readonly())
            .finish_non_exhaustive()
    }
}

impl Conn {
    /// Connects within `limit` (TCP, then the TLS handshake when `tls` is given) and starts the
    /// reader and writer tasks; `on_close` runs once when the connection ends, with the reason.
    pub(crate) async fn connect(
        addr: Arc<str>,
        cfg: &ConnConfig,
        serialization: u8,
        limit: Duration,
        tls: Option<&TlsTarget>,
        on_close: impl FnOnce(&Arc<Conn>, String) + Send + 'static,
    ) -> Result<Arc<Conn>, DubboError> {
        let dial = async {
            let tcp = TcpStream::connect(&*addr)
                .await
                .map_err(|source| DubboError::Connect {
                    addr: addr.to_string(),
                    source,
                })?;
            let _ = tcp.set_nodelay(true);
            match tls {
                None => Ok(Dialled::Plain(tcp)),
                Some(t) => t
                    .client
                    .handshake(tcp, &t.host, &addr)
                    .await
                    .map(|s| Dialled::Tls(Box::new(s)))
                    .map_err(DubboError::Tls),
            }
        };
        let dialled = match tokio::time::timeout(limit, dial).await {
            Ok(r) => r?,
            Err(_) => {
                return Err(DubboError::ConnectTimeout {
                    addr: addr.to_string(),
                    ms: limit.as_millis() as u64,
                })
            }
        };
        let conn = Arc::new(Conn {
            addr,
            serialization,
            pending: Mutex::new(Pending {
                alive: true,
                calls: FxHashMap::default(),
            }),
            out: Mutex::new(Vec::with_capacity(16 * 1024)),
            wake: Notify::new(),
            alive: AtomicBool::new(true),
            readonly: AtomicBool::new(false),
            epoch: Instant::now(),
            last_read: AtomicU64::new(0),
            last_write: AtomicU64::new(0),
            queued: AtomicU64::new(0),
            max_queued: cfg.max_queued_bytes,
            cancel: CancellationToken::new(),
            tls: tls.map(|t| t.client.clone()),
        });
        match dialled {
            Dialled::Plain(tcp) => {
                let (rd, wr) = tcp.into_split();
                conn.start(rd, wr, cfg, on_close);
            }
            Dialled::Tls(s) => {
                let (rd, wr) = tokio::io::split(*s);
                conn.start(rd, wr, cfg, on_close);
            }
        }
        Ok(conn)
    }

    /// Spawns the writer and the reader of the connection's two halves.
    fn start<R, W>(
        self: &Arc<Self>,
        rd: R,
        wr: W,
        cfg: &ConnConfig,
        on_close: impl FnOnce(&Arc<Conn>, String) + Send + 'static,
    ) where
        R: AsyncRead + Unpin + Send + 'static,
        W: AsyncWrite + Unpin + Send + 'static,
    {
        tokio::spawn(write_loop(self.clone(), wr, cfg.write_stall_timeout));
        let c = self.clone();
        let cfg = cfg.clone();
        tokio::spawn(async move {
            let reason = read_loop(&c, rd, &cfg).await;
            c.shutdown(&reason);
            on_close(&c, reason);
        });
    }

    /// What an I/O error on this connection means (a TLS alert after the handshake is named).
    fn io_reason(&self, what: &str, e: std::io::Error) -> String {
        match &self.tls {
            Some(t) => format!("{what} failed: {}", t.classify(&self.addr, e)),
            None => format!("{what} failed: {e}"),
        }
    }

    /// The provider address.
    pub(crate) fn addr(&self) -> &Arc<str> {
        &self.addr
    }

    /// True until the connection ended.
    pub(crate) fn is_alive(&self) -> bool {
        self.alive.load(Ordering::Acquire)
    }

    /// True after the provider's readonly event (it is shutting down).
    pub(crate) fn is_readonly(&self) -> bool {
        self.readonly.load(Ordering::Acquire)
    }

    /// Number of calls waiting for a response.
    pub(crate) fn pending_count(&self) -> usize {
        self.pending.lock().calls.len()
    }

    /// Bytes queued for the writer and not yet taken by it.
    pub(crate) fn queued_bytes(&self) -> usize {
        usize::try_from(self.queued.load(Ordering::Relaxed)).unwrap_or(usize::MAX)
    }

    /// Registers a call waiting for the response with `id` (then await [`Conn::reply`]).
    pub(crate) fn register(&self, id: i64) -> Result<(), DubboError> {
        let mut p = self.pending.lock();
        if !p.alive {
            return Err(self.lost("connection closed"));
        }
        p.calls.insert(id, Slot::Waiting(None));
        Ok(())
    }

    /// The reply to the registered call `id`: the response frame, or why there is none. The
    /// slot is removed when the reply is taken; a caller that gives up must
    /// [`Conn::unregister`].
    pub(crate) fn reply(&self, id: i64) -> ReplyFuture<'_> {
        ReplyFuture { conn: self, id }
    }

    /// Forgets a call (timed out or cancelled): a late response is then dropped.
    pub(crate) fn unregister(&self, id: i64) {
        self.pending.lock().calls.remove(&id);
    }

    /// Queues one frame for the writer task.
    pub(crate) fn send_frame(&self, header: &Header, body: &[u8]) -> Result<(), DubboError> {
        self.send_parts(&header.to_bytes(), body)
    }

    fn send_parts(&self, head: &[u8], body: &[u8]) -> Result<(), DubboError> {
        if !self.is_alive() {
            return Err(self.lost("connection closed"));
        }
        {
            let mut out = self.out.lock();
            let after = out
                .len()
                .saturating_add(head.len())
                .saturating_add(body.len());
            // One frame always fits an empty queue (its size is bounded by the payload limit).
            if after > self.max_queued && !out.is_empty() {
                return Err(self.lost("write queue full: the provider is not reading"));
            }
            out.extend_from_slice(head);
            out.extend_from_slice(body);
            self.queued.store(after as u64, Ordering::Relaxed);
        }
        self.wake.notify_one();
        Ok(())
    }

    /// Closes the connection (idempotent): pending calls fail, both tasks end.
    pub(crate) fn close(&self, reason: &str) {
        self.shutdown(reason);
    }

    fn shutdown(&self, reason: &str) {
        let (waiting, wakers) = {
            let mut p = self.pending.lock();
            if !p.alive {
                return;
            }
            p.alive = false;
            self.alive.store(false, Ordering::Release);
            let mut waiting = 0usize;
            let mut wakers = Vec::new();
            for slot in p.calls.values_mut() {
                if let Slot::Waiting(w) = slot {
                    waiting += 1;
                    wakers.extend(w.take());
                    *slot = Slot::Done(Err(self.lost(reason)));
                }
            }
            (waiting, wakers)
        };
        self.cancel.cancel();
        if waiting > 0 {
            tracing::warn!(
                addr = %self.addr,
                pending = waiting,
                "dubbo connection closed with calls pending: {reason}"
            );
        }
        wakers.into_iter().for_each(Waker::wake);
    }

    fn lost(&self, reason: &str) -> DubboError {
        DubboError::ConnectionLost {
            addr: self.addr.to_string(),
            reason: reason.to_owned(),
        }
    }

    fn now_ms(&self) -> u64 {
        self.epoch.elapsed().as_millis() as u64
    }

    fn dispatch(&self, d: Decoded, payload: usize) {
        match d {
            Decoded::Oversized(h) => {
                tracing::warn!(
                    addr = %self.addr,
                    id = h.id,
                    len = h.body_len,
                    "dubbo frame over the payload limit of {payload} bytes, skipped"
                );
                if !h.is_request() && !h.is_event() {
                    self.complete(
                        h.id,
                        Err(DubboError::PayloadTooLarge {
                            what: "response",
                            len: u64::from(h.body_len),
                            limit: payload as u64,
                        }),
                    );
                }
            }
            Decoded::Frame(f) => {
                let h = f.header;
                if h.is_request() {
                    if h.is_event() {
                        self.on_event(&f);
                    } else {
                        tracing::debug!(addr = %self.addr, "ignoring a call request from a provider");
                    }
                } else if h.is_event() {
                    tracing::trace!(addr = %self.addr, id = h.id, "heartbeat reply");
                } else {
                    let id = h.id;
                    self.complete(id, Ok(f));
                }
            }
        }
    }

    fn complete(&self, id: i64, reply: Reply) {
        let waker = {
            let mut p = self.pending.lock();
            match p.calls.get_mut(&id) {
                Some(slot @ Slot::Waiting(_)) => match std::mem::replace(slot, Slot::Done(reply)) {
                    Slot::Waiting(w) => w,
                    Slot::Done(_) => None,
                },
                Some(Slot::Done(_)) => {
                    drop(p);
                    tracing::debug!(addr = %self.addr, id, "second response for a request id, dropped");
                    return;
                }
                None => {
                    drop(p);
                    tracing::debug!(
                        addr = %self.addr,
                        id,
                        "response for an unknown request id (timed out or never sent), dropped"
                    );
                    return;
                }
            }
        };
        if let Some(w) = waker {
            w.wake();
        }
    }

    fn on_event(&self, f: &Frame) {
        let h = &f.header;
        if &f.body[..] == b"N" {
            if h.is_two_way() {
                let _ = self.send_parts(&heartbeat_response(h.id, h.serialization()), &[]);
            }
            return;
        }
        let data = hessian2::Decoder::new(&f.body)
            .read_str()
            .unwrap_or_default();
        match data.as_str() {
            "R" => {
                tracing::info!(addr = %self.addr, "provider is shutting down (readonly event)");
                self.readonly.store(true, Ordering::Release);
            }
            "W" => self.readonly.store(false, Ordering::Release),
            other => tracing::debug!(addr = %self.addr, event = other, "unknown event ignored"),
        }
        if h.is_two_way() {
            let _ = self.send_parts(&heartbeat_response(h.id, h.serialization()), &[]);
        }
    }

    /// The periodic clock check: a heartbeat when quiet, the reason to close when idle.
    fn on_tick(&self, cfg: &ConnConfig) -> Option<String> {
        let now = self.now_ms();
        let read = now.saturating_sub(self.last_read.load(Ordering::Relaxed));
        let written = now.saturating_sub(self.last_write.load(Ordering::Relaxed));
        let idle = cfg.idle_timeout.as_millis() as u64;
        if idle > 0 && read > idle {
            return Some(format!(
                "nothing read for {read} ms (heartbeat.timeout {idle} ms)"
            ));
        }
        let hb = cfg.heartbeat.as_millis() as u64;
        if hb > 0 && (read >= hb || written >= hb) {
            self.heartbeat();
        }
        None
    }

    /// Sends a heartbeat request (its reply is read and dropped like any other).
    pub(crate) fn heartbeat(&self) {
        tracing::trace!(addr = %self.addr, "sending heartbeat");
        let frame = heartbeat_request(next_id(), self.serialization);
        let _ = self.send_parts(&frame[..HEADER_LEN], &frame[HEADER_LEN..]);
    }
}

/// The future of [`Conn::reply`].
pub(crate) struct ReplyFuture<'a> {
    conn: &'a Conn,
    id: i64,
}

impl Future for ReplyFuture<'_> {
    type Output = Reply;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Reply> {
        let conn = self.conn;
        let mut p = conn.pending.lock();
        match p.calls.get_mut(&self.id) {
            Some(Slot::Waiting(w)) => {
                match w {
                    Some(w) if w.will_wake(cx.waker()) => {}
                    _ => *w = Some(cx.waker().clone()),
                }
                Poll::Pending
            }
            Some(Slot::Done(_)) => match p.calls.remove(&self.id) {
                Some(Slot::Done(reply)) => Poll::Ready(reply),
                _ => Poll::Ready(Err(conn.lost("reply lost"))),
            },
            None => {
                drop(p);
                Poll::Ready(Err(conn.lost("connection closed")))
            }
        }
    }
}

async fn read_loop<R: AsyncRead + Unpin>(conn: &Arc<Conn>, mut rd: R, cfg: &ConnConfig) -> String {
    let mut buf = BytesMut::with_capacity(64 * 1024);
    let mut dec = FrameDecoder::new(cfg.payload);
    let period = cfg.tick();
    let mut tick = tokio::time::interval_at(Instant::now() + period, period);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        if buf.capacity() - buf.len() < 8 * 1024 {
            buf.reserve(64 * 1024);
        }
        tokio::select! {
            _ = conn.cancel.cancelled() => return "closed".to_owned(),
            r = rd.read_buf(&mut buf) => match r {
                Ok(0) => return "closed by the provider".to_owned(),
                Ok(_) => {
                    conn.last_read.store(conn.now_ms(), Ordering::Relaxed);
                    loop {
                        match dec.decode(&mut buf) {
                            Ok(Some(d)) => conn.dispatch(d, cfg.payload),
                            Ok(None) => break,
                            Err(e) => return format!("corrupt stream: {e}"),
                        }
                    }
                }
                Err(e) => return conn.io_reason("read", e),
            },
            _ = tick.tick() => {
                if let Some(reason) = conn.on_tick(cfg) {
                    return reason;
                }
            }
        }
    }
}

async fn write_loop<W: AsyncWrite + Unpin>(conn: Arc<Conn>, mut wr: W, stall: Duration) {
    let mut spare: Vec<u8> = Vec::with_capacity(16 * 1024);
    'outer: loop {
        tokio::select! {
            _ = conn.cancel.cancelled() => break,
            _ = conn.wake.notified() => {}
        }
        loop {
            {
                let mut out = conn.out.lock();
                std::mem::swap(&mut *out, &mut spare);
                conn.queued.store(0, Ordering::Relaxed);
            }
            if spare.is_empty() {
                break;
            }
            // Each write must make progress within `stall`; a provider that stopped reading
            // (its receive window and our send buffer full) is given up on.
            let mut done = 0;
            while done < spare.len() {
                let r = tokio::select! {
                    _ = conn.cancel.cancelled() => break 'outer,
                    r = tokio::time::timeout(stall, wr.write(&spare[done..])) => r,
                };
                match r {
                    Ok(Ok(0)) => {
                        conn.shutdown("write failed: the socket accepts no more bytes");
                        break 'outer;
                    }
                    Ok(Ok(n)) => {
                        done += n;
                        conn.last_write.store(conn.now_ms(), Ordering::Relaxed);
                    }
                    Ok(Err(e)) => {
                        conn.shutdown(&conn.io_reason("write", e));
                        break 'outer;
                    }
                    Err(_) => {
                        conn.shutdown(&stalled(stall));
                        break 'outer;
                    }
                }
            }
            // TLS buffers records until flushed (a no-op on a plain socket).
            let flushed = tokio::select! {
                _ = conn.cancel.cancelled() => break 'outer,
                r = tokio::time::timeout(stall, wr.flush()) => r,
            };
            match flushed {
                Ok(Ok(())) => {}
                Ok(Err(e)) => {
                    conn.shutdown(&conn.io_reason("write", e));
                    break 'outer;
                }
                Err(_) => {
                    conn.shutdown(&stalled(stall));
                    break 'outer;
                }
            }
            spare.clear();
            if spare.capacity() > KEEP_BUFFER {
                spare = Vec::with_capacity(16 * 1024);
            }
        }
    }
    let _ = wr.shutdown().await;
}

/// Why a connection whose writes made no progress for `stall` is given up.
fn stalled(stall: Duration) -> String {
    format!(
        "write stalled: no byte accepted for {} ms (the provider is not reading)",
        stall.as_millis()
    )
}
