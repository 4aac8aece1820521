//! Directories: the list of invokers a cluster chooses from.
//!
//! [`Directory::list`] returns an immutable [`InvokerSet`] snapshot: no lock is taken and
//! nothing is allocated in steady state (an `Arc` clone).

use std::fmt::Debug;
use std::sync::Arc;

use registry_core::Url;

use crate::invoker_set::InvokerSet;
use crate::rpc::{Invocation, RpcError};

/// A source of invokers for one consumer reference.
pub trait Directory: Send + Sync + Debug {
    /// The consumer URL with configurators applied (Dubbo's directory URL).
    fn consumer_url(&self) -> Url;

    /// The registry URL (`cluster.availablecheck` is read from it); the consumer URL for
    /// static directories.
    fn registry_url(&self) -> Url;

    /// The invokers for this invocation. Errors: forbidden (`empty://` from the registry, code
    /// 4 "No provider available from registry ..."), destroyed.
    fn list(&self, invocation: &Invocation) -> Result<Arc<InvokerSet>, RpcError>;

    /// False when destroyed or forbidden; otherwise true if any invoker is available.
    fn is_available(&self) -> bool;
}

pub mod static_directory;
