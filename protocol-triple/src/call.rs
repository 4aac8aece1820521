//! One unary gRPC exchange on a [`Connection`]: send headers + one framed message, read the
//! response headers, at most one message and the trailers (or a trailers-only response), and
//! turn every outcome into a [`Reply`] or a [`TripleError`].

use std::time::Duration;

use bytes::Bytes;
use http::{HeaderMap, Request, Uri};

use crate::compression::Encoding;
use crate::connection::Connection;
use crate::error::TripleError;
use crate::frame::{FrameDecoder, FrameError};
use crate::status::{decode_message, Code};

/// A completed unary exchange with `grpc-status: 0`, or with a business exception.
#[derive(Debug)]
pub struct Reply {
    /// The one response message (decompressed), `None` when the server sent none.
    pub message: Option<Bytes>,
    /// `tri-exception-code` from the response headers (0 or absent means none).
    pub exception_code: Option<i32>,
    /// The final status (OK unless `exception_code` is set).
    pub status: Code,
    /// The percent-decoded `grpc-message` (empty when absent).
    pub status_message: String,
    /// The response headers.
    pub headers: HeaderMap,
    /// The trailers (`None` for a trailers-only response). Attachments the provider returned
    /// live in these and in `headers` (`headers::response_attachments`).
    pub trailers: Option<HeaderMap>,
}

/// Performs one unary call. The whole exchange is bounded by `timeout`; dropping the future
/// resets the stream (RST_STREAM CANCEL). A timeout makes the connection PING its peer (see
/// `Connection::suspect`).
pub(crate) async fn unary(
    conn: &Connection,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
    max_response: usize,
    timeout: Duration,
) -> Result<Reply, TripleError> {
    match tokio::time::timeout(timeout, exchange(conn, uri, headers, body, max_response)).await {
        Ok(r) => r,
        Err(_) => {
            conn.suspect();
            Err(TripleError::Timeout(timeout))
        }
    }
}

fn h2_error(conn: &Connection, e: h2::Error) -> TripleError {
    if e.is_go_away() || e.is_io() {
        conn.invalidate(&e.to_string());
    }
    let reason = if let Some(r) = e.reason().filter(|_| e.is_reset()) {
        format!("stream reset by the peer ({r:?}): {e}")
    } else if e.is_go_away() {
        format!("GOAWAY from the peer: {e}")
    } else {
        e.to_string()
    };
    TripleError::Http2 {
        addr: conn.addr().to_owned(),
        reason,
    }
}

fn protocol(conn: &Connection, reason: impl Into<String>) -> TripleError {
    TripleError::Protocol {
        addr: conn.addr().to_owned(),
        reason: reason.into(),
    }
}

fn status_of(map: &HeaderMap) -> Option<(Code, String)> {
    let code = Code::from_header(map.get("grpc-status")?.as_bytes());
    let msg = map
        .get("grpc-message")
        .map(|v| decode_message(v.as_bytes()))
        .unwrap_or_default();
    Some((code, msg))
}

