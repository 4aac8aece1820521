//! Where instance-list changes come from: the [`ChangeSource`] seam and its polling
//! implementation [`PollingSource`].
//!
//! A source hands out one `watch` channel per Nacos service name carrying a
//! [`ServiceSnapshot`]; every subscription of that name shares it, so the server sees one
//! poller per service no matter how many consumers subscribe. A push source (Nacos 2 gRPC)
//! can later implement the same trait and feed the same channels.
//!
//! Polling: `GET instance/list` every `nacos.poll-interval` (default 1 s). A reply that does
//! not change the provider list publishes nothing. A failing poll (5xx, timeout, refused
//! connection, garbage JSON) keeps the last good list, logs a warning once per outage and
//! retries with exponential backoff (interval × 2ⁿ, capped at 30 s, ±20 % jitter).

use std::fmt::Debug;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use registry_core::backoff::Backoff;
use registry_core::{InstanceList, Url};
use rustc_hash::FxHashMap;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;
use tracing::{debug, info, warn};

use crate::client::NacosClient;
use crate::convert::InstanceCache;
use crate::error::NacosError;

/// The latest known state of one Nacos service.
#[derive(Debug, Clone, Default)]
pub struct ServiceSnapshot {
    /// Enabled instances as provider URLs (sorted by ip, port); `None` until the first
    /// successful read. Kept across failures: a failing server never blanks the list.
    pub urls: Option<Arc<[Url]>>,
    /// An application-level service's instances (sorted by ip, port; disabled ones included
    /// with their flag), `None` until the first successful read or for interface-level
    /// watches.
    pub instances: Option<InstanceList>,
    /// The error of the last attempt, while reads fail.
    pub error: Option<NacosError>,
}

impl ServiceSnapshot {
    /// True when the snapshot lists a provider URL or (application level) an instance.
    pub fn lists_something(&self) -> bool {
        self.urls.as_ref().is_some_and(|u| !u.is_empty())
            || self.instances.as_ref().is_some_and(|l| !l.is_empty())
    }

    /// Copies what `cache` holds after an apply; true when something changed (`changed`
    /// says the cache's list did; an error is cleared).
    pub(crate) fn take_from(&mut self, cache: &InstanceCache, changed: bool) -> bool {
        let had_error = self.error.take().is_some();
        if cache.is_instances_mode() {
            if changed || self.instances.is_none() {
                self.instances = cache.instances().cloned();
                return true;
            }
        } else if changed || self.urls.is_none() {
            self.urls = cache.urls().cloned();
            return true;
        }
        had_error
    }
}

/// A source of instance-list changes (polling today; push can implement it later).
pub trait ChangeSource: Send + Sync + Debug + 'static {
    /// The snapshot channel of `service` (a name as stored in Nacos). The receiver sees a new
    /// value whenever the provider list or the error state changes. Watching stops when every
    /// receiver of the service is dropped.
    fn watch(&self, service: &str) -> watch::Receiver<ServiceSnapshot>;

    /// Like [`ChangeSource::watch`] for an application-level service (an application name):
    /// the snapshots carry [`ServiceSnapshot::instances`] instead of provider URLs. A name is
    /// watched in one mode at a time (application names never look like the interface-level
    /// `providers:...` names).
    fn watch_instances(&self, service: &str) -> watch::Receiver<ServiceSnapshot>;
}

/// Polls `instance/list` for every watched service.
#[derive(Debug)]
pub struct PollingSource {
    client: Arc<NacosClient>,
    interval: Duration,
    services: Arc<Mutex<FxHashMap<String, Arc<watch::Sender<ServiceSnapshot>>>>>,
    cancel: CancellationToken,
}

/// Longest wait between polls of a failing service.
const MAX_BACKOFF: Duration = Duration::from_secs(30);

impl PollingSource {
    /// A source polling through `client` every `interval`; all pollers stop when `cancel` is
    /// cancelled (registry destroyed) or when nobody watches their service any more.
    pub fn new(client: Arc<NacosClient>, interval: Duration, cancel: CancellationToken) -> Self {
        PollingSource {
            client,
            interval,
            services: Arc::default(),
            cancel,
        }
    }

    /// Number of services being polled right now.
    pub fn polled_services(&self) -> usize {
        self.services.lock().len()
    }
}

