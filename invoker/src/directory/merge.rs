//! The provider URL an invoker is referred with (`RegistryDirectory.toInvokers`): provider params
//! merged with the consumer params, configurators applied, `check=false`, `mock` removed.
//!
//! - 3.x ([`DubboCompat::V3`]): [`ServiceAddressUrl`] layering, flattened.
//! - 2.7 and 3.x plain URLs: [`merge_url`] (`ClusterUtils.mergeUrl`).
//! - 2.6: [`merge_url_26`] (the provider's `dubbo`/`group`/`version`/`methods` win).

use registry_core::{ServiceAddressUrl, Url};

use super::configurator::{configure_all, Configurator};
use super::options::DubboCompat;

/// Provider keys dropped by the merge (plus their `default.` forms).
const PROVIDER_DROPPED: [&str; 7] = [
    "threadname",
    "threadpool",
    "corethreads",
    "threads",
    "queues",
    "alive",
    "transporter",
];

/// Consumer keys always dropped by the merge.
const CONSUMER_DROPPED: [&str; 5] = ["release", "dubbo", "methods", "timestamp", "dubbo.tag"];

/// Keys whose provider and consumer values are concatenated `provider,consumer`.
const CONCATENATED: [&str; 2] = ["reference.filter", "invoker.listener"];

fn provider_dropped(k: &str) -> bool {
    let base = k.strip_prefix("default.").unwrap_or(k);
    PROVIDER_DROPPED.contains(&base)
}

/// `ClusterUtils.mergeUrl(provider, consumerParams)` (3.x `DefaultProviderURLMergeProcessor`).
///
/// `consumer` is the consumer's refer parameters (Dubbo's `queryMap`).
pub fn merge_url<'a>(
    provider: &Url,
    consumer: impl IntoIterator<Item = (&'a str, &'a str)>,
) -> Url {
    let local: Vec<(&str, &str)> = consumer.into_iter().collect();
    let mut map: Vec<(String, String)> = provider
        .params()
        .filter(|(k, _)| !provider_dropped(k))
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect();
    if !local.is_empty() {
        let has = |k: &str| provider.param(k).is_some();
        let copy: Vec<(&str, &str)> = local
            .iter()
            .copied()
            .filter(|(k, _)| !CONSUMER_DROPPED.contains(k))
            .filter(|(k, _)| !(matches!(*k, "group" | "version" | "generic") && has(k)))
            .collect();
        map.extend(copy.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())));
        if let Some(app) = provider.param("application") {
            map.push(("remote.application".to_owned(), app.to_owned()));
        }
        for key in CONCATENATED {
            let remote = provider.param(key).filter(|s| !s.is_empty());
            let mine = copy
                .iter()
                .find(|(k, _)| *k == key)
                .map(|(_, v)| *v)
                .filter(|s| !s.is_empty());
            if let (Some(r), Some(l)) = (remote, mine) {
                map.push((key.to_owned(), format!("{r},{l}")));
            }
        }
    }
    provider.with_replaced_params(map.iter().map(|(k, v)| (k.as_str(), v.as_str())))
}

/// Dubbo 2.6.12 `ClusterUtils.mergeUrl`: consumer params win except the provider's `dubbo`,
/// `version`, `group`, `methods` (and `default.` forms); `remote.timestamp` keeps the
/// provider's timestamp. (2.6 writes the filter/listener concatenation into the consumer
/// map, so the result keeps the consumer value.)
pub(crate) fn merge_url_26<'a>(
    provider: &'a Url,
    consumer: impl IntoIterator<Item = (&'a str, &'a str)>,
) -> Url {
    let mut map: Vec<(&str, &str)> = provider
        .params()
        .filter(|(k, _)| !provider_dropped(k))
        .collect();
    map.extend(consumer);
    for key in [
        "dubbo",
        "version",
        "group",
        "methods",
        "default.version",
        "default.group",
    ] {
        if let Some(v) = provider.param(key).filter(|s| !s.is_empty()) {
            map.push((key, v));
        }
    }
    if let Some(ts) = provider.param("timestamp").filter(|s| !s.is_empty()) {
        map.push(("remote.timestamp", ts));
    }
    provider.with_replaced_params(map)
}

fn refer_params(consumer: &Url) -> impl Iterator<Item = (&str, &str)> {
    consumer.params().filter(|(k, _)| *k != "category")
}

/// True for a `mock://` provider (served by the mock selector, not by the user's transport).
pub(crate) fn is_mock_provider(url: &Url) -> bool {
    url.protocol() == Some("mock")
}

