//! Why a TLS session could not be opened: the ZooKeeper client only reports that it could
//! not connect, so after a failed TLS connect one handshake of our own (same configuration,
//! through `transport_tls`) to the first member names the cause — an unknown CA, an expired
//! certificate, a wrong name, a refused client certificate, a plaintext port.

use std::time::Duration;

use tokio::io::AsyncReadExt;
use tokio::net::TcpStream;
use transport_tls::{Alpn, TlsClient, TlsConfig};

use crate::config::ZkConfig;
use crate::error::ZkError;

/// How long the probe may take.
const PROBE: Duration = Duration::from_secs(3);
/// How long the probe waits after the handshake for a refusal (TLS 1.3 servers refuse a
/// client certificate only after the client's side of the handshake is done).
const REFUSAL_WAIT: Duration = Duration::from_millis(500);

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
    let client = match TlsClient::new(tls, Alpn::None) {
        Ok(c) => c,
        Err(e) => return Some(failed(e)),
    };
    let probe = async {
        let tcp = TcpStream::connect(first).await.ok()?;
        let mut stream = match client.handshake(tcp, host, first).await {
            Ok(s) => s,
            Err(e) => return Some(failed(e)),
        };
        let mut byte = [0u8; 1];
        match tokio::time::timeout(REFUSAL_WAIT, stream.read(&mut byte)).await {
            Ok(Err(e)) => Some(failed(client.classify(first, e))),
            _ => None,
        }
    };
    tokio::time::timeout(PROBE, probe).await.ok().flatten()
}
