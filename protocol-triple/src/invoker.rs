//! [`TripleInvoker`]: the [`Invoker`] of one `tri://` provider.
//!
//! Per call: resolve the method entry (cached: `:path` URI and, in IDL mode, the rpc
//! descriptor), encode the payload into one buffer that already has the 5-byte prefix space
//! (compressed into a second buffer with the flag set when the reference compresses requests),
//! clone the reference's base headers and add `grpc-timeout`/attachments, run the exchange on
//! the shared connection, decode; the response headers and trailers become the result's
//! attachments. No task is spawned per call.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use bytes::{BufMut, Bytes};
use http::Uri;
use invoker::rpc::{Invocation, Invoker, RpcError, RpcResponse, RpcResult};
use parking_lot::RwLock;
use registry_core::Url;
use rustc_hash::FxHashMap;
use serde_json::Value;

use crate::call::{unary, Reply};
use crate::compression::Encoding;
use crate::connection::Connection;
use crate::error::TripleError;
use crate::frame::PREFIX_LEN;
use crate::headers::{response_attachments, BaseHeaders};
use crate::idl::IdlMethod;
use crate::payload::PayloadMode;
use crate::status::Code;
use crate::wrapper_codec;

/// Default call timeout (Java's Triple unary default when the URL has none).
pub const DEFAULT_TIMEOUT_MS: u64 = 3000;
/// Default payload limit each way (bytes), overridable with the URL's `payload` parameter.
pub use invoker::rpc::DEFAULT_PAYLOAD;

/// What a consumer lets provider URLs set for its Triple calls, and its decoding limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TripleLimits {
    /// The largest `payload` a URL may set (bytes; default 8 MiB): a URL may lower the message
    /// limit, not raise it past this. At most `u32::MAX` (the gRPC length prefix).
    pub max_payload: usize,
    /// Bounds of the Hessian2 decoder for wrapper-mode results (depth, lengths, memory budget);
    /// its memory budget also bounds IDL-mode results (a protobuf message and its JSON form).
    pub hessian: hessian2::Limits,
    /// Methods whose request path (and IDL descriptor) an invoker keeps; calls of further
    /// method names work the same but compute it each time (default 1024: the names come from
    /// callers).
    pub max_cached_methods: usize,
}

impl Default for TripleLimits {
    fn default() -> Self {
        TripleLimits {
            max_payload: DEFAULT_PAYLOAD,
            hessian: hessian2::Limits::DEFAULT,
            max_cached_methods: 1024,
        }
    }
}

#[derive(Debug)]
struct MethodEntry {
    uri: Uri,
    idl: Option<IdlMethod>,
}

/// The invoker of one provider URL, on a connection shared with other invokers of the same
/// address.
#[derive(Debug)]
pub struct TripleInvoker {
    url: Url,
    conn: Arc<Connection>,
    base: BaseHeaders,
    path: String,
    mode: PayloadMode,
    methods: RwLock<FxHashMap<Box<str>, Arc<MethodEntry>>>,
    max_request: usize,
    max_response: usize,
    limits: TripleLimits,
    encoding: Encoding,
    destroyed: AtomicBool,
}

impl TripleInvoker {
    /// An invoker for `url` on `conn`, with the default [`TripleLimits`].
    pub fn new(url: Url, conn: Arc<Connection>, mode: PayloadMode) -> TripleInvoker {
        Self::with_limits(url, conn, mode, TripleLimits::default())
    }

    /// An invoker for `url` on `conn`; the URL's `payload` is clamped to
    /// `limits.max_payload`.
    pub fn with_limits(
        url: Url,
        conn: Arc<Connection>,
        mode: PayloadMode,
        limits: TripleLimits,
    ) -> TripleInvoker {
        let path = url
            .path()
            .filter(|p| !p.is_empty())
            .or_else(|| url.service_interface())
            .unwrap_or_default()
            .trim_matches('/')
            .to_owned();
        let max_payload = limits.max_payload.clamp(1, u32::MAX as usize);
        let payload = invoker::rpc::payload_limit(&url, max_payload);
        TripleInvoker {
            base: BaseHeaders::from_url(&url),
            url,
            conn,
            path,
            mode,
            methods: RwLock::new(FxHashMap::default()),
            max_request: payload,
            max_response: payload,
            limits,
            encoding: Encoding::Identity,
            destroyed: AtomicBool::new(false),
        }
    }

