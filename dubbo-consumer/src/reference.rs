//! [`Reference`]: a ready-to-call invoker of one service, built by a [`ReferenceBuilder`] the
//! way Dubbo's `ReferenceConfig` builds one.
//!
//! ```text
//! ReferenceBuilder --build(registry)--> consumer URL
//!   --> RegistryDirectory::subscribe (providers, configurators, routers; + config-centre rules)
//!   --> cluster::join (mock -> cluster strategy -> load balance -> filters)
//!   --> Protocols::refer per provider URL (dubbo://, tri://, your own)
//! ```
//!
//! With both discovery levels ([`ReferenceBuilder::build_levels`], feature `app-discovery`) the
//! directory is Dubbo's `MigrationInvoker`: one `RegistryDirectory` per level, the step
//! (`FORCE_INTERFACE`, `APPLICATION_FIRST`, `FORCE_APPLICATION`) from the config centre's
//! `<application>.migration` rule (or the consumer's `migration.step`), followed live.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use invoker::cluster::{self, ClusterOptions};
use invoker::directory::{Directory, DirectoryOptions, RegistryDirectory, RuleWatcher};
use invoker::rpc::{Invocation, Invoker, InvokerFactory, RpcResult, SharedInvoker};
use registry_core::{Registry, SharedConfigCenter, Url};

use crate::connect::{config_center_url, Connector};
use crate::error::{Error, Result};
use crate::protocols::Protocols;

/// The Dubbo protocol version a consumer URL announces (`dubbo` parameter).
const DUBBO_PROTOCOL_VERSION: &str = "2.0.2";
/// The Dubbo release whose rules this consumer follows (`release` parameter).
const RELEASE: &str = "3.3.1";
/// How long a reference waits for its first provider list by default.
const DEFAULT_READY_TIMEOUT: Duration = Duration::from_secs(3);

/// Where a reference's governance rules come from.
#[derive(Debug, Clone, Default)]
enum Rules {
    /// The registry's own config centre ([`config_center_url`]); unreachable = no rules.
    #[default]
    FromRegistry,
    /// No config centre.
    Off,
    /// This one.
    Given(SharedConfigCenter),
}

/// Builds a [`Reference`]: the interface, the consumer parameters Dubbo's `<dubbo:reference>`
/// takes, the protocols, where rules come from.
///
/// Every setter writes the consumer URL parameter of the same name, which is what Dubbo's
/// directory, router, cluster and load-balance code read; [`ReferenceBuilder::param`] sets any
/// other (`sticky`, `actives`, `forks`, `merger`, `tag`, ...).
#[derive(Debug, Clone)]
pub struct ReferenceBuilder {
    interface: String,
    host: Option<String>,
    params: BTreeMap<String, String>,
    protocols: Option<Arc<dyn InvokerFactory>>,
    rules: Rules,
    options: DirectoryOptions,
    cluster_options: ClusterOptions,
    check: bool,
}

impl ReferenceBuilder {
    /// A reference of `interface` (e.g. `org.apache.dubbo.demo.DemoService`): no group, no
    /// version, failover with 2 retries, random load balancing, timeout 1000 ms, `check=true`,
    /// the consumer registered under `consumers`, the registry's config-centre rules.
    pub fn new(interface: impl Into<String>) -> Self {
        let options = DirectoryOptions {
            ready_timeout: DEFAULT_READY_TIMEOUT,
            ..DirectoryOptions::default()
        };
        ReferenceBuilder {
            interface: interface.into(),
            host: None,
            params: BTreeMap::new(),
            protocols: None,
            rules: Rules::default(),
            options,
            cluster_options: ClusterOptions::default(),
            check: true,
        }
    }

    /// Sets the consumer URL parameter `key` (any of Dubbo's reference parameters).
    pub fn param(mut self, key: &str, value: impl Into<String>) -> Self {
        self.params.insert(key.to_owned(), value.into());
        self
    }

    /// `group`: the provider group (`*` = every group, `a,b` = these groups, merged by the
    /// `mergeable` cluster).
    pub fn group(self, group: &str) -> Self {
        self.param("group", group)
    }

    /// `version`: the provider version (`*` = any).
    pub fn version(self, version: &str) -> Self {
        self.param("version", version)
    }

    /// `cluster`: failover (default), failfast, failsafe, failback, forking, broadcast,
    /// available.
    pub fn cluster(self, cluster: &str) -> Self {
        self.param("cluster", cluster)
    }

