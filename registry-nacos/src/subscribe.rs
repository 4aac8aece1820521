//! One subscription (Dubbo's `NacosRegistry.doSubscribe`): which Nacos service names it covers, and
//! the task that turns their instance lists into ordered, complete provider notifications.
//!
//! - Concrete consumer (`interface`, `version`, `group` without `*` or `,`): the name
//!   `providers:interface:version:group`, plus the legacy name when
//!   `nacos.subscribe.legacy-name=true`.
//! - Otherwise: every name of `service/list` (paged) with four segments that the subscription's
//!   [`NacosServiceName`] `is_compatible` with, re-scanned every `nacos.scan-interval` so new
//!   services show up (Dubbo scans once; see `docs/compatibility.md`).
//! - Protocol `admin`: all names, filtered like Dubbo's ops lookup, re-scanned the same way.
//! - Over gRPC to a server advertising `fuzzyWatch` (Nacos 3.x), both wildcard kinds use a
//!   fuzzy watch instead of scans: the server announces every service name that appears or
//!   goes, and the same filter picks the names (see `grpc::fuzzy`).
//!
//! The published providers list is the union of the enabled instances of every name (health is
//! ignored, as in Dubbo), as provider URLs built from the metadata, kept when they match the
//! consumer ([`is_match_provider`]), sorted by name then address, duplicates removed; "none" is
//! `empty://` (unless `enable-empty-protection=true`). A change is published **at once**, only
//! when the list really differs; there is no 5 s debounce like Dubbo's `RegistryNotifier`.

use std::sync::Arc;
use std::time::Duration;

use registry_core::matching::{
    empty_url, subscribed_categories, ANY, CONFIGURATORS, CONSUMERS, PROVIDERS, ROUTERS,
};
use registry_core::notify::with_empty_marker;
use registry_core::{Publisher, Url};
use rustc_hash::FxHashSet;
use tokio::sync::{watch, Notify};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;
use tracing::{debug, warn};

use crate::config::NacosConfig;
use crate::convert::is_match_provider;
use crate::error::NacosError;
use crate::grpc::FuzzyNames;
use crate::name::{
    is_conform_rules, legacy_subscribe_name, to_nacos_name, NacosServiceName, NAME_SEPARATOR,
};
use crate::source::{ChangeSource, ServiceSnapshot};
use crate::transport::Naming;

/// Which names a subscription covers.
#[derive(Debug, Clone)]
pub(crate) enum NamePlan {
    /// A concrete subscription: these names, never re-scanned.
    Fixed(Vec<String>),
    /// A wildcard/range subscription: names compatible with this pattern (in Nacos form).
    Pattern(NacosServiceName),
    /// `admin://`: all names, filtered like Dubbo's `getServiceNamesForOps`.
    Admin,
}

impl NamePlan {
    /// The plan of a consumer URL.
    pub(crate) fn of(consumer: &Url, cfg: &NacosConfig) -> Result<Self, NacosError> {
        if consumer.protocol() == Some("admin") {
            return Ok(NamePlan::Admin);
        }
        let name = NacosServiceName::from_subscribe_url(consumer)?;
        if !name.is_concrete() {
            return Ok(NamePlan::Pattern(name.to_nacos_form()));
        }
        let current = to_nacos_name(&name.value()?).into_owned();
        let mut names = vec![current];
        if cfg.subscribe_legacy_name {
            let legacy = to_nacos_name(&legacy_subscribe_name(consumer)).into_owned();
            if !names.contains(&legacy) {
                names.push(legacy);
            }
        }
        Ok(NamePlan::Fixed(names))
    }

    fn rescans(&self) -> bool {
        !matches!(self, NamePlan::Fixed(_))
    }

    /// The names to watch now (scanning `service/list` when needed).
    pub(crate) async fn resolve(
        &self,
        naming: &Naming,
        consumer: &Url,
    ) -> Result<Vec<String>, NacosError> {
        match self {
            NamePlan::Fixed(names) => Ok(names.clone()),
            _ => Ok(self.filter(consumer, naming.list_services().await?)),
        }
    }

