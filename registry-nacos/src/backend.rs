//! [`NacosBackend`]: the [`RegistryBackend`] over the Nacos v1 HTTP API, and
//! [`NacosRegistry`], the backend wrapped in the shared failback layer.

use std::fmt;
use std::sync::Arc;

use async_trait::async_trait;
use parking_lot::Mutex;
use registry_core::{FailbackRegistry, Publisher, RegistryBackend, Url};
use rustc_hash::FxHashMap;
use tokio_util::sync::CancellationToken;
use tracing::{debug, warn};

use crate::client::{InstanceSpec, NacosClient};
use crate::config::NacosConfig;
use crate::convert::{instance_metadata, InstanceCache};
use crate::error::NacosError;
use crate::heartbeat::Heartbeat;
use crate::name::{compatible_register_name, register_name, to_nacos_name};
use crate::source::{ChangeSource, PollingSource};
use crate::subscribe::{lookup_filter, NamePlan, SubscriptionTask};

/// The Nacos registry as consumers and providers use it: [`NacosBackend`] with failback
/// retries, `check` semantics and the cache file.
pub type NacosRegistry = FailbackRegistry<NacosBackend>;

/// Builds a [`NacosRegistry`] from a `nacos://` registry URL (no I/O happens here).
pub fn nacos_registry(url: &Url) -> Result<NacosRegistry, NacosError> {
    Ok(FailbackRegistry::new(NacosBackend::new(url)?))
}

/// Identity of one registered instance: (service name as stored, ip, port).
type InstanceKey = (String, String, i32);

/// The Nacos backend: registrations with heartbeats, subscriptions fed by a [`ChangeSource`].
pub struct NacosBackend {
    url: Url,
    cfg: NacosConfig,
    client: Arc<NacosClient>,
    source: Arc<dyn ChangeSource>,
    registered: Mutex<FxHashMap<InstanceKey, (InstanceSpec, Heartbeat)>>,
    cancel: CancellationToken,
}

impl fmt::Debug for NacosBackend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("NacosBackend")
            .field("url", &self.url.to_string())
            .field("servers", &self.cfg.servers)
            .field("namespace", &self.cfg.namespace)
            .field("group", &self.cfg.group)
            .field("registered", &self.registered.lock().len())
            .finish_non_exhaustive()
    }
}

impl NacosBackend {
    /// A backend polling `instance/list` for changes (see [`PollingSource`]).
    pub fn new(url: &Url) -> Result<Self, NacosError> {
        Self::with_source(url, |client, cfg, cancel| {
            Arc::new(PollingSource::new(
                client.clone(),
                cfg.poll_interval,
                cancel.clone(),
            ))
        })
    }

    /// A backend whose subscriptions learn about changes from the source `make` builds (the
    /// seam for a push-based source).
    pub fn with_source(
        url: &Url,
        make: impl FnOnce(&Arc<NacosClient>, &NacosConfig, &CancellationToken) -> Arc<dyn ChangeSource>,
    ) -> Result<Self, NacosError> {
        let cfg = NacosConfig::from_url(url)?;
        let client = Arc::new(NacosClient::new(&cfg)?);
        let cancel = CancellationToken::new();
        let source = make(&client, &cfg, &cancel);
        Ok(NacosBackend {
            url: sanitize(url, &cfg),
            cfg,
            client,
            source,
            registered: Mutex::new(FxHashMap::default()),
            cancel,
        })
    }

    /// The HTTP client (for tools and measurements).
    pub fn client(&self) -> &Arc<NacosClient> {
        &self.client
    }

    /// The settings read from the registry URL.
    pub fn config(&self) -> &NacosConfig {
        &self.cfg
    }

    /// The instances a URL is registered as (one per service name).
    fn instances_of(&self, url: &Url) -> Result<Vec<InstanceSpec>, NacosError> {
        let ip = url
            .host()
            .filter(|h| !h.is_empty())
            .ok_or_else(|| NacosError::InvalidConfig(format!("cannot register {url}: no host")))?;
        let metadata = instance_metadata(url);
        let mut names = vec![to_nacos_name(&register_name(url)).into_owned()];
        if self.cfg.register_compatible {
            let c = to_nacos_name(&compatible_register_name(url)).into_owned();
            if !names.contains(&c) {
                names.push(c);
            }
        }
        Ok(names
            .into_iter()
            .map(|service| InstanceSpec {
                service,
                ip: ip.to_owned(),
                port: url.port(),
                metadata: metadata.clone(),
            })
            .collect())
    }

