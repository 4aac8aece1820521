//! [`MetadataResolver`]: the `MetadataInfo` of a revision, fetched once and shared by every
//! reference (`AbstractServiceDiscovery.getRemoteMetadata` + `MetaCacheManager`).
//!
//! - **Shared per revision.** Results are cached by (application, revision); concurrent
//!   requests for the same revision share one fetch; the most recent
//!   [`ResolverOptions::cache_size`] revisions stay cached (Java's LRU of 100).
//! - **Where from**, per attempt, decided by the instance chosen for it: `storage-type=remote`
//!   reads the [`MetadataReport`]; otherwise the instance's MetadataService is called
//!   ([`MetadataServiceClients`]) with [`ResolverOptions::timeout`] (Java: 5 s).
//! - **Attempts** (Java): up to [`ResolverOptions::attempts`] (3), each against a random
//!   instance of that revision, [`ResolverOptions::attempt_interval`] (1 s) apart. A failure is
//!   not cached: the caller decides when to ask again (the application pipeline retries
//!   every 10 s while the revision is in use).

use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use futures::future::{BoxFuture, FutureExt, Shared};
use parking_lot::Mutex;
use registry_core::ServiceInstance;

use crate::error::{Error, Result};
use crate::metadata_info::MetadataInfo;
use crate::metadata_service::MetadataServiceClients;
use crate::report::MetadataReport;

/// How revisions are fetched.
#[derive(Debug, Clone)]
pub struct ResolverOptions {
    /// Timeout of one MetadataService call (Java: 5000 ms).
    pub timeout: Duration,
    /// Attempts per fetch (Java: 3).
    pub attempts: u32,
    /// Pause after a failed attempt (Java: 1 s).
    pub attempt_interval: Duration,
    /// Revisions kept cached (Java: 100).
    pub cache_size: usize,
}

impl Default for ResolverOptions {
    fn default() -> Self {
        ResolverOptions {
            timeout: Duration::from_millis(crate::metadata_service::DEFAULT_TIMEOUT_MS),
            attempts: 3,
            attempt_interval: Duration::from_secs(1),
            cache_size: 100,
        }
    }
}

type Key = (Arc<str>, Arc<str>);
type Fetch = Shared<BoxFuture<'static, Result<Arc<MetadataInfo>>>>;

#[derive(Default)]
struct Cache {
    ready: HashMap<Key, Arc<MetadataInfo>>,
    order: VecDeque<Key>,
    inflight: HashMap<Key, Fetch>,
}

struct Inner {
    report: Option<MetadataReport>,
    clients: MetadataServiceClients,
    options: ResolverOptions,
    cache: Mutex<Cache>,
    fetches: std::sync::atomic::AtomicU64,
}

/// Resolves and caches MetadataInfo per revision (module docs). Cheap to clone.
#[derive(Clone)]
pub struct MetadataResolver {
    inner: Arc<Inner>,
}

impl fmt::Debug for MetadataResolver {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let c = self.inner.cache.lock();
        f.debug_struct("MetadataResolver")
            .field("cached", &c.ready.len())
            .field("inflight", &c.inflight.len())
            .field("report", &self.inner.report.is_some())
            .field("clients", &self.inner.clients)
            .finish()
    }
}

impl MetadataResolver {
    /// A resolver reading `remote` storage from `report` and calling MetadataServices with
    /// `clients`.
    pub fn new(
        report: Option<MetadataReport>,
        clients: MetadataServiceClients,
        options: ResolverOptions,
    ) -> Self {
        MetadataResolver {
            inner: Arc::new(Inner {
                report,
                clients,
                options,
                cache: Mutex::new(Cache::default()),
                fetches: Default::default(),
            }),
        }
    }

    /// The options.
    pub fn options(&self) -> &ResolverOptions {
        &self.inner.options
    }

    /// Number of remote fetch attempts made so far (for tests and metrics).
    pub fn fetch_attempts(&self) -> u64 {
        self.inner
            .fetches
            .load(std::sync::atomic::Ordering::Relaxed)
    }

    /// The cached MetadataInfo of `app` at `revision`, without fetching.
    pub fn cached(&self, app: &str, revision: &str) -> Option<Arc<MetadataInfo>> {
        let c = self.inner.cache.lock();
        c.ready.get(&(Arc::from(app), Arc::from(revision))).cloned()
    }

