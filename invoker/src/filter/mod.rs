//! Consumer filters (Dubbo's consumer `Filter` and `ClusterFilter` chain), composed like layers:
//! each [`InvokerLayer`] wraps an invoker in another invoker, so a chain is built once (when the
//! directory refers a provider) and a call just walks it.

use std::fmt::Debug;
use std::sync::Arc;

use crate::rpc::SharedInvoker;

pub mod active_limit;
pub mod consumer_context;
pub mod deprecated;
pub mod future;
pub mod trace_context;

/// Wraps an invoker with a filter.
pub trait InvokerLayer: Send + Sync + Debug {
    /// Returns `inner` wrapped by this filter.
    fn layer(&self, inner: SharedInvoker) -> SharedInvoker;
}

/// Applies `layers` so that the first one is the outermost (called first).
pub fn apply_layers(inner: SharedInvoker, layers: &[Arc<dyn InvokerLayer>]) -> SharedInvoker {
    layers.iter().rev().fold(inner, |acc, l| l.layer(acc))
}
