//! Routers: filters applied to the provider invokers when a directory snapshot is built
//! (never per call).
//!
//! A [`Router`] sees the provider invokers (their URLs are the merged provider URLs) and the
//! consumer URL, and returns the invokers to keep. With the 3.x shared invoker cache it runs
//! once per snapshot with `method = None`; with the 2.6 per-method cache it runs once per
//! cached method.
//!
//! Built in: the mock selector ([`mock`]), which the directory always applies: `mock://`
//! providers are kept apart and only returned to invocations carrying the attachment
//! `invocation.need.mock=true` (§9).

use std::fmt::Debug;
use std::sync::Arc;

use registry_core::Url;

use crate::rpc::SharedInvoker;

pub mod mock;

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
