//! Deprecated (`DeprecatedFilter`): logs an ERROR once per `Interface.method` when the invoker URL
//! marks the method `deprecated=true` (method level or service level).
//!
//! Message: `The service method <Iface>.<m>(<SimpleTypes>) is DEPRECATED! Declare from <url>`.
//!
//! **Divergence** (`deprecated-filter-marks-only-deprecated`): Dubbo marks the key as logged
//! on the first call even when the method is not deprecated, so a deprecation configured later
//! (for example by an override) is never reported. Here only a deprecated call marks the key.

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::sync::{Arc, OnceLock};

use async_trait::async_trait;
use parking_lot::RwLock;
use registry_core::Url;
use tracing::error;

use super::InvokerLayer;
use crate::rpc::{Invocation, Invoker, RpcResult, SharedInvoker};

/// Interface → methods already reported.
type Logged = RwLock<HashMap<String, HashSet<String>>>;

/// Receives every message the filter logs (tests, metrics).
pub type DeprecatedObserver = Arc<dyn Fn(&str) + Send + Sync>;

fn global_logged() -> Arc<Logged> {
    static GLOBAL: OnceLock<Arc<Logged>> = OnceLock::new();
    GLOBAL
        .get_or_init(|| Arc::new(RwLock::new(HashMap::new())))
        .clone()
}

/// The Deprecated filter layer.
#[derive(Clone)]
pub struct DeprecatedLayer {
    logged: Arc<Logged>,
    observer: Option<DeprecatedObserver>,
}

impl fmt::Debug for DeprecatedLayer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DeprecatedLayer")
            .field("observer", &self.observer.is_some())
            .finish()
    }
}

impl Default for DeprecatedLayer {
    fn default() -> Self {
        DeprecatedLayer::new()
    }
}

impl DeprecatedLayer {
    /// A layer sharing the process-wide "already logged" set (Dubbo's behaviour).
    pub fn new() -> Self {
        DeprecatedLayer {
            logged: global_logged(),
            observer: None,
        }
    }

    /// A layer with its own "already logged" set (tests, or one set per application).
    pub fn isolated() -> Self {
        DeprecatedLayer {
            logged: Arc::new(RwLock::new(HashMap::new())),
            observer: None,
        }
    }

    /// Also hands every logged message to `observer`.
    pub fn with_observer(mut self, observer: DeprecatedObserver) -> Self {
        self.observer = Some(observer);
        self
    }
}

impl InvokerLayer for DeprecatedLayer {
    fn layer(&self, inner: SharedInvoker) -> SharedInvoker {
        Arc::new(DeprecatedInvoker {
            inner,
            layer: self.clone(),
        })
    }
}

/// The log line for a deprecated method.
pub fn deprecated_message(interface: &str, invocation: &Invocation, url: &Url) -> String {
    let types: Vec<&str> = invocation
        .parameter_types()
        .iter()
        .map(|t| t.rsplit('.').next().unwrap_or(t))
        .collect();
    format!(
        "The service method {interface}.{}({}) is DEPRECATED! Declare from {url}",
        invocation.real_method(),
        types.join(", ")
    )
}

/// An invoker wrapped by [`DeprecatedLayer`].
#[derive(Debug)]
pub struct DeprecatedInvoker {
    inner: SharedInvoker,
    layer: DeprecatedLayer,
}

impl DeprecatedInvoker {
    fn check(&self, invocation: &Invocation) {
        let url = self.inner.url();
        let method = invocation.real_method();
        if !url.method_param_bool(method, "deprecated", false) {
            return;
        }
        let interface = url.service_interface().unwrap_or("");
        let seen = self
            .layer
            .logged
            .read()
            .get(interface)
            .is_some_and(|m| m.contains(method));
        if seen {
            return;
        }
        let first = self
            .layer
            .logged
            .write()
            .entry(interface.to_owned())
            .or_default()
            .insert(method.to_owned());
        if first {
            let msg = deprecated_message(interface, invocation, url);
            error!("{msg}");
            if let Some(o) = &self.layer.observer {
                o(&msg);
            }
        }
    }
}

#[async_trait]
impl Invoker for DeprecatedInvoker {
    crate::delegate_invoker!(inner);

    async fn invoke(&self, invocation: &Invocation) -> RpcResult {
        self.check(invocation);
        self.inner.invoke(invocation).await
    }
}
