//! Between Dubbo URLs and Nacos instances (Dubbo's `NacosRegistry` `doRegister`, `doSubscribe`):
//! the metadata a registration stores, the provider URL an instance becomes, the consumer-side
//! match rule, and [`InstanceCache`], which turns successive `instance/list` replies into provider
//! lists while reusing the [`Url`] of every unchanged instance — or, for an application-level
//! service ([`InstanceCache::for_instances`]), into [`ServiceInstance`] lists.

use std::collections::BTreeMap;
use std::hash::BuildHasher;
use std::sync::Arc;

use registry_core::matching::PROVIDERS;
use registry_core::{InstanceList, ServiceInstance, Url};
use rustc_hash::FxHashMap;
use tracing::warn;

use crate::model::{RawHost, RawInstanceList};

/// The top level of an `instance/list` reply, `hosts` kept as raw text.
#[derive(serde::Deserialize)]
struct RawReply<'a> {
    #[serde(borrow, default)]
    hosts: Option<&'a serde_json::value::RawValue>,
}

/// Instance metadata of a registration: every URL param plus `category` (default providers),
/// `protocol` and `path` (each only when non-empty, like Dubbo's `URL.addParameter`).
pub fn instance_metadata(url: &Url) -> BTreeMap<String, String> {
    let mut m: BTreeMap<String, String> = url
        .params()
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect();
    m.insert("category".into(), url.category_or(PROVIDERS).to_owned());
    if let Some(p) = url.protocol().filter(|p| !p.is_empty()) {
        m.insert("protocol".into(), p.to_owned());
    }
    if let Some(p) = url.path().filter(|p| !p.is_empty()) {
        m.insert("path".into(), p.to_owned());
    }
    m
}

/// The provider URL of an instance: `metadata.protocol://ip:port/metadata.path?metadata`.
/// `None` when the metadata has no protocol (not a Dubbo registration).
pub fn provider_url(ip: &str, port: i32, metadata: &BTreeMap<String, String>) -> Option<Url> {
    let protocol = metadata.get("protocol").filter(|p| !p.is_empty())?;
    let mut b = Url::builder(protocol).host(ip).port(port);
    if let Some(path) = metadata.get("path").filter(|p| !p.is_empty()) {
        b = b.path(path);
    }
    Some(
        b.params(metadata.iter().map(|(k, v)| (k.as_str(), v.as_str())))
            .build(),
    )
}

/// `UrlUtils.isMatch(consumer, provider)` as Dubbo 3.x evaluates it on a
/// `DubboServiceAddressURL`: the interface and the classifier are read through the
/// consumer (so they always agree), `enabled` is the consumer's value when it has one, and
/// category, group and version are the provider's own.
pub fn is_match_provider(consumer: &Url, provider: &Url) -> bool {
    registry_core::matching::is_match_service_address(consumer, provider)
}

#[derive(Debug)]
struct Entry {
    port: i64,
    enabled: bool,
    healthy: bool,
    /// Keyed hash and length of the raw metadata JSON this entry was built from (the text
    /// itself is not kept: ~1 KB per instance).
    metadata: (u64, usize),
    url: Option<Url>,
    /// The instance (application-level mode only).
    instance: Option<ServiceInstance>,
    seen: u64,
}

/// The instances of one Nacos service, kept between polls.
///
/// [`InstanceCache::apply`] parses a reply and reports whether the enabled provider list
/// changed; an instance whose metadata text (compared by keyed hash) and `enabled` flag are
/// unchanged keeps its [`Url`] (no metadata parsing, no allocation), and a byte-identical
/// `hosts` array skips the per-host work altogether.
#[derive(Debug, Default)]
pub struct InstanceCache {
    by_ip: FxHashMap<Box<str>, Vec<Entry>>,
    generation: u64,
    len: usize,
    urls: Option<Arc<[Url]>>,
    /// Keyed hash and length of the last `hosts` array text: an identical array (the steady
    /// state; only `lastRefTime`/`checksum` change between replies) skips the per-host work.
    hosts_fingerprint: Option<(u64, usize)>,
    hasher: std::hash::RandomState,
    /// Application-level mode: instances instead of provider URLs.
    instances_mode: bool,
    instances: Option<InstanceList>,
}

