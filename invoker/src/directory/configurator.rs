//! Configurators (Dubbo's `AbstractConfigurator`): `override://` and `absent://` URLs from the
//! `configurators` category that rewrite provider URLs and the consumer (directory) URL.
//!
//! [`to_configurators`] turns a notified batch into the ordered list (sorted by host string,
//! then `priority` ascending; applied in that order so later ones win), and
//! [`configure_all`] applies the list to one URL.
//!
//! Version rules are selected with [`DubboCompat`]:
//! - the own `enabled=false` skip exists from 2.7 on;
//! - the service-key check exists from 3.2 on. A configurator without an interface path has
//!   no service key: Dubbo 3.2+ throws a `NullPointerException` there and drops the whole
//!   notification; we treat such a configurator as **not matching** (divergence
//!   `configurator-without-interface`);
//! - a parameterless configurator in a batch is skipped (2.7+) or clears the configurators
//!   collected so far in that batch (2.6).

use std::cmp::Ordering;
use std::sync::Arc;

use registry_core::matching::is_empty_url;
use registry_core::Url;

use super::condition_match::ConditionMatch;
use super::options::DubboCompat;

const ANYHOST: &str = "0.0.0.0";

/// Keys that are conditions, never values to merge (besides every `~key`).
const CONDITION_KEYS: [&str; 11] = [
    "category",
    "check",
    "dynamic",
    "enabled",
    "group",
    "version",
    "application",
    "side",
    "configVersion",
    "compatible_config",
    "interfaces",
];

/// How a configurator writes its parameters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConfiguratorKind {
    /// `override://`: `addParameters` (overwrite).
    Override,
    /// `absent://`: `addParametersIfAbsent`.
    Absent,
}

/// One parsed configurator URL.
#[derive(Debug, Clone)]
pub struct Configurator {
    url: Url,
    kind: ConfiguratorKind,
    priority: i64,
    /// The parameters to write: the URL's params minus condition keys and `~` keys.
    values: Box<[(Box<str>, Box<str>)]>,
    /// The v3.0 `match` condition of a config-centre rule (Java's URL attribute
    /// `MATCH_CONDITION`), checked when `configVersion` starts with `v3.0`.
    match_condition: Option<Arc<ConditionMatch>>,
}

impl Configurator {
    /// Parses a configurator URL; `None` for a protocol other than `override`/`absent`.
    pub fn from_url(url: &Url) -> Option<Configurator> {
        let kind = match url.protocol() {
            Some("override") => ConfiguratorKind::Override,
            Some("absent") => ConfiguratorKind::Absent,
            _ => return None,
        };
        let values = url
            .params()
            .filter(|(k, _)| !k.starts_with('~') && !CONDITION_KEYS.contains(k))
            .map(|(k, v)| (Box::from(k), Box::from(v)))
            .collect();
        Some(Configurator {
            url: url.clone(),
            kind,
            priority: url.param_i64("priority", 0),
            values,
            match_condition: None,
        })
    }

    /// This configurator with a v3.0 `match` condition attached.
    pub fn with_match(mut self, condition: Option<Arc<ConditionMatch>>) -> Configurator {
        self.match_condition = condition;
        self
    }

    /// The v3.0 `match` condition, if any.
    pub fn match_condition(&self) -> Option<&ConditionMatch> {
        self.match_condition.as_deref()
    }

    /// Whether this configurator can change a provider URL whose host is `provider_host`
    /// and port `provider_port`, for a consumer on `local_host`. False only when
    /// [`Configurator::configure`] is certainly the identity for every such URL (used to
    /// re-merge only the affected providers when rules change).
    pub fn may_affect(&self, provider_host: &str, provider_port: i32, local_host: &str) -> bool {
        let cfg = &self.url;
        let Some(h) = cfg.host() else { return false };
        if !cfg.has_param("configVersion") && cfg.port() != 0 && cfg.port() != provider_port {
            return false;
        }
        if h != ANYHOST && h != local_host && h != provider_host {
            return false;
        }
        if let Some(providers) = cfg.param("providerAddresses").filter(|s| !s.is_empty()) {
            let port = provider_port.to_string();
            return providers.split(',').any(|a| {
                if a.matches(':').count() > 1 {
                    return true; // IPv6: do not guess
                }
                let (ah, ap) = a.rsplit_once(':').unwrap_or((a, ""));
                ah == ANYHOST || (ah == provider_host && (ap.is_empty() || ap == port))
            });
        }
        true
    }

