//! Write coalescing under load: [`CoalescingIo`] sits between h2 and the TCP socket of one
//! connection and lets requests that are queued close together leave in one write.
//!
//! Why: with many calls in flight, every response frees one caller, which sends its next request
//! at once, so a fast client writes almost one segment per call and the provider wakes up once per
//! request. A provider pays per wake-up (an event-loop turn, a read, and for a thread-pool server
//! a thread hand-off), so requests that arrive together are cheaper to serve: measured on a
//! grpcio provider limited to one CPU, 14–24 % less provider CPU per call and 15–30 % more
//! throughput (BENCHMARKS.md, "Triple calls"). Java's Triple client batches what is already queued
//! (`TripleWriteQueue`, one flush per drained chunk) and gRPC C-core combines writes while one is
//! in progress; neither waits, which is why a fast client needs the short hold below.
//!
//! The rule is adaptive and bounded, so a lightly loaded connection never waits:
//! - Only requests are held: the bytes are parsed as HTTP/2 frames, and any frame other than
//!   HEADERS, CONTINUATION or DATA (PING and SETTINGS acknowledgements, WINDOW_UPDATE,
//!   RST_STREAM, GOAWAY) makes the buffer leave at once.
//! - A batch is `in_flight / 8` requests (calls on this connection that have begun and not
//!   ended). Below 16 calls in flight the batch is 1, so nothing is held; at 64 it is 8, and the
//!   provider still has at least 7/8 of the window to work on while a batch fills.
//! - Nothing waits longer than [`HOLD_MAX`] (tokio's timer rounds it up to the next millisecond),
//!   and a call that ends while requests are held re-checks the rule, so a window that shrinks
//!   releases the batch.
//! - Writes that would make the buffer larger than [`BUFFER_MAX`] (a large message) flush what is
//!   held and go straight to the socket, uncopied.
//!
//! The hot path allocates nothing in steady state: the buffer and the timer are kept for the
//! life of the connection, and the gate is two atomics and a waker slot.

use std::future::Future;
use std::io::{self, IoSlice};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use bytes::{Buf, BytesMut};
use parking_lot::Mutex;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::{Instant, Sleep};

/// The longest a request is held for company.
const HOLD_MAX: Duration = Duration::from_micros(500);
/// Calls in flight per held request: the batch is `in_flight / HOLD_DIVISOR`.
const HOLD_DIVISOR: usize = 8;
/// Bytes buffered at most; a write that would pass it flushes and goes straight through.
const BUFFER_MAX: usize = 64 * 1024;

const FRAME_HEADER: usize = 9;
const PREFACE_LEN: usize = 24;
const TYPE_DATA: u8 = 0x0;
const TYPE_HEADERS: u8 = 0x1;
const TYPE_CONTINUATION: u8 = 0x9;
const FLAG_END_STREAM: u8 = 0x1;

/// What the calls of one connection tell its writer: how many are in flight, and a way to wake
/// the writer when that changes while it holds requests. It also counts the reads that brought
/// bytes, which the keepalive uses to tell a quiet connection.
#[derive(Debug, Default)]
pub(crate) struct FlushGate {
    enabled: bool,
    in_flight: AtomicUsize,
    holding: AtomicBool,
    waker: Mutex<Option<Waker>>,
    reads: AtomicU64,
}

impl FlushGate {
    /// A gate; `enabled = false` never holds a write.
    pub(crate) fn new(enabled: bool) -> Self {
        FlushGate {
            enabled,
            ..FlushGate::default()
        }
    }

    /// Calls on this connection that have begun and not ended.
    pub(crate) fn in_flight(&self) -> usize {
        self.in_flight.load(Ordering::Relaxed)
    }

    /// Reads from the socket that brought at least one byte, so far.
    pub(crate) fn reads(&self) -> u64 {
        self.reads.load(Ordering::Relaxed)
    }

    /// Counts a call as in flight until the guard drops.
    pub(crate) fn begin(self: &Arc<Self>) -> InFlight {
        self.in_flight.fetch_add(1, Ordering::Relaxed);
        InFlight(self.clone())
    }

