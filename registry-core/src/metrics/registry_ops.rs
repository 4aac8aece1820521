//! [`RegistryOpMetrics`]: register and subscribe counts and times of one registry, under
//! Dubbo's names (`dubbo_registry_register_requests_*`, `dubbo_registry_subscribe_num_*`,
//! `dubbo_register_rt_milliseconds_*`, `dubbo_subscribe_rt_milliseconds_*`).

use std::time::Duration;

use metrics::{Gauge, Label};

use super::identity::identity;
use super::names::{self, label};
use super::rt::RtGauges;
use crate::url::Url;

/// The counts and times of one registry (labelled with the application and
/// `registry_cluster`).
#[derive(Debug)]
pub struct RegistryOpMetrics {
    register: [Gauge; 3],
    subscribe: [Gauge; 3],
    register_rt: RtGauges,
    subscribe_rt: RtGauges,
}

/// The `registry_cluster` label of a registry URL: its `registry-cluster` or `id` parameter,
/// else `default` (Java: the registry config's id).
pub fn registry_cluster(url: &Url) -> String {
    url.param("registry-cluster")
        .or_else(|| url.param("id"))
        .filter(|s| !s.is_empty())
        .unwrap_or("default")
        .to_owned()
}

impl RegistryOpMetrics {
    /// Registers the handles of the registry `url` (every series appears at once with 0).
    pub fn new(url: &Url) -> Self {
        let id = identity();
        let host = id.host_labels();
        let mut with_cluster = host.clone();
        with_cluster.push(Label::new(label::REGISTRY_CLUSTER, registry_cluster(url)));
        let g = |f: names::Family| metrics::gauge!(f.name, with_cluster.clone());
        RegistryOpMetrics {
            register: [
                g(names::REGISTER_REQUESTS),
                g(names::REGISTER_SUCCEED),
                g(names::REGISTER_FAILED),
            ],
            subscribe: [
                g(names::SUBSCRIBE_NUM),
                g(names::SUBSCRIBE_SUCCEED),
                g(names::SUBSCRIBE_FAILED),
            ],
            register_rt: RtGauges::new(&names::REGISTER_RT, &with_cluster),
            subscribe_rt: RtGauges::new(&names::SUBSCRIBE_RT, &host),
        }
    }

    /// One registration finished (`ok`: it succeeded at once).
    pub fn registered(&self, ok: bool, took: Duration) {
        count(&self.register, ok);
        self.register_rt.record(took);
    }

    /// One subscription finished (`ok`: its first lists came at once).
    pub fn subscribed(&self, ok: bool, took: Duration) {
        count(&self.subscribe, ok);
        self.subscribe_rt.record(took);
    }
}

fn count(g: &[Gauge; 3], ok: bool) {
    g[0].increment(1.0);
    g[if ok { 1 } else { 2 }].increment(1.0);
}
