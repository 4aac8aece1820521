//! [`DubboInvoker`]: calls one `dubbo://` provider (Java's `DubboInvoker`).
//!
//! Per call: the timeout (the invocation's `timeout` attachment, else the URL's method-level
//! `timeout`, default 1000 ms; capped by a propagated `_TO` deadline), one-way detection
//! (`return=false` method param or attachment, or [`CallMode::Oneway`]), the attachments
//! Java sends (`interface`, `group`, `token`, `application` from the URL unless the caller set
//! them; then `path`, `version`, `timeout`), a body encoded by a reused per-thread Hessian2
//! encoder, a request id registered on a shared connection, and the response decoded into a
//! value, a biz error (the Java exception's class and message) or an RPC error.

use std::cell::RefCell;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

use async_trait::async_trait;
use hessian2::Encoder;
use invoker::rpc::{CallMode, Invocation, Invoker, RpcError, RpcResponse, RpcResult};
use parking_lot::{Mutex, RwLock};
use registry_core::Url;
use rustc_hash::FxHashMap;
use serde_json::Value;
use tokio::time::Instant;

use crate::client::Client;
use crate::connection::{next_id, Conn};
use crate::error::DubboError;
use crate::header::Header;
use crate::pool::{ConnectionPool, Holder};
use crate::request::{encode_call_body, CallBody};
use crate::response::decode_response_with;
use crate::types::infer_java_type;

/// Dubbo's default call timeout, 1000 ms.
pub const DEFAULT_TIMEOUT_MS: u64 = 1000;
/// The longest call timeout (Java reads `timeout` as an `int`): larger values are taken as
/// this, so a call's deadline is always a time the clock can hold.
pub const MAX_TIMEOUT_MS: u64 = i32::MAX as u64;
/// The version Java sends when the provider URL has none.
pub const DEFAULT_VERSION: &str = "0.0.0";
/// Encoders that grew past this (a huge argument) are not kept for reuse.
const KEEP_ENCODER: usize = 1024 * 1024;
/// At most this many parameter descriptors are cached per invoker.
const MAX_DESCRIPTORS: usize = 1024;

thread_local! {
    static ENCODER: RefCell<Encoder> = RefCell::new(Encoder::new());
}

/// Which connections an invoker holds and how it gives them back.
#[derive(Debug)]
pub(crate) enum Lease {
    /// Shared connections, reference-counted in the pool under a key.
    Shared(Arc<ConnectionPool>, Arc<str>),
    /// Connections of its own (`connections=N`).
    Exclusive,
}

/// The invoker of one `dubbo://` provider URL.
#[derive(Debug)]
pub struct DubboInvoker {
    url: Url,
    addr: Arc<str>,
    clients: Vec<Arc<Client>>,
    next: AtomicUsize,
    lease: Mutex<Option<Lease>>,
    destroyed: AtomicBool,
    path: String,
    interface: Option<String>,
    version: String,
    url_attachments: Vec<(&'static str, String)>,
    serialization: u8,
    payload: usize,
    limits: hessian2::Limits,
    descriptors: RwLock<FxHashMap<Box<[String]>, Arc<str>>>,
}

impl DubboInvoker {
    pub(crate) fn new(
        url: Url,
        addr: Arc<str>,
        clients: Vec<Arc<Client>>,
        lease: Lease,
        serialization: u8,
        payload: usize,
        limits: hessian2::Limits,
    ) -> Self {
        let path = url.path().unwrap_or_default().to_owned();
        let interface = url.param("interface").map(str::to_owned);
        let version = url
            .param("version")
            .filter(|v| !v.is_empty())
            .unwrap_or(DEFAULT_VERSION)
            .to_owned();
        let url_attachments = ["interface", "group", "token", "application"]
            .into_iter()
            .filter_map(|k| url.param(k).map(|v| (k, v.to_owned())))
            .collect();
        DubboInvoker {
            url,
            addr,
            clients,
            next: AtomicUsize::new(0),
            lease: Mutex::new(Some(lease)),
            destroyed: AtomicBool::new(false),
            path,
            interface,
            version,
            url_attachments,
            serialization,
            payload,
            limits,
            descriptors: RwLock::new(FxHashMap::default()),
        }
    }

    /// The provider address `host:port`.
    pub fn address(&self) -> &str {
        &self.addr
    }

