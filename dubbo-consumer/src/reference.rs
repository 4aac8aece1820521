//! [`Reference`]: a ready-to-call invoker of one service, built by a [`ReferenceBuilder`] the
//! way Dubbo's `ReferenceConfig` builds one.
//!
//! ```text
//! ReferenceBuilder --build(registry)--> consumer URL
//!   --> RegistryDirectory::subscribe (providers, configurators, routers; + config-centre rules)
//!   --> cluster::join (mock -> cluster strategy -> load balance -> filters)
//!   --> Protocols::refer per provider URL (dubbo://, tri://, your own)
//! ```

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
        let host = match &self.host {
            Some(h) => h.clone(),
            None => registry_core::address::local_ip_towards(registry.url()),
        };
        let consumer = self.consumer_url(&host);
        let factory = self
            .protocols
            .clone()
            .unwrap_or_else(|| Arc::new(Protocols::new()));
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
        let rules = match self.rule_source(&registry).await {
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
            directory,
            _rules: rules,
        })
    }

    async fn rule_source(&self, registry: &Arc<dyn Registry>) -> Option<SharedConfigCenter> {
        match &self.rules {
            Rules::Off => None,
            Rules::Given(cc) => Some(cc.clone()),
            Rules::FromRegistry => {
                let url = config_center_url(registry.url(), None)?;
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
    directory: Arc<RegistryDirectory>,
    _rules: Option<RuleWatcher>,
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

    /// The directory: the current providers ([`RegistryDirectory::invoker_urls`]), rules,
    /// readiness.
    pub fn directory(&self) -> &Arc<RegistryDirectory> {
        &self.directory
    }

    /// The consumer URL with the configurators applied.
    pub fn consumer_url(&self) -> Url {
        self.directory.consumer_url()
    }

    /// Unsubscribes and closes the provider invokers. Idempotent.
    pub fn destroy(&self) {
        self.directory.destroy();
    }
}

#[async_trait]
impl Invoker for Reference {
    fn url(&self) -> &Url {
        self.invoker.url()
    }

    fn is_available(&self) -> bool {
        self.invoker.is_available()
    }

    async fn invoke(&self, invocation: &Invocation) -> RpcResult {
        self.invoker.invoke(invocation).await
    }

    fn destroy(&self) {
        self.directory.destroy();
    }
}