    /// `loadbalance`: random (default), roundrobin, leastactive, shortestresponse,
    /// consistenthash, p2c.
    pub fn loadbalance(self, loadbalance: &str) -> Self {
        self.param("loadbalance", loadbalance)
    }

    /// `mock`: `true`/`default`, `return <value>`, `throw [class]`, `force:...`, `fail:...`.
    pub fn mock(self, mock: &str) -> Self {
        self.param("mock", mock)
    }

    /// `timeout`: per attempt (milliseconds on the URL).
    pub fn timeout(self, timeout: Duration) -> Self {
        self.param("timeout", timeout.as_millis().to_string())
    }

    /// `retries`: attempts after the first (failover).
    pub fn retries(self, retries: u32) -> Self {
        self.param("retries", retries.to_string())
    }

    /// `protocol`: call only providers of these protocols (`dubbo`, `tri`, comma separated).
    pub fn protocol(self, protocol: &str) -> Self {
        self.param("protocol", protocol)
    }

    /// `application`: the consumer application (its condition rule and configurators are
    /// `<application>.condition-router` / `<application>.configurators`).
    pub fn application(self, application: &str) -> Self {
        self.param("application", application)
    }

    /// `check`: with true (the default, as in Dubbo) [`ReferenceBuilder::build`] fails when
    /// the registry refuses the subscription or no provider is available within the ready
    /// timeout; with false the reference is returned and waits for providers.
    pub fn check(mut self, check: bool) -> Self {
        self.check = check;
        self
    }

    /// The consumer's IP (Dubbo's `NetUtils.getLocalHost()`; routers match `host` against
    /// it). Default: the local address used to reach the registry.
    pub fn host(mut self, host: &str) -> Self {
        self.host = Some(host.to_owned());
        self
    }

    /// How long [`ReferenceBuilder::build`] waits for the first provider list (default 3 s).
    pub fn ready_timeout(mut self, timeout: Duration) -> Self {
        self.options.ready_timeout = timeout;
        self
    }

    /// Registers the consumer under `consumers` (default true, as Dubbo does).
    pub fn register_consumer(mut self, register: bool) -> Self {
        self.options.register = register;
        self
    }

    /// The protocols providers are referred with (default [`Protocols::new`]).
    pub fn protocols(mut self, protocols: Protocols) -> Self {
        self.protocols = Some(Arc::new(protocols));
        self
    }

    /// Refers every provider with `factory` (your own transport), whatever its protocol.
    pub fn invoker_factory(mut self, factory: Arc<dyn InvokerFactory>) -> Self {
        self.protocols = Some(factory);
        self
    }

    /// Follows the governance rules (routers, overrides) of `config_center`.
    pub fn config_center(mut self, config_center: SharedConfigCenter) -> Self {
        self.rules = Rules::Given(config_center);
        self
    }

    /// Follows no governance rules from a config centre (rules in the registry's
    /// `routers`/`configurators` categories still apply).
    pub fn without_config_center(mut self) -> Self {
        self.rules = Rules::Off;
        self
    }

    /// Directory options (Dubbo generation, per-method cache, empty protection, routers).
    /// `ready_timeout` and `register` are also set by their own builder methods.
    pub fn directory_options(mut self, options: DirectoryOptions) -> Self {
        self.options = options;
        self
    }

    /// Cluster options (a fixed load balancer, cluster filters, failback timing, mocks).
    pub fn cluster_options(mut self, options: ClusterOptions) -> Self {
        self.cluster_options = options;
        self
    }

    /// The consumer URL the reference subscribes with, for a consumer at `host`.
    pub fn consumer_url(&self, host: &str) -> Url {
        let mut b = Url::builder("consumer")
            .host(host)
            .path(&self.interface)
            .param("interface", &self.interface)
            .param("side", "consumer")
            .param("category", "providers,configurators,routers")
            .param("dubbo", DUBBO_PROTOCOL_VERSION)
            .param("release", RELEASE)
            .param("check", if self.check { "true" } else { "false" })
            .param("pid", &std::process::id().to_string());
        for (k, v) in &self.params {
            b = b.param(k, v);
        }
        b.build()
    }