    /// The names of `all` this plan covers (a wildcard plan's filter; a fixed plan keeps
    /// its own names).
    fn filter(&self, consumer: &Url, all: impl IntoIterator<Item = String>) -> Vec<String> {
        match self {
            NamePlan::Fixed(names) => names.clone(),
            NamePlan::Pattern(pattern) => all
                .into_iter()
                .filter(|n| is_conform_rules(n))
                .filter(|n| NacosServiceName::parse(n).is_ok_and(|c| pattern.is_compatible(&c)))
                .collect(),
            NamePlan::Admin => all
                .into_iter()
                .filter(|n| admin_accepts(consumer, n))
                .collect(),
        }
    }

    /// The service-name pattern of a fuzzy watch covering this plan (`None`: fixed names).
    /// `category:interface:*` when both are concrete, else `*`; the plan's own filter
    /// still decides.
    fn fuzzy_pattern(&self) -> Option<String> {
        match self {
            NamePlan::Fixed(_) => None,
            NamePlan::Pattern(p) => Some(match (&p.category, &p.interface) {
                (Some(c), Some(i)) if !c.contains([',', '*']) && !i.contains('*') => {
                    format!("{c}{NAME_SEPARATOR}{i}{NAME_SEPARATOR}*")
                }
                _ => "*".to_owned(),
            }),
            NamePlan::Admin => Some("*".to_owned()),
        }
    }
}

/// Dubbo's ops (admin) filter: four segments, a category of interest (all four for interface
/// `*`, else providers), and interface / version / group equal unless the consumer's is `*`.
fn admin_accepts(consumer: &Url, name: &str) -> bool {
    let seg: Vec<&str> = name.split(NAME_SEPARATOR).collect();
    let [category, iface, version, group] = seg[..] else {
        return false;
    };
    let target_iface = consumer.service_interface();
    let categories: &[&str] = if target_iface == Some(ANY) {
        &[PROVIDERS, CONSUMERS, ROUTERS, CONFIGURATORS]
    } else {
        &[PROVIDERS]
    };
    if !categories.contains(&category) {
        return false;
    }
    let encoded = target_iface.map(to_nacos_name);
    if target_iface != Some(ANY) && encoded.as_deref() != Some(iface) {
        return false;
    }
    let tv = consumer
        .param("version")
        .filter(|v| !v.is_empty())
        .unwrap_or("");
    if tv != ANY && tv != version {
        return false;
    }
    let tg = consumer
        .param("group")
        .filter(|v| !v.is_empty())
        .unwrap_or("");
    tg == ANY || tg == group
}

/// A watched name: its snapshot receiver and the task waking the subscription on changes.
struct Watched {
    name: String,
    rx: watch::Receiver<ServiceSnapshot>,
    forwarder: JoinHandle<()>,
}

impl Drop for Watched {
    fn drop(&mut self) {
        self.forwarder.abort();
    }
}

/// The state of one subscription.
pub(crate) struct SubscriptionTask {
    pub(crate) naming: Arc<Naming>,
    pub(crate) source: Arc<dyn ChangeSource>,
    pub(crate) publisher: Publisher,
    pub(crate) plan: NamePlan,
    pub(crate) scan_interval: Duration,
    pub(crate) empty_protection: bool,
    /// How long the first read of every name may take.
    pub(crate) initial_wait: Duration,
    pub(crate) cancel: CancellationToken,
}

