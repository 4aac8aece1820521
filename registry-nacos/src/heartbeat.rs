//! Heartbeats of one ephemeral instance (Nacos 1.x client's `BeatReactor`, `PUT
//! /nacos/v1/ns/instance/beat`).
//!
//! A v1 ephemeral instance lives only while it beats. The task beats at the interval the server
//! asks for (`clientBeatInterval`, default 5 s), always with the full beat JSON (a server that
//! lost the instance — restarted — re-creates it from the beat; rnacos does exactly that), and
//! registers again when a beat answers code 20404 (instance unknown, real Nacos). Failures are
//! logged and the next beat tries again; the task ends when its handle is dropped.

use std::sync::Arc;
use std::time::Duration;

use tokio::task::JoinHandle;
use tracing::{debug, info, warn};

use crate::client::{InstanceSpec, NacosClient};

/// Nacos' default beat interval, used until the server says otherwise.
pub const DEFAULT_BEAT_INTERVAL: Duration = Duration::from_secs(5);
const MIN_BEAT_INTERVAL: Duration = Duration::from_millis(200);
const MAX_BEAT_INTERVAL: Duration = Duration::from_secs(60);

/// A running heartbeat; dropping it stops the beats (it does not deregister).
#[derive(Debug)]
pub(crate) struct Heartbeat {
    task: JoinHandle<()>,
}

impl Drop for Heartbeat {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Heartbeat {
    /// Starts beating for `inst` (already registered), at `fixed` when given, else at the
    /// interval the server asks for.
    pub(crate) fn start(
        client: Arc<NacosClient>,
        inst: InstanceSpec,
        fixed: Option<Duration>,
    ) -> Self {
        Heartbeat {
            task: tokio::spawn(run(client, inst, fixed)),
        }
    }
}

async fn run(client: Arc<NacosClient>, inst: InstanceSpec, fixed: Option<Duration>) {
    let mut interval = fixed.unwrap_or(DEFAULT_BEAT_INTERVAL);
    let mut failing = false;
    loop {
        tokio::time::sleep(interval).await;
        match client.beat(&inst, interval).await {
            Ok(outcome) => {
                if failing {
                    info!(service = %inst.service, ip = %inst.ip, port = inst.port, "nacos heartbeat accepted again");
                    failing = false;
                }
                if let (Some(i), None) = (outcome.interval, fixed) {
                    interval = i.clamp(MIN_BEAT_INTERVAL, MAX_BEAT_INTERVAL);
                }
                if outcome.unknown_instance {
                    info!(service = %inst.service, ip = %inst.ip, port = inst.port, "nacos no longer knows this instance; registering it again");
                    if let Err(e) = client.register_instance(&inst).await {
                        warn!(service = %inst.service, error = %e, "re-registering with nacos failed; the next beat retries");
                    }
                }
            }
            Err(e) => {
                if !failing {
                    warn!(service = %inst.service, ip = %inst.ip, port = inst.port, error = %e, "nacos heartbeat failed; retrying");
                    failing = true;
                } else {
                    debug!(service = %inst.service, error = %e, "nacos heartbeat failed again");
                }
            }
        }
    }
}
