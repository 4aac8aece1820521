//! The default [`GroupJoiner`]: one cluster invoker per group over a [`StaticDirectory`]
//! of that group's providers (Dubbo's `cluster.join(new StaticDirectory(group), false)` in
//! `RegistryDirectory#toMergeInvokerList`). The strategy comes from the providers' merged URL (`cluster`, default failover),
//! never `mergeable` (that is the reference's top level, even when a group-less provider's
//! merged URL carries the consumer's `group=*`); there is no mock wrapper (the reference's own
//! cluster has it).

use std::sync::Arc;

use registry_core::Url;

use super::{ClusterInvoker, ClusterKind, ClusterOptions};
use crate::directory::static_directory::StaticDirectory;
use crate::directory::GroupJoiner;
use crate::rpc::SharedInvoker;

/// Joins each group's invokers into a [`ClusterInvoker`].
#[derive(Debug, Clone, Default)]
pub struct ClusterGroupJoiner {
    options: ClusterOptions,
}

impl ClusterGroupJoiner {
    /// A joiner using `options` for every group cluster.
    pub fn new(options: ClusterOptions) -> Self {
        ClusterGroupJoiner { options }
    }
}

impl GroupJoiner for ClusterGroupJoiner {
    fn join(&self, group: &str, invokers: Vec<SharedInvoker>) -> SharedInvoker {
        // Like Dubbo's StaticDirectory: the URL of the first invoker (it carries the group).
        let url = invokers
            .first()
            .map(|i| i.url().clone())
            .unwrap_or_else(|| Url::builder("static").param("group", group).build());
        let mut options = self.options.clone();
        if options.kind.is_none() {
            options.kind = Some(ClusterKind::for_url(&url));
        }
        let dir = Arc::new(StaticDirectory::new(url, invokers));
        Arc::new(ClusterInvoker::new(dir, options))
    }
}