    /// Subscribes to the interface's providers in `registry` and joins them into one
    /// ready-to-call invoker.
    ///
    /// Errors: [`Error::Subscribe`] when the registry refuses (with `check`);
    /// [`Error::NoProvider`] when, with `check`, no provider is available within the ready
    /// timeout. A config centre that cannot be reached is logged and leaves the reference
    /// without config-centre rules.
    pub async fn build(self, registry: Arc<dyn Registry>) -> Result<Reference> {
        let consumer = self.consumer_for(registry.url());
        let factory = self.factory();
        let ready_timeout = self.options.ready_timeout;
        let directory = RegistryDirectory::subscribe(
            registry.clone(),
            consumer.clone(),
            factory,
            self.options.clone(),
        )
        .await
        .map_err(|source| Error::Subscribe {
            service: self.interface.clone(),
            registry: registry.url().to_string(),
            source,
        })?;
        let rules = match self.rule_source(registry.url()).await {
            Some(cc) => Some(RuleWatcher::start(cc, &directory, ready_timeout).await),
            None => None,
        };
        if self.check && !directory.is_available() {
            directory.destroy();
            return Err(Error::NoProvider {
                service: consumer.service_key().unwrap_or_default(),
                timeout: ready_timeout,
            });
        }
        let invoker = cluster::join_with(
            directory.clone() as Arc<dyn Directory>,
            self.cluster_options.clone(),
        );
        Ok(Reference {
            invoker,
            subscribed: Subscribed::Interface {
                directory,
                _rules: rules,
            },
        })
    }

    /// Subscribes to the interface's providers in every level of `levels` and joins them into
    /// one ready-to-call invoker, as Dubbo's `MigrationInvoker`: the migration step comes from
    /// the config centre's `<application>.migration` rule (followed live), else the consumer's
    /// `migration.step` parameter ([`ReferenceBuilder::param`]), else `APPLICATION_FIRST`.
    /// The config centre (see [`ReferenceBuilder::config_center`]) also gives the governance
    /// rules of both directories. `levels` stays the caller's: destroy it after the reference.
    ///
    /// Errors: as [`ReferenceBuilder::build`].
    #[cfg(feature = "app-discovery")]
    pub async fn build_levels(self, levels: &crate::Levels) -> Result<Reference> {
        use app_discovery::{MigrationReference, ReferenceConfig};
        let consumer = self.consumer_for(&levels.url);
        let ready_timeout = self.options.ready_timeout;
        let config_center = self.rule_source(&levels.url).await;
        let migration = MigrationReference::open(ReferenceConfig {
            consumer: consumer.clone(),
            factory: self.factory(),
            options: self.options.clone(),
            interface_registry: levels.interface.clone(),
            app_registry: levels.app.clone(),
            config_center,
            rule_wait: ready_timeout,
        })
        .await
        .map_err(|source| Error::Subscribe {
            service: self.interface.clone(),
            registry: levels.url.to_string(),
            source,
        })?;
        let directory = migration.directory();
        directory.wait_ready().await;
        let Some(initial) = level_directory(&migration) else {
            migration.destroy().await;
            return Err(Error::Subscribe {
                service: self.interface.clone(),
                registry: levels.url.to_string(),
                source: invoker::rpc::RpcError::new(
                    invoker::rpc::RpcErrorCode::Unknown,
                    "no discovery level subscribed",
                ),
            });
        };
        if self.check && !directory.is_available() {
            migration.destroy().await;
            return Err(Error::NoProvider {
                service: consumer.service_key().unwrap_or_default(),
                timeout: ready_timeout,
            });
        }
        let invoker = cluster::join_with(
            directory as Arc<dyn Directory>,
            self.cluster_options.clone(),
        );
        Ok(Reference {
            invoker,
            subscribed: Subscribed::Levels { migration, initial },
        })
    }

    /// The consumer URL for a consumer of the registry at `registry`.
    fn consumer_for(&self, registry: &Url) -> Url {
        let host = match &self.host {
            Some(h) => h.clone(),
            None => registry_core::address::local_ip_towards(registry),
        };
        self.consumer_url(&host)
    }

    fn factory(&self) -> Arc<dyn InvokerFactory> {
        self.protocols
            .clone()
            .unwrap_or_else(|| Arc::new(Protocols::new()))
    }

    async fn rule_source(&self, registry: &Url) -> Option<SharedConfigCenter> {
        match &self.rules {
            Rules::Off => None,
            Rules::Given(cc) => Some(cc.clone()),
            Rules::FromRegistry => {
                let url = config_center_url(registry, None)?;
                match Connector::from_url(url.clone())
                    .timeout(self.options.ready_timeout)
                    .config_center()
                    .await
                {
                    Ok(cc) => Some(cc),
                    Err(e) => {
                        tracing::warn!(config_center = %url, error = %e, "no config centre: the reference follows no governance rules");
                        None
                    }
                }
            }
        }
    }
}

