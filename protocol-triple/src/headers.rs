//! Request headers as a Java 3.3 Triple consumer sends them (Java's
//! `RequestMetadata.toHeaders`, `TripleInvoker.createRequest`), and the attachments a provider
//! returns in its headers and trailers.
//!
//! The per-reference part is built once ([`BaseHeaders`]), the per-call part (`grpc-timeout`,
//! `timeout`, attachments) is added to a clone. Attachments (`StreamUtils.convertAttachment`):
//! keys are lower-cased; when a key had capitals, a `tri-header-convert` header carries the JSON
//! map `{lower: Original}` (percent-encoded like `grpc-message`) so the provider restores the
//! case. Attachments are strings here; a key ending in `-bin` is a binary attachment: its value's
//! bytes go out base64 (standard alphabet, no padding, as Java's `byte[]` attachments).
//! Response attachments ([`response_attachments`]) come from the response headers and trailers
//! (trailers win), with the reserved names removed, `-bin` values base64-decoded and the
//! provider's `tri-header-convert` map applied.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use base64::engine::general_purpose::STANDARD_NO_PAD;
use base64::Engine;
use http::header::{HeaderName, HeaderValue, CONTENT_TYPE, TE};
use http::HeaderMap;
use parking_lot::Mutex;
use percent_encoding::{utf8_percent_encode, AsciiSet, CONTROLS};
use registry_core::Url;

use crate::compression::{Encoding, ACCEPT_ENCODING};

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
    /// The `grpc-timeout` and `timeout` values of the last timeout used (calls of one
    /// reference nearly always share it), so a call does not format them again.
    timeouts: Arc<Mutex<Option<(Duration, HeaderValue, HeaderValue)>>>,
}

fn value(v: &str) -> Option<HeaderValue> {
    HeaderValue::from_str(v)
        .ok()
        .or_else(|| HeaderValue::from_bytes(v.as_bytes()).ok())
}

/// Bytes `TriRpcStatus.encodeMessage` percent-encodes: outside 0x20..=0x7e, and `%`.
const MESSAGE_ESCAPE: &AsciiSet = &CONTROLS.add(b'%');

/// Percent-encodes a header text as `grpc-message` values are (`TriRpcStatus.encodeMessage`).
pub(crate) fn encode_message(v: &str) -> String {
    utf8_percent_encode(v, MESSAGE_ESCAPE).to_string()
}

fn is_excluded(lower: &str) -> bool {
    lower.starts_with(':') || EXCLUDED.contains(&lower)
}

/// The name of a binary attachment key (`trace-bin` → `trace`), `None` for a text key.
fn bin_stem(lower: &str) -> Option<&str> {
    lower
        .strip_suffix(BIN_SUFFIX)
        .filter(|stem| !stem.is_empty())
}