    fn batch(&self) -> usize {
        if !self.enabled {
            return 0;
        }
        self.in_flight() / HOLD_DIVISOR
    }

    fn hold(&self, waker: &Waker) {
        let mut slot = self.waker.lock();
        if !slot.as_ref().is_some_and(|w| w.will_wake(waker)) {
            *slot = Some(waker.clone());
        }
        self.holding.store(true, Ordering::Release);
    }

    fn release(&self) {
        self.holding.store(false, Ordering::Relaxed);
    }
}

/// A call in flight on a connection (see [`FlushGate::begin`]).
#[derive(Debug)]
pub(crate) struct InFlight(Arc<FlushGate>);

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.in_flight.fetch_sub(1, Ordering::Relaxed);
        if self.0.holding.load(Ordering::Acquire) {
            if let Some(w) = self.0.waker.lock().as_ref() {
                w.wake_by_ref();
            }
        }
    }
}

/// Tracks HTTP/2 frame boundaries in the bytes written, counting whole requests (DATA with
/// END_STREAM) and noting frames that must not wait.
#[derive(Debug)]
struct FrameScan {
    preface_left: usize,
    header: [u8; FRAME_HEADER],
    header_have: usize,
    payload_left: usize,
    requests: usize,
    urgent: bool,
}

impl FrameScan {
    fn new() -> Self {
        FrameScan {
            preface_left: PREFACE_LEN,
            header: [0; FRAME_HEADER],
            header_have: 0,
            payload_left: 0,
            requests: 0,
            urgent: true, // the preface and SETTINGS leave at once
        }
    }

    fn scan(&mut self, mut bytes: &[u8]) {
        while !bytes.is_empty() {
            if self.preface_left > 0 {
                let n = self.preface_left.min(bytes.len());
                self.preface_left -= n;
                bytes = &bytes[n..];
            } else if self.payload_left > 0 {
                let n = self.payload_left.min(bytes.len());
                self.payload_left -= n;
                bytes = &bytes[n..];
            } else {
                let n = (FRAME_HEADER - self.header_have).min(bytes.len());
                self.header[self.header_have..self.header_have + n].copy_from_slice(&bytes[..n]);
                self.header_have += n;
                bytes = &bytes[n..];
                if self.header_have == FRAME_HEADER {
                    self.header_have = 0;
                    let h = &self.header;
                    self.payload_left =
                        (usize::from(h[0]) << 16) | (usize::from(h[1]) << 8) | usize::from(h[2]);
                    match h[3] {
                        TYPE_DATA if h[4] & FLAG_END_STREAM != 0 => self.requests += 1,
                        TYPE_DATA | TYPE_HEADERS | TYPE_CONTINUATION => {}
                        _ => self.urgent = true,
                    }
                }
            }
        }
    }

    fn flushed(&mut self) {
        self.requests = 0;
        self.urgent = false;
    }
}

/// The socket wrapper (see the module docs). Reads pass straight through.
#[derive(Debug)]
pub(crate) struct CoalescingIo<T> {
    inner: T,
    gate: Arc<FlushGate>,
    buf: BytesMut,
    scan: FrameScan,
    timer: Pin<Box<Sleep>>,
    timer_armed: bool,
}

impl<T> CoalescingIo<T> {
    pub(crate) fn new(inner: T, gate: Arc<FlushGate>) -> Self {
        CoalescingIo {
            inner,
            gate,
            buf: BytesMut::with_capacity(8 * 1024),
            scan: FrameScan::new(),
            timer: Box::pin(tokio::time::sleep_until(Instant::now())),
            timer_armed: false,
        }
    }
}

impl<T: AsyncWrite + Unpin> CoalescingIo<T> {
    /// Writes out everything buffered.
    fn poll_drain(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        while !self.buf.is_empty() {
            let n = match Pin::new(&mut self.inner).poll_write(cx, &self.buf) {
                Poll::Ready(Ok(0)) => return Poll::Ready(Err(io::ErrorKind::WriteZero.into())),
                Poll::Ready(Ok(n)) => n,
                Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                Poll::Pending => return Poll::Pending,
            };
            self.buf.advance(n);
        }
        self.scan.flushed();
        self.gate.release();
        self.timer_armed = false;
        Poll::Ready(Ok(()))
    }

