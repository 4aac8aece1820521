//! Connection settings read from the provider URL (Dubbo's
//! `DubboProtocol.getClients`/`initClient`), within the ceilings the consumer sets
//! ([`DubboOptions`]).
//!
//! A provider URL, or a configurator from the config centre, may set `payload`, `heartbeat`,
//! `heartbeat.timeout`, `reconnect`, `connect.timeout`, `connections` and `shareconnections`
//! for the consumer. Each is clamped to a range the consumer chose, so no URL can make it
//! accept huge bodies, flood a provider with heartbeats or reconnects, open thousands of
//! connections, or overflow a clock (`Instant + Duration`) with an absurd period.

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
/// The longest period any URL setting may ask for (one day): larger values are taken as this,
/// so adding one to a clock cannot overflow.
pub const MAX_PERIOD: Duration = Duration::from_secs(24 * 60 * 60);
/// The largest body the Dubbo2 header can announce (its length field is a Java `int`).
pub const MAX_FRAME_BODY: usize = i32::MAX as usize;
/// The heartbeat check runs at most this often (Java's `LEAST_HEARTBEAT_DURATION`: the
/// heartbeat timer's tick is `heartbeat / 3`, at least 1 s).
pub const LEAST_HEARTBEAT_TICK: Duration = Duration::from_secs(1);

/// What a consumer lets provider URLs set, and its own connection and decoding limits. Used
/// by [`DubboInvokerFactory::with_options`](crate::DubboInvokerFactory::with_options).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DubboOptions {
    /// The largest `payload` a URL may set (bytes; default 8 MiB, Dubbo's default): a URL may
    /// lower the body limit, not raise it past this. At most `i32::MAX` (the header's length).
    pub max_payload: usize,
    /// The shortest `heartbeat` a URL may set (default 1 s); `heartbeat=0` (none) stays
    /// allowed. The idle limit (`heartbeat.timeout`) follows at two heartbeats at least.
    pub min_heartbeat: Duration,
    /// The shortest `reconnect` period a URL may set (default 1 s): the reconnect backoff
    /// (from 100 ms, doubling) never settles below it.
    pub min_reconnect: Duration,
    /// The most connections a URL may ask for per provider address, with `connections` or
    /// `shareconnections` (default 64).
    pub max_connections: usize,
    /// Connects that may be in progress at once in the background, across the factory
    /// (connects at refer time and reconnects; default 16). A call that needs a connection
    /// connects at once.
    pub max_concurrent_connects: usize,
    /// A connection whose queued writes make no progress for this long is closed, failing its
    /// pending calls, and reconnected (default 10 s): a provider that stops reading.
    pub write_stall_timeout: Duration,
    /// Bytes one connection may have queued for writing; past it new calls fail at once
    /// (default 16 MiB, two bodies at the default payload limit).
    pub max_queued_bytes: usize,
    /// Bounds of the Hessian2 decoder for response bodies (depth, lengths, memory budget).
    pub hessian: hessian2::Limits,
}

impl Default for DubboOptions {
    fn default() -> Self {
        DubboOptions {
            max_payload: DEFAULT_PAYLOAD,
            min_heartbeat: Duration::from_secs(1),
            min_reconnect: Duration::from_secs(1),
            max_connections: 64,
            max_concurrent_connects: 16,
            write_stall_timeout: Duration::from_secs(10),
            max_queued_bytes: 2 * DEFAULT_PAYLOAD,
            hessian: hessian2::Limits::DEFAULT,
        }
    }
}

/// A non-negative millisecond URL value as a duration no longer than [`MAX_PERIOD`].
fn period_ms(ms: u64) -> Duration {
    Duration::from_millis(ms).min(MAX_PERIOD)
}

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
    /// Close the connection when queued writes make no progress for this long.
    pub write_stall_timeout: Duration,
    /// Bytes that may be queued for writing; past it new calls fail at once.
    pub max_queued_bytes: usize,
    /// The clock check runs at most this often ([`LEAST_HEARTBEAT_TICK`], or the consumer's
    /// `min_heartbeat` when that is shorter).
    pub tick_floor: Duration,
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
            write_stall_timeout: DubboOptions::default().write_stall_timeout,
            max_queued_bytes: DubboOptions::default().max_queued_bytes,
            tick_floor: LEAST_HEARTBEAT_TICK,
        }
    }
}

impl ConnConfig {
    /// The settings of a provider URL, with Dubbo's defaults, within the default
    /// [`DubboOptions`].
    pub fn from_url(url: &Url) -> Self {
        Self::from_url_with(url, &DubboOptions::default())
    }