    /// Compresses every request message with `encoding` (`grpc-encoding` header and the
    /// per-message compressed flag; Java's `dubbo.rpc.tri.compressor`). Identity (the default)
    /// sends plain messages and no `grpc-encoding`.
    pub fn with_request_encoding(mut self, encoding: Encoding) -> TripleInvoker {
        self.base = self.base.with_encoding(encoding);
        self.encoding = encoding;
        self
    }

    /// The shared connection.
    pub fn connection(&self) -> &Arc<Connection> {
        &self.conn
    }

    /// The message limit each way (the URL's `payload` within the consumer's ceiling).
    pub fn payload_limit(&self) -> usize {
        self.max_request
    }

    /// Methods whose request path this invoker keeps (at most `max_cached_methods`).
    pub fn cached_methods(&self) -> usize {
        self.methods.read().len()
    }

    /// The timeout of a call ([`invoker::rpc::call_timeout`]): the `timeout` attachment, else
    /// the URL's (method-level first) `timeout`, else 3000 ms; never past the caller's
    /// remaining time.
    pub fn timeout_of(&self, inv: &Invocation) -> Duration {
        invoker::rpc::call_timeout(&self.url, inv, DEFAULT_TIMEOUT_MS)
    }

    fn entry(&self, method: &str) -> Result<Arc<MethodEntry>, TripleError> {
        if let Some(e) = self.methods.read().get(method) {
            return Ok(e.clone());
        }
        let (path, idl) = match &self.mode {
            PayloadMode::Wrapper => (format!("/{}/{}", self.path, method), None),
            PayloadMode::Idl(svc) => {
                let m = svc.resolve(method)?;
                (m.path().to_owned(), Some(m))
            }
        };
        let uri = Uri::builder()
            .scheme(self.conn.scheme())
            .authority(self.conn.addr())
            .path_and_query(path.as_str())
            .build()
            .map_err(|e| TripleError::InvalidArgument(format!("bad request path {path:?}: {e}")))?;
        let e = Arc::new(MethodEntry { uri, idl });
        let mut methods = self.methods.write();
        if methods.len() < self.limits.max_cached_methods {
            methods.insert(Box::from(method), e.clone());
        }
        Ok(e)
    }

    /// Performs a call and returns the decoded JSON result.
    pub async fn call(&self, inv: &Invocation) -> Result<Value, TripleError> {
        let (entry, reply) = self.exchange(inv).await?;
        self.decode(&entry, reply)
    }

    /// Performs a call and returns the decoded result with the provider's attachments
    /// (response headers and trailers, see `headers::response_attachments`).
    pub async fn call_with_attachments(
        &self,
        inv: &Invocation,
    ) -> Result<RpcResponse, TripleError> {
        let (entry, mut reply) = self.exchange(inv).await?;
        let attachments = response_attachments(&reply.headers, reply.trailers.as_ref());
        reply.trailers = None;
        let value = self.decode(&entry, reply)?;
        Ok(RpcResponse { value, attachments })
    }