impl SubscriptionTask {
    /// Resolves the names, waits for their first lists, publishes, then keeps publishing in a
    /// background task until the subscription is dropped or the registry destroyed.
    pub(crate) async fn start(self) -> Result<(), NacosError> {
        let consumer = self.publisher.consumer().clone();
        let mut fuzzy = self.fuzzy_watch(&consumer).await;
        let mut from_watch = None;
        if let Some(rx) = &mut fuzzy {
            let timed_out = tokio::time::timeout(self.initial_wait, rx.wait_for(|n| n.ready))
                .await
                .is_err();
            if timed_out {
                warn!(consumer = %consumer, "nacos fuzzy watch did not finish its initial sync in time; starting with the names known so far");
            }
            // A closed channel: the server refused the watch, so scan instead.
            if rx.has_changed().is_ok() {
                let known: Vec<String> = rx.borrow().names.iter().cloned().collect();
                from_watch = Some(self.plan.filter(&consumer, known));
            }
        }
        let names = match from_watch {
            Some(n) => n,
            None => {
                fuzzy = None;
                self.plan.resolve(&self.naming, &consumer).await?
            }
        };
        let wake = Arc::new(Notify::new());
        let mut watched = Vec::with_capacity(names.len());
        for n in names {
            watched.push(self.watch(n, &wake));
        }
        for w in &mut watched {
            let first = tokio::time::timeout(
                self.initial_wait,
                w.rx.wait_for(|s| s.urls.is_some() || s.error.is_some()),
            )
            .await;
            match first {
                Ok(Ok(s)) => {
                    if let (None, Some(e)) = (&s.urls, &s.error) {
                        return Err(e.clone());
                    }
                }
                Ok(Err(_)) => return Err(NacosError::Destroyed),
                Err(_) => {
                    return Err(NacosError::Timeout {
                        server: "nacos".to_owned(),
                        op: "instance/list",
                    });
                }
            }
        }
        publish(&self.publisher, &consumer, &watched, self.empty_protection);
        tokio::spawn(self.run(consumer, watched, wake, fuzzy));
        Ok(())
    }

    /// A fuzzy watch for a wildcard plan when the server can do it (gRPC to a Nacos 3.x
    /// server advertising `fuzzyWatch`); `None` means scanning the service list.
    async fn fuzzy_watch(&self, consumer: &Url) -> Option<watch::Receiver<FuzzyNames>> {
        let (Naming::Grpc(g), Some(pattern)) = (&*self.naming, self.plan.fuzzy_pattern()) else {
            return None;
        };
        match g.fuzzy_watch(&pattern).await {
            Ok(rx) => rx,
            Err(e) => {
                debug!(consumer = %consumer, error = %e, "nacos fuzzy watch unavailable; scanning the service list");
                None
            }
        }
    }

    fn watch(&self, name: String, wake: &Arc<Notify>) -> Watched {
        let rx = self.source.watch(&name);
        let mut frx = rx.clone();
        let wake = wake.clone();
        let forwarder = tokio::spawn(async move {
            while frx.changed().await.is_ok() {
                wake.notify_one();
            }
        });
        Watched {
            name,
            rx,
            forwarder,
        }
    }