impl InstanceCache {
    /// An empty cache (no list known yet).
    pub fn new() -> Self {
        InstanceCache::default()
    }

    /// An empty cache of an application-level service: replies become [`ServiceInstance`]s
    /// (every instance, with its `enabled`/`healthy` flags; the service name is the
    /// application), not provider URLs.
    pub fn for_instances() -> Self {
        InstanceCache {
            instances_mode: true,
            ..InstanceCache::default()
        }
    }

    /// True for an application-level cache.
    pub fn is_instances_mode(&self) -> bool {
        self.instances_mode
    }

    /// The instances of the last applied reply (sorted by ip, port; application-level mode),
    /// `None` before the first reply.
    pub fn instances(&self) -> Option<&InstanceList> {
        self.instances.as_ref()
    }

    /// True when the last applied reply lists nothing (no provider URL; application-level
    /// mode: no instance), or before the first reply.
    pub fn lists_nothing(&self) -> bool {
        if self.instances_mode {
            self.instances.as_ref().is_none_or(|l| l.is_empty())
        } else {
            self.urls.as_ref().is_none_or(|u| u.is_empty())
        }
    }

    /// The enabled provider URLs of the last applied reply (sorted by ip, port), `None`
    /// before the first reply.
    pub fn urls(&self) -> Option<&Arc<[Url]>> {
        self.urls.as_ref()
    }

    /// Applies an `instance/list` reply. Returns `Ok(true)` when the provider list changed
    /// (always for the first reply) and `Err` for a reply that is not an instance list (the
    /// cache is then unchanged).
    pub fn apply(&mut self, service: &str, body: &str) -> Result<bool, serde_json::Error> {
        let top: RawReply<'_> = serde_json::from_str(body)?;
        let hosts_text = top.hosts.map_or("[]", |h| h.get());
        let fingerprint = (
            self.hasher.hash_one(hosts_text.as_bytes()),
            hosts_text.len(),
        );
        let known = if self.instances_mode {
            self.instances.is_some()
        } else {
            self.urls.is_some()
        };
        if known && self.hosts_fingerprint == Some(fingerprint) {
            return Ok(false);
        }
        let hosts: Vec<RawHost<'_>> = serde_json::from_str(hosts_text)?;
        let list = RawInstanceList { hosts };
        self.hosts_fingerprint = Some(fingerprint);
        self.generation += 1;
        let generation = self.generation;
        let mut changed = !known;
        let mut seen = 0usize;
        for h in &list.hosts {
            seen += 1;
            changed |= self.upsert(service, h, generation);
        }
        if seen != self.len || self.by_ip.values().flatten().any(|e| e.seen != generation) {
            // Something disappeared (or a duplicate ip:port collapsed).
            self.by_ip.retain(|_, v| {
                v.retain(|e| e.seen == generation);
                !v.is_empty()
            });
            changed = true;
        }
        self.len = self.by_ip.values().map(Vec::len).sum();
        if changed && self.instances_mode {
            let mut list: Vec<ServiceInstance> = self
                .by_ip
                .values()
                .flatten()
                .filter_map(|e| e.instance.clone())
                .collect();
            registry_core::instance::sort_instances(&mut list);
            self.instances = Some(list.into());
        } else if changed {
            let mut urls: Vec<(&str, i64, &Url)> = Vec::with_capacity(self.len);
            for (ip, v) in &self.by_ip {
                for e in v.iter().filter(|e| e.enabled) {
                    if let Some(u) = &e.url {
                        urls.push((ip, e.port, u));
                    }
                }
            }
            urls.sort_unstable_by(|a, b| (a.0, a.1).cmp(&(b.0, b.1)));
            let new: Arc<[Url]> = urls.into_iter().map(|(_, _, u)| u.clone()).collect();
            self.urls = Some(new);
        }
        Ok(changed)
    }