    /// [`Configurator::may_affect`] prepared for many providers: the configurator's
    /// params are read once, so the test per provider compares a host and a port.
    pub fn affect_filter(&self, local_host: &str) -> AffectFilter {
        let cfg = &self.url;
        let Some(h) = cfg.host() else {
            return AffectFilter::Never;
        };
        let port = (!cfg.has_param("configVersion") && cfg.port() != 0).then_some(cfg.port());
        let host = (h != ANYHOST && h != local_host).then(|| Box::from(h));
        let addresses = cfg
            .param("providerAddresses")
            .filter(|s| !s.is_empty())
            .map(|list| {
                let mut any = false;
                let mut out: Vec<AddressEntry> = Vec::new();
                for a in list.split(',') {
                    if a.matches(':').count() > 1 {
                        any = true; // IPv6: do not guess
                        continue;
                    }
                    let (ah, ap) = a.rsplit_once(':').unwrap_or((a, ""));
                    if ah == ANYHOST {
                        any = true;
                    } else {
                        out.push((Box::from(ah), Box::from(ap)));
                    }
                }
                (any, out)
            });
        AffectFilter::Some {
            port,
            host,
            addresses,
        }
    }

    /// The configurator URL.
    pub fn url(&self) -> &Url {
        &self.url
    }

    /// Override or absent.
    pub fn kind(&self) -> ConfiguratorKind {
        self.kind
    }

    /// `Configurator#compareTo`: host string, then `priority` ascending.
    pub fn apply_order(&self, other: &Configurator) -> Ordering {
        let (a, b) = (
            self.url.host().unwrap_or(""),
            other.url.host().unwrap_or(""),
        );
        a.cmp(b).then(self.priority.cmp(&other.priority))
    }

    /// `AbstractConfigurator#configure`: returns `target` rewritten, or a clone of it when
    /// this configurator does not apply. `local_host` is the consumer's own IP
    /// (`NetUtils.getLocalHost()` in Dubbo).
    pub fn configure(&self, target: &Url, local_host: &str, compat: DubboCompat) -> Url {
        let cfg = &self.url;
        let enabled_skip = compat >= DubboCompat::V27 && !cfg.param_bool("enabled", true);
        let (Some(_), Some(target_host)) = (cfg.host(), target.host()) else {
            return target.clone();
        };
        if enabled_skip {
            return target.clone();
        }
        if cfg.has_param("configVersion") {
            let (cur, side) = (target.param("side"), cfg.param("side"));
            if cur.is_some() && cur == side {
                match side {
                    Some("consumer") => return self.configure_if_match(local_host, target, compat),
                    Some("provider") => {
                        return self.configure_if_match(target_host, target, compat)
                    }
                    _ => {}
                }
            }
            return target.clone();
        }
        // Pre-2.7 rules (no configVersion).
        if cfg.port() != 0 {
            if target.port() == cfg.port() {
                return self.configure_if_match(target_host, target, compat);
            }
            return target.clone();
        }
        if target.param_or("side", "provider") == "consumer" {
            self.configure_if_match(local_host, target, compat)
        } else if target.param_or("side", "consumer") == "provider" {
            self.configure_if_match(ANYHOST, target, compat)
        } else {
            target.clone()
        }
    }