    async fn exchange(&self, inv: &Invocation) -> Result<(Arc<MethodEntry>, Reply), TripleError> {
        if self.destroyed.load(Ordering::Acquire) {
            return Err(TripleError::Destroyed(self.conn.addr().to_owned()));
        }
        let entry = self.entry(inv.method())?;
        let mut body = match &entry.idl {
            Some(m) => m.encode_args(inv.arguments())?,
            None => wrapper_codec::encode_args(inv.parameter_types(), inv.arguments())?,
        };
        let len = body.len() - PREFIX_LEN;
        if len > self.max_request {
            return Err(TripleError::TooLarge {
                direction: "request",
                size: len,
                limit: self.max_request,
            });
        }
        let body = if self.encoding == Encoding::Identity {
            fill_prefix(&mut body, false, len)?;
            body.freeze()
        } else {
            compress(self.encoding, &body[PREFIX_LEN..])?
        };
        let timeout = self.timeout_of(inv);
        let headers = self.base.for_call(
            timeout,
            inv.attachments
                .iter()
                .map(|(k, v)| (k.as_str(), v.as_str())),
        );
        let reply = unary(
            &self.conn,
            entry.uri.clone(),
            headers,
            body,
            self.max_response,
            timeout,
        )
        .await?;
        Ok((entry, reply))
    }

    fn decode(&self, entry: &MethodEntry, reply: Reply) -> Result<Value, TripleError> {
        if let Some(code) = reply.exception_code {
            if code == 3 {
                if let Some((class, message)) = wrapper_codec::decode_exception_with(
                    reply.message.as_ref(),
                    self.limits.hessian,
                ) {
                    return Err(TripleError::Biz { class, message });
                }
            }
            let status = if reply.status == Code::Ok {
                Code::from_u32(code as u32)
            } else {
                reply.status
            };
            return Err(TripleError::Status {
                code: status,
                message: if reply.status_message.is_empty() {
                    format!("tri-exception-code {code}")
                } else {
                    reply.status_message
                },
            });
        }
        match &entry.idl {
            Some(m) => m.decode_result_with(reply.message, self.limits.hessian),
            None => wrapper_codec::decode_result_with(reply.message, self.limits.hessian),
        }
    }
}

/// Writes the 5-byte prefix; `len` is at most the payload limit, itself at most `u32::MAX`
/// (checked again here: a length the prefix cannot hold is an error, never truncated).
fn fill_prefix(body: &mut [u8], compressed: bool, len: usize) -> Result<(), TripleError> {
    let len32 = u32::try_from(len).map_err(|_| TripleError::TooLarge {
        direction: "request",
        size: len,
        limit: u32::MAX as usize,
    })?;
    let mut p = &mut body[..PREFIX_LEN];
    p.put_u8(u8::from(compressed));
    p.put_u32(len32);
    Ok(())
}

/// Frames `message` compressed with `encoding`, the compressed flag set.
fn compress(encoding: Encoding, message: &[u8]) -> Result<Bytes, TripleError> {
    let mut out = Vec::with_capacity(PREFIX_LEN + message.len() / 2 + 32);
    out.resize(PREFIX_LEN, 0);
    encoding
        .compress_into(message, &mut out)
        .map_err(TripleError::Codec)?;
    let len = out.len() - PREFIX_LEN;
    fill_prefix(&mut out, true, len)?;
    Ok(Bytes::from(out))
}

#[async_trait]
impl Invoker for TripleInvoker {
    fn url(&self) -> &Url {
        &self.url
    }

    fn is_available(&self) -> bool {
        !self.destroyed.load(Ordering::Acquire) && self.conn.is_available()
    }

    async fn invoke(&self, invocation: &Invocation) -> RpcResult {
        self.call_with_attachments(invocation)
            .await
            .map_err(RpcError::from)
    }

    fn destroy(&self) {
        self.destroyed.store(true, Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compressed_frames_have_the_flag_and_gzip_bytes() {
        let framed = compress(Encoding::Gzip, b"\x0a\x05bench").unwrap();
        assert_eq!(framed[0], 1);
        let len = u32::from_be_bytes([framed[1], framed[2], framed[3], framed[4]]) as usize;
        assert_eq!(len, framed.len() - PREFIX_LEN);
        assert_eq!(&framed[5..7], &[0x1f, 0x8b]);
        let plain = Encoding::Gzip.decompress(&framed[5..], 100).unwrap();
        assert_eq!(&plain[..], b"\x0a\x05bench");
    }
}