    fn should_register(&self, url: &Url) -> bool {
        url.param("side") == Some("provider") || self.cfg.register_consumer_url
    }
}

/// The registry URL without a `password` param (moved into the user info, which `Display`
/// never prints).
fn sanitize(url: &Url, cfg: &NacosConfig) -> Url {
    if url.param("password").is_none() {
        return url.clone();
    }
    let stripped = url.without_params(&["password"]);
    match (&cfg.credentials, url.username().filter(|u| !u.is_empty())) {
        (Some(c), None) => stripped
            .to_builder()
            .credentials(&c.username, Some(c.password.expose()))
            .build(),
        _ => stripped,
    }
}

impl Drop for NacosBackend {
    fn drop(&mut self) {
        self.cancel.cancel();
    }
}

#[async_trait]
impl RegistryBackend for NacosBackend {
    fn url(&self) -> &Url {
        &self.url
    }

    fn is_available(&self) -> bool {
        self.client.is_available()
    }

    async fn do_register(&self, url: &Url) -> registry_core::Result<()> {
        if self.cancel.is_cancelled() {
            return Err(NacosError::Destroyed.into());
        }
        if !self.should_register(url) {
            debug!(url = %url, "not a provider and register-consumer-url is off: not registered in nacos");
            return Ok(());
        }
        for inst in self.instances_of(url)? {
            self.client.register_instance(&inst).await?;
            let key = (inst.service.clone(), inst.ip.clone(), inst.port);
            let hb = Heartbeat::start(self.client.clone(), inst.clone(), self.cfg.beat_interval);
            self.registered.lock().insert(key, (inst, hb));
        }
        Ok(())
    }

    async fn do_unregister(&self, url: &Url) -> registry_core::Result<()> {
        if !self.should_register(url) {
            return Ok(());
        }
        for inst in self.instances_of(url)? {
            let key = (inst.service.clone(), inst.ip.clone(), inst.port);
            drop(self.registered.lock().remove(&key));
            self.client
                .deregister_instance(&inst.service, &inst.ip, inst.port)
                .await?;
        }
        Ok(())
    }

    async fn do_subscribe(&self, publisher: Publisher) -> registry_core::Result<()> {
        if self.cancel.is_cancelled() {
            return Err(NacosError::Destroyed.into());
        }
        let plan = NamePlan::of(publisher.consumer(), &self.cfg)?;
        let servers = u32::try_from(self.cfg.servers.len()).unwrap_or(1).max(1);
        let task = SubscriptionTask {
            client: self.client.clone(),
            source: self.source.clone(),
            publisher,
            plan,
            scan_interval: self.cfg.scan_interval,
            empty_protection: self.cfg.empty_protection,
            initial_wait: self.cfg.request_timeout * (servers * 2 + 1),
            cancel: self.cancel.child_token(),
        };
        task.start().await.map_err(Into::into)
    }

    async fn do_lookup(&self, consumer: &Url) -> registry_core::Result<Vec<Url>> {
        let plan = NamePlan::of(consumer, &self.cfg)?;
        let names = plan.resolve(&self.client, consumer).await?;
        let mut lists = Vec::with_capacity(names.len());
        for n in names {
            let (server, body) = self.client.list_instances_raw(&n).await?;
            let mut cache = InstanceCache::new();
            cache.apply(&n, &body).map_err(|e| NacosError::Malformed {
                server,
                op: "instance/list",
                reason: e.to_string(),
            })?;
            if let Some(u) = cache.urls() {
                lists.push(u.clone());
            }
        }
        Ok(lookup_filter(consumer, lists))
    }

    async fn do_destroy(&self) {
        self.cancel.cancel();
        let all: Vec<(InstanceKey, (InstanceSpec, Heartbeat))> =
            self.registered.lock().drain().collect();
        for ((service, ip, port), (_spec, hb)) in all {
            drop(hb);
            if let Err(e) = self.client.deregister_instance(&service, &ip, port).await {
                warn!(service = %service, ip = %ip, port, error = %e, "nacos deregistration on destroy failed; the instance expires when its beats stop");
            }
        }
    }
}