    fn configure_if_match(&self, host: &str, target: &Url, compat: DubboCompat) -> Url {
        let cfg_host = self.url.host().unwrap_or("");
        if cfg_host != ANYHOST && cfg_host != host {
            return target.clone();
        }
        if !self.conditions_match(target, compat) {
            return target.clone();
        }
        if let Some(m) = &self.match_condition {
            let v30 = self
                .url
                .param("configVersion")
                .is_some_and(|v| v.starts_with("v3.0"));
            if v30 && !m.is_match(host, target) {
                return target.clone();
            }
        }
        let values = self.values.iter().map(|(k, v)| (&**k, &**v));
        match self.kind {
            ConfiguratorKind::Override => target.with_params(values),
            ConfiguratorKind::Absent => target.with_params_if_absent(values),
        }
    }

    /// `isV27ConditionMatchOrUnset` plus the `~key`/`application`/`side` value conditions.
    fn conditions_match(&self, target: &Url, compat: DubboCompat) -> bool {
        let cfg = &self.url;
        if let Some(providers) = cfg.param("providerAddresses").filter(|s| !s.is_empty()) {
            let address = target.address();
            let port_any = format!("{ANYHOST}:{}", target.port());
            let hit = providers.split(',').any(|a| {
                Some(a) == address.as_deref()
                    || a == ANYHOST
                    || a == "0.0.0.0:*"
                    || a == port_any
                    || Some(a) == target.host()
            });
            if !hit {
                return false;
            }
        }
        let cfg_app = application(cfg);
        if let Some(app) = cfg_app {
            if app != "*" && Some(app) != application(target) {
                return false;
            }
        }
        if compat >= DubboCompat::V3 {
            // 3.2+: the service key must be `*` or equal. Without an interface path Dubbo
            // throws (NPE); we treat the configurator as not matching.
            match cfg.service_key() {
                None => return false,
                Some(k) if k == "*" => {}
                Some(k) => {
                    if Some(k) != target.service_key() {
                        return false;
                    }
                }
            }
        }
        for (k, v) in cfg.params() {
            let key = match k.strip_prefix('~') {
                Some(stripped) => stripped,
                None if k == "application" || k == "side" => k,
                None => continue,
            };
            if v != "*" && Some(v) != target.param(key) {
                return false;
            }
        }
        true
    }
}

/// `url.getApplication(url.getUsername())`: the `application` param, else the user name.
fn application(u: &Url) -> Option<&str> {
    u.param("application")
        .filter(|s| !s.is_empty())
        .or_else(|| u.username())
}

/// `Configurator.toConfigurators(batch)`: `None` for an empty batch (keep the current list);
/// otherwise the new, ordered list (an `empty://` URL clears it).
pub fn to_configurators(urls: &[Url], compat: DubboCompat) -> Option<Vec<Configurator>> {
    if urls.is_empty() {
        return None;
    }
    let mut out: Vec<Configurator> = Vec::with_capacity(urls.len());
    for u in urls {
        if is_empty_url(u) {
            out.clear();
            break;
        }
        let meaningful = u.params().any(|(k, _)| k != "anyhost");
        if !meaningful {
            if compat == DubboCompat::V26 {
                out.clear();
            }
            continue;
        }
        match Configurator::from_url(u) {
            Some(c) => out.push(c),
            None => tracing::warn!(url = %u, "ignoring configurator with an unknown protocol"),
        }
    }
    // Stable sort, like Collections.sort.
    out.sort_by(Configurator::apply_order);
    Some(out)
}

/// Applies every configurator in order (later ones win).
pub(crate) fn configure_all(
    configurators: &[Configurator],
    url: &Url,
    local_host: &str,
    compat: DubboCompat,
) -> Url {
    let mut cur = url.clone();
    for c in configurators {
        cur = c.configure(&cur, local_host, compat);
    }
    cur
}

/// One `providerAddresses` entry: host and port text (empty: any port).
pub(crate) type AddressEntry = (Box<str>, Box<str>);

