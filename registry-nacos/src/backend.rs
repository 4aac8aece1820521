//! [`NacosBackend`]: the [`RegistryBackend`] over Nacos (gRPC by default, v1 HTTP with
//! `nacos.transport=http`; see [`Naming`]), and [`NacosRegistry`], the backend wrapped in the
//! shared failback layer.

use std::fmt;
use std::sync::Arc;

use async_trait::async_trait;
use registry_core::{FailbackRegistry, Publisher, RegistryBackend, Url};
use tokio_util::sync::CancellationToken;
use tracing::debug;

use crate::client::{InstanceSpec, NacosClient};
use crate::config::{NacosConfig, Transport};
use crate::convert::instance_metadata;
use crate::error::NacosError;
use crate::name::{compatible_register_name, register_name, to_nacos_name};
use crate::source::{ChangeSource, PollingSource};
use crate::subscribe::{lookup_filter, NamePlan, SubscriptionTask};
use crate::transport::Naming;

/// The Nacos registry as consumers and providers use it: [`NacosBackend`] with failback
/// retries, `check` semantics and the cache file.
#[derive(Debug)]
pub struct NacosRegistry {
    inner: FailbackRegistry<NacosBackend>,
}

impl NacosRegistry {
    /// Connects to the Nacos servers of a `nacos://` registry URL: builds the registry and,
    /// unless the URL says `check=false`, makes one cheap request over the configured
    /// transport, so that a wrong address, password or namespace fails here, clearly.
    ///
    /// Errors: a bad URL ([`NacosError::InvalidConfig`]); with `check` (default true) the
    /// probe's error (unreachable, refused credentials, timeout).
    /// Must be called within a Tokio runtime.
    pub async fn connect(url: &Url) -> Result<NacosRegistry, NacosError> {
        let registry = NacosRegistry::new(url)?;
        if url.param_bool("check", true) {
            registry.backend().probe().await?;
        }
        Ok(registry)
    }

    /// Builds the registry without any request (with gRPC the connection is opened in the
    /// background). Must be called within a Tokio runtime.
    ///
    /// Errors: a bad URL.
    pub fn new(url: &Url) -> Result<NacosRegistry, NacosError> {
        Ok(NacosRegistry::from_backend(NacosBackend::new(url)?))
    }

    /// The registry of an already built backend (e.g. [`NacosBackend::with_source`]).
    pub fn from_backend(backend: NacosBackend) -> NacosRegistry {
        NacosRegistry {
            inner: FailbackRegistry::new(backend),
        }
    }

    /// The backend (transport, configuration).
    pub fn backend(&self) -> &NacosBackend {
        self.inner.backend()
    }

    /// The failback layer (pending retries, registered URLs, the cache file).
    pub fn failback(&self) -> &FailbackRegistry<NacosBackend> {
        &self.inner
    }
}

registry_core::delegate_registry!(NacosRegistry => inner);

/// The Nacos backend: registrations and subscriptions over a [`Naming`] transport, changes
/// from a [`ChangeSource`] (gRPC pushes, or HTTP polling).
pub struct NacosBackend {
    url: Url,
    cfg: NacosConfig,
    client: Arc<NacosClient>,
    naming: Arc<Naming>,
    source: Arc<dyn ChangeSource>,
    cancel: CancellationToken,
}

impl fmt::Debug for NacosBackend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("NacosBackend")
            .field("url", &self.url.to_string())
            .field("servers", &self.cfg.servers)
            .field("namespace", &self.cfg.namespace)
            .field("group", &self.cfg.group)
            .field("transport", &self.cfg.transport)
            .finish_non_exhaustive()
    }
}