impl ChangeSource for PollingSource {
    fn watch(&self, service: &str) -> watch::Receiver<ServiceSnapshot> {
        self.watch_mode(service, false)
    }

    fn watch_instances(&self, service: &str) -> watch::Receiver<ServiceSnapshot> {
        self.watch_mode(service, true)
    }
}

impl PollingSource {
    fn watch_mode(&self, service: &str, instances: bool) -> watch::Receiver<ServiceSnapshot> {
        let mut map = self.services.lock();
        if let Some(tx) = map.get(service) {
            // A poller whose last receiver just went away is still running until it removes
            // itself under this lock, so subscribing again keeps it alive.
            if !self.cancel.is_cancelled() {
                return tx.subscribe();
            }
        }
        let (tx, rx) = watch::channel(ServiceSnapshot::default());
        let tx = Arc::new(tx);
        map.insert(service.to_owned(), tx.clone());
        let poller = Poller {
            client: self.client.clone(),
            instances,
            service: service.to_owned(),
            interval: self.interval,
            tx,
            services: self.services.clone(),
            cancel: self.cancel.clone(),
        };
        tokio::spawn(poller.run());
        rx
    }
}

struct Poller {
    client: Arc<NacosClient>,
    instances: bool,
    service: String,
    interval: Duration,
    tx: Arc<watch::Sender<ServiceSnapshot>>,
    services: Arc<Mutex<FxHashMap<String, Arc<watch::Sender<ServiceSnapshot>>>>>,
    cancel: CancellationToken,
}

impl Poller {
    async fn run(self) {
        let mut cache = if self.instances {
            InstanceCache::for_instances()
        } else {
            InstanceCache::new()
        };
        let mut failures: u32 = 0;
        loop {
            let result = self.poll_once(&mut cache).await;
            let wait = match result {
                Ok(()) => {
                    if failures > 0 {
                        info!(service = %self.service, "nacos instance list readable again");
                    }
                    failures = 0;
                    self.interval
                }
                Err(e) => {
                    if failures == 0 {
                        warn!(service = %self.service, error = %e, "nacos instance list unreadable; keeping the last good list and retrying");
                    } else {
                        debug!(service = %self.service, error = %e, failures, "nacos poll failed again");
                    }
                    failures = failures.saturating_add(1);
                    let tx_err = e.clone();
                    self.tx.send_if_modified(|s| {
                        let changed = s.error.as_ref() != Some(&tx_err);
                        s.error = Some(tx_err);
                        changed
                    });
                    backoff(self.interval, failures)
                }
            };
            tokio::select! {
                _ = tokio::time::sleep(wait) => {}
                _ = self.cancel.cancelled() => break,
                _ = self.tx.closed() => {
                    // Nobody watches any more, unless someone subscribed again meanwhile.
                    let mut map = self.services.lock();
                    if self.tx.receiver_count() == 0 {
                        if map.get(&self.service).is_some_and(|t| Arc::ptr_eq(t, &self.tx)) {
                            map.remove(&self.service);
                        }
                        break;
                    }
                }
            }
        }
        debug!(service = %self.service, "nacos poller stopped");
    }

    async fn poll_once(&self, cache: &mut InstanceCache) -> Result<(), NacosError> {
        let (server, body) = self.client.list_instances_raw(&self.service).await?;
        let changed = cache
            .apply(&self.service, &body)
            .map_err(|e| NacosError::Malformed {
                server,
                op: "instance/list",
                reason: e.to_string(),
            })?;
        self.tx.send_if_modified(|s| s.take_from(cache, changed));
        Ok(())
    }
}

/// interval × 2^(failures-1), capped at [`MAX_BACKOFF`] (never below the interval), ±20 %.
pub(crate) fn backoff(interval: Duration, failures: u32) -> Duration {
    Backoff::exponential(interval, MAX_BACKOFF.max(interval))
        .with_jitter(0.8, 1.2)
        .delay(failures.saturating_sub(1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_grows_and_caps() {
        let i = Duration::from_secs(1);
        assert!(backoff(i, 1) <= Duration::from_millis(1200));
        assert!(backoff(i, 3) >= Duration::from_millis(3200));
        assert!(backoff(i, 30) <= Duration::from_secs(36));
    }
}
