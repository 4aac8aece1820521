//! Helpers for tests that need ZooKeeper to misbehave on purpose.

use std::time::Duration;

use zookeeper_client::{Client, SessionInfo};

use crate::error::{Result, ZkError};

/// The ZooKeeper client crate, for tests that write raw znodes.
pub use zookeeper_client as client;

/// Expires a session the way ZooKeeper's own tests do: attach a second client with the same
/// session id and password, then close it. The original client then sees `Expired`.
///
/// On a loaded machine the close is occasionally lost (the attach stalls, or the handle is
/// dropped before CloseSession went out), so the expiry is checked: attaching once more must
/// fail. If it succeeds the session is still alive, and that client closes it again (up to
/// four rounds).
pub async fn expire_session(connect_string: &str, session: SessionInfo) -> Result<()> {
    let mut client = attach(connect_string, &session, 4).await?;
    for round in 1..=4 {
        close(client).await;
        match attach(connect_string, &session, 1).await {
            // The session is gone: the expiry took.
            Err(_) => return Ok(()),
            Ok(c) => {
                tracing::warn!(
                    round,
                    "the session is still alive after CloseSession; closing it again"
                );
                client = c;
            }
        }
    }
    close(client).await;
    Ok(())
}

/// A second client on `session`, trying `attempts` times (5 s each).
async fn attach(connect_string: &str, session: &SessionInfo, attempts: u32) -> Result<Client> {
    let mut attempt = 0;
    loop {
        attempt += 1;
        let fut = Client::connector()
            .with_session_timeout(Duration::from_secs(10))
            .with_session(session.clone())
            .connect(connect_string);
        match tokio::time::timeout(Duration::from_secs(5), fut).await {
            Ok(Ok(c)) => return Ok(c),
            Ok(Err(e)) if attempt >= attempts => return Err(ZkError::op("connect", "/", e)),
            Err(_) if attempt >= attempts => {
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
    }
}

/// Drops the last handle (which sends CloseSession for the shared session) and waits up to
/// 5 s for the client to terminate.
async fn close(client: Client) {
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
}
