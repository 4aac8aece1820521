//! Provider URLs from instance × [`ServiceInfo`] (Java: `InstanceAddressURL`, materialised).
//!
//! Java hands the directory one `InstanceAddressURL` per (instance, protocol) whose
//! parameters are looked up on the fly: the call's interface/group/version, then the
//! ServiceInfo's `params`, then the instance metadata. Here each (instance, ServiceInfo) becomes
//! one ordinary provider URL, so the directory, configurators, routers and load balancers work
//! on it unchanged:
//!
//! `<ServiceInfo protocol>://<instance host>:<port>/<ServiceInfo path>?<instance metadata>&
//! <ServiceInfo params>&interface=<name>[&group=..][&version=..]`
//!
//! - port: the ServiceInfo's `port` when > 0; else the `dubbo.endpoints` port of its protocol
//!   when that differs from the instance port; else the instance port
//!   (`ServiceInstancesChangedListener.getServiceUrlsCache`);
//! - ServiceInfo parameters win over instance metadata; `interface`, `group` and `version` are
//!   the ServiceInfo's (absent ones removed);
//! - the instance metadata that describes the application rather than the service is left out
//!   ([`EXCLUDED_INSTANCE_KEYS`]: the revision, the MetadataService parameters, the endpoint
//!   list), so a provider that only moved to a new revision keeps exactly the same URL — and
//!   its invoker and connection (Java keeps the invoker when the instance, which ignores the
//!   revision, and the ServiceInfo are unchanged).
//!
//! [`UrlCache`] keeps the URL built for each (instance, ServiceInfo): rebuilding after a change
//! reuses the very same `Url` object for every unchanged pair, so the directory recognises it
//! by pointer and the cost is proportional to what changed.

use std::collections::BTreeMap;
use std::sync::Arc;

use registry_core::instance::{ENDPOINTS_KEY, METADATA_SERVICE_URL_PARAMS_KEY, REVISION_KEY};
use registry_core::{ServiceInstance, Url};
use rustc_hash::FxHashMap;

use crate::metadata_info::ServiceInfo;
use crate::metadata_service::{endpoints, Endpoint};

/// Instance metadata keys not copied into provider URLs.
pub const EXCLUDED_INSTANCE_KEYS: [&str; 3] =
    [REVISION_KEY, METADATA_SERVICE_URL_PARAMS_KEY, ENDPOINTS_KEY];

/// The port a ServiceInfo is served on by `instance` (module docs).
pub fn service_port(instance: &ServiceInstance, service: &ServiceInfo, eps: &[Endpoint]) -> i32 {
    if service.port > 0 {
        return service.port;
    }
    let proto = service.protocol.as_deref().unwrap_or("");
    match eps.iter().find(|e| e.protocol == proto) {
        Some(e) if e.port > 0 && e.port != instance.port() => e.port,
        _ => instance.port(),
    }
}

/// The provider URL of `service` on `instance` (module docs). `eps` are the instance's
/// [`endpoints`].
pub fn provider_url(instance: &ServiceInstance, service: &ServiceInfo, eps: &[Endpoint]) -> Url {
    let mut params: BTreeMap<&str, &str> = instance
        .metadata()
        .iter()
        .filter(|(k, _)| !EXCLUDED_INSTANCE_KEYS.contains(&k.as_str()))
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    for (k, v) in &service.params {
        params.insert(k, v);
    }
    params.insert("interface", &service.name);
    match service.group.as_deref() {
        Some(g) => params.insert("group", g),
        None => params.remove("group"),
    };
    match service.version.as_deref() {
        Some(v) => params.insert("version", v),
        None => params.remove("version"),
    };
    let protocol = service.protocol.as_deref().unwrap_or("dubbo");
    let path = if service.path.is_empty() {
        &service.name
    } else {
        &service.path
    };
    Url::builder(protocol)
        .host(instance.host())
        .port(service_port(instance, service, eps))
        .path(path)
        .params(params)
        .build()
}

/// The URLs built so far, by instance address and ServiceInfo (module docs).
#[derive(Debug, Default)]
pub struct UrlCache {
    by_address: FxHashMap<String, Built>,
}

#[derive(Debug)]
struct Built {
    instance: ServiceInstance,
    endpoints: Vec<Endpoint>,
    urls: Vec<(Arc<ServiceInfo>, Url, u64)>,
    seen: u64,
}

/// The URLs of one instance during one rebuild (see [`UrlCache::instance`]).
#[derive(Debug)]
pub struct InstanceUrls<'a> {
    built: &'a mut Built,
    pass: u64,
    next: usize,
}

impl InstanceUrls<'_> {
    /// The URL of `service` on this instance: the cached object when the ServiceInfo is the
    /// same (by pointer or by value), else a new one.
    pub fn url(&mut self, service: &Arc<ServiceInfo>) -> Url {
        let pass = self.pass;
        let b = &mut *self.built;
        // Services come in the same order rebuild after rebuild: try the next slot first.
        let hit = match b.urls.get(self.next) {
            Some((s, _, _)) if Arc::ptr_eq(s, service) => Some(self.next),
            _ => b
                .urls
                .iter()
                .position(|(s, _, _)| Arc::ptr_eq(s, service) || **s == **service),
        };
        if let Some(i) = hit {
            self.next = i + 1;
            let e = &mut b.urls[i];
            e.0 = service.clone();
            e.2 = pass;
            return e.1.clone();
        }
        let u = provider_url(&b.instance, service, &b.endpoints);
        b.urls.push((service.clone(), u.clone(), pass));
        self.next = b.urls.len();
        u
    }
}