    /// True when at least one of its connections is live.
    pub fn is_connected(&self) -> bool {
        self.clients.iter().any(|c| c.is_connected())
    }

    /// Calls waiting for a response on this invoker's connections.
    pub fn pending_calls(&self) -> usize {
        self.clients.iter().map(|c| c.pending_count()).sum()
    }

    /// Bytes queued for writing on this invoker's connections and not yet taken by their
    /// writers (bounded by `DubboOptions::max_queued_bytes` per connection).
    pub fn queued_write_bytes(&self) -> usize {
        self.clients.iter().map(|c| c.queued_bytes()).sum()
    }

    /// `$echo(value)`: the health probe every Java provider answers with its argument.
    pub async fn echo(&self, value: Value) -> RpcResult {
        let inv =
            Invocation::new("$echo").with_arguments(vec!["java.lang.Object".into()], vec![value]);
        self.invoke(&inv).await
    }

    /// The call timeout in ms for `inv` (at most [`MAX_TIMEOUT_MS`]).
    pub fn timeout_ms(&self, inv: &Invocation) -> u64 {
        self.timeout_ms_unclamped(inv).min(MAX_TIMEOUT_MS)
    }

    fn timeout_ms_unclamped(&self, inv: &Invocation) -> u64 {
        let t = invoker::rpc::call_timeout(&self.url, inv, DEFAULT_TIMEOUT_MS);
        u64::try_from(t.as_millis()).unwrap_or(u64::MAX)
    }

    fn is_oneway(&self, inv: &Invocation) -> bool {
        inv.mode == CallMode::Oneway
            || inv.attachment("return") == Some("false")
            || !self
                .url
                .method_param_bool(inv.real_method(), "return", true)
    }

    fn descriptor(&self, types: &[String]) -> Arc<str> {
        if let Some(d) = self.descriptors.read().get(types) {
            return d.clone();
        }
        let refs: Vec<&str> = types.iter().map(String::as_str).collect();
        let d: Arc<str> = hessian2::java_descriptor(&refs).into();
        let mut m = self.descriptors.write();
        if m.len() < MAX_DESCRIPTORS {
            m.insert(types.into(), d.clone());
        }
        d
    }

    fn pick(&self) -> Result<&Arc<Client>, DubboError> {
        let n = self.clients.len();
        if n == 0 {
            return Err(DubboError::Closed {
                addr: self.addr.to_string(),
            });
        }
        if n == 1 {
            return Ok(&self.clients[0]);
        }
        let i = self.next.fetch_add(1, Ordering::Relaxed) % n;
        Ok(&self.clients[i])
    }

    /// Encodes the request and queues it on `conn`.
    fn send(
        &self,
        conn: &Conn,
        inv: &Invocation,
        id: i64,
        two_way: bool,
        timeout_ms: u64,
    ) -> Result<(), DubboError> {
        let args = inv.arguments();
        let given = inv.parameter_types();
        let inferred: Vec<String>;
        let types: &[String] = if given.len() == args.len() {
            given
        } else {
            inferred = args
                .iter()
                .map(|a| infer_java_type(a).into_owned())
                .collect();
            &inferred
        };
        let descriptor = self.descriptor(types);
        let mut tbuf = [0u8; 20];
        let timeout_s = format_u64(timeout_ms, &mut tbuf);
        let user = &inv.attachments;
        let interface = user
            .get("interface")
            .map(String::as_str)
            .or(self.interface.as_deref());
        let service_path = interface.unwrap_or(&self.path);
        let fixed = self
            .url_attachments
            .iter()
            .filter(|(k, _)| !user.contains_key(*k))
            .map(|(k, v)| (*k, v.as_str()));
        let from_user = user
            .iter()
            .filter(|(k, _)| !matches!(k.as_str(), "path" | "version" | "timeout"))
            .map(|(k, v)| (k.as_str(), v.as_str()));
        let ours = [
            ("path", self.path.as_str()),
            ("version", self.version.as_str()),
            ("timeout", timeout_s),
        ];
        let body = CallBody {
            service_path,
            version: &self.version,
            method: inv.method(),
            descriptor: &descriptor,
            types,
            args,
        };
        with_encoder(|enc| {
            encode_call_body(enc, &body, fixed.chain(from_user).chain(ours))?;
            let bytes = enc.as_bytes();
            if bytes.len() > self.payload {
                return Err(DubboError::PayloadTooLarge {
                    what: "request",
                    len: bytes.len() as u64,
                    limit: self.payload as u64,
                });
            }
            let len = u32::try_from(bytes.len()).map_err(|_| DubboError::PayloadTooLarge {
                what: "request",
                len: bytes.len() as u64,
                limit: self.payload as u64,
            })?;
            let header = Header::request(id, two_way, self.serialization, len);
            conn.send_frame(&header, bytes)
        })
    }

