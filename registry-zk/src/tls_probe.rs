//! Why a TLS session could not be opened: the ZooKeeper client only reports that it could
//! not connect, so after a failed TLS connect one handshake of our own (same configuration,
//! through `transport_tls`) to the first member names the cause — an unknown CA, an expired
//! certificate, a wrong name, a refused client certificate, a plaintext port.

use std::time::Duration;

use transport_tls::{Alpn, TlsClient, TlsConfig};

use crate::config::ZkConfig;
use crate::error::ZkError;

/// How long the probe may take.
const PROBE: Duration = Duration::from_secs(2);

/// The TLS error of the first member of `cfg`, `None` when a handshake to it works (the cause
/// is elsewhere) or it cannot be reached at all.
pub(crate) async fn explain(cfg: &ZkConfig, tls: &TlsConfig) -> Option<ZkError> {
    let first = cfg.connect_string.split(',').next()?.trim();
    let first = first.rsplit_once('/').map_or(first, |(_, hp)| hp);
    let (host, _) = first.rsplit_once(':')?;
    let failed = |e: transport_tls::TlsError| ZkError::Tls {
        address: cfg.connect_string.clone(),
        retryable: e.is_retryable(),
        reason: e.to_string(),
    };
    match TlsClient::new(tls, Alpn::None) {
        Ok(c) => c.diagnose(first, host, PROBE).await.map(failed),
        Err(e) => Some(failed(e)),
    }
}