const BIN_SUFFIX: &str = "-bin";

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
        BaseHeaders {
            map,
            timeouts: Arc::default(),
        }
    }

    /// Adds `grpc-encoding` for requests compressed with `encoding` (nothing for identity,
    /// which Java does not announce either).
    pub fn with_encoding(mut self, encoding: Encoding) -> BaseHeaders {
        if encoding != Encoding::Identity {
            self.map.insert(
                HeaderName::from_static("grpc-encoding"),
                HeaderValue::from_static(encoding.name()),
            );
        }
        self
    }

    fn timeout_values(&self, timeout: Duration) -> Option<(HeaderValue, HeaderValue)> {
        let mut cache = self.timeouts.lock();
        if let Some((d, g, t)) = &*cache {
            if *d == timeout {
                return Some((g.clone(), t.clone()));
            }
        }
        let ms = timeout.as_millis();
        let grpc_timeout = if ms <= 99_999_999 {
            format!("{ms}m")
        } else {
            format!("{}S", (timeout.as_secs()).min(99_999_999))
        };
        let g = HeaderValue::from_str(&grpc_timeout).ok()?;
        let t = HeaderValue::from_str(&ms.to_string()).ok()?;
        *cache = Some((timeout, g.clone(), t.clone()));
        Some((g, t))
    }

    /// The headers for one call: the base, `grpc-timeout` and `timeout` from `timeout`, and
    /// every attachment that is not excluded, key lower-cased (plus `tri-header-convert` when a
    /// key had capitals; `-bin` keys carry base64). Attachment keys or values that are not
    /// valid header text are skipped with a warning.
    pub fn for_call<'a>(
        &self,
        timeout: Duration,
        attachments: impl IntoIterator<Item = (&'a str, &'a str)>,
    ) -> HeaderMap {
        let mut map = self.map.clone();
        if let Some((grpc_timeout, timeout_ms)) = self.timeout_values(timeout) {
            map.insert(HeaderName::from_static("grpc-timeout"), grpc_timeout);
            map.insert(HeaderName::from_static("timeout"), timeout_ms);
        }
        let mut convert: Option<BTreeMap<String, String>> = None;
        for (k, v) in attachments {
            let lower = k.to_ascii_lowercase();
            if lower == "timeout" || is_excluded(&lower) {
                continue;
            }
            let val = match bin_stem(&lower) {
                Some(_) => HeaderValue::from_str(&STANDARD_NO_PAD.encode(v.as_bytes())).ok(),
                None => value(v),
            };
            match (HeaderName::from_bytes(lower.as_bytes()), val) {
                (Ok(name), Some(val)) => {
                    map.insert(name, val);
                }
                _ => {
                    tracing::warn!(key = %k, "attachment is not a valid HTTP/2 header; not sent");
                    continue;
                }
            }
            if lower != k {
                // Java maps the attachment name (without `-bin` for binary values).
                let (l, o) = match bin_stem(&lower) {
                    Some(stem) => (stem, &k[..stem.len()]),
                    None => (lower.as_str(), k),
                };
                convert
                    .get_or_insert_with(BTreeMap::new)
                    .insert(l.to_owned(), o.to_owned());
            }
        }
        if let Some(c) = convert {
            let json = serde_json::to_string(&c).unwrap_or_default();
            if let Ok(v) = HeaderValue::from_str(&encode_message(&json)) {
                map.insert(HeaderName::from_static("tri-header-convert"), v);
            }
        }
        map
    }
}

/// The `tri-header-convert` map of a response (`{lower: Original}`), empty when absent or bad.
fn convert_map(maps: &[&HeaderMap]) -> BTreeMap<String, String> {
    let Some(raw) = maps.iter().rev().find_map(|m| m.get("tri-header-convert")) else {
        return BTreeMap::new();
    };
    let text = crate::status::decode_message(raw.as_bytes());
    serde_json::from_str(&text).unwrap_or_else(|e| {
        tracing::warn!(error = %e, "ignoring a tri-header-convert header that is not a JSON map");
        BTreeMap::new()
    })
}

/// The attachments of a response: every header and trailer that is not reserved (trailers win
/// over headers). A `k-bin` value is base64-decoded into attachment `k` when the bytes are
/// UTF-8; other binary values stay base64 under `k-bin`. The provider's `tri-header-convert`
/// map restores key case. Allocates nothing when there is no such header.
pub(crate) fn response_attachments(
    headers: &HeaderMap,
    trailers: Option<&HeaderMap>,
) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let maps: &[&HeaderMap] = match trailers {
        Some(t) => &[headers, t],
        None => &[headers],
    };
    let mut convert: Option<BTreeMap<String, String>> = None;
    for m in maps {
        for (name, v) in m.iter() {
            let key = name.as_str();
            if is_excluded(key) {
                continue;
            }
            let (key, text) = match bin_stem(key) {
                Some(stem) => match decode_bin(v.as_bytes()) {
                    Some(s) => (stem, s),
                    None => (key, String::from_utf8_lossy(v.as_bytes()).into_owned()),
                },
                None => (key, String::from_utf8_lossy(v.as_bytes()).into_owned()),
            };
            let convert = convert.get_or_insert_with(|| convert_map(maps));
            let key = convert.get(key).map_or(key, String::as_str);
            out.insert(key.to_owned(), text);
        }
    }
    out
}