async fn exchange(
    conn: &Connection,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
    max_response: usize,
) -> Result<Reply, TripleError> {
    let (sender, _in_flight) = conn.sender().await?;
    let mut sender = sender.ready().await.map_err(|e| h2_error(conn, e))?;
    let mut req = Request::post(uri)
        .body(())
        .map_err(|e| TripleError::InvalidArgument(format!("bad request: {e}")))?;
    *req.headers_mut() = headers;
    let (response, mut stream) = sender
        .send_request(req, false)
        .map_err(|e| h2_error(conn, e))?;
    // A server may answer (e.g. a trailers-only UNIMPLEMENTED) and close the stream before the
    // request body is queued; h2 then refuses the data ("inactive stream"). The answer is what
    // counts; without one, the stream's own error (which says why) is reported.
    if let Err(e) = stream.send_data(body, true) {
        tracing::debug!(error = %e, "request body not sent; waiting for the answer");
    }
    let response = response.await.map_err(|e| h2_error(conn, e))?;
    let (head, mut recv) = response.into_parts();

    let content_type = head
        .headers
        .get(http::header::CONTENT_TYPE)
        .map(|v| v.as_bytes())
        .unwrap_or_default();
    let is_grpc = content_type.starts_with(b"application/grpc");
    if !is_grpc || head.status != http::StatusCode::OK {
        // Trailers-only error responses are gRPC even with an HTTP 200 and no body.
        if let (true, Some((code, msg))) = (is_grpc, status_of(&head.headers)) {
            if code != Code::Ok {
                return Err(TripleError::Status { code, message: msg });
            }
        }
        let code = if head.status == http::StatusCode::OK {
            Code::Unknown
        } else {
            Code::from_http_status(head.status.as_u16())
        };
        let what = if is_grpc {
            format!("HTTP status {}", head.status.as_u16())
        } else {
            format!(
                "HTTP status {} with non-gRPC content-type {:?}",
                head.status.as_u16(),
                String::from_utf8_lossy(content_type)
            )
        };
        return Err(TripleError::Status {
            code,
            message: what,
        });
    }
    let exception_code = head
        .headers
        .get("tri-exception-code")
        .and_then(|v| std::str::from_utf8(v.as_bytes()).ok())
        .and_then(|v| v.trim().parse::<i32>().ok())
        .filter(|c| *c != 0);
    let encoding = Encoding::from_header(head.headers.get("grpc-encoding").map(|v| v.as_bytes()))
        .map_err(|e| TripleError::Status {
        code: Code::Unimplemented,
        message: e,
    })?;

    // Trailers-only response: the status is in the headers and the stream has ended.
    if recv.is_end_stream() {
        let (status, status_message) = status_of(&head.headers)
            .ok_or_else(|| protocol(conn, "response ended without grpc-status"))?;
        return finish(
            status,
            status_message,
            None,
            exception_code,
            head.headers,
            None,
        );
    }

    let mut decoder = FrameDecoder::new(max_response);
    let mut message: Option<Bytes> = None;
    while let Some(chunk) = recv.data().await {
        let chunk = chunk.map_err(|e| h2_error(conn, e))?;
        let _ = recv.flow_control().release_capacity(chunk.len());
        decoder.push(chunk).map_err(|e| match e {
            FrameError::TooLarge { size, limit } => TripleError::TooLarge {
                direction: "response",
                size,
                limit,
            },
            other => protocol(conn, other.to_string()),
        })?;
        while let Some(m) = decoder.next_message() {
            if message.is_some() {
                return Err(protocol(conn, "more than one message in a unary response"));
            }
            let data = if m.compressed {
                encoding
                    .decompress(&m.data, max_response)
                    .map_err(|e| protocol(conn, e))?
            } else {
                m.data
            };
            message = Some(data);
        }
    }
    let trailers = recv.trailers().await.map_err(|e| h2_error(conn, e))?;
    decoder
        .finish()
        .map_err(|e| protocol(conn, e.to_string()))?;
    let (status, status_message) = trailers
        .as_ref()
        .and_then(status_of)
        .or_else(|| status_of(&head.headers))
        .ok_or_else(|| protocol(conn, "response ended without grpc-status trailers"))?;
    finish(
        status,
        status_message,
        message,
        exception_code,
        head.headers,
        trailers,
    )
}

fn finish(
    status: Code,
    status_message: String,
    message: Option<Bytes>,
    exception_code: Option<i32>,
    headers: HeaderMap,
    trailers: Option<HeaderMap>,
) -> Result<Reply, TripleError> {
    if status != Code::Ok && exception_code.is_none() {
        return Err(TripleError::Status {
            code: status,
            message: status_message,
        });
    }
    Ok(Reply {
        message,
        exception_code,
        status,
        status_message,
        headers,
        trailers,
    })
}