    /// Inserts or refreshes one host; true when it is new or different.
    fn upsert(&mut self, service: &str, h: &RawHost<'_>, generation: u64) -> bool {
        let raw = h.metadata.map_or("{}", |m| m.get());
        let fingerprint = (self.hasher.hash_one(raw.as_bytes()), raw.len());
        let list = match self.by_ip.get_mut(h.ip.as_ref()) {
            Some(l) => l,
            None => self.by_ip.entry(Box::from(h.ip.as_ref())).or_default(),
        };
        if let Some(e) = list.iter_mut().find(|e| e.port == h.port) {
            if e.seen == generation {
                return false; // duplicate ip:port in one reply: first wins
            }
            e.seen = generation;
            if e.enabled == h.enabled && e.healthy == h.healthy && e.metadata == fingerprint {
                return false;
            }
            e.enabled = h.enabled;
            e.healthy = h.healthy;
            e.metadata = fingerprint;
            if self.instances_mode {
                e.instance = build_instance(service, h, raw);
            } else {
                e.url = build(service, &h.ip, h.port, raw);
            }
            return true;
        }
        let (url, instance) = if self.instances_mode {
            (None, build_instance(service, h, raw))
        } else {
            (build(service, &h.ip, h.port, raw), None)
        };
        list.push(Entry {
            port: h.port,
            enabled: h.enabled,
            healthy: h.healthy,
            metadata: fingerprint,
            url,
            instance,
            seen: generation,
        });
        true
    }
}

/// An application-level instance of `app` (lenient: non-string metadata values keep their JSON
/// text).
fn build_instance(app: &str, h: &RawHost<'_>, raw_metadata: &str) -> Option<ServiceInstance> {
    let Ok(port) = i32::try_from(h.port) else {
        warn!(app, ip = %h.ip, port = h.port, "nacos instance with an invalid port ignored");
        return None;
    };
    let metadata: BTreeMap<String, serde_json::Value> = match serde_json::from_str(raw_metadata) {
        Ok(m) => m,
        Err(e) => {
            warn!(app, ip = %h.ip, port, error = %e, "nacos instance with unreadable metadata ignored");
            return None;
        }
    };
    let metadata = metadata
        .into_iter()
        .filter_map(|(k, v)| match v {
            serde_json::Value::String(s) => Some((k, s)),
            serde_json::Value::Null => None,
            other => Some((k, other.to_string())),
        })
        .collect();
    Some(ServiceInstance::new(app, h.ip.as_ref(), port, metadata).with_status(h.enabled, h.healthy))
}