    /// The settings of a provider URL, with Dubbo's defaults, each clamped to what `opts`
    /// allows (see the module docs).
    pub fn from_url_with(url: &Url, opts: &DubboOptions) -> Self {
        let ms = |key: &str, default: u64| -> u64 {
            match url.param(key).map(str::trim).map(str::parse::<i64>) {
                Some(Ok(v)) if v >= 0 => v as u64,
                _ => default,
            }
        };
        let mut heartbeat = period_ms(ms("heartbeat", DEFAULT_HEARTBEAT_MS));
        if !heartbeat.is_zero() {
            heartbeat = heartbeat.max(opts.min_heartbeat.min(MAX_PERIOD));
        }
        // UrlUtils.getIdleTimeout: default 3 x heartbeat, at least 2 x heartbeat.
        let default_idle =
            u64::try_from(heartbeat.saturating_mul(3).as_millis()).unwrap_or(u64::MAX);
        let idle =
            period_ms(ms("heartbeat.timeout", default_idle)).max(heartbeat.saturating_mul(2));
        let max_payload = opts.max_payload.clamp(1, MAX_FRAME_BODY);
        let payload = invoker::rpc::payload_limit(url, max_payload);
        let min_reconnect = opts.min_reconnect.min(MAX_PERIOD);
        let default_reconnect = Duration::from_millis(DEFAULT_RECONNECT_MS).max(min_reconnect);
        let reconnect = match url.param("reconnect").map(str::trim) {
            Some("false") | Some("0") => None,
            Some(v) => match v.parse::<u64>() {
                Ok(ms) if ms > 0 => Some(period_ms(ms).max(min_reconnect)),
                _ => Some(default_reconnect),
            },
            None => Some(default_reconnect),
        };
        ConnConfig {
            connect_timeout: period_ms(ms("connect.timeout", DEFAULT_CONNECT_TIMEOUT_MS))
                .max(Duration::from_millis(1)),
            heartbeat,
            idle_timeout: idle,
            payload,
            reconnect,
            lazy: url.param_bool("lazy", false),
            write_stall_timeout: opts
                .write_stall_timeout
                .clamp(Duration::from_millis(1), MAX_PERIOD),
            max_queued_bytes: opts.max_queued_bytes.max(1),
            tick_floor: opts
                .min_heartbeat
                .clamp(Duration::from_millis(10), LEAST_HEARTBEAT_TICK),
        }
    }

    /// How often the connection checks its clocks: a third of the heartbeat, at least
    /// [`LEAST_HEARTBEAT_TICK`] (Java's `HeaderExchangeClient.calculateLeastDuration`; less
    /// only when the consumer's `min_heartbeat` is less); with no heartbeat, a third of the
    /// idle limit.
    pub fn tick(&self) -> Duration {
        let base = if self.heartbeat.is_zero() {
            self.idle_timeout
        } else {
            self.heartbeat
        };
        (base / 3).max(self.tick_floor)
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

    #[test]
    fn hostile_values_are_clamped() {
        let u = Url::parse(
            "dubbo://127.0.0.1:20880/S?heartbeat=1&heartbeat.timeout=2&payload=2147483647&reconnect=1&connect.timeout=9223372036854775807",
        )
        .unwrap();
        let c = ConnConfig::from_url(&u);
        assert_eq!(c.heartbeat, Duration::from_secs(1));
        assert_eq!(c.idle_timeout, Duration::from_secs(2));
        assert_eq!(c.payload, DEFAULT_PAYLOAD);
        assert_eq!(c.reconnect, Some(Duration::from_secs(1)));
        assert_eq!(c.connect_timeout, MAX_PERIOD);
        assert_eq!(c.tick(), LEAST_HEARTBEAT_TICK);
        // Adding the longest period to a clock does not overflow.
        let _ = tokio::time::Instant::now() + c.connect_timeout + c.idle_timeout;

        let u = Url::parse("dubbo://127.0.0.1:20880/S?heartbeat=9223372036854775807").unwrap();
        let c = ConnConfig::from_url(&u);
        assert_eq!((c.heartbeat, c.idle_timeout), (MAX_PERIOD, MAX_PERIOD * 2));
        assert_eq!(c.tick(), MAX_PERIOD / 3);

        // A consumer may allow more.
        let opts = DubboOptions {
            max_payload: 64 << 20,
            min_heartbeat: Duration::from_millis(10),
            min_reconnect: Duration::from_millis(10),
            ..DubboOptions::default()
        };
        let u = Url::parse("dubbo://127.0.0.1:20880/S?heartbeat=30&payload=33554432&reconnect=20")
            .unwrap();
        let c = ConnConfig::from_url_with(&u, &opts);
        assert_eq!(c.payload, 32 << 20);
        assert_eq!(c.heartbeat, Duration::from_millis(30));
        assert_eq!(c.reconnect, Some(Duration::from_millis(20)));
        // The header's length field is an int: no more, whatever the consumer allows.
        let opts = DubboOptions {
            max_payload: usize::MAX,
            ..DubboOptions::default()
        };
        let u = Url::parse("dubbo://127.0.0.1:20880/S?payload=9223372036854775807").unwrap();
        assert_eq!(ConnConfig::from_url_with(&u, &opts).payload, MAX_FRAME_BODY);
    }
}