    /// True while the buffered requests should wait for company (see the module docs).
    fn should_hold(&mut self, cx: &mut Context<'_>) -> bool {
        if self.scan.urgent || self.scan.requests == 0 || self.scan.requests >= self.gate.batch() {
            return false;
        }
        if !self.timer_armed {
            self.timer.as_mut().reset(Instant::now() + HOLD_MAX);
            self.timer_armed = true;
        }
        if self.timer.as_mut().poll(cx).is_ready() {
            return false;
        }
        self.gate.hold(cx.waker());
        // A call may have ended between the check and registering the waker.
        self.scan.requests < self.gate.batch()
    }
}

impl<T: AsyncRead + Unpin> AsyncRead for CoalescingIo<T> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let r = Pin::new(&mut self.inner).poll_read(cx, buf);
        if buf.filled().len() > before {
            self.gate.reads.fetch_add(1, Ordering::Relaxed);
        }
        r
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for CoalescingIo<T> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        data: &[u8],
    ) -> Poll<io::Result<usize>> {
        self.poll_write_vectored(cx, &[IoSlice::new(data)])
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = &mut *self;
        let total: usize = bufs.iter().map(|b| b.len()).sum();
        if this.buf.len() + total <= BUFFER_MAX {
            for b in bufs {
                this.buf.extend_from_slice(b);
                this.scan.scan(b);
            }
            return Poll::Ready(Ok(total));
        }
        std::task::ready!(this.poll_drain(cx))?;
        let n = std::task::ready!(Pin::new(&mut this.inner).poll_write_vectored(cx, bufs))?;
        let mut left = n;
        for b in bufs {
            let k = left.min(b.len());
            this.scan.scan(&b[..k]);
            left -= k;
            if left == 0 {
                break;
            }
        }
        this.scan.flushed();
        Poll::Ready(Ok(n))
    }

    fn is_write_vectored(&self) -> bool {
        true
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = &mut *self;
        if !this.buf.is_empty() && this.should_hold(cx) {
            return Poll::Pending;
        }
        std::task::ready!(this.poll_drain(cx))?;
        Pin::new(&mut this.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = &mut *self;
        std::task::ready!(this.poll_drain(cx))?;
        Pin::new(&mut this.inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::task::Wake;

    /// Every write a [`Recorder`] was given.
    type Writes = Arc<Mutex<Vec<Vec<u8>>>>;

    /// A socket that records every write it is given.
    #[derive(Default)]
    struct Recorder(Writes);

    impl AsyncWrite for Recorder {
        fn poll_write(
            self: Pin<&mut Self>,
            _: &mut Context<'_>,
            data: &[u8],
        ) -> Poll<io::Result<usize>> {
            self.0.lock().push(data.to_vec());
            Poll::Ready(Ok(data.len()))
        }
        fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
            Poll::Ready(Ok(()))
        }
        fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
            Poll::Ready(Ok(()))
        }
    }

    struct CountWake(AtomicUsize);
    impl Wake for CountWake {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    fn request() -> Vec<u8> {
        let mut r = frame(TYPE_HEADERS, 0x4, 40);
        r.extend(frame(TYPE_DATA, FLAG_END_STREAM, 12));
        r
    }

    /// A connected wrapper (preface and SETTINGS already out) with `calls` in flight.
    fn connected(calls: usize, enabled: bool) -> (CoalescingIo<Recorder>, Writes, Vec<InFlight>) {
        let gate = Arc::new(FlushGate::new(enabled));
        let guards = (0..calls).map(|_| gate.begin()).collect();
        let rec = Recorder::default();
        let writes = rec.0.clone();
        let mut io = CoalescingIo::new(rec, gate);
        let mut hello = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".to_vec();
        hello.extend(frame(0x4, 0, 12));
        let mut cx = Context::from_waker(Waker::noop());
        assert!(write(&mut io, &mut cx, &hello));
        assert!(flush(&mut io, &mut cx), "the preface leaves at once");
        assert_eq!(writes.lock().len(), 1);
        (io, writes, guards)
    }

    fn write(io: &mut CoalescingIo<Recorder>, cx: &mut Context<'_>, bytes: &[u8]) -> bool {
        matches!(Pin::new(io).poll_write(cx, bytes), Poll::Ready(Ok(n)) if n == bytes.len())
    }

    /// True when the flush completed (not held).
    fn flush(io: &mut CoalescingIo<Recorder>, cx: &mut Context<'_>) -> bool {
        match Pin::new(io).poll_flush(cx) {
            Poll::Ready(r) => {
                assert!(r.is_ok());
                true
            }
            Poll::Pending => false,
        }
    }

    /// A wrapper with 64 calls in flight holding one request.
    fn one_held() -> (CoalescingIo<Recorder>, Writes, Vec<InFlight>) {
        let (mut io, writes, calls) = connected(64, true);
        let mut cx = Context::from_waker(Waker::noop());
        assert!(write(&mut io, &mut cx, &request()));
        assert!(
            !flush(&mut io, &mut cx),
            "one request of a batch of 8 is held"
        );
        (io, writes, calls)
    }

    #[tokio::test(start_paused = true)]
    async fn requests_wait_for_a_batch_under_load() {
        let (mut io, writes, _calls) = connected(64, true);
        let mut cx = Context::from_waker(Waker::noop());
        for i in 0..7 {
            assert!(write(&mut io, &mut cx, &request()));
            assert!(
                !flush(&mut io, &mut cx),
                "request {i} of a batch of 8 is held"
            );
        }
        assert_eq!(writes.lock().len(), 1, "nothing written while held");
        assert!(write(&mut io, &mut cx, &request()));
        assert!(
            flush(&mut io, &mut cx),
            "the 8th request completes the batch"
        );
        let w = writes.lock();
        assert_eq!(w.len(), 2);
        assert_eq!(
            w[1].len(),
            8 * request().len(),
            "one write carries the batch"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn nothing_waits_with_few_calls_in_flight_or_when_disabled() {
        for (calls, enabled) in [(1, true), (15, true), (64, false)] {
            let (mut io, writes, _calls) = connected(calls, enabled);
            let mut cx = Context::from_waker(Waker::noop());
            assert!(write(&mut io, &mut cx, &request()));
            assert!(
                flush(&mut io, &mut cx),
                "{calls} in flight (enabled {enabled})"
            );
            assert_eq!(writes.lock().len(), 2);
        }
    }

    #[tokio::test(start_paused = true)]
    async fn the_hold_is_bounded_in_time() {
        let (mut io, writes, _calls) = one_held();
        let mut cx = Context::from_waker(Waker::noop());
        tokio::time::advance(HOLD_MAX + Duration::from_millis(1)).await;
        assert!(flush(&mut io, &mut cx), "released by the timer");
        assert_eq!(writes.lock().len(), 2);
    }

    #[tokio::test(start_paused = true)]
    async fn a_control_frame_releases_held_requests() {
        let (mut io, writes, _calls) = one_held();
        let mut cx = Context::from_waker(Waker::noop());
        assert!(write(&mut io, &mut cx, &frame(0x3, 0, 4))); // RST_STREAM
        assert!(flush(&mut io, &mut cx));
        assert_eq!(writes.lock().len(), 2);
        // The next request is judged on its own again.
        assert!(write(&mut io, &mut cx, &request()));
        assert!(!flush(&mut io, &mut cx));
    }

    #[tokio::test(start_paused = true)]
    async fn calls_ending_while_held_wake_the_writer() {
        let (mut io, writes, mut calls) = connected(64, true);
        let wakes = Arc::new(CountWake(AtomicUsize::new(0)));
        let waker = Waker::from(wakes.clone());
        let mut cx = Context::from_waker(&waker);
        assert!(write(&mut io, &mut cx, &request()));
        assert!(
            !flush(&mut io, &mut cx),
            "held, with this task's waker registered"
        );
        calls.truncate(7); // 57 calls end: the batch drops to 0
        assert!(wakes.0.load(Ordering::SeqCst) > 0, "the writer was woken");
        assert!(flush(&mut io, &mut cx));
        assert_eq!(writes.lock().len(), 2);
    }

    #[tokio::test(start_paused = true)]
    async fn a_large_write_goes_straight_through() {
        let (mut io, writes, _calls) = one_held();
        let mut cx = Context::from_waker(Waker::noop());
        let big = frame(TYPE_DATA, FLAG_END_STREAM, BUFFER_MAX);
        assert!(write(&mut io, &mut cx, &big));
        let w = writes.lock();
        assert_eq!(
            w.len(),
            3,
            "the held request first, then the large frame uncopied"
        );
        assert_eq!(w[1], request());
        assert_eq!(w[2].len(), big.len());
    }

    fn frame(ty: u8, flags: u8, len: usize) -> Vec<u8> {
        let mut f = vec![
            (len >> 16) as u8,
            (len >> 8) as u8,
            len as u8,
            ty,
            flags,
            0,
            0,
            0,
            1,
        ];
        f.resize(FRAME_HEADER + len, 0xAB);
        f
    }

    fn scanned_past_preface() -> FrameScan {
        let mut s = FrameScan::new();
        s.scan(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n");
        s.scan(&frame(0x4, 0, 12)); // SETTINGS
        assert!(s.urgent, "the preface's SETTINGS must not wait");
        s.flushed();
        s
    }

    #[test]
    fn counts_requests_across_split_writes() {
        let mut s = scanned_past_preface();
        let mut bytes = frame(TYPE_HEADERS, 0x4, 40);
        bytes.extend(frame(TYPE_DATA, FLAG_END_STREAM, 12));
        bytes.extend(frame(TYPE_HEADERS, 0x4, 40));
        bytes.extend(frame(TYPE_DATA, 0, 30)); // a body in two frames
        bytes.extend(frame(TYPE_DATA, FLAG_END_STREAM, 3));
        for chunk in bytes.chunks(5) {
            s.scan(chunk);
        }
        assert_eq!(s.requests, 2);
        assert!(!s.urgent);
        assert_eq!((s.header_have, s.payload_left), (0, 0));
    }

    #[test]
    fn control_frames_are_urgent() {
        for ty in [0x3u8, 0x4, 0x6, 0x7, 0x8] {
            let mut s = scanned_past_preface();
            s.scan(&frame(TYPE_HEADERS, 0x4, 10));
            s.scan(&frame(ty, 0, 8));
            assert!(s.urgent, "frame type {ty} must leave at once");
        }
    }

    #[test]
    fn a_payload_that_looks_like_a_header_is_not_read_as_one() {
        let mut s = scanned_past_preface();
        // A DATA payload holding the bytes of a PING frame header.
        let mut payload = frame(0x6, 0, 0);
        payload.truncate(FRAME_HEADER);
        let mut bytes = vec![
            0,
            0,
            FRAME_HEADER as u8,
            TYPE_DATA,
            FLAG_END_STREAM,
            0,
            0,
            0,
            3,
        ];
        bytes.extend(payload);
        s.scan(&bytes);
        assert_eq!(s.requests, 1);
        assert!(!s.urgent);
    }

    #[test]
    fn the_batch_follows_the_calls_in_flight() {
        let gate = Arc::new(FlushGate::new(true));
        let calls: Vec<_> = (0..64).map(|_| gate.begin()).collect();
        assert_eq!(gate.batch(), 8);
        drop(calls);
        assert_eq!(gate.batch(), 0);
        let few: Vec<_> = (0..15).map(|_| gate.begin()).collect();
        assert_eq!(gate.batch(), 1, "below 16 in flight nothing is held");
        drop(few);
    }
}
