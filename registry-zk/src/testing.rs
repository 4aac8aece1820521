//! Helpers for tests that need ZooKeeper to misbehave on purpose.

use std::time::Duration;

use zookeeper_client::{Client, SessionInfo};

use crate::error::{Result, ZkError};

/// The ZooKeeper client crate, for tests that write raw znodes.
pub use zookeeper_client as client;

/// Expires a session the way ZooKeeper's own tests do: attach a second client with the same
/// session id and password, then close it. The original client then sees `Expired`.
pub async fn expire_session(connect_string: &str, session: SessionInfo) -> Result<()> {
    // Attaching to a live session occasionally stalls on a loaded machine: retry a few times.
    let mut attempt = 0;
    let client = loop {
        attempt += 1;
        let fut = Client::connector()
            .with_session_timeout(Duration::from_secs(10))
            .with_session(session.clone())
            .connect(connect_string);
        match tokio::time::timeout(Duration::from_secs(5), fut).await {
            Ok(Ok(c)) => break c,
            Ok(Err(e)) if attempt >= 4 => return Err(ZkError::op("connect", "/", e)),
            Err(_) if attempt >= 4 => {
                return Err(ZkError::NotConnected {
                    address: connect_string.to_owned(),
                    timeout_ms: 5_000,
                })
            }
            _ => tracing::warn!(
                attempt,
                "attaching to the session to expire it failed; retrying"
            ),
        }
    };
    // Dropping the last handle sends CloseSession for the shared session.
    let mut states = client.state_watcher();
    drop(client);
    let _ = tokio::time::timeout(Duration::from_secs(5), async {
        loop {
            if states.changed().await.is_terminated() {
                break;
            }
        }
    })
    .await;
    Ok(())
}