    /// The MetadataInfo of `app` at `revision`, from the cache or fetched from `instances`
    /// (which all serve that revision; see the module docs for the attempts).
    ///
    /// Errors: every attempt failed (the last error), or no instance was given.
    pub async fn resolve(
        &self,
        app: &str,
        revision: &str,
        instances: Vec<ServiceInstance>,
    ) -> Result<Arc<MetadataInfo>> {
        let key: Key = (Arc::from(app), Arc::from(revision));
        let fetch = {
            let mut c = self.inner.cache.lock();
            if let Some(m) = c.ready.get(&key).cloned() {
                // Most recently used last.
                if let Some(pos) = c.order.iter().position(|k| *k == key) {
                    if let Some(k) = c.order.remove(pos) {
                        c.order.push_back(k);
                    }
                }
                return Ok(m);
            }
            match c.inflight.get(&key) {
                Some(f) => f.clone(),
                None => {
                    let me = self.clone();
                    let k = key.clone();
                    let f: BoxFuture<'static, Result<Arc<MetadataInfo>>> =
                        async move { me.fetch(k, instances).await }.boxed();
                    let f = f.shared();
                    c.inflight.insert(key.clone(), f.clone());
                    f
                }
            }
        };
        fetch.await
    }

    async fn fetch(
        &self,
        key: Key,
        mut instances: Vec<ServiceInstance>,
    ) -> Result<Arc<MetadataInfo>> {
        let (app, revision) = (&*key.0, &*key.1);
        let o = &self.inner.options;
        let mut last = Error::NoMetadata {
            app: app.to_owned(),
            revision: revision.to_owned(),
            source_desc: "no instance of this revision".into(),
        };
        let mut result = None;
        for attempt in 0..o.attempts.max(1) {
            if instances.is_empty() {
                break;
            }
            let i = instances.swap_remove(fastrand::usize(..instances.len()));
            self.inner
                .fetches
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            match self.fetch_once(&i, revision).await {
                Ok(m) => {
                    result = Some(m);
                    break;
                }
                Err(e) => {
                    tracing::warn!(app, revision, instance = %i.address(), attempt = attempt + 1, error = %e,
                        "failed to get the MetadataInfo of a revision");
                    let give_up = matches!(e, Error::Unsupported(_));
                    last = e;
                    if give_up {
                        break;
                    }
                    // Keep the instance for a later attempt when it was the only one.
                    if instances.is_empty() {
                        instances.push(i);
                    }
                    if attempt + 1 < o.attempts {
                        tokio::time::sleep(o.attempt_interval).await;
                    }
                }
            }
        }
        let mut c = self.inner.cache.lock();
        c.inflight.remove(&key);
        match result {
            Some(m) => {
                let m = Arc::new(m);
                c.ready.insert(key.clone(), m.clone());
                c.order.push_back(key);
                while c.order.len() > o.cache_size.max(1) {
                    if let Some(old) = c.order.pop_front() {
                        c.ready.remove(&old);
                    }
                }
                Ok(m)
            }
            None => Err(last),
        }
    }

