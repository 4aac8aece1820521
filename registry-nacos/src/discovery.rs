//! [`NacosServiceDiscovery`]: application-level instances in Nacos, as Dubbo 3's
//! `NacosServiceDiscovery` stores them, behind [`registry_core::InstanceDiscovery`].
//!
//! An application is the Nacos service named after it (no `providers:` prefix) in the
//! registry's group (`group`, default `DEFAULT_GROUP`) and namespace; each instance carries the
//! application-level metadata (`dubbo.metadata.revision`, ...). Interface-level
//! (`providers:interface:version:group`) and application-level services live side by side.
//!
//! Watching uses the same transport as the interface-level backend (gRPC pushes by default,
//! `nacos.transport=http` polls `instance/list`), with the same guarantees: one server
//! subscription per application however many watchers, a failing server never blanks a list,
//! a list is published only when it really changed. Every instance is delivered with its
//! `enabled` and `healthy` flags; the pipeline skips disabled ones and, like this crate's
//! interface-level subscriptions, ignores health.

use std::time::Duration;

use async_trait::async_trait;
use registry_core::instance::send_if_changed;
use registry_core::{InstanceDiscovery, InstanceList, InstanceWatch, ServiceInstance, Url};
use tokio::sync::watch;

use crate::backend::NacosBackend;
use crate::client::InstanceSpec;
use crate::error::NacosError;
use crate::name::to_nacos_name;

/// Application-level instances in Nacos (module docs). Dropping it stops every watch.
///
/// Registering an instance again with new metadata (a new revision) sends it again, as
/// Dubbo's `NacosNamingServiceWrapper.updateInstance` does; a Java Nacos server replaces the
/// metadata. rnacos 0.8 replaces it over the v1 HTTP API only: over gRPC it keeps the first
/// metadata of an `ip:port` (a deregistration does not help: it restores that metadata on the
/// next registration).
#[derive(Debug)]
pub struct NacosServiceDiscovery {
    backend: NacosBackend,
}

impl NacosServiceDiscovery {
    /// Over a backend of its own (its own connection).
    pub fn new(backend: NacosBackend) -> Self {
        NacosServiceDiscovery { backend }
    }

    /// Connects to the server of a `nacos://` registry URL (same parameters as the registry)
    /// and checks it with one request.
    ///
    /// Errors: a bad URL; the server unreachable or refusing the credentials.
    /// Must be called within a Tokio runtime.
    pub async fn connect(url: &Url) -> Result<Self, NacosError> {
        let backend = NacosBackend::new(url)?;
        backend.probe().await?;
        Ok(Self::new(backend))
    }

    /// The backend (configuration, transport counters).
    pub fn backend(&self) -> &NacosBackend {
        &self.backend
    }

    fn spec(&self, instance: &ServiceInstance) -> InstanceSpec {
        InstanceSpec {
            service: to_nacos_name(instance.app()).into_owned(),
            ip: instance.host().to_owned(),
            port: instance.port(),
            metadata: instance.metadata().clone(),
            ephemeral: true,
        }
    }
}

fn check_app(app: &str) -> Result<(), NacosError> {
    if app.is_empty() || app.contains("@@") {
        return Err(NacosError::InvalidConfig(format!(
            "invalid application name {app:?}"
        )));
    }
    Ok(())
}

#[async_trait]
impl InstanceDiscovery for NacosServiceDiscovery {
    fn url(&self) -> &Url {
        registry_core::RegistryBackend::url(&self.backend)
    }

    async fn watch(&self, app: &str) -> registry_core::Result<InstanceWatch> {
        check_app(app)?;
        let name = to_nacos_name(app).into_owned();
        let mut rx = self.backend.source().watch_instances(&name);
        // The first list (or the first error) within the request timeout.
        let wait = self.backend.config().request_timeout + Duration::from_millis(500);
        let first = tokio::time::timeout(wait, async {
            loop {
                {
                    let s = rx.borrow_and_update();
                    if let Some(list) = &s.instances {
                        return Ok(list.clone());
                    }
                    if let Some(e) = &s.error {
                        return Err(e.clone());
                    }
                }
                if rx.changed().await.is_err() {
                    return Err(NacosError::Destroyed);
                }
            }
        })
        .await
        .map_err(|_| registry_core::Error::Timeout(format!("first instance list of {app}")))??;
        let (tx, out) = watch::channel::<InstanceList>(first);
        tokio::spawn(async move {
            loop {
                tokio::select! {
                    _ = tx.closed() => return,
                    r = rx.changed() => if r.is_err() { return },
                }
                let list = rx.borrow_and_update().instances.clone();
                if let Some(list) = list {
                    send_if_changed(&tx, list);
                }
            }
        });
        Ok(InstanceWatch::new(out, None))
    }

    async fn applications(&self) -> registry_core::Result<Vec<String>> {
        let mut names: Vec<String> = self
            .backend
            .naming()
            .list_services()
            .await?
            .into_iter()
            .filter(|n| !n.contains(':'))
            .collect();
        names.sort();
        Ok(names)
    }

    async fn register(&self, instance: &ServiceInstance) -> registry_core::Result<()> {
        check_app(instance.app())?;
        self.backend
            .naming()
            .register(&self.spec(instance))
            .await
            .map_err(Into::into)
    }

    async fn unregister(&self, instance: &ServiceInstance) -> registry_core::Result<()> {
        self.backend
            .naming()
            .deregister(&self.spec(instance))
            .await
            .map_err(Into::into)
    }
}
