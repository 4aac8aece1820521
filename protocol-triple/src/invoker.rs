//! [`TripleInvoker`]: the [`Invoker`] of one `tri://` provider.
//!
//! Per call: resolve the method entry (cached: `:path` URI and, in IDL mode, the rpc
//! descriptor), encode the payload into one buffer that already has the 5-byte prefix space,
//! clone the reference's base headers and add `grpc-timeout`/attachments, run the exchange on
//! the shared connection, decode. No task is spawned per call.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use bytes::{BufMut, BytesMut};
use http::Uri;
use invoker::rpc::{Invocation, Invoker, RpcError, RpcResponse, RpcResult};
use parking_lot::RwLock;
use registry_core::Url;
use rustc_hash::FxHashMap;
use serde_json::Value;

use crate::call::{unary, Reply};
use crate::connection::Connection;
use crate::error::TripleError;
use crate::frame::PREFIX_LEN;
use crate::headers::BaseHeaders;
use crate::idl::IdlMethod;
use crate::payload::PayloadMode;
use crate::status::Code;
use crate::wrapper_codec;

/// Default call timeout (Java's Triple unary default when the URL has none).
pub const DEFAULT_TIMEOUT_MS: i64 = 3000;
/// Default payload limit each way (bytes), overridable with the URL's `payload` parameter.
pub const DEFAULT_PAYLOAD: usize = 8 * 1024 * 1024;

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
    destroyed: AtomicBool,
}

impl TripleInvoker {
    /// An invoker for `url` on `conn`.
    pub fn new(url: Url, conn: Arc<Connection>, mode: PayloadMode) -> TripleInvoker {
        let path = url
            .path()
            .filter(|p| !p.is_empty())
            .or_else(|| url.service_interface())
            .unwrap_or_default()
            .trim_matches('/')
            .to_owned();
        let payload = usize::try_from(url.param_i64("payload", DEFAULT_PAYLOAD as i64))
            .ok()
            .filter(|p| *p > 0)
            .unwrap_or(DEFAULT_PAYLOAD);
        TripleInvoker {
            base: BaseHeaders::from_url(&url),
            url,
            conn,
            path,
            mode,
            methods: RwLock::new(FxHashMap::default()),
            max_request: payload,
            max_response: payload,
            destroyed: AtomicBool::new(false),
        }
    }

    /// The shared connection.
    pub fn connection(&self) -> &Arc<Connection> {
        &self.conn
    }

    /// The timeout of a call: the `timeout` attachment, else the URL's (method-level first)
    /// `timeout`, else 3000 ms.
    pub fn timeout_of(&self, inv: &Invocation) -> Duration {
        let ms = inv
            .attachment("timeout")
            .and_then(|v| v.trim().parse::<i64>().ok())
            .filter(|v| *v > 0)
            .unwrap_or_else(|| {
                let v = self
                    .url
                    .method_param_i64(inv.method(), "timeout", DEFAULT_TIMEOUT_MS);
                if v > 0 {
                    v
                } else {
                    DEFAULT_TIMEOUT_MS
                }
            });
        Duration::from_millis(ms as u64)
    }

    fn entry(&self, method: &str) -> Result<Arc<MethodEntry>, TripleError> {
        if let Some(e) = self.methods.read().get(method) {
            return Ok(e.clone());
        }
        let (path, idl) = match &self.mode {
            PayloadMode::Wrapper => (format!("/{}/{}", self.path, method), None),
            PayloadMode::Idl(svc) => {
                let m = svc.schema.method(&svc.service, method)?;
                (m.path().to_owned(), Some(m))
            }
        };
        let uri = Uri::builder()
            .scheme("http")
            .authority(self.conn.addr())
            .path_and_query(path.as_str())
            .build()
            .map_err(|e| TripleError::InvalidArgument(format!("bad request path {path:?}: {e}")))?;
        let e = Arc::new(MethodEntry { uri, idl });
        self.methods.write().insert(Box::from(method), e.clone());
        Ok(e)
    }

    /// Performs a call and returns the decoded JSON result.
    pub async fn call(&self, inv: &Invocation) -> Result<Value, TripleError> {
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
        fill_prefix(&mut body, len);
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
            body.freeze(),
            self.max_response,
            timeout,
        )
        .await?;
        self.decode(&entry, reply)
    }

    fn decode(&self, entry: &MethodEntry, reply: Reply) -> Result<Value, TripleError> {
        if let Some(code) = reply.exception_code {
            if code == 3 {
                if let Some((class, message)) =
                    wrapper_codec::decode_exception(reply.message.as_ref())
                {
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
            Some(m) => m.decode_result(reply.message),
            None => wrapper_codec::decode_result(reply.message),
        }
    }
}

fn fill_prefix(body: &mut BytesMut, len: usize) {
    let mut p = &mut body[..PREFIX_LEN];
    p.put_u8(0);
    p.put_u32(len as u32);
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
        match self.call(invocation).await {
            Ok(v) => Ok(RpcResponse::new(v)),
            Err(e) => Err(RpcError::from(e)),
        }
    }

    fn destroy(&self) {
        self.destroyed.store(true, Ordering::Release);
    }
}