    async fn run(
        self,
        consumer: Url,
        mut watched: Vec<Watched>,
        wake: Arc<Notify>,
        mut fuzzy: Option<watch::Receiver<FuzzyNames>>,
    ) {
        let closed = self.publisher.closed_token();
        let mut scan = tokio::time::interval(self.scan_interval);
        scan.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        scan.tick().await; // the first tick is immediate; the initial scan is done
        loop {
            // With a fuzzy watch the server announces new and deleted names: no scans.
            let scanning = self.plan.rescans() && fuzzy.is_none();
            let names_changed = async {
                match fuzzy.as_mut() {
                    Some(rx) => rx.changed().await.is_ok(),
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                _ = wake.notified() => {}
                alive = names_changed => {
                    if alive {
                        let known: Vec<String> = fuzzy
                            .as_ref()
                            .map(|rx| rx.borrow().names.iter().cloned().collect())
                            .unwrap_or_default();
                        let names = self.plan.filter(&consumer, known);
                        self.rewatch(&mut watched, names, &wake);
                    } else {
                        fuzzy = None;
                    }
                }
                _ = scan.tick(), if scanning => {
                    match self.plan.resolve(&self.naming, &consumer).await {
                        Ok(names) => self.rewatch(&mut watched, names, &wake),
                        Err(e) => warn!(consumer = %consumer, error = %e, "nacos service-name scan failed; keeping the current names"),
                    }
                }
                _ = closed.cancelled() => break,
                _ = self.cancel.cancelled() => break,
            }
            publish(&self.publisher, &consumer, &watched, self.empty_protection);
        }
        debug!(consumer = %consumer, "nacos subscription ended");
    }

    fn rewatch(&self, watched: &mut Vec<Watched>, names: Vec<String>, wake: &Arc<Notify>) {
        let wanted: FxHashSet<&str> = names.iter().map(String::as_str).collect();
        watched.retain(|w| wanted.contains(w.name.as_str()));
        for n in names {
            if !watched.iter().any(|w| w.name == n) {
                debug!(name = %n, "nacos subscription picked up a new service name");
                watched.push(self.watch(n, wake));
            }
        }
    }
}

/// Builds the lists of every subscribed category from the current snapshots and publishes the
/// ones that changed.
fn publish(publisher: &Publisher, consumer: &Url, watched: &[Watched], empty_protection: bool) {
    let mut all: Vec<Url> = Vec::new();
    let mut seen: FxHashSet<Url> = FxHashSet::default();
    for w in watched {
        let snap = w.rx.borrow();
        if let Some(urls) = &snap.urls {
            for u in urls.iter().filter(|u| is_match_provider(consumer, u)) {
                if watched.len() == 1 || seen.insert(u.clone()) {
                    all.push(u.clone());
                }
            }
        }
    }
    let mut categories = subscribed_categories(consumer);
    for u in &all {
        let c = u.category_or(PROVIDERS);
        if !categories.iter().any(|x| x == c) {
            categories.push(c.to_owned());
        }
    }
    for cat in &categories {
        let urls: Vec<Url> = if categories.len() == 1 {
            std::mem::take(&mut all)
        } else {
            all.iter()
                .filter(|u| u.category_or(PROVIDERS) == cat)
                .cloned()
                .collect()
        };
        if let Some(list) = with_empty_marker(consumer, cat, urls, empty_protection) {
            publisher.publish_if_changed(cat, list.into());
        }
    }
}

/// The URLs of a one-off lookup (no `empty://`).
pub(crate) fn lookup_filter(consumer: &Url, lists: Vec<Arc<[Url]>>) -> Vec<Url> {
    let mut seen: FxHashSet<Url> = FxHashSet::default();
    let mut out = Vec::new();
    for l in &lists {
        for u in l.iter().filter(|u| is_match_provider(consumer, u)) {
            if seen.insert(u.clone()) {
                out.push(u.clone());
            }
        }
    }
    out
}

/// The `empty://` URL of a subscription with no providers (exposed for tools).
pub fn empty_providers(consumer: &Url) -> Url {
    empty_url(consumer, PROVIDERS)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(legacy: bool) -> NacosConfig {
        let u = Url::parse(&format!(
            "nacos://127.0.0.1:8848?nacos.subscribe.legacy-name={legacy}"
        ))
        .unwrap();
        NacosConfig::from_url(&u).unwrap()
    }

    #[test]
    fn plans() {
        let c = Url::parse("consumer://1.1.1.1/a.B$C?interface=a.B$C&version=1.0&group=g&category=providers,configurators,routers").unwrap();
        match NamePlan::of(&c, &cfg(false)).unwrap() {
            NamePlan::Fixed(n) => assert_eq!(n, ["providers:a.B___C:1.0:g"]),
            p => panic!("{p:?}"),
        }
        match NamePlan::of(&c, &cfg(true)).unwrap() {
            // The legacy name equals the current one when version and group are set.
            NamePlan::Fixed(n) => assert_eq!(n, ["providers:a.B___C:1.0:g"]),
            p => panic!("{p:?}"),
        }
        let plain = Url::parse("consumer://1.1.1.1/a.B?interface=a.B&category=providers").unwrap();
        match NamePlan::of(&plain, &cfg(true)).unwrap() {
            NamePlan::Fixed(n) => assert_eq!(n, ["providers:a.B::", "providers:a.B"]),
            p => panic!("{p:?}"),
        }
        let wild = Url::parse("consumer://1.1.1.1/a.B?interface=a.B&version=*&category=providers")
            .unwrap();
        assert!(matches!(
            NamePlan::of(&wild, &cfg(false)).unwrap(),
            NamePlan::Pattern(_)
        ));
    }

    #[test]
    fn admin_filter() {
        let all = Url::parse("admin://1.1.1.1/*?interface=*&version=*&group=*").unwrap();
        assert!(admin_accepts(&all, "consumers:a.B:1:g"));
        assert!(!admin_accepts(&all, "providers:a.B:1"));
        let one = Url::parse("admin://1.1.1.1/a.B?interface=a.B&version=1").unwrap();
        assert!(admin_accepts(&one, "providers:a.B:1:"));
        assert!(!admin_accepts(&one, "providers:a.B:1:g"));
        assert!(!admin_accepts(&one, "consumers:a.B:1:"));
    }
}