impl NacosBackend {
    /// A backend for `nacos.transport` (gRPC pushes by default; HTTP polls `instance/list`,
    /// see [`PollingSource`]). With gRPC the connection is opened in the background (must be
    /// called inside a tokio runtime).
    pub fn new(url: &Url) -> Result<Self, NacosError> {
        let cfg = NacosConfig::from_url(url)?;
        match cfg.transport {
            Transport::Grpc => {
                let client = Arc::new(NacosClient::new(&cfg)?);
                let naming = Naming::new(&cfg, &client)?;
                let source = match &naming {
                    Naming::Grpc(g) => g.source(),
                    Naming::Http(_) => Arc::new(PollingSource::new(
                        client.clone(),
                        cfg.poll_interval,
                        CancellationToken::new(),
                    )),
                };
                Ok(Self::assemble(
                    url,
                    cfg,
                    client,
                    naming,
                    source,
                    CancellationToken::new(),
                ))
            }
            Transport::Http => Self::with_source(url, |client, cfg, cancel| {
                Arc::new(PollingSource::new(
                    client.clone(),
                    cfg.poll_interval,
                    cancel.clone(),
                ))
            }),
        }
    }

    /// An HTTP-transport backend whose subscriptions learn about changes from the source
    /// `make` builds (`nacos.transport` is ignored: registrations use v1 HTTP).
    pub fn with_source(
        url: &Url,
        make: impl FnOnce(&Arc<NacosClient>, &NacosConfig, &CancellationToken) -> Arc<dyn ChangeSource>,
    ) -> Result<Self, NacosError> {
        let mut cfg = NacosConfig::from_url(url)?;
        cfg.transport = Transport::Http;
        let client = Arc::new(NacosClient::new(&cfg)?);
        let cancel = CancellationToken::new();
        let source = make(&client, &cfg, &cancel);
        let naming = Naming::new(&cfg, &client)?;
        Ok(Self::assemble(url, cfg, client, naming, source, cancel))
    }

    fn assemble(
        url: &Url,
        cfg: NacosConfig,
        client: Arc<NacosClient>,
        naming: Naming,
        source: Arc<dyn ChangeSource>,
        cancel: CancellationToken,
    ) -> Self {
        NacosBackend {
            url: sanitize(url, &cfg),
            cfg,
            client,
            naming: Arc::new(naming),
            source,
            cancel,
        }
    }

    /// The HTTP client (v1 requests; with gRPC only used to log in).
    pub fn client(&self) -> &Arc<NacosClient> {
        &self.client
    }

    /// The transport (for tools and measurements: gRPC request counters, ...).
    pub fn naming(&self) -> &Arc<Naming> {
        &self.naming
    }

    /// Where changes come from (gRPC pushes, or HTTP polling).
    pub fn source(&self) -> &Arc<dyn ChangeSource> {
        &self.source
    }

    /// One cheap request over the configured transport: checks reachability, credentials
    /// and namespace (the CLI calls it before anything else).
    pub async fn probe(&self) -> Result<(), NacosError> {
        self.naming.probe().await
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
        // `ephemeral=false` on the provider URL: a persistent Nacos instance.
        let ephemeral = url.param("ephemeral") != Some("false");
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
                ephemeral,
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
        self.naming.is_available()
    }

    fn health(&self) -> Option<tokio::sync::watch::Receiver<registry_core::RegistryHealth>> {
        Some(self.naming.health())
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
            self.naming.register(&inst).await?;
        }
        Ok(())
    }

    async fn do_unregister(&self, url: &Url) -> registry_core::Result<()> {
        if !self.should_register(url) {
            return Ok(());
        }
        for inst in self.instances_of(url)? {
            self.naming.deregister(&inst).await?;
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
            naming: self.naming.clone(),
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
        let names = plan.resolve(&self.naming, consumer).await?;
        let mut lists = Vec::with_capacity(names.len());
        for n in names {
            if let Some(u) = self.naming.query(&n).await? {
                lists.push(u);
            }
        }
        Ok(lookup_filter(consumer, lists))
    }

    async fn do_destroy(&self) {
        self.cancel.cancel();
        self.naming.shutdown().await;
    }
}
