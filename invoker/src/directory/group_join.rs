//! The default [`GroupJoiner`]: one cluster invoker per group over a [`StaticDirectory`]
//! of that group's providers (Dubbo's `cluster.join(new StaticDirectory(group), false)`, §7.2
//! step 5). The strategy comes from the providers' merged URL (`cluster`, default failover);
//! there is no mock wrapper (the reference's own cluster has it).

use std::sync::Arc;

use registry_core::Url;

use super::options::GroupJoiner;
use super::static_directory::StaticDirectory;
use crate::cluster::{ClusterInvoker, ClusterOptions};
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
        let dir = Arc::new(StaticDirectory::new(url, invokers));
        Arc::new(ClusterInvoker::new(dir, self.options.clone()))
    }
}
