//! [`InvokerSet`]: an immutable list of invokers plus what load balancers precompute about them
//! (weights, warm-up, identities), built once per directory snapshot, never per call.

use crate::rpc::SharedInvoker;

/// An immutable, shareable list of invokers with load-balancing metadata.
#[derive(Debug, Default)]
pub struct InvokerSet {
    invokers: Box<[SharedInvoker]>,
}

impl InvokerSet {
    /// Builds the set (and its metadata) from invokers in list order.
    pub fn new(invokers: Vec<SharedInvoker>) -> Self {
        InvokerSet { invokers: invokers.into_boxed_slice() }
    }

    /// The invokers in list order.
    pub fn invokers(&self) -> &[SharedInvoker] {
        &self.invokers
    }

    /// Number of invokers.
    pub fn len(&self) -> usize {
        self.invokers.len()
    }

    /// True when there is no invoker.
    pub fn is_empty(&self) -> bool {
        self.invokers.is_empty()
    }

    /// The invoker at `i`.
    pub fn get(&self, i: usize) -> Option<&SharedInvoker> {
        self.invokers.get(i)
    }
}
