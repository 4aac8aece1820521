//! Routers: which providers an invocation may go to (Dubbo's router chain, routers.md R1).
//!
//! Dubbo 3.3's fixed chain is: mock selector (`mock.rs`), tag ([`RuleKey::AppTag`]), service
//! condition ([`RuleKey::ServiceCondition`]), provider-application condition and
//! consumer-application condition ([`RuleKey::AppCondition`]). Rules come from the config
//! centre as YAML; the directory takes them through
//! [`crate::directory::RegistryDirectory::set_router_rule`], which refuses a bad rule with a
//! [`RouterError`] and keeps the previous one.
//!
//! The pluggable [`Router`] trait filters at snapshot build time (legacy `routers` category
//! URLs through a [`RouterFactory`], and user routers in the options).

use std::fmt::Debug;
use std::sync::Arc;

use registry_core::Url;

use crate::rpc::SharedInvoker;

mod bits;
pub(crate) mod chain;
pub mod compiled;
pub(crate) mod condition;
pub mod condition_rule;
mod error;
pub(crate) mod fields;
pub(crate) mod mock;
pub mod rule_doc;
mod rule_key;
pub(crate) mod rule_regex;
pub(crate) mod sample;
pub(crate) mod tag;
pub mod target;
pub(crate) mod url_rule;

pub use error::RouterError;
pub use rule_key::{service_rule_key, RuleKey, CONDITION_SUFFIX, RULE_GROUP, TAG_SUFFIX};

/// Filters provider invokers for a consumer.
pub trait Router: Send + Sync + Debug {
    /// The invokers to keep, in the order to keep them. `method` is the cached method name
    /// (2.6 per-method cache) or `None` (all methods).
    fn route(
        &self,
        invokers: Vec<SharedInvoker>,
        consumer: &Url,
        method: Option<&str>,
    ) -> Vec<SharedInvoker>;
}

/// Turns a `routers` category URL (`route://`, `condition://`, ...) into a [`Router`].
pub trait RouterFactory: Send + Sync + Debug {
    /// The router for `url`, or `None` when this factory does not understand it.
    fn router(&self, url: &Url) -> Option<Arc<dyn Router>>;
}

/// Applies `routers` in order.
pub fn route_all(
    routers: &[Arc<dyn Router>],
    mut invokers: Vec<SharedInvoker>,
    consumer: &Url,
    method: Option<&str>,
) -> Vec<SharedInvoker> {
    for r in routers {
        invokers = r.route(invokers, consumer, method);
    }
    invokers
}