/// The URL the directory refers a provider with (`RegistryDirectory.toInvokers`).
pub(crate) fn invoker_url(
    provider: &Url,
    consumer: &Url,
    configurators: &[Configurator],
    compat: DubboCompat,
) -> Url {
    let merged = match compat {
        DubboCompat::V3 => ServiceAddressUrl::new(provider.clone(), consumer.clone()).to_url(),
        // The refer parameters: the subscribe URL's `category` is not one of them.
        DubboCompat::V27 => merge_url(provider, refer_params(consumer)),
        DubboCompat::V26 => merge_url_26(provider, refer_params(consumer)),
    };
    let local_host = consumer.host().unwrap_or("");
    let mut u = configure_all(configurators, &merged, local_host, compat);
    let mock_keys: Vec<&str> = if is_mock_provider(provider) {
        Vec::new()
    } else {
        u.params()
            .map(|(k, _)| k)
            .filter(|k| *k == "mock" || k.ends_with(".mock"))
            .collect()
    };
    let fix_path = u.protocol() == Some("dubbo") && u.path().is_none_or(str::is_empty);
    if mock_keys.is_empty() && !fix_path && u.param("check") == Some("false") {
        return u;
    }
    if !mock_keys.is_empty() {
        u = u.without_params(&mock_keys);
    }
    if u.param("check") != Some("false") {
        u = u.with_param("check", "false");
    }
    if fix_path {
        if let Some(iface) = consumer.service_interface() {
            let p = iface.split_once('/').map_or(iface, |(_, rest)| rest);
            let p = p.split_once(':').map_or(p, |(head, _)| head);
            u = u.with_path(p);
        }
    }
    u
}

/// `enabled` of a referred URL: a non-empty `disabled` wins (`enabled = !disabled`), else
/// `enabled` (default true).
pub(crate) fn is_enabled(url: &Url) -> bool {
    match url.param("disabled").filter(|s| !s.is_empty()) {
        Some(d) => !d.eq_ignore_ascii_case("true"),
        None => url.param_bool("enabled", true),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn u(s: &str) -> Url {
        Url::parse(s).unwrap()
    }

    #[test]
    fn cluster_utils_merge() {
        let p = u("dubbo://username:password@localhost:55555/path?group=dubbo&version=1.2.3&dubbo=2.3.7&threadpool=fixed&threads=1&default.threads=1&application=provider&reference.filter=filter1,filter2&dubbo.tag=TTT");
        let c = [
            ("pid", "1234"),
            ("threadpool", "foo"),
            ("application", "consumer"),
            ("reference.filter", "filter3"),
            ("dubbo.tag", "UUU"),
            ("group", "g2"),
        ];
        let m = merge_url(&p, c);
        assert_eq!(m.param("threads"), None);
        assert_eq!(m.param("default.threads"), None);
        assert_eq!(m.param("threadpool"), Some("foo"));
        assert_eq!(m.param("application"), Some("consumer"));
        assert_eq!(m.param("remote.application"), Some("provider"));
        assert_eq!(m.param("reference.filter"), Some("filter1,filter2,filter3"));
        assert_eq!(m.param("dubbo.tag"), Some("TTT"));
        assert_eq!(m.param("group"), Some("dubbo"));
        assert_eq!(m.password(), Some("password"));
    }

    #[test]
    fn merge_26_provider_wins_keys() {
        let p = u("dubbo://1.1.1.1:1/S?version=1&methods=a,b&timestamp=5&timeout=1");
        let m = merge_url_26(&p, [("version", "2"), ("methods", "x"), ("timeout", "9")]);
        assert_eq!(m.param("version"), Some("1"));
        assert_eq!(m.param("methods"), Some("a,b"));
        assert_eq!(m.param("timeout"), Some("9"));
        assert_eq!(m.param("remote.timestamp"), Some("5"));
    }

    #[test]
    fn invoker_url_removes_mock_and_sets_check() {
        let p = u("dubbo://1.1.1.1:1/S?mock=force&getX.mock=fail&timeout=1");
        let c = u("consumer://2.2.2.2/S?interface=S&side=consumer");
        let r = invoker_url(&p, &c, &[], DubboCompat::V3);
        assert_eq!(r.param("mock"), None);
        assert_eq!(r.param("getX.mock"), None);
        assert_eq!(r.param("check"), Some("false"));
        let mp = u("mock://1.1.1.1/S?mock=return");
        assert_eq!(
            invoker_url(&mp, &c, &[], DubboCompat::V3).param("mock"),
            Some("return")
        );
    }

    #[test]
    fn dubbo_without_path_gets_interface() {
        let p = u("dubbo://1.1.1.1:9098?methods=getXXX");
        let c = u("consumer://2.2.2.2/g/com.Foo:1.0?interface=com.Foo");
        let r = invoker_url(&p, &c, &[], DubboCompat::V27);
        assert_eq!(r.path(), Some("com.Foo"));
    }

    #[test]
    fn enabled_rules() {
        assert!(is_enabled(&u("dubbo://h:1/S")));
        assert!(!is_enabled(&u("dubbo://h:1/S?enabled=false")));
        assert!(is_enabled(&u("dubbo://h:1/S?enabled=false&disabled=false")));
        assert!(!is_enabled(&u("dubbo://h:1/S?enabled=true&disabled=true")));
    }
}
