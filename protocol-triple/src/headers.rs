//! Request headers as a Java 3.3 Triple consumer sends them (transport.md §3.2,
//! triple-peers.md §3.2): the per-reference part is built once ([`BaseHeaders`]), the per-call
//! part (`grpc-timeout`, `timeout`, attachments) is added to a clone.

use std::time::Duration;

use http::header::{HeaderName, HeaderValue, CONTENT_TYPE, TE};
use http::HeaderMap;
use registry_core::Url;

use crate::compression::ACCEPT_ENCODING;

/// The content type sent in both IDL and wrapper mode.
pub const CONTENT_TYPE_PROTO: &str = "application/grpc+proto";

/// Attachment keys never sent as headers (`StreamUtils.putHeaders` exclusions plus the
/// `TripleHeaderEnum` names).
const EXCLUDED: &[&str] = &[
    "group",
    "interface",
    "path",
    "remote.application",
    "application",
    "serialization",
    "rest-service-version",
    "rest-service-group",
    "http-status",
    "grpc-status",
    "grpc-message",
    "grpc-status-details-bin",
    "grpc-timeout",
    "content-type",
    "grpc-encoding",
    "grpc-accept-encoding",
    "tri-consumer-appname",
    "tri-service-version",
    "tri-service-group",
    "tri-service-timeout",
    "tri-header-convert",
    "tri-exception-code",
    "te",
    "host",
    "connection",
    "keep-alive",
    "transfer-encoding",
    "upgrade",
];

/// Headers that do not change between calls of one reference.
#[derive(Debug, Clone)]
pub struct BaseHeaders {
    map: HeaderMap,
}

fn value(v: &str) -> Option<HeaderValue> {
    HeaderValue::from_str(v)
        .ok()
        .or_else(|| HeaderValue::from_bytes(v.as_bytes()).ok())
}

impl BaseHeaders {
    /// From the (merged) provider URL: `tri-service-version` and `tri-service-group` only when
    /// the URL has a non-empty `version`/`group`; `tri-consumer-appname` from `application`.
    pub fn from_url(url: &Url) -> BaseHeaders {
        let mut map = HeaderMap::with_capacity(12);
        map.insert(CONTENT_TYPE, HeaderValue::from_static(CONTENT_TYPE_PROTO));
        map.insert(TE, HeaderValue::from_static("trailers"));
        if let Some(v) = url.version().filter(|v| !v.is_empty()).and_then(value) {
            map.insert(HeaderName::from_static("tri-service-version"), v);
        }
        if let Some(v) = url.group().filter(|v| !v.is_empty()).and_then(value) {
            map.insert(HeaderName::from_static("tri-service-group"), v);
        }
        if let Some(v) = url
            .param("application")
            .filter(|v| !v.is_empty())
            .and_then(value)
        {
            map.insert(HeaderName::from_static("tri-consumer-appname"), v);
        }
        map.insert(
            HeaderName::from_static("grpc-accept-encoding"),
            HeaderValue::from_static(ACCEPT_ENCODING),
        );
        if let Some(v) = url.param("token").filter(|v| !v.is_empty()).and_then(value) {
            map.insert(HeaderName::from_static("token"), v);
        }
        BaseHeaders { map }
    }

    /// The headers for one call: the base, `grpc-timeout` and `timeout` from `timeout`, and
    /// every attachment (key lower-cased) that is not excluded. Attachment keys or values that
    /// are not valid header text are skipped with a warning.
    pub fn for_call<'a>(
        &self,
        timeout: Duration,
        attachments: impl IntoIterator<Item = (&'a str, &'a str)>,
    ) -> HeaderMap {
        let mut map = self.map.clone();
        let ms = timeout.as_millis();
        let grpc_timeout = if ms <= 99_999_999 {
            format!("{ms}m")
        } else {
            format!("{}S", (timeout.as_secs()).min(99_999_999))
        };
        if let Ok(v) = HeaderValue::from_str(&grpc_timeout) {
            map.insert(HeaderName::from_static("grpc-timeout"), v);
        }
        if let Ok(v) = HeaderValue::from_str(&ms.to_string()) {
            map.insert(HeaderName::from_static("timeout"), v);
        }
        for (k, v) in attachments {
            let lower = k.to_ascii_lowercase();
            if lower.starts_with(':') || lower == "timeout" || EXCLUDED.contains(&lower.as_str()) {
                continue;
            }
            match (HeaderName::from_bytes(lower.as_bytes()), value(v)) {
                (Ok(name), Some(val)) => {
                    map.insert(name, val);
                }
                _ => tracing::warn!(key = %k, "attachment is not a valid HTTP/2 header; not sent"),
            }
        }
        map
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn version_group_only_when_present_and_attachments_lower_cased() {
        let url =
            Url::parse("tri://127.0.0.1:50051/a.B?interface=a.B&version=1.0.0&application=me")
                .unwrap();
        let h = BaseHeaders::from_url(&url).for_call(
            Duration::from_millis(1500),
            [
                ("Trace-Id", "x"),
                ("group", "no"),
                (":path", "no"),
                ("bad key", "v"),
            ],
        );
        assert_eq!(h["content-type"], "application/grpc+proto");
        assert_eq!(h["te"], "trailers");
        assert_eq!(h["grpc-timeout"], "1500m");
        assert_eq!(h["timeout"], "1500");
        assert_eq!(h["tri-service-version"], "1.0.0");
        assert!(h.get("tri-service-group").is_none());
        assert_eq!(h["tri-consumer-appname"], "me");
        assert_eq!(h["trace-id"], "x");
        assert!(h.get("group").is_none());
        assert!(h.get("bad key").is_none());
        let bare = Url::parse("tri://127.0.0.1:50051/a.B").unwrap();
        let h = BaseHeaders::from_url(&bare).for_call(Duration::from_secs(3), []);
        assert!(h.get("tri-service-version").is_none());
        assert!(h.get("tri-consumer-appname").is_none());
        assert_eq!(h["grpc-timeout"], "3000m");
    }
}
