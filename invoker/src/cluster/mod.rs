//! Cluster invokers (Dubbo's `AbstractClusterInvoker` and its strategies): one invoker in front of
//! a [`Directory`] that chooses a provider per call and handles failures by a strategy named by the
//! consumer URL's `cluster` parameter (default `failover`).
//!
//! Entry point: [`join`] (or [`join_with`]) returns a [`MockClusterInvoker`] wrapping the
//! cluster-level filters ([`ClusterOptions::layers`]) wrapping the strategy, exactly like
//! Dubbo's `cluster.join(directory, true)`.
//!
//! | name | behaviour |
//! |---|---|
//! | `failover` | retry other providers on non-biz errors (`retries`, default 2) |
//! | `failfast` | one attempt |
//! | `failsafe` | errors become an empty result |
//! | `failback` | errors become an empty result; bounded background retries |
//! | `forking` | `forks` parallel calls, first answer wins, `timeout` bounds the wait |
//! | `broadcast` | call every provider; `broadcast.fail.percent` stops early |
//! | `available` | the first available provider, no load balancing |
//! | `mergeable` | multi-group references: the first available group, or every group merged ([`mergeable`]) |
//!
//! A reference whose `group` is `*` or a list of several names is always joined with
//! `mergeable` at the top (whatever `cluster` says); each group inside keeps the consumer's
//! own strategy ([`ClusterGroupJoiner`]).
//!
//! Runtime: calls run on the caller's Tokio runtime. `forking` (its `timeout`) and `failback`
//! (its background retries, spawned on the current runtime) need the time driver enabled
//! (`#[tokio::main]` and `Runtime::new()` enable it).

pub mod broadcast;
pub mod core;
pub mod failback;
pub(crate) mod failfast;
pub(crate) mod failover;
pub(crate) mod failsafe;
pub(crate) mod forking;
pub mod mergeable;

mod available;
mod group_join;

use std::sync::Arc;

use async_trait::async_trait;
use registry_core::Url;
use tracing::warn;

pub use self::core::ClusterCore;
use self::failback::Failback;
pub use self::failback::FailbackOptions;
pub use self::group_join::ClusterGroupJoiner;
use crate::directory::Directory;
use crate::filter::{apply_layers, InvokerLayer};
use crate::loadbalance::LoadBalance;
use crate::merger::MergerRegistry;
use crate::metrics::{ConsumerMetrics, MetricsOptions};
use crate::mock::{MockClusterInvoker, MockRegistry};
use crate::rpc::{Invocation, Invoker, RpcResult, SharedInvoker};

/// A cluster strategy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum ClusterKind {
    /// `failover` (default).
    #[default]
    Failover,
    /// `failfast`.
    Failfast,
    /// `failsafe`.
    Failsafe,
    /// `failback`.
    Failback,
    /// `forking`.
    Forking,
    /// `broadcast`.
    Broadcast,
    /// `available`.
    Available,
    /// `mergeable` (multi-group references).
    Mergeable,
}

impl ClusterKind {
    /// The strategy for a `cluster` name (case-sensitive, as Dubbo's SPI names); `None` when
    /// unknown.
    pub fn from_name(name: &str) -> Option<Self> {
        Some(match name {
            "failover" => ClusterKind::Failover,
            "failfast" => ClusterKind::Failfast,
            "failsafe" => ClusterKind::Failsafe,
            "failback" => ClusterKind::Failback,
            "forking" => ClusterKind::Forking,
            "broadcast" => ClusterKind::Broadcast,
            "available" => ClusterKind::Available,
            "mergeable" => ClusterKind::Mergeable,
            _ => return None,
        })
    }