impl Drop for InstanceUrls<'_> {
    fn drop(&mut self) {
        let pass = self.pass;
        self.built.urls.retain(|e| e.2 == pass);
    }
}

impl UrlCache {
    /// An empty cache.
    pub fn new() -> Self {
        Self::default()
    }

    /// Number of instances cached.
    pub fn len(&self) -> usize {
        self.by_address.len()
    }

    /// True when nothing is cached.
    pub fn is_empty(&self) -> bool {
        self.by_address.is_empty()
    }

    /// The URLs of `instance` for rebuild `pass`: its cached URLs are kept when the instance
    /// is unchanged with the revision ignored, dropped otherwise. Ask for every service of the
    /// instance on the returned value; services not asked for in this pass are forgotten.
    pub fn instance(&mut self, instance: &ServiceInstance, pass: u64) -> InstanceUrls<'_> {
        let b = self
            .by_address
            .entry(instance.address())
            .or_insert_with(|| Built {
                instance: instance.clone(),
                endpoints: endpoints(instance),
                urls: Vec::new(),
                seen: pass,
            });
        if b.instance != *instance {
            b.instance = instance.clone();
            b.endpoints = endpoints(instance);
            b.urls.clear();
        } else if !ServiceInstance::ptr_eq(&b.instance, instance) {
            // Same instance, another revision: keep the URLs, follow the newest object.
            b.instance = instance.clone();
        }
        b.seen = pass;
        InstanceUrls {
            built: b,
            pass,
            next: 0,
        }
    }

    /// Forgets the instances not used by rebuild `pass`.
    pub fn retain_pass(&mut self, pass: u64) {
        self.by_address.retain(|_, b| b.seen == pass);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use registry_core::instance::STORAGE_TYPE_KEY;

    fn inst(rev: &str, extra: &[(&str, &str)]) -> ServiceInstance {
        let mut m: BTreeMap<String, String> = extra
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        m.insert(REVISION_KEY.into(), rev.into());
        m.insert(STORAGE_TYPE_KEY.into(), "local".into());
        m.insert(
            ENDPOINTS_KEY.into(),
            r#"[{"port":20880,"protocol":"dubbo"},{"port":50051,"protocol":"tri"}]"#.into(),
        );
        m.insert("dubbo.tag".into(), "gray".into());
        ServiceInstance::new("shop", "10.0.0.7", 20880, m)
    }

    fn svc(protocol: &str, port: i32) -> ServiceInfo {
        let mut s = ServiceInfo::new("com.foo.Greeter", protocol);
        s.version = Some("1.0.0".into());
        s.port = port;
        s.params.insert("side".into(), "provider".into());
        s.params.insert("dubbo.tag".into(), "blue".into());
        s.params.insert("group".into(), "stale".into());
        s.params.insert("methods".into(), "greet".into());
        s
    }

    #[test]
    fn url_shape_and_port_rules() {
        let i = inst("r1", &[]);
        let eps = endpoints(&i);
        let u = provider_url(&i, &svc("dubbo", -1), &eps);
        assert_eq!(u.to_string(), "dubbo://10.0.0.7:20880/com.foo.Greeter?dubbo.metadata.storage-type=local&dubbo.tag=blue&interface=com.foo.Greeter&methods=greet&side=provider&version=1.0.0");
        assert_eq!(
            provider_url(&i, &svc("tri", -1), &eps).port(),
            50051,
            "endpoint of the protocol"
        );
        assert_eq!(
            provider_url(&i, &svc("tri", 7), &eps).port(),
            7,
            "the service's own port"
        );
        assert_eq!(
            provider_url(&i, &svc("rest", -1), &eps).port(),
            20880,
            "else the instance port"
        );
        let mut p = svc("dubbo", -1);
        p.path = "greeter/v1".into();
        assert_eq!(provider_url(&i, &p, &eps).path(), Some("greeter/v1"));
        let plain = provider_url(&inst("r1", &[("k", "inst")]), &svc("dubbo", -1), &eps);
        assert_eq!(
            plain.param("k"),
            Some("inst"),
            "instance metadata is visible"
        );
        assert_eq!(plain.param(REVISION_KEY), None);
    }

    #[test]
    fn a_new_revision_keeps_the_url_object() {
        let mut c = UrlCache::new();
        let s = Arc::new(svc("dubbo", -1));
        let a = c.instance(&inst("r1", &[]), 1).url(&s);
        let same = Arc::new(svc("dubbo", -1));
        let b = c.instance(&inst("r2", &[]), 2).url(&same);
        assert!(Url::ptr_eq(&a, &b), "revision-only change keeps the URL");
        let mut changed = svc("dubbo", -1);
        changed.params.insert("timeout".into(), "9".into());
        let d = c.instance(&inst("r3", &[]), 3).url(&Arc::new(changed));
        assert!(!Url::ptr_eq(&a, &d));
        let e = c.instance(&inst("r3", &[("k", "v")]), 4).url(&s);
        assert!(!Url::ptr_eq(&a, &e), "changed instance metadata rebuilds");
        c.retain_pass(4);
        assert_eq!(c.len(), 1);
        c.retain_pass(5);
        assert!(c.is_empty());
    }
}