    async fn fetch_once(&self, instance: &ServiceInstance, revision: &str) -> Result<MetadataInfo> {
        let timeout = self.inner.options.timeout;
        let fut = async {
            if instance.is_remote_storage() {
                match &self.inner.report {
                    Some(r) => r.app_metadata(instance.app(), revision).await,
                    None => Err(Error::Unsupported(format!(
                        "{instance} stores its metadata remotely but no metadata report is configured"
                    ))),
                }
            } else {
                self.inner
                    .clients
                    .fetch(instance, revision, timeout.as_millis() as u64)
                    .await
            }
        };
        // The client applies the timeout to the call; this bounds connecting and reading the
        // report too.
        match tokio::time::timeout(timeout + Duration::from_millis(500), fut).await {
            Ok(r) => r,
            Err(_) => Err(Error::MetadataService {
                target: instance.address(),
                reason: format!("no answer within {timeout:?}"),
                retryable: true,
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metadata_info::ServiceInfo;
    use crate::metadata_service::{MetadataServiceClient, SharedMetadataServiceClient};
    use crate::report::ReportLayout;
    use async_trait::async_trait;
    use registry_core::instance::{REVISION_KEY, STORAGE_TYPE_KEY};
    use registry_core::{MemoryConfigCenter, Url};
    use std::sync::atomic::{AtomicU32, Ordering};

    /// Fails the first `fail` calls, then answers.
    #[derive(Debug)]
    struct Flaky {
        fail: u32,
        calls: AtomicU32,
    }

    #[async_trait]
    impl MetadataServiceClient for Flaky {
        async fn get_metadata_info(&self, url: &Url, revision: &str) -> Result<MetadataInfo> {
            let n = self.calls.fetch_add(1, Ordering::SeqCst);
            tokio::time::sleep(Duration::from_millis(20)).await;
            if n < self.fail {
                return Err(Error::MetadataService {
                    target: url.to_string(),
                    reason: "refused".into(),
                    retryable: true,
                });
            }
            Ok(MetadataInfo::new(
                url.param("group").unwrap_or(""),
                revision,
                [ServiceInfo::new("S", "dubbo")],
            ))
        }
    }

    fn inst(port: i32, remote: bool) -> ServiceInstance {
        let mut m = std::collections::BTreeMap::new();
        m.insert(REVISION_KEY.to_owned(), "r1".to_owned());
        if remote {
            m.insert(STORAGE_TYPE_KEY.to_owned(), "remote".to_owned());
        }
        ServiceInstance::new("app", "127.0.0.1", port, m)
    }

    fn resolver(fail: u32, report: Option<MetadataReport>) -> (MetadataResolver, Arc<Flaky>) {
        let flaky = Arc::new(Flaky {
            fail,
            calls: AtomicU32::new(0),
        });
        let clients = MetadataServiceClients::new()
            .with_v1("dubbo", flaky.clone() as SharedMetadataServiceClient);
        let opts = ResolverOptions {
            attempt_interval: Duration::from_millis(10),
            ..ResolverOptions::default()
        };
        (MetadataResolver::new(report, clients, opts), flaky)
    }

    #[tokio::test]
    async fn concurrent_requests_share_one_fetch_and_the_result_is_cached() {
        let (r, flaky) = resolver(0, None);
        let (a, b) = tokio::join!(
            r.resolve("app", "r1", vec![inst(1, false)]),
            r.resolve("app", "r1", vec![inst(2, false)])
        );
        assert!(Arc::ptr_eq(&a.unwrap(), &b.unwrap()));
        assert_eq!(flaky.calls.load(Ordering::SeqCst), 1);
        r.resolve("app", "r1", vec![inst(1, false)]).await.unwrap();
        assert_eq!(flaky.calls.load(Ordering::SeqCst), 1);
        assert!(r.cached("app", "r1").is_some());
        assert!(r.cached("other", "r1").is_none());
    }

    #[tokio::test]
    async fn three_attempts_then_the_error() {
        let (r, flaky) = resolver(2, None);
        r.resolve("app", "r1", vec![inst(1, false)]).await.unwrap();
        assert_eq!(flaky.calls.load(Ordering::SeqCst), 3);
        let (r, flaky) = resolver(10, None);
        let e = r
            .resolve("app", "r1", vec![inst(1, false), inst(2, false)])
            .await
            .unwrap_err();
        assert!(e.is_retryable(), "{e}");
        assert_eq!(flaky.calls.load(Ordering::SeqCst), 3);
        assert!(r.cached("app", "r1").is_none(), "failures are not cached");
    }

    #[tokio::test]
    async fn remote_storage_reads_the_report() {
        let cc = Arc::new(MemoryConfigCenter::new());
        let report = MetadataReport::new(cc, ReportLayout::Tree);
        let (r, flaky) = resolver(0, Some(report.clone()));
        assert!(r.resolve("app", "r1", vec![inst(1, true)]).await.is_err());
        report
            .publish_app_metadata(&MetadataInfo::new(
                "app",
                "r1",
                [ServiceInfo::new("S", "tri")],
            ))
            .await
            .unwrap();
        let m = r.resolve("app", "r1", vec![inst(1, true)]).await.unwrap();
        assert!(m.services.contains_key("S:tri"));
        assert_eq!(flaky.calls.load(Ordering::SeqCst), 0);
        let (none, _) = resolver(0, None);
        let e = none
            .resolve("app", "r1", vec![inst(1, true)])
            .await
            .unwrap_err();
        assert!(matches!(e, Error::Unsupported(_)), "{e}");
    }

    #[tokio::test]
    async fn the_cache_is_bounded() {
        let (r, _) = resolver(0, None);
        let r = MetadataResolver::new(
            None,
            r.inner.clients.clone(),
            ResolverOptions {
                cache_size: 2,
                ..ResolverOptions::default()
            },
        );
        for rev in ["a", "b", "c"] {
            r.resolve("app", rev, vec![inst(1, false)]).await.unwrap();
        }
        assert!(r.cached("app", "a").is_none());
        assert!(r.cached("app", "c").is_some());
    }
}