/// One service, ready to call: the cluster invoker over the service's registry directory
/// (mock, cluster strategy, load balancing, filters, then the provider's protocol).
///
/// Calls go through [`Reference::invoke`] (or the [`Invoker`] impl, or
/// [`Reference::invoker`] to hand the invoker on). Keep the reference while you call: it
/// follows the config centre's rules for as long as it lives. [`Reference::destroy`]
/// unsubscribes and closes the provider invokers at once; otherwise that happens when the
/// reference and every invoker handed out are dropped.
#[derive(Debug)]
pub struct Reference {
    invoker: SharedInvoker,
    subscribed: Subscribed,
}

/// What a reference subscribed.
#[derive(Debug)]
enum Subscribed {
    /// One registry directory (and the watcher of its config-centre rules).
    Interface {
        directory: Arc<RegistryDirectory>,
        _rules: Option<RuleWatcher>,
    },
    /// Both discovery levels, migrating; `initial` is the directory calls went to when the
    /// reference was built (what [`Reference::directory`] returns while no level is
    /// subscribed).
    #[cfg(feature = "app-discovery")]
    Levels {
        migration: app_discovery::MigrationReference,
        initial: Arc<RegistryDirectory>,
    },
}

/// The directory of the level the next call of `migration` would use, else of any subscribed
/// level.
#[cfg(feature = "app-discovery")]
fn level_directory(
    migration: &app_discovery::MigrationReference,
) -> Option<Arc<RegistryDirectory>> {
    use app_discovery::migration::Level;
    let d = migration.directory();
    match d.current_level() {
        Some(Level::Interface) => d.interface_directory(),
        Some(Level::Application) => d.application_directory(),
        None => None,
    }
    .or_else(|| d.interface_directory())
    .or_else(|| d.application_directory())
}

impl Reference {
    /// A builder for a reference of `interface`.
    pub fn builder(interface: impl Into<String>) -> ReferenceBuilder {
        ReferenceBuilder::new(interface)
    }

    /// One call through the cluster.
    pub async fn invoke(&self, invocation: &Invocation) -> RpcResult {
        self.invoker.invoke(invocation).await
    }

    /// The cluster invoker (cheap to clone and share between tasks).
    pub fn invoker(&self) -> SharedInvoker {
        self.invoker.clone()
    }

    /// The registry directory calls go to: the current providers
    /// ([`RegistryDirectory::invoker_urls`]), rules, readiness. For a reference over both
    /// discovery levels, the directory of the level the next call would use (see
    /// [`Reference::migration`] for both).
    pub fn directory(&self) -> Arc<RegistryDirectory> {
        match &self.subscribed {
            Subscribed::Interface { directory, .. } => directory.clone(),
            #[cfg(feature = "app-discovery")]
            Subscribed::Levels { migration, initial } => {
                level_directory(migration).unwrap_or_else(|| initial.clone())
            }
        }
    }

    /// The migration of a reference over both discovery levels
    /// ([`ReferenceBuilder::build_levels`]): its step, rule and per-level directories.
    #[cfg(feature = "app-discovery")]
    pub fn migration(&self) -> Option<&app_discovery::MigrationReference> {
        match &self.subscribed {
            Subscribed::Levels { migration, .. } => Some(migration),
            Subscribed::Interface { .. } => None,
        }
    }

    /// The consumer URL with the configurators applied.
    pub fn consumer_url(&self) -> Url {
        self.directory().consumer_url()
    }

    /// Unsubscribes and closes the provider invokers. Idempotent.
    pub fn destroy(&self) {
        match &self.subscribed {
            Subscribed::Interface { directory, .. } => directory.destroy(),
            #[cfg(feature = "app-discovery")]
            Subscribed::Levels { migration, .. } => migration.directory().destroy(),
        }
    }

    /// Like [`Reference::destroy`], and for a reference over both discovery levels also stops
    /// following the migration rule and lets go of the directories it holds.
    pub async fn close(&self) {
        match &self.subscribed {
            Subscribed::Interface { directory, .. } => directory.destroy(),
            #[cfg(feature = "app-discovery")]
            Subscribed::Levels { migration, .. } => migration.destroy().await,
        }
    }
}

#[async_trait]
impl Invoker for Reference {
    invoker::delegate_invoker!(invoker => url, is_available);

    async fn invoke(&self, invocation: &Invocation) -> RpcResult {
        self.invoker.invoke(invocation).await
    }

    fn destroy(&self) {
        Reference::destroy(self);
    }
}