/// [`Configurator::may_affect`] with the configurator's side read once
/// ([`Configurator::affect_filter`]).
#[derive(Debug, Clone)]
pub enum AffectFilter {
    /// No host: affects nothing.
    Never,
    /// The conditions on the provider.
    Some {
        /// The port the provider must have (a 2.6-style URL with a port).
        port: Option<i32>,
        /// The host the provider must have (neither `0.0.0.0` nor the consumer host).
        host: Option<Box<str>>,
        /// `providerAddresses`: whether some entry matches any provider, and the
        /// `(host, port text)` entries (empty port text: any port).
        addresses: Option<(bool, Vec<AddressEntry>)>,
    },
}

impl AffectFilter {
    /// The only provider hosts this filter can pass (`None`: any host may pass).
    pub fn hosts(&self) -> Option<Vec<&str>> {
        match self {
            AffectFilter::Never => Some(Vec::new()),
            AffectFilter::Some { host: Some(h), .. } => Some(vec![&**h]),
            AffectFilter::Some {
                host: None,
                addresses: Some((false, list)),
                ..
            } => Some(list.iter().map(|(h, _)| &**h).collect()),
            AffectFilter::Some { .. } => None,
        }
    }

    /// The answer of [`Configurator::may_affect`] for this provider.
    pub fn may_affect(&self, provider_host: &str, provider_port: i32) -> bool {
        let AffectFilter::Some {
            port,
            host,
            addresses,
        } = self
        else {
            return false;
        };
        if port.is_some_and(|p| p != provider_port) {
            return false;
        }
        if host.as_deref().is_some_and(|h| h != provider_host) {
            return false;
        }
        match addresses {
            None => true,
            Some((true, _)) => true,
            Some((false, list)) => list.iter().any(|(ah, ap)| {
                &**ah == provider_host && (ap.is_empty() || is_port_text(ap, provider_port))
            }),
        }
    }
}

/// `text` is exactly `port.to_string()`.
fn is_port_text(text: &str, port: i32) -> bool {
    text.parse::<i32>() == Ok(port)
        && !text.starts_with('+')
        && (text == "0" || !(text.starts_with('0') || text.starts_with("-0")))
}

#[cfg(test)]
mod tests {
    #[test]
    fn affect_filter_answers_like_may_affect() {
        let cfgs = [
            "override://0.0.0.0/S?providerAddresses=10.0.0.2:20880&configVersion=v3.0&timeout=1",
            "override://0.0.0.0/S?providerAddresses=10.0.0.2,10.0.0.3:1&timeout=1",
            "override://0.0.0.0/S?providerAddresses=0.0.0.0:5&timeout=1",
            "override://0.0.0.0/S?providerAddresses=[::1]:5&timeout=1",
            "override://10.0.0.2:20880/S?timeout=1",
            "override://10.0.0.2:20881/S?timeout=1&configVersion=v2.7",
            "override://10.9.9.9/S?timeout=1",
            "override://10.0.0.3/S?timeout=1&providerAddresses=10.0.0.3:020880",
            "override:///S?timeout=1",
        ];
        let providers = [
            ("10.0.0.2", 20880),
            ("10.0.0.2", 20881),
            ("10.0.0.3", 1),
            ("10.0.0.3", 20880),
            ("10.9.9.9", 20880),
            ("10.0.0.4", 5),
        ];
        for c in cfgs {
            let Some(cfg) = Configurator::from_url(&u(c)) else {
                continue;
            };
            let f = cfg.affect_filter("10.9.9.9");
            for (h, p) in providers {
                assert_eq!(
                    f.may_affect(h, p),
                    cfg.may_affect(h, p, "10.9.9.9"),
                    "{c} on {h}:{p}"
                );
                if let Some(hosts) = f.hosts() {
                    assert!(!f.may_affect(h, p) || hosts.contains(&h), "{c}: {h}");
                }
            }
        }
    }

    use super::*;

    fn u(s: &str) -> Url {
        Url::parse(s).unwrap()
    }

    fn apply(cfg: &str, target: &str, compat: DubboCompat) -> Url {
        let c = Configurator::from_url(&u(cfg)).unwrap();
        c.configure(&u(target), "10.9.9.9", compat)
    }

