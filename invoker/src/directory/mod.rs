//! Directories: the list of invokers a cluster chooses from.
//!
//! [`Directory::list`] returns an immutable [`InvokerSet`] snapshot: no lock is taken and
//! nothing is allocated in steady state (an `Arc` clone).
//!
//! [`RegistryDirectory`] follows a registry subscription (Dubbo's `RegistryDirectory`):
//! - notified URLs are classified as configurators (`override://`, `absent://`, category
//!   `configurators`), routers (`route://`, category `routers`) or providers;
//! - configurators ([`crate::rules::Configurator`]) are ordered by host then `priority` and applied to every
//!   provider URL and to the consumer URL ([`Directory::consumer_url`]);
//! - each provider URL is merged with the consumer parameters ([`crate::rules::merge_url`]: 3.x
//!   `ServiceAddressURL` layering, or `ClusterUtils.mergeUrl` for 2.6/2.7 rules), gets
//!   `check=false`, loses `mock`, and is referred through the user's
//!   [`crate::rpc::InvokerFactory`] only when enabled (`disabled` wins over `enabled`) and
//!   accepted by the consumer's `protocol` list;
//! - the invoker of an unchanged merged URL is reused; removed providers are destroyed after
//!   the new snapshot is published (in-flight calls finish on the `Arc` they hold);
//! - `empty://` forbids calls (`list` fails with code 4 "No provider available from registry
//!   ..."), unless empty protection is on; a notification with no URL changes nothing; a list
//!   with no valid provider keeps the current invokers;
//! - multi-group consumers (`group=*` or a list) get one joined invoker per group
//!   ([`GroupJoiner`], default [`crate::cluster::ClusterGroupJoiner`]: a cluster per group);
//! - the snapshot holds the invokers per method ([`MethodCacheMode`]: 3.x shared list, or
//!   Dubbo 2.6's `methodInvokerMap`), after routers ([`crate::router`]); `mock://` providers
//!   are kept apart for invocations with `invocation.need.mock=true`.
//!
//! Applying a providers notification is incremental (see `table.rs`): cost is proportional
//! to the number of changed providers plus cheap pointer lookups, not to a full rebuild.
//!
//! Governance rules from a config centre ([`rules::RuleWatcher`]) reach the directory through
//! [`RegistryDirectory::set_router_rule`] and
//! [`RegistryDirectory::set_dynamic_configurators`] (override YAML parsed by [`crate::rules::parse_configurators`];
//! applied after the registry's configurators: registry, application, service). A rule change
//! re-merges only the providers its configurators may touch.

use std::fmt::Debug;
use std::sync::Arc;

use futures::future::BoxFuture;
use registry_core::Url;

use crate::invoker_set::InvokerSet;
use crate::rpc::{Invocation, RpcError};

pub(crate) mod condition_match;
pub(crate) mod config_parser;
pub(crate) mod configurator;
mod health;
pub(crate) mod merge;
mod options;
mod registry_directory;
mod routing;
pub(crate) mod rules;
mod snapshot;
mod table;
#[cfg(test)]
mod tests;

pub use health::{DirectoryHealth, DirectoryPhase};
pub use options::{DirectoryOptions, DubboCompat, GroupJoiner, MethodCacheMode};
pub use registry_directory::{ConfiguratorScope, RegistryDirectory, SUBSCRIBE_CATEGORIES};
pub use rules::RuleWatcher;
pub use snapshot::{group_invokers, is_multi_group};
pub use static_directory::StaticDirectory;

/// A source of invokers for one consumer reference.
pub trait Directory: Send + Sync + Debug {
    /// The consumer URL with configurators applied (Dubbo's directory URL).
    fn consumer_url(&self) -> Url;

    /// The registry URL (`cluster.availablecheck` is read from it); the consumer URL for
    /// static directories.
    fn registry_url(&self) -> Url;

    /// The invokers for this invocation. Errors: forbidden (`empty://` from the registry, code
    /// 4 "No provider available from registry ..."), destroyed.
    ///
    /// An invocation with the attachment `invocation.need.mock=true` gets the `mock://`
    /// providers instead (possibly none), as Dubbo's `MockInvokersSelector` does.
    fn list(&self, invocation: &Invocation) -> Result<Arc<InvokerSet>, RpcError>;

    /// False when destroyed or forbidden; otherwise true if any invoker is available.
    fn is_available(&self) -> bool;

    /// Completes when the directory has its first provider list, or after its bounded wait
    /// (the registry directory's `ready_timeout`); true when ready. Call it before the first
    /// `list` of a reference. Static directories are always ready.
    fn wait_ready(&self) -> BoxFuture<'_, bool> {
        Box::pin(std::future::ready(true))
    }

    /// Releases the directory and its invokers. Idempotent. Default: nothing to release.
    fn destroy(&self) {}
}

pub(crate) mod static_directory;
