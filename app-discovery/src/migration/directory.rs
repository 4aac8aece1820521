//! [`MigrationDirectory`]: the [`Directory`] of a reference that may read both discovery levels
//! (Java's `MigrationInvoker`, one level below: the choice is made per `list`, so the cluster
//! above — mock, failover, load balance — is one and the same for both levels).
//!
//! Per call (`MigrationInvoker.invoke` / `decideInvoker`):
//! - `FORCE_INTERFACE` / `FORCE_APPLICATION`: that level's directory;
//! - `APPLICATION_FIRST`: with `proportion` < 100, a random `100 - proportion` % of calls go to
//!   the interface level; otherwise the preferred level, and when the preferred level is the
//!   application level but it has no available invoker, the interface level — for this call.
//!
//! The choice reads one `ArcSwap`: no lock, no allocation. The directories themselves are
//! created, compared and destroyed by [`super::MigrationReference`].

use std::sync::Arc;

use arc_swap::ArcSwap;
use futures::future::BoxFuture;
use invoker::directory::{Directory, RegistryDirectory};
use invoker::invoker_set::InvokerSet;
use invoker::rpc::{Invocation, RpcError, RpcErrorCode};
use registry_core::Url;

use super::rule::MigrationStep;

/// Which level a call used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    /// Interface level.
    Interface,
    /// Application level.
    Application,
}

/// The state calls read.
#[derive(Debug, Clone)]
pub(crate) struct Choice {
    pub step: MigrationStep,
    pub proportion: i32,
    /// The comparator's threshold (negative: unset).
    pub threshold: f32,
    /// In `APPLICATION_FIRST`: the comparator prefers the application level.
    pub prefer_app: bool,
    pub interface: Option<Arc<RegistryDirectory>>,
    pub app: Option<Arc<RegistryDirectory>>,
}

impl Choice {
    /// The level the next call goes to (module docs); `rand` is a number in `[0, 100)`.
    pub(crate) fn pick(&self, rand: f64) -> Option<(Level, &Arc<RegistryDirectory>)> {
        let iface = self.interface.as_ref().map(|d| (Level::Interface, d));
        let app = self.app.as_ref().map(|d| (Level::Application, d));
        match self.step {
            MigrationStep::ForceInterface => iface.or(app),
            MigrationStep::ForceApplication => app.or(iface),
            MigrationStep::ApplicationFirst => {
                if self.proportion < 100 && rand > f64::from(self.proportion) && iface.is_some() {
                    return iface;
                }
                if self.prefer_app {
                    match app {
                        Some((_, d)) if d.is_available() => app,
                        _ => iface.or(app),
                    }
                } else {
                    iface.or(app)
                }
            }
        }
    }
}

/// The directory of a migrating reference (module docs).
#[derive(Debug)]
pub struct MigrationDirectory {
    consumer: Url,
    registry: Url,
    pub(crate) choice: ArcSwap<Choice>,
}

impl MigrationDirectory {
    pub(crate) fn new(consumer: Url, registry: Url, choice: Choice) -> Self {
        MigrationDirectory {
            consumer,
            registry,
            choice: ArcSwap::from_pointee(choice),
        }
    }

    /// The step in effect.
    pub fn step(&self) -> MigrationStep {
        self.choice.load().step
    }

    /// The level the next call would use (without the `proportion` draw).
    pub fn current_level(&self) -> Option<Level> {
        self.choice.load().pick(0.0).map(|(l, _)| l)
    }

    /// True when the application level is preferred (`APPLICATION_FIRST`) or forced.
    pub fn prefers_application(&self) -> bool {
        let c = self.choice.load();
        match c.step {
            MigrationStep::ForceApplication => true,
            MigrationStep::ForceInterface => false,
            MigrationStep::ApplicationFirst => c.prefer_app,
        }
    }

    /// The interface-level directory, while there is one.
    pub fn interface_directory(&self) -> Option<Arc<RegistryDirectory>> {
        self.choice.load().interface.clone()
    }

    /// The application-level directory, while there is one.
    pub fn application_directory(&self) -> Option<Arc<RegistryDirectory>> {
        self.choice.load().app.clone()
    }

    /// The invokers of the level this call goes to, and that level.
    pub fn list_level(
        &self,
        invocation: &Invocation,
    ) -> Result<(Level, Arc<InvokerSet>), RpcError> {
        let c = self.choice.load();
        let r = fastrand::f64() * 100.0;
        match c.pick(r) {
            Some((level, d)) => Ok((level, d.list(invocation)?)),
            None => Err(RpcError::new(
                RpcErrorCode::Forbidden,
                format!(
                    "No provider available for service {}: no discovery level subscribed (step {})",
                    self.consumer.service_key().unwrap_or_default(),
                    c.step
                ),
            )),
        }
    }

    fn current(&self) -> Option<Arc<RegistryDirectory>> {
        let c = self.choice.load();
        c.pick(0.0).map(|(_, d)| d.clone())
    }
}

impl Directory for MigrationDirectory {
    fn consumer_url(&self) -> Url {
        match self.current() {
            Some(d) => d.consumer_url(),
            None => self.consumer.clone(),
        }
    }

    fn registry_url(&self) -> Url {
        self.registry.clone()
    }

    fn list(&self, invocation: &Invocation) -> Result<Arc<InvokerSet>, RpcError> {
        self.list_level(invocation).map(|(_, s)| s)
    }

    fn is_available(&self) -> bool {
        let c = self.choice.load();
        match c.pick(0.0) {
            Some((_, d)) if d.is_available() => true,
            _ => {
                c.interface.as_ref().is_some_and(|d| d.is_available())
                    || c.app.as_ref().is_some_and(|d| d.is_available())
            }
        }
    }

    fn wait_ready(&self) -> BoxFuture<'_, bool> {
        Box::pin(async move {
            let dirs: Vec<Arc<RegistryDirectory>> = {
                let c = self.choice.load();
                c.interface.iter().chain(c.app.iter()).cloned().collect()
            };
            let mut any = false;
            for d in dirs {
                any |= d.wait_ready().await;
            }
            any
        })
    }

    fn destroy(&self) {
        let c = self.choice.load();
        for d in c.interface.iter().chain(c.app.iter()) {
            d.destroy();
        }
    }
}