/// Base64 (padded or not, as gRPC allows) to UTF-8 text.
fn decode_bin(v: &[u8]) -> Option<String> {
    let trimmed = v
        .strip_suffix(b"==")
        .or_else(|| v.strip_suffix(b"="))
        .unwrap_or(v);
    let bytes = STANDARD_NO_PAD.decode(trimmed).ok()?;
    String::from_utf8(bytes).ok()
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
        // The cached values follow a changed timeout.
        let base = BaseHeaders::from_url(&bare);
        assert_eq!(base.for_call(Duration::from_secs(3), [])["timeout"], "3000");
        let h2 = base.for_call(Duration::from_millis(250), []);
        assert_eq!(h2["grpc-timeout"], "250m");
        assert_eq!(h2["timeout"], "250");
        assert!(h.get("tri-header-convert").is_none());
        assert!(h.get("grpc-encoding").is_none());
    }

    #[test]
    fn case_changes_produce_the_convert_map_and_bin_values_are_base64() {
        let url = Url::parse("tri://127.0.0.1:50051/a.B").unwrap();
        let h = BaseHeaders::from_url(&url)
            .with_encoding(Encoding::Gzip)
            .for_call(
                Duration::from_secs(1),
                [
                    ("Trace-Id", "t1"),
                    ("plain", "p"),
                    ("Blob-bin", "hello"),
                    ("raw-bin", "\u{1}\u{2}"),
                    ("Application", "excluded"),
                    ("Interface", "excluded"),
                    ("Caf\u{e9}", "non-ascii key"),
                ],
            );
        assert_eq!(h["grpc-encoding"], "gzip");
        assert_eq!(h["trace-id"], "t1");
        assert_eq!(h["plain"], "p");
        assert_eq!(h["blob-bin"], "aGVsbG8");
        assert_eq!(h["raw-bin"], "AQI");
        assert!(h.get("application").is_none());
        assert!(h.get("interface").is_none());
        let conv = crate::status::decode_message(h["tri-header-convert"].as_bytes());
        let conv: BTreeMap<String, String> = serde_json::from_str(&conv).unwrap();
        assert_eq!(
            conv,
            BTreeMap::from([
                ("blob".to_owned(), "Blob".to_owned()),
                ("trace-id".to_owned(), "Trace-Id".to_owned()),
            ])
        );
        // Only lower-case keys: no map.
        let h = BaseHeaders::from_url(&url).for_call(Duration::from_secs(1), [("k", "v")]);
        assert!(h.get("tri-header-convert").is_none());
    }

    #[test]
    fn convert_map_is_percent_encoded_like_grpc_message() {
        assert_eq!(encode_message("{\"a\":\"é%\"}"), "{\"a\":\"%C3%A9%25\"}");
    }

    #[test]
    fn response_attachments_skip_reserved_decode_bin_and_restore_case() {
        let mut head = HeaderMap::new();
        head.insert("content-type", HeaderValue::from_static("application/grpc"));
        head.insert("grpc-encoding", HeaderValue::from_static("gzip"));
        head.insert("tri-exception-code", HeaderValue::from_static("0"));
        head.insert("trace-id", HeaderValue::from_static("from-headers"));
        head.insert("only-head", HeaderValue::from_static("h"));
        let mut trailers = HeaderMap::new();
        trailers.insert("grpc-status", HeaderValue::from_static("0"));
        trailers.insert("grpc-message", HeaderValue::from_static(""));
        trailers.insert("trace-id", HeaderValue::from_static("from-trailers"));
        trailers.insert("blob-bin", HeaderValue::from_static("aGVsbG8="));
        trailers.insert("raw-bin", HeaderValue::from_static("/w"));
        trailers.insert(
            "tri-header-convert",
            HeaderValue::from_static("{\"trace-id\":\"Trace-Id\",\"blob\":\"Blob\"}"),
        );
        let a = response_attachments(&head, Some(&trailers));
        assert_eq!(
            a,
            BTreeMap::from([
                ("Blob".to_owned(), "hello".to_owned()),
                ("Trace-Id".to_owned(), "from-trailers".to_owned()),
                ("only-head".to_owned(), "h".to_owned()),
                ("raw-bin".to_owned(), "/w".to_owned()),
            ])
        );
        assert!(response_attachments(&HeaderMap::new(), None).is_empty());
        let mut bad = HeaderMap::new();
        bad.insert("tri-header-convert", HeaderValue::from_static("not json"));
        bad.insert("k", HeaderValue::from_static("v"));
        assert_eq!(
            response_attachments(&bad, None),
            BTreeMap::from([("k".to_owned(), "v".to_owned())])
        );
    }
}
