//! What every protocol reads the same way from a provider URL before it dials: the socket
//! address ([`socket_address`]), the key its shared connections are kept under
//! ([`connection_key`]) and the message size limit ([`payload_limit`], [`DEFAULT_PAYLOAD`]).

use std::borrow::Cow;

use registry_core::Url;

/// The largest message each way when a URL sets no `payload` (Dubbo's
/// `Constants.DEFAULT_PAYLOAD`, 8 MiB).
pub const DEFAULT_PAYLOAD: usize = 8 * 1024 * 1024;

/// The address a protocol dials for `provider`: `host:port`, with an IPv6 host in brackets
/// (`[fd00::1]:20880`); a port outside `1..=65535` is `default_port`. `None` without a host.
pub fn socket_address(provider: &Url, default_port: i32) -> Option<String> {
    let host = provider.host().filter(|h| !h.is_empty())?;
    let port = match provider.port() {
        p if (1..=65535).contains(&p) => p,
        _ => default_port,
    };
    Some(if host.contains(':') && !host.starts_with('[') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    })
}

/// The key of the connections a protocol shares between the invokers of one address (Dubbo's
/// shared clients): the address itself, or `tls:` and the address for TLS, so that a provider
/// that turns TLS on is never served by the plaintext connection kept for it (nor the other
/// way round).
pub fn connection_key(address: &str, tls: bool) -> Cow<'_, str> {
    if tls {
        Cow::Owned(format!("tls:{address}"))
    } else {
        Cow::Borrowed(address)
    }
}

/// The message limit of `provider` (bytes): its `payload` parameter when positive, else
/// [`DEFAULT_PAYLOAD`]; never more than `ceiling` (at least 1).
pub fn payload_limit(provider: &Url, ceiling: usize) -> usize {
    let asked = match provider
        .param("payload")
        .map(str::trim)
        .map(str::parse::<i64>)
    {
        Some(Ok(v)) if v > 0 => usize::try_from(v).unwrap_or(usize::MAX),
        _ => DEFAULT_PAYLOAD,
    };
    asked.min(ceiling.max(1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_bracket_ipv6_and_default_the_port() {
        let at = |u: &str| socket_address(&Url::parse(u).unwrap(), 20880);
        assert_eq!(
            at("dubbo://10.0.0.1:20881/S").as_deref(),
            Some("10.0.0.1:20881")
        );
        assert_eq!(at("dubbo://10.0.0.1/S").as_deref(), Some("10.0.0.1:20880"));
        assert_eq!(at("dubbo://[fd00::1]:7/S").as_deref(), Some("[fd00::1]:7"));
        assert_eq!(at("dubbo://h:70000/S").as_deref(), Some("h:20880"));
        assert_eq!(at("mock:///S"), None);
    }

    #[test]
    fn tls_and_plaintext_connections_are_kept_apart() {
        assert_eq!(connection_key("10.0.0.1:50051", false), "10.0.0.1:50051");
        assert_eq!(connection_key("10.0.0.1:50051", true), "tls:10.0.0.1:50051");
        assert_eq!(connection_key("[fd00::1]:7", true), "tls:[fd00::1]:7");
    }

    #[test]
    fn payload_from_the_url_within_the_ceiling() {
        let limit = |u: &str, c| payload_limit(&Url::parse(u).unwrap(), c);
        assert_eq!(limit("dubbo://h:1/S?payload=1024", usize::MAX), 1024);
        assert_eq!(limit("dubbo://h:1/S", usize::MAX), DEFAULT_PAYLOAD);
        assert_eq!(
            limit("dubbo://h:1/S?payload=-1", usize::MAX),
            DEFAULT_PAYLOAD
        );
        assert_eq!(
            limit("dubbo://h:1/S?payload=x", usize::MAX),
            DEFAULT_PAYLOAD
        );
        assert_eq!(
            limit("dubbo://h:1/S?payload=99999999999", 64 << 20),
            64 << 20
        );
        assert_eq!(limit("dubbo://h:1/S", 0), 1);
    }
}
