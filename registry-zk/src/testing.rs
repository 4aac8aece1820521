//! Helpers for tests that need ZooKeeper to misbehave on purpose.

use std::time::Duration;

use zookeeper_client::{Client, SessionInfo};

use crate::error::{Result, ZkError};

/// How long one attach to a live session may take.
const ATTACH_TIMEOUT: Duration = Duration::from_secs(2);

/// The ZooKeeper client crate, for tests that write raw znodes.
pub use zookeeper_client as client;

/// Expires a session the way ZooKeeper's own tests do: attach a second client with the same
/// session id and password, then close it. The original client then sees `Expired`.
///
/// On a loaded machine the close is occasionally lost (the attach stalls, or the handle is
/// dropped before CloseSession went out), so the expiry is checked: attaching once more must
/// be refused. If it succeeds the session is still alive, and that client closes it again; if
/// it only times out, the owner is still holding the session, and the attach is tried again
/// (up to four rounds).
pub async fn expire_session(connect_string: &str, session: SessionInfo) -> Result<()> {
    // The session's owner reconnects at once when the server moves the session to our client,
    // and moves it back: an attach can lose that race for a while. Many short tries win it.
    let mut client = attach(connect_string, &session, 12).await?;
    for round in 1..=4 {
        close(client).await;
        client = match attach(connect_string, &session, 1).await {
            Ok(c) => {
                tracing::warn!(
                    round,
                    "the session is still alive after CloseSession; closing it again"
                );
                c
            }
            // No answer in time: the session is alive and its owner took it back.
            Err(ZkError::NotConnected { .. }) => match attach(connect_string, &session, 12).await {
                Ok(c) => c,
                Err(e @ ZkError::NotConnected { .. }) => return Err(e),
                Err(_) => return Ok(()),
            },
            // Refused (expired): the expiry took.
            Err(_) => return Ok(()),
        };
    }
    close(client).await;
    Ok(())
}

/// A second client on `session`, trying `attempts` times (2 s each).
async fn attach(connect_string: &str, session: &SessionInfo, attempts: u32) -> Result<Client> {
    let mut attempt = 0;
    loop {
        attempt += 1;
        let fut = Client::connector()
            .with_session_timeout(Duration::from_secs(10))
            .with_session(session.clone())
            .connect(connect_string);
        match tokio::time::timeout(ATTACH_TIMEOUT, fut).await {
            Ok(Ok(c)) => return Ok(c),
            Ok(Err(e)) if attempt >= attempts => return Err(ZkError::op("connect", "/", e)),
            Err(_) if attempt >= attempts => {
                return Err(ZkError::NotConnected {
                    address: connect_string.to_owned(),
                    timeout_ms: ATTACH_TIMEOUT.as_millis() as u64,
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