    /// The SPI name.
    pub fn name(self) -> &'static str {
        match self {
            ClusterKind::Failover => "failover",
            ClusterKind::Failfast => "failfast",
            ClusterKind::Failsafe => "failsafe",
            ClusterKind::Failback => "failback",
            ClusterKind::Forking => "forking",
            ClusterKind::Broadcast => "broadcast",
            ClusterKind::Available => "available",
            ClusterKind::Mergeable => "mergeable",
        }
    }

    /// The top-level strategy of a reference (`RegistryProtocol#refer`): `mergeable` when the
    /// consumer's `group` is `*` or several names ([`mergeable::is_mergeable`]), else
    /// [`ClusterKind::for_url`].
    pub fn for_reference(consumer_url: &Url) -> Self {
        if mergeable::is_mergeable(consumer_url) {
            ClusterKind::Mergeable
        } else {
            ClusterKind::for_url(consumer_url)
        }
    }

    /// The strategy named by the consumer URL's `cluster` parameter; unknown names fall back
    /// to failover with a warning.
    pub fn for_url(consumer_url: &Url) -> Self {
        match consumer_url
            .param("cluster")
            .map(str::trim)
            .filter(|s| !s.is_empty())
        {
            None => ClusterKind::Failover,
            Some(n) => ClusterKind::from_name(n).unwrap_or_else(|| {
                warn!(cluster = n, "unknown cluster strategy, using failover");
                ClusterKind::Failover
            }),
        }
    }
}

/// Options for [`join_with`].
#[derive(Debug, Clone)]
pub struct ClusterOptions {
    /// The strategy; `None` reads the consumer URL's `cluster` parameter.
    pub kind: Option<ClusterKind>,
    /// A fixed load balancer; `None` uses the first invoker URL's `loadbalance` per call.
    pub loadbalance: Option<Arc<dyn LoadBalance>>,
    /// `dubbo.reselect.count` (default 10).
    pub reselect_count: usize,
    /// Failback retry timing.
    pub failback: FailbackOptions,
    /// Where impl mocks and mock exception classes are looked up; `None` = the process-wide
    /// [`MockRegistry::global`].
    pub mock_registry: Option<Arc<MockRegistry>>,
    /// Cluster-level filters (Dubbo's `ClusterFilter`s, e.g.
    /// [`ConsumerContextLayer`](crate::filter::consumer_context::ConsumerContextLayer) and
    /// [`FutureLayer`](crate::filter::future::FutureLayer)), first = outermost. [`join_with`]
    /// puts them between the mock wrapper and the strategy, as Dubbo does. Empty by default.
    pub layers: Vec<Arc<dyn InvokerLayer>>,
    /// Where `merger` names and `.method` mergers are looked up (mergeable cluster); `None` =
    /// the process-wide [`MergerRegistry::global`].
    pub merger_registry: Option<Arc<MergerRegistry>>,
    /// Record Dubbo's consumer metrics for every call ([`crate::metrics`]; Java's
    /// `MetricsConsumerFilter`), inside the mock wrapper and the layers, around the strategy.
    /// `None` (default): no metrics.
    pub metrics: Option<MetricsOptions>,
}

impl Default for ClusterOptions {
    fn default() -> Self {
        ClusterOptions {
            kind: None,
            loadbalance: None,
            reselect_count: self::core::DEFAULT_RESELECT_COUNT,
            failback: FailbackOptions::default(),
            mock_registry: None,
            layers: Vec::new(),
            merger_registry: None,
            metrics: None,
        }
    }
}

/// Builds the cluster for `directory` (strategy from its consumer URL: `mergeable` for a
/// multi-group reference, else its `cluster` param),
/// wrapped in a [`MockClusterInvoker`]: the invoker a consumer reference calls.
pub fn join(directory: Arc<dyn Directory>) -> SharedInvoker {
    join_with(directory, ClusterOptions::default())
}

/// Like [`join`] with explicit options.
pub fn join_with(directory: Arc<dyn Directory>, options: ClusterOptions) -> SharedInvoker {
    let registry = options
        .mock_registry
        .clone()
        .unwrap_or_else(MockRegistry::global);
    let layers = options.layers.clone();
    let cluster: SharedInvoker = Arc::new(ClusterInvoker::new(directory.clone(), options));
    let filtered = apply_layers(cluster, &layers);
    Arc::new(MockClusterInvoker::new(directory, filtered, registry))
}