fn build(service: &str, ip: &str, port: i64, raw_metadata: &str) -> Option<Url> {
    let Ok(port) = i32::try_from(port) else {
        warn!(
            service,
            ip, port, "nacos instance with an invalid port ignored"
        );
        return None;
    };
    let metadata: BTreeMap<String, String> = match serde_json::from_str(raw_metadata) {
        Ok(m) => m,
        Err(e) => {
            warn!(service, ip, port, error = %e, "nacos instance with unreadable metadata ignored");
            return None;
        }
    };
    let url = provider_url(ip, port, &metadata);
    if url.is_none() {
        warn!(
            service,
            ip,
            port,
            "nacos instance without a `protocol` in its metadata ignored (not a Dubbo provider)"
        );
    }
    url
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reply(hosts: &[(&str, i64, bool, &str)]) -> String {
        let hs: Vec<String> = hosts
            .iter()
            .map(|(ip, port, en, md)| format!(r#"{{"ip":"{ip}","port":{port},"enabled":{en},"healthy":false,"metadata":{md}}}"#))
            .collect();
        format!(
            r#"{{"name":"x","lastRefTime":1,"hosts":[{}]}}"#,
            hs.join(",")
        )
    }

    const MD: &str = r#"{"protocol":"dubbo","path":"com.Foo","interface":"com.Foo","version":"1"}"#;

    #[test]
    fn metadata_of_a_registration() {
        let u = Url::parse("tri://10.0.0.1:50051/com.Foo?interface=com.Foo&side=provider").unwrap();
        let m = instance_metadata(&u);
        assert_eq!(m["category"], "providers");
        assert_eq!(m["protocol"], "tri");
        assert_eq!(m["path"], "com.Foo");
        assert_eq!(m["side"], "provider");
        let p = provider_url("10.0.0.1", 50051, &m).unwrap();
        assert_eq!(p.to_full_string(), "tri://10.0.0.1:50051/com.Foo?category=providers&interface=com.Foo&path=com.Foo&protocol=tri&side=provider");
    }

    #[test]
    fn cache_reuses_and_detects_changes() {
        let mut c = InstanceCache::new();
        assert!(c
            .apply(
                "s",
                &reply(&[("10.0.0.2", 1, true, MD), ("10.0.0.1", 1, true, MD)])
            )
            .unwrap());
        let first = c.urls().unwrap().clone();
        assert_eq!(first.len(), 2);
        assert_eq!(first[0].host(), Some("10.0.0.1"));
        // Same content, different order and a new lastRefTime: no change, same Url objects.
        assert!(!c
            .apply(
                "s",
                &reply(&[("10.0.0.1", 1, true, MD), ("10.0.0.2", 1, true, MD)])
            )
            .unwrap());
        assert!(Url::ptr_eq(&first[0], &c.urls().unwrap()[0]));
        // Changed metadata: a new Url for that instance only.
        let md2 = r#"{"protocol":"dubbo","path":"com.Foo","interface":"com.Foo","version":"1","weight":"5"}"#;
        assert!(c
            .apply(
                "s",
                &reply(&[("10.0.0.1", 1, true, MD), ("10.0.0.2", 1, true, md2)])
            )
            .unwrap());
        let urls = c.urls().unwrap().clone();
        assert!(Url::ptr_eq(&first[0], &urls[0]));
        assert_eq!(urls[1].param("weight"), Some("5"));
        // Disabled: gone from the list; healthy is ignored.
        assert!(c
            .apply(
                "s",
                &reply(&[("10.0.0.1", 1, false, MD), ("10.0.0.2", 1, true, MD)])
            )
            .unwrap());
        assert_eq!(c.urls().unwrap().len(), 1);
        // Removal.
        assert!(c.apply("s", &reply(&[("10.0.0.1", 1, false, MD)])).unwrap());
        assert_eq!(c.urls().unwrap().len(), 0);
        // Garbage keeps the last list.
        assert!(c.apply("s", "<html>oops").is_err());
        assert_eq!(c.urls().unwrap().len(), 0);
        // No protocol / bad metadata: ignored, not fatal.
        assert!(c
            .apply(
                "s",
                &reply(&[
                    ("10.0.0.3", 1, true, r#"{"a":"b"}"#),
                    ("10.0.0.4", 1, true, r#"{"a":1}"#),
                    ("10.0.0.5", 2, true, MD)
                ])
            )
            .unwrap());
        assert_eq!(c.urls().unwrap().len(), 1);
    }

    #[test]
    fn match_reads_interface_through_the_consumer() {
        let c = Url::parse("consumer://1.1.1.1/com.Foo?interface=com.Foo&version=1&category=providers,configurators,routers").unwrap();
        let p = Url::parse("dubbo://2.2.2.2:1/com.Other?interface=com.Other&version=1").unwrap();
        assert!(is_match_provider(&c, &p));
        let p2 = Url::parse("dubbo://2.2.2.2:1/com.Foo?version=2").unwrap();
        assert!(!is_match_provider(&c, &p2));
        let dis = Url::parse("dubbo://2.2.2.2:1/com.Foo?version=1&enabled=false").unwrap();
        assert!(!is_match_provider(&c, &dis));
        let any = c.with_param("enabled", "*");
        assert!(is_match_provider(&any, &dis));
        let g =
            Url::parse("consumer://1.1.1.1/com.Foo?interface=com.Foo&version=*&group=a,b").unwrap();
        assert!(is_match_provider(&g, &p.with_param("group", "b")));
        assert!(!is_match_provider(&g, &p));
    }
}