    #[test]
    fn username_is_the_application() {
        let cfg = "override://foo@0.0.0.0/com.foo.BarService?timeout=200";
        let r = apply(cfg, "dubbo://10.20.153.10:20880/com.foo.BarService?application=foo&timeout=1000&side=consumer", DubboCompat::V3);
        assert_eq!(r.param("timeout"), Some("200"));
        let r = apply(
            cfg,
            "dubbo://10.20.153.11:20880/com.foo.BarService?application=bar&side=consumer",
            DubboCompat::V3,
        );
        assert_eq!(r.param("timeout"), None);
    }

    #[test]
    fn absent_only_fills_missing_keys() {
        let cfg = "absent://0.0.0.0/S?timeout=200&retries=5";
        let r = apply(
            cfg,
            "dubbo://1.1.1.1:1/S?timeout=1000&side=consumer",
            DubboCompat::V3,
        );
        assert_eq!(r.param("timeout"), Some("1000"));
        assert_eq!(r.param("retries"), Some("5"));
    }

    #[test]
    fn own_enabled_false_is_skipped_from_27() {
        let cfg = "override://0.0.0.0/S?enabled=false&timeout=5";
        let t = "dubbo://10.0.0.1:20880/S?side=consumer";
        assert_eq!(apply(cfg, t, DubboCompat::V3).param("timeout"), None);
        // 2.6 applies it (and `enabled` is a condition key, so it is not written).
        let r = apply(cfg, t, DubboCompat::V26);
        assert_eq!(r.param("timeout"), Some("5"));
        assert_eq!(r.param("enabled"), None);
    }

    #[test]
    fn config_version_provider_side() {
        let cfg = "override://172.24.160.179:21880/com.foo.BarService?side=provider&configVersion=2.7&application=foo&weight=200";
        let t = "dubbo://172.24.160.179:21880/com.foo.BarService?application=foo&side=provider&weight=100";
        assert_eq!(apply(cfg, t, DubboCompat::V3).param("weight"), Some("200"));
        // Side mismatch: not applied.
        let t2 = "dubbo://172.24.160.179:21880/com.foo.BarService?application=foo&side=consumer&weight=100";
        assert_eq!(apply(cfg, t2, DubboCompat::V3).param("weight"), Some("100"));
        // Other host: not applied.
        let t3 = "dubbo://172.24.160.1:21880/com.foo.BarService?application=foo&side=provider&weight=100";
        assert_eq!(apply(cfg, t3, DubboCompat::V3).param("weight"), Some("100"));
    }

    #[test]
    fn provider_addresses_condition() {
        let cfg = "override://0.0.0.0/S?side=consumer&configVersion=2.7&providerAddresses=1.1.1.1:20880&timeout=9";
        let hit = "dubbo://1.1.1.1:20880/S?side=consumer";
        let miss = "dubbo://1.1.1.2:20880/S?side=consumer";
        assert_eq!(apply(cfg, hit, DubboCompat::V3).param("timeout"), Some("9"));
        assert_eq!(apply(cfg, miss, DubboCompat::V3).param("timeout"), None);
    }

    #[test]
    fn port_and_host_rules_without_config_version() {
        // A port: only that provider.
        let cfg = "override://10.20.30.140:9091/S?disabled=true";
        assert_eq!(
            apply(cfg, "dubbo://10.20.30.140:9091/S", DubboCompat::V3).param("disabled"),
            Some("true")
        );
        assert_eq!(
            apply(cfg, "dubbo://10.20.30.140:9092/S", DubboCompat::V3).param("disabled"),
            None
        );
        // No port, consumer target: host must be 0.0.0.0 or the consumer's own IP.
        let mine = "override://10.9.9.9/S?timeout=3";
        let other = "override://10.9.9.8/S?timeout=3";
        let t = "dubbo://1.1.1.1:1/S?side=consumer";
        assert_eq!(apply(mine, t, DubboCompat::V3).param("timeout"), Some("3"));
        assert_eq!(apply(other, t, DubboCompat::V3).param("timeout"), None);
        // No port, provider target: only 0.0.0.0.
        let tp = "dubbo://10.9.9.9:1/S?side=provider";
        assert_eq!(apply(mine, tp, DubboCompat::V3).param("timeout"), None);
        assert_eq!(
            apply("override://0.0.0.0/S?timeout=3", tp, DubboCompat::V3).param("timeout"),
            Some("3")
        );
    }

