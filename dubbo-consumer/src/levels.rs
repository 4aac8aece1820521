//! [`Levels`]: the discovery levels a registry URL serves (feature `app-discovery`).
//!
//! Interface level: `/dubbo/<interface>/providers`, Nacos `providers:...`. Application level:
//! mapping → instances → MetadataInfo → provider URLs ([`crate::app_registry`]). A Java 3.3
//! consumer in its default `APPLICATION_FIRST` migration step subscribes both; a
//! `registry-type=service` registry has only the application level.
//! [`crate::ReferenceBuilder::build_levels`] joins them as Dubbo's `MigrationInvoker` does.

use std::sync::Arc;

use app_discovery::ServiceDiscoveryRegistry;
use registry_core::{Registry, Url};

/// Which discovery levels to connect.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Level {
    /// Interface-level registrations only.
    Interface,
    /// Application-level registrations only.
    Application,
    /// Both (default), as a Java 3.3 consumer.
    #[default]
    All,
}

/// The registries of the levels asked for ([`crate::Connector::levels`]). Cheap to clone;
/// the clones share the connections.
#[derive(Debug, Clone)]
pub struct Levels {
    /// The registry URL (the application-level form normalized: `zookeeper://...&registry-type=service`).
    pub url: Url,
    /// The interface-level registry.
    pub interface: Option<Arc<dyn Registry>>,
    /// The application-level registry.
    pub app: Option<ServiceDiscoveryRegistry>,
}

impl Levels {
    /// Destroys both registries (every clone's).
    pub async fn destroy(self) {
        if let Some(r) = self.interface {
            r.destroy().await;
        }
        if let Some(r) = self.app {
            r.destroy().await;
        }
    }
}
