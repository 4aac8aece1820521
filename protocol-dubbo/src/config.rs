//! Connection settings read from the provider URL (transport §1.6, §1.8, §1.9).

use std::time::Duration;

use registry_core::Url;

use crate::frame::DEFAULT_PAYLOAD;

/// Dubbo's default heartbeat period, 60 s.
pub const DEFAULT_HEARTBEAT_MS: u64 = 60_000;
/// Dubbo's default connect timeout, 3 s.
pub const DEFAULT_CONNECT_TIMEOUT_MS: u64 = 3_000;
/// Dubbo's default reconnect period, 2 s: the ceiling of the reconnect backoff.
pub const DEFAULT_RECONNECT_MS: u64 = 2_000;
/// The first reconnect delay (doubling up to the reconnect period).
pub const FIRST_RECONNECT_DELAY: Duration = Duration::from_millis(100);

/// How one connection behaves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConnConfig {
    /// `connect.timeout`.
    pub connect_timeout: Duration,
    /// `heartbeat`: send one after this long without reading or writing (0 = never).
    pub heartbeat: Duration,
    /// `heartbeat.timeout`: close (and reconnect) after this long without reading.
    pub idle_timeout: Duration,
    /// `payload`: the body limit both ways.
    pub payload: usize,
    /// `reconnect`: the reconnect period ceiling, `None` when `reconnect=false`.
    pub reconnect: Option<Duration>,
    /// `lazy`: connect on the first call instead of at refer time.
    pub lazy: bool,
}

impl Default for ConnConfig {
    fn default() -> Self {
        ConnConfig {
            connect_timeout: Duration::from_millis(DEFAULT_CONNECT_TIMEOUT_MS),
            heartbeat: Duration::from_millis(DEFAULT_HEARTBEAT_MS),
            idle_timeout: Duration::from_millis(3 * DEFAULT_HEARTBEAT_MS),
            payload: DEFAULT_PAYLOAD,
            reconnect: Some(Duration::from_millis(DEFAULT_RECONNECT_MS)),
            lazy: false,
        }
    }
}

impl ConnConfig {
    /// The settings of a provider URL, with Dubbo's defaults.
    pub fn from_url(url: &Url) -> Self {
        let d = ConnConfig::default();
        let ms = |key: &str, default: u64| -> u64 {
            match url.param(key).map(str::trim).map(str::parse::<i64>) {
                Some(Ok(v)) if v >= 0 => v as u64,
                _ => default,
            }
        };
        let heartbeat = ms("heartbeat", DEFAULT_HEARTBEAT_MS);
        // UrlUtils.getIdleTimeout: default 3 x heartbeat, at least 2 x heartbeat.
        let idle = ms("heartbeat.timeout", heartbeat.saturating_mul(3)).max(heartbeat * 2);
        let payload = match url.param("payload").map(str::parse::<i64>) {
            Some(Ok(v)) if v > 0 => usize::try_from(v).unwrap_or(usize::MAX),
            _ => DEFAULT_PAYLOAD,
        };
        let reconnect = match url.param("reconnect").map(str::trim) {
            Some("false") | Some("0") => None,
            Some(v) => match v.parse::<u64>() {
                Ok(ms) if ms > 0 => Some(Duration::from_millis(ms)),
                _ => d.reconnect,
            },
            None => d.reconnect,
        };
        ConnConfig {
            connect_timeout: Duration::from_millis(
                ms("connect.timeout", DEFAULT_CONNECT_TIMEOUT_MS).max(1),
            ),
            heartbeat: Duration::from_millis(heartbeat),
            idle_timeout: Duration::from_millis(idle),
            payload,
            reconnect,
            lazy: url.param_bool("lazy", false),
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn defaults_and_overrides() {
        let u = Url::parse("dubbo://127.0.0.1:20880/S").unwrap();
        assert_eq!(ConnConfig::from_url(&u), ConnConfig::default());
        let u = Url::parse(
            "dubbo://127.0.0.1:20880/S?heartbeat=1000&heartbeat.timeout=500&payload=1024&reconnect=false&lazy=true&connect.timeout=50",
        )
        .unwrap();
        let c = ConnConfig::from_url(&u);
        assert_eq!(c.heartbeat, Duration::from_millis(1000));
        assert_eq!(c.idle_timeout, Duration::from_millis(2000));
        assert_eq!(c.payload, 1024);
        assert_eq!(c.reconnect, None);
        assert!(c.lazy);
        assert_eq!(c.connect_timeout, Duration::from_millis(50));
    }
}
