//! The transport seam of the backend: [`Naming`] is either the Nacos 2.x/3.x **gRPC**
//! connection ([`GrpcNaming`], the default) or the **v1 HTTP** open API ([`NacosClient`] with
//! heartbeats and a polling [`ChangeSource`](crate::ChangeSource), `nacos.transport=http`). Names, metadata,
//! conversion and the subscription logic above it are the same for both.

use std::sync::Arc;

use parking_lot::Mutex;
use registry_core::Url;
use rustc_hash::FxHashMap;
use tracing::warn;

use crate::client::{InstanceSpec, NacosClient};
use crate::config::NacosConfig;
use crate::convert::InstanceCache;
use crate::error::NacosError;
use crate::grpc::GrpcNaming;
use crate::heartbeat::Heartbeat;

/// Identity of one registered instance: (service name as stored, ip, port).
type InstanceKey = (String, String, i32);

/// How registrations, lookups and name scans reach Nacos.
#[derive(Debug)]
pub enum Naming {
    /// gRPC: one connection, connection-bound instances, pushes.
    Grpc(GrpcNaming),
    /// v1 HTTP: requests with failover, heartbeats per instance.
    Http(HttpNaming),
}

/// The v1 HTTP side: the client and the heartbeat of every registered instance.
#[derive(Debug)]
pub struct HttpNaming {
    client: Arc<NacosClient>,
    beat_interval: Option<std::time::Duration>,
    /// Registered instances; ephemeral ones with their heartbeat.
    registered: Mutex<FxHashMap<InstanceKey, (InstanceSpec, Option<Heartbeat>)>>,
}

impl HttpNaming {
    fn new(client: Arc<NacosClient>, cfg: &NacosConfig) -> Self {
        HttpNaming {
            client,
            beat_interval: cfg.beat_interval,
            registered: Mutex::new(FxHashMap::default()),
        }
    }
}

/// `service/list` page size of the HTTP scan (Dubbo's ops lookup uses 100).
const HTTP_PAGE_SIZE: usize = 100;

impl Naming {
    /// The naming side for `cfg.transport`.
    pub(crate) fn new(cfg: &NacosConfig, client: &Arc<NacosClient>) -> Result<Self, NacosError> {
        Ok(match cfg.transport {
            crate::config::Transport::Grpc => Naming::Grpc(GrpcNaming::start(cfg, client.clone())?),
            crate::config::Transport::Http => Naming::Http(HttpNaming::new(client.clone(), cfg)),
        })
    }

    /// True when the server was reachable recently (gRPC: connected).
    pub fn is_available(&self) -> bool {
        match self {
            Naming::Grpc(g) => g.is_connected(),
            Naming::Http(h) => h.client.is_available(),
        }
    }

    /// The connection's health: the gRPC session's, or the HTTP client's.
    pub fn health(&self) -> tokio::sync::watch::Receiver<registry_core::RegistryHealth> {
        match self {
            Naming::Grpc(g) => g.health(),
            Naming::Http(h) => h.client.health(),
        }
    }

    /// Registers one instance.
    pub async fn register(&self, inst: &InstanceSpec) -> Result<(), NacosError> {
        match self {
            Naming::Grpc(g) => g.register(inst).await,
            Naming::Http(h) => {
                h.client.register_instance(inst).await?;
                let key = (inst.service.clone(), inst.ip.clone(), inst.port);
                // Persistent instances are not beaten: the server keeps them until deleted.
                let hb = inst
                    .ephemeral
                    .then(|| Heartbeat::start(h.client.clone(), inst.clone(), h.beat_interval));
                h.registered.lock().insert(key, (inst.clone(), hb));
                Ok(())
            }
        }
    }

    /// Deregisters one instance.
    pub async fn deregister(&self, inst: &InstanceSpec) -> Result<(), NacosError> {
        match self {
            Naming::Grpc(g) => g.deregister(inst).await,
            Naming::Http(h) => {
                let key = (inst.service.clone(), inst.ip.clone(), inst.port);
                drop(h.registered.lock().remove(&key));
                h.client
                    .deregister_instance(&inst.service, &inst.ip, inst.port, inst.ephemeral)
                    .await
            }
        }
    }

    /// Every service name of the group.
    pub async fn list_services(&self) -> Result<Vec<String>, NacosError> {
        match self {
            Naming::Grpc(g) => g.list_services().await,
            Naming::Http(h) => h.client.list_services(HTTP_PAGE_SIZE).await,
        }
    }

    /// The enabled instances of `service` as provider URLs (`None`: no list).
    pub async fn query(&self, service: &str) -> Result<Option<Arc<[Url]>>, NacosError> {
        match self {
            Naming::Grpc(g) => g.query(service).await,
            Naming::Http(h) => {
                let (server, body) = h.client.list_instances_raw(service).await?;
                let mut cache = InstanceCache::new();
                cache
                    .apply(service, &body)
                    .map_err(|e| NacosError::Malformed {
                        server,
                        op: "instance/list",
                        reason: e.to_string(),
                    })?;
                Ok(cache.urls().cloned())
            }
        }
    }

    /// One cheap request that checks reachability, credentials and namespace.
    pub async fn probe(&self) -> Result<(), NacosError> {
        match self {
            Naming::Grpc(g) => g.probe().await,
            Naming::Http(h) => h.client.probe().await,
        }
    }

    /// Deregisters everything this registry registered (best effort).
    pub async fn shutdown(&self) {
        match self {
            Naming::Grpc(g) => g.shutdown().await,
            Naming::Http(h) => {
                let all: Vec<(InstanceKey, (InstanceSpec, Option<Heartbeat>))> =
                    h.registered.lock().drain().collect();
                for ((service, ip, port), (spec, hb)) in all {
                    drop(hb);
                    if let Err(e) = h
                        .client
                        .deregister_instance(&service, &ip, port, spec.ephemeral)
                        .await
                    {
                        warn!(service = %service, ip = %ip, port, error = %e, "nacos deregistration on destroy failed; the instance expires when its beats stop");
                    }
                }
                h.client.close_health();
            }
        }
    }
}
