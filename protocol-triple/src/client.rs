//! [`TripleClient`]: IDL mode for library users with their own `prost` messages.

use std::sync::Arc;
use std::time::Duration;

use bytes::{BufMut, BytesMut};
use http::Uri;
use registry_core::Url;

use crate::call::unary;
use crate::connection::{Connection, ConnectionOptions};
use crate::error::TripleError;
use crate::frame::PREFIX_LEN;
use crate::headers::BaseHeaders;
use crate::invoker::DEFAULT_PAYLOAD;

/// Unary calls with typed protobuf messages over one connection.
///
/// `path` is `/{package.Service}/{Method}`; headers follow the URL given at construction
/// (`version`, `group`, `application`).
#[derive(Debug, Clone)]
pub struct TripleClient {
    conn: Arc<Connection>,
    base: BaseHeaders,
    max_message: usize,
}

impl TripleClient {
    /// A client for the provider at `url` (`tri://host:port[?version=..&group=..]`).
    /// Errors: no host, or called outside a tokio runtime.
    pub fn new(url: &Url) -> Result<TripleClient, TripleError> {
        Self::with_options(url, ConnectionOptions::default())
    }

    /// As [`TripleClient::new`], with the connection's HTTP/2 settings.
    pub fn with_options(
        url: &Url,
        options: ConnectionOptions,
    ) -> Result<TripleClient, TripleError> {
        let host = url
            .host()
            .filter(|h| !h.is_empty())
            .ok_or_else(|| TripleError::InvalidArgument(format!("{url} has no host")))?;
        let port = if url.port() > 0 { url.port() } else { 50051 };
        let conn = Connection::open(&format!("{host}:{port}"), options)?;
        Ok(Self::over(conn, url))
    }

    /// As [`TripleClient::with_options`], over TLS when `tls` applies to `url` (its
    /// [`TlsMode`](transport_tls::TlsMode) is `Always`, or the URL says `ssl-enabled=true`).
    /// Errors: a TLS file cannot be used, no host, or called outside a tokio runtime.
    pub fn with_tls(
        url: &Url,
        options: ConnectionOptions,
        tls: &transport_tls::TlsConfig,
    ) -> Result<TripleClient, TripleError> {
        if !tls.applies_to(url) {
            return Self::with_options(url, options);
        }
        let host = url
            .host()
            .filter(|h| !h.is_empty())
            .ok_or_else(|| TripleError::InvalidArgument(format!("{url} has no host")))?;
        let port = if url.port() > 0 { url.port() } else { 50051 };
        let client = transport_tls::TlsClient::new(tls, transport_tls::Alpn::H2)
            .map_err(|e| TripleError::InvalidArgument(e.to_string()))?;
        let addr = if host.contains(':') && !host.starts_with('[') {
            format!("[{host}]:{port}")
        } else {
            format!("{host}:{port}")
        };
        let conn = Connection::open_tls(&addr, host, options, &client)?;
        Ok(Self::over(conn, url))
    }

    fn over(conn: Arc<Connection>, url: &Url) -> TripleClient {
        TripleClient {
            conn,
            base: BaseHeaders::from_url(url),
            max_message: DEFAULT_PAYLOAD,
        }
    }

    /// The connection (for readiness checks).
    pub fn connection(&self) -> &Arc<Connection> {
        &self.conn
    }

    /// Calls `path` with `request` and decodes the reply as `Resp`.
    pub async fn unary<Req, Resp>(
        &self,
        path: &str,
        request: &Req,
        timeout: Duration,
    ) -> Result<Resp, TripleError>
    where
        Req: prost::Message,
        Resp: prost::Message + Default,
    {
        let len = request.encoded_len();
        if len > self.max_message {
            return Err(TripleError::TooLarge {
                direction: "request",
                size: len,
                limit: self.max_message,
            });
        }
        let len32 = u32::try_from(len).map_err(|_| TripleError::TooLarge {
            direction: "request",
            size: len,
            limit: u32::MAX as usize,
        })?;
        let mut buf = BytesMut::with_capacity(PREFIX_LEN + len);
        buf.put_u8(0);
        buf.put_u32(len32);
        request
            .encode(&mut buf)
            .map_err(|e| TripleError::Codec(format!("protobuf encode: {e}")))?;
        let uri = Uri::builder()
            .scheme(self.conn.scheme())
            .authority(self.conn.addr())
            .path_and_query(path)
            .build()
            .map_err(|e| TripleError::InvalidArgument(format!("bad path {path:?}: {e}")))?;
        let headers = self.base.for_call(timeout, []);
        let reply = unary(
            &self.conn,
            uri,
            headers,
            buf.freeze(),
            self.max_message,
            timeout,
        )
        .await?;
        if reply.exception_code.is_some() {
            return Err(TripleError::Status {
                code: reply.status,
                message: reply.status_message,
            });
        }
        Resp::decode(reply.message.unwrap_or_default())
            .map_err(|e| TripleError::Codec(format!("protobuf decode: {e}")))
    }
}
