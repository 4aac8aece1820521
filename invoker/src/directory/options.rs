//! [`DirectoryOptions`]: how a [`super::RegistryDirectory`] interprets notifications.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use crate::router::{Router, RouterFactory};
use crate::rpc::SharedInvoker;

/// Which Dubbo generation's rules to follow where they differ (see docs/compatibility.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default, Hash)]
pub enum DubboCompat {
    /// 2.6.x: `ClusterUtils.mergeUrl` with provider-wins keys, a parameterless configurator
    /// clears its batch, no configurator `enabled` skip, no service-key check.
    V26,
    /// 2.7.x: `ClusterUtils.mergeUrl`, configurator `enabled=false` skip, no service-key check.
    V27,
    /// 3.x (3.3): `ServiceAddressURL` layering and the 3.2+ configurator service-key check.
    #[default]
    V3,
}

impl DubboCompat {
    /// Parses `2.6`, `2.7`, `3` (any `2.6.x`, `dubbo-2.6.12`, ... prefix form); `None` otherwise.
    pub fn parse(s: &str) -> Option<DubboCompat> {
        let s = s.trim().trim_start_matches("dubbo-");
        if s.starts_with("2.6") {
            Some(DubboCompat::V26)
        } else if s.starts_with("2.7") {
            Some(DubboCompat::V27)
        } else if s.starts_with('3') {
            Some(DubboCompat::V3)
        } else {
            None
        }
    }
}

/// The per-method invoker cache (Dubbo 2.6's `RegistryDirectory.methodInvokerMap`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum MethodCacheMode {
    /// Dubbo 2.7+/3.x: every invoker serves every method (one shared list).
    #[default]
    Shared,
    /// Dubbo 2.6's `methodInvokerMap`: lists per provider-declared method, `*`, and
    /// `"<method>.<first String argument>"` routing. Also selected by the consumer parameter
    /// `method-invoker-cache=2.6`.
    Dubbo26,
}

/// Joins the invokers of one group into one invoker (a cluster over a static directory),
/// for multi-group consumers (`RegistryDirectory#toMergeInvokerList`).
pub trait GroupJoiner: Send + Sync + fmt::Debug {
    /// One invoker for `group` serving `invokers`.
    fn join(&self, group: &str, invokers: Vec<SharedInvoker>) -> SharedInvoker;
}

/// Options of a [`super::RegistryDirectory`].
#[derive(Debug, Clone)]
pub struct DirectoryOptions {
    /// Version rules (default 3.x).
    pub compat: DubboCompat,
    /// The per-method cache (default shared, 3.x).
    pub method_cache: MethodCacheMode,
    /// Register the consumer URL (`category=consumers&check=false`) when subscribing
    /// (default true; never for interface `*`).
    pub register: bool,
    /// Keep the current invokers when the registry says `empty://` (default false:
    /// `empty://` forbids calls, as in Dubbo).
    pub empty_protection: bool,
    /// `dubbo.router.should-fail-fast` (default true): a forbidden directory fails `list`;
    /// when false it returns an empty list.
    pub should_fail_fast: bool,
    /// How long [`super::Directory::wait_ready`] waits for the first providers
    /// notification by default (default 3 s).
    pub ready_timeout: Duration,
    /// Routers applied when a snapshot is built, in order (after the built-in mock selector).
    pub routers: Vec<Arc<dyn Router>>,
    /// Turns `routers` category URLs into routers; without it such URLs are recorded but not
    /// interpreted.
    pub router_factory: Option<Arc<dyn RouterFactory>>,
    /// Joins per-group invokers for multi-group consumers; `None` uses
    /// [`crate::cluster::ClusterGroupJoiner`] (one cluster invoker per group).
    pub group_joiner: Option<Arc<dyn GroupJoiner>>,
    /// Wrap every referred provider invoker with the call counters (`RpcStatus`) and, when
    /// its URL has `actives`, the ActiveLimit filter (default true). Without counters the
    /// leastactive, shortestresponse and p2c balancers see no load.
    pub count_calls: bool,
    /// How often the directory's task re-counts available invokers (its
    /// [`super::DirectoryHealth`] and `dubbo_registry_directory_num_*` gauges) and refreshes
    /// the service's aggregated call metrics (default 1 s; `None`: only when notified).
    pub health_interval: Option<Duration>,
}

impl Default for DirectoryOptions {
    fn default() -> Self {
        DirectoryOptions {
            compat: DubboCompat::V3,
            method_cache: MethodCacheMode::Shared,
            register: true,
            empty_protection: false,
            should_fail_fast: true,
            ready_timeout: Duration::from_secs(3),
            routers: Vec::new(),
            router_factory: None,
            group_joiner: None,
            count_calls: true,
            health_interval: Some(Duration::from_secs(1)),
        }
    }
}

impl DirectoryOptions {
    /// Defaults for a Dubbo generation: 2.6 also selects the per-method cache.
    pub fn for_compat(compat: DubboCompat) -> Self {
        let method_cache = match compat {
            DubboCompat::V26 => MethodCacheMode::Dubbo26,
            _ => MethodCacheMode::Shared,
        };
        DirectoryOptions {
            compat,
            method_cache,
            ..DirectoryOptions::default()
        }
    }
}