    async fn call(&self, inv: &Invocation) -> Result<RpcResponse, DubboError> {
        if self.destroyed.load(Ordering::Acquire) {
            return Err(DubboError::Closed {
                addr: self.addr.to_string(),
            });
        }
        let timeout_ms = self.timeout_ms(inv);
        let start = Instant::now();
        let deadline = start + std::time::Duration::from_millis(timeout_ms);
        let client = self.pick()?;
        let conn = client.conn(deadline).await?;
        let id = next_id();
        if self.is_oneway(inv) {
            self.send(&conn, inv, id, false, timeout_ms)?;
            return Ok(RpcResponse::empty());
        }
        conn.register(id)?;
        let mut guard = PendingGuard {
            conn: &conn,
            id,
            armed: true,
        };
        self.send(&conn, inv, id, true, timeout_ms)?;
        let reply = tokio::time::timeout_at(deadline, conn.reply(id)).await;
        guard.armed = false;
        match reply {
            Ok(Ok(frame)) => decode_response_with(&frame, &self.addr, self.limits),
            Ok(Err(e)) => Err(e),
            Err(_) => {
                conn.unregister(id);
                Err(DubboError::Timeout {
                    method: inv.real_method().to_owned(),
                    addr: self.addr.to_string(),
                    elapsed_ms: start.elapsed().as_millis() as u64,
                    timeout_ms,
                })
            }
        }
    }

    fn release(&self) {
        if let Some(lease) = self.lease.lock().take() {
            match lease {
                Lease::Shared(pool, key) => pool.release(&key, Holder::Invoker),
                Lease::Exclusive => self.clients.iter().for_each(|c| c.close()),
            }
        }
    }
}

#[async_trait]
impl Invoker for DubboInvoker {
    fn url(&self) -> &Url {
        &self.url
    }

    fn is_available(&self) -> bool {
        !self.destroyed.load(Ordering::Acquire) && self.clients.iter().any(|c| c.is_available())
    }

    async fn invoke(&self, invocation: &Invocation) -> RpcResult {
        self.call(invocation).await.map_err(|e| {
            let rpc: RpcError = e.to_rpc_error();
            tracing::debug!(addr = %self.addr, method = invocation.real_method(), "dubbo call failed: {rpc}");
            rpc
        })
    }

    fn destroy(&self) {
        if !self.destroyed.swap(true, Ordering::AcqRel) {
            self.release();
        }
    }
}

impl Drop for DubboInvoker {
    fn drop(&mut self) {
        self.release();
    }
}

/// Removes a pending entry when the call is dropped (cancelled) before its response.
struct PendingGuard<'a> {
    conn: &'a Conn,
    id: i64,
    armed: bool,
}

impl Drop for PendingGuard<'_> {
    fn drop(&mut self) {
        if self.armed {
            self.conn.unregister(self.id);
        }
    }
}

fn with_encoder<R>(f: impl FnOnce(&mut Encoder) -> R) -> R {
    ENCODER.with(|cell| match cell.try_borrow_mut() {
        Ok(mut enc) => {
            enc.clear();
            let r = f(&mut enc);
            if enc.as_bytes().len() > KEEP_ENCODER {
                *enc = Encoder::new();
            } else {
                enc.clear();
            }
            r
        }
        Err(_) => f(&mut Encoder::new()),
    })
}

/// Formats `v` in decimal into `buf` without allocating.
fn format_u64(mut v: u64, buf: &mut [u8; 20]) -> &str {
    let mut i = buf.len();
    loop {
        i -= 1;
        buf[i] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    std::str::from_utf8(&buf[i..]).unwrap_or("0")
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::format_u64;

    #[test]
    fn formats_numbers() {
        let mut b = [0u8; 20];
        assert_eq!(format_u64(0, &mut b), "0");
        assert_eq!(format_u64(1000, &mut b), "1000");
        assert_eq!(format_u64(u64::MAX, &mut b), "18446744073709551615");
    }
}