/// A cluster strategy over a directory, without the mock wrapper.
#[derive(Debug)]
pub struct ClusterInvoker {
    core: Arc<ClusterCore>,
    kind: ClusterKind,
    failback: Option<Failback>,
    mergers: Arc<MergerRegistry>,
    registry_url: Url,
    metrics: Option<Arc<ConsumerMetrics>>,
}

impl ClusterInvoker {
    /// A cluster over `directory` with `options`; without an explicit kind the strategy is
    /// [`ClusterKind::for_reference`] of the directory's consumer URL.
    pub fn new(directory: Arc<dyn Directory>, options: ClusterOptions) -> Self {
        let kind = options
            .kind
            .unwrap_or_else(|| ClusterKind::for_reference(&directory.consumer_url()));
        let mergers = options
            .merger_registry
            .clone()
            .unwrap_or_else(MergerRegistry::global);
        let registry_url = directory.registry_url();
        let metrics = options
            .metrics
            .map(|o| ConsumerMetrics::for_consumer(&directory.consumer_url(), o));
        let core = Arc::new(ClusterCore::new(
            directory,
            options.loadbalance,
            options.reselect_count,
        ));
        let failback = (kind == ClusterKind::Failback).then(|| Failback::new(options.failback));
        ClusterInvoker {
            core,
            kind,
            failback,
            mergers,
            registry_url,
            metrics,
        }
    }

    /// The service's call metrics, when recorded.
    pub fn metrics(&self) -> Option<&Arc<ConsumerMetrics>> {
        self.metrics.as_ref()
    }

    async fn invoke_strategy(&self, invocation: &Invocation) -> RpcResult {
        self.core.check_whether_destroyed()?;
        let set = self.core.list_checked(invocation)?;
        let lb = self.core.load_balance(&set, invocation);
        let core = &*self.core;
        match self.kind {
            ClusterKind::Failover => failover::invoke(core, invocation, set, &*lb).await,
            ClusterKind::Failfast => failfast::invoke(core, invocation, &set, &*lb).await,
            ClusterKind::Failsafe => failsafe::invoke(core, invocation, &set, &*lb).await,
            ClusterKind::Forking => forking::invoke(core, invocation, set, &*lb).await,
            ClusterKind::Broadcast => broadcast::invoke(core, invocation, &set).await,
            ClusterKind::Available => available::invoke(core, invocation, &set).await,
            ClusterKind::Mergeable => {
                mergeable::invoke(core, invocation, &set, &self.mergers).await
            }
            ClusterKind::Failback => match &self.failback {
                Some(fb) => fb.invoke(&self.core, invocation, &set, lb).await,
                None => failsafe::invoke(core, invocation, &set, &*lb).await,
            },
        }
    }

    /// The strategy.
    pub fn kind(&self) -> ClusterKind {
        self.kind
    }

    /// The shared core (select/reselect, directory).
    pub fn core(&self) -> &Arc<ClusterCore> {
        &self.core
    }

    /// Failback only: the number of background retry tasks still pending.
    pub fn pending_retries(&self) -> usize {
        self.failback.as_ref().map_or(0, Failback::pending)
    }
}

#[async_trait]
impl Invoker for ClusterInvoker {
    fn url(&self) -> &Url {
        self.core.url()
    }

    fn registry_url(&self) -> Option<&Url> {
        Some(&self.registry_url)
    }

    fn is_available(&self) -> bool {
        !self.core.is_destroyed() && self.core.directory().is_available()
    }

    async fn invoke(&self, invocation: &Invocation) -> RpcResult {
        match &self.metrics {
            None => self.invoke_strategy(invocation).await,
            Some(m) => {
                let record = m.start(invocation);
                let r = self.invoke_strategy(invocation).await;
                record.finish(&r);
                r
            }
        }
    }

    /// Destroys the cluster (later calls fail), stops failback retries and destroys the
    /// directory, as Dubbo's `AbstractClusterInvoker#destroy` does. Idempotent.
    fn destroy(&self) {
        if self.core.is_destroyed() {
            return;
        }
        self.core.destroy();
        if let Some(fb) = &self.failback {
            fb.stop();
        }
        self.core.directory().destroy();
    }
}