    #[test]
    fn tilde_and_side_conditions() {
        let cfg = "override://0.0.0.0/S?~loadbalance=random&timeout=3";
        let yes = "dubbo://1.1.1.1:1/S?side=consumer&loadbalance=random";
        let no = "dubbo://1.1.1.1:1/S?side=consumer&loadbalance=roundrobin";
        let r = apply(cfg, yes, DubboCompat::V3);
        assert_eq!(r.param("timeout"), Some("3"));
        assert_eq!(r.param("~loadbalance"), None);
        assert_eq!(apply(cfg, no, DubboCompat::V3).param("timeout"), None);
        let side = "override://0.0.0.0/S?side=provider&timeout=3";
        assert_eq!(apply(side, yes, DubboCompat::V3).param("timeout"), None);
    }

    #[test]
    fn service_key_check_and_pathless_divergence() {
        let t = "dubbo://1.1.1.1:1/S?side=consumer&interface=S";
        assert_eq!(
            apply("override://0.0.0.0/Other?timeout=3", t, DubboCompat::V3).param("timeout"),
            None
        );
        assert_eq!(
            apply("override://0.0.0.0/*?timeout=3", t, DubboCompat::V3).param("timeout"),
            Some("3")
        );
        // Path-less: not matching on 3.x (Dubbo 3.2+ would NPE), applied on 2.7.
        assert_eq!(
            apply("override://0.0.0.0?timeout=3", t, DubboCompat::V3).param("timeout"),
            None
        );
        assert_eq!(
            apply("override://0.0.0.0?timeout=3", t, DubboCompat::V27).param("timeout"),
            Some("3")
        );
    }

    #[test]
    fn order_by_host_then_priority() {
        let urls: Vec<Url> = [
            "override://10.20.30.141:9092/S?timeout=4",
            "override://0.0.0.0/S?timeout=3",
            "override://0.0.0.0/S?timeout=7&priority=1",
        ]
        .iter()
        .map(|s| u(s))
        .collect();
        let cs = to_configurators(&urls, DubboCompat::V3).unwrap();
        let order: Vec<String> = cs.iter().map(|c| c.url().to_string()).collect();
        assert_eq!(
            order,
            [
                "override://0.0.0.0/S?timeout=3",
                "override://0.0.0.0/S?priority=1&timeout=7",
                "override://10.20.30.141:9092/S?timeout=4"
            ]
        );
        let r = configure_all(
            &cs,
            &u("dubbo://10.20.30.141:9092/S?side=consumer"),
            "1.1.1.1",
            DubboCompat::V3,
        );
        assert_eq!(r.param("timeout"), Some("4"));
    }

    #[test]
    fn batch_rules() {
        assert!(to_configurators(&[], DubboCompat::V3).is_none());
        let cleared = to_configurators(
            &[
                u("override://0.0.0.0/S?timeout=1"),
                u("empty://0.0.0.0/S?category=configurators"),
            ],
            DubboCompat::V3,
        )
        .unwrap();
        assert!(cleared.is_empty());
        let batch = [
            u("override://0.0.0.0/S?timeout=3"),
            u("override://0.0.0.0/S?anyhost=true"),
        ];
        assert_eq!(to_configurators(&batch, DubboCompat::V3).unwrap().len(), 1);
        assert_eq!(to_configurators(&batch, DubboCompat::V26).unwrap().len(), 0);
        assert!(to_configurators(
            &[u("dubbo://0.0.0.0/S?timeout=3&category=configurators")],
            DubboCompat::V3
        )
        .unwrap()
        .is_empty());
    }
}
