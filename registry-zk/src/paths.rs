//! Dubbo's ZooKeeper layout (`ZookeeperRegistry.toCategoryPath`, `toUrlPath`) and child-name
//! helpers as pure functions.
//!
//! ```text
//! <root>/<URL.encode(interface)>/<category>/<URL.encode(url.to_full_string())>
//! ```
//! The root comes from the registry URL's `group` parameter (default `dubbo`, a leading `/`
//! added); for interface `*` the service path is the root itself.

use std::borrow::Cow;

use registry_core::codec::encode;
use registry_core::matching::{subscribed_categories, ANY, PROVIDERS};
use registry_core::Url;

/// Default root group.
pub const DEFAULT_ROOT: &str = "dubbo";

/// The root path of a registry URL: `/` + `group` (default `dubbo`), never doubled.
pub fn root(registry: &Url) -> String {
    let group = registry.param_or("group", DEFAULT_ROOT);
    if group.starts_with('/') {
        group.to_owned()
    } else {
        format!("/{group}")
    }
}

/// `root` + `/` unless the root is `/` (Dubbo's `toRootDir`).
pub fn root_dir(root: &str) -> Cow<'_, str> {
    if root == "/" {
        Cow::Borrowed(root)
    } else {
        Cow::Owned(format!("{root}/"))
    }
}

/// The service path of `url`: root dir + `URL.encode(service interface)`; the root itself for
/// interface `*`.
pub fn service_path(root: &str, url: &Url) -> String {
    let iface = url.service_interface().unwrap_or("");
    if iface == ANY {
        return root.to_owned();
    }
    format!("{}{}", root_dir(root), encode(iface))
}

/// Service path + `/` + `url`'s category (default `providers`).
pub fn category_path(root: &str, url: &Url) -> String {
    join(&service_path(root, url), url.category_or(PROVIDERS))
}

/// The category paths a subscription of `consumer` watches: one per subscribed category
/// (`*` = providers, consumers, routers, configurators; else `COMMA_SPLIT` of `category`).
pub fn categories_paths(root: &str, consumer: &Url) -> Vec<String> {
    let service = service_path(root, consumer);
    subscribed_categories(consumer)
        .iter()
        .map(|c| join(&service, c))
        .collect()
}

/// The paths a subscription of `consumer` watches: the category paths, or for interface `*`
/// the root itself (its children are the service names).
pub fn subscribe_watch_paths(root: &str, consumer: &Url) -> Vec<String> {
    if consumer.service_interface() == Some(ANY) {
        return vec![root.to_owned()];
    }
    categories_paths(root, consumer)
}

/// The znode of a registration: category path + `/` + `URL.encode(url.to_full_string())`.
pub fn url_path(root: &str, url: &Url) -> String {
    join(&category_path(root, url), &encode(&url.to_full_string()))
}

/// `parent/child` without doubling a `/` after the root `/`.
pub fn join(parent: &str, child: &str) -> String {
    if parent.ends_with('/') {
        format!("{parent}{child}")
    } else {
        format!("{parent}/{child}")
    }
}

/// The last path segment (a category path's category).
pub fn last_segment(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

/// If `event_path` is a direct child of `parent`, the child's name.
pub fn direct_child<'a>(parent: &str, event_path: &'a str) -> Option<&'a str> {
    let rest = event_path.strip_prefix(parent)?;
    let rest = if parent.ends_with('/') {
        rest
    } else {
        rest.strip_prefix('/')?
    };
    (!rest.is_empty() && !rest.contains('/')).then_some(rest)
}

/// Dubbo 3.3's `CacheableFailbackRegistry.stripOffVariableKeys` on a raw (encoded) child name:
/// removes the first `timestamp%3D…` up to and including the next `%26` (or to the end), then
/// the same for `pid%3D`, then a trailing `%26` and a trailing `%3F`.
///
/// The match is a substring test, so `remote.timestamp%3D…` is hit too, as in Dubbo. This crate
/// reproduces the function exactly but does **not** apply it to published URLs: the provider's
/// `timestamp` is kept so warm-up works (divergence `zk-keep-timestamp`).
pub fn strip_variable_keys(raw: &str) -> Cow<'_, str> {
    let mut s = Cow::Borrowed(raw);
    for key in ["timestamp%3D", "pid%3D"] {
        if let Some(start) = s.find(key) {
            let after = start + key.len();
            let end = match s[after..].find("%26") {
                Some(i) => after + i + 3,
                None => s.len(),
            };
            let mut owned = s.into_owned();
            owned.replace_range(start..end, "");
            s = Cow::Owned(owned);
        }
    }
    for suffix in ["%26", "%3F"] {
        if s.ends_with(suffix) {
            let keep = s.len() - suffix.len();
            s = Cow::Owned(s[..keep].to_owned());
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn u(s: &str) -> Url {
        Url::parse(s).unwrap()
    }

    #[test]
    fn layout() {
        let reg = u("zookeeper://127.0.0.1:2181");
        let r = root(&reg);
        assert_eq!(r, "/dubbo");
        let p = u("dubbo://10.0.0.1:20880/com.foo.Bar$Inner?side=provider");
        assert_eq!(service_path(&r, &p), "/dubbo/com.foo.Bar%24Inner");
        assert_eq!(
            url_path(&r, &p),
            "/dubbo/com.foo.Bar%24Inner/providers/dubbo%3A%2F%2F10.0.0.1%3A20880%2Fcom.foo.Bar%24Inner%3Fside%3Dprovider"
        );
        let slash = root(&u("zookeeper://h:1?group=/"));
        assert_eq!(service_path(&slash, &p), "/com.foo.Bar%24Inner");
        let any = u("consumer://1.1.1.1/*?category=providers,routers");
        assert_eq!(
            categories_paths(&r, &any),
            vec!["/dubbo/providers", "/dubbo/routers"]
        );
        assert_eq!(root(&u("zookeeper://h:1?group=g1")), "/g1");
    }

    #[test]
    fn children() {
        assert_eq!(direct_child("/a/b", "/a/b/c"), Some("c"));
        assert_eq!(direct_child("/a/b", "/a/b/c/d"), None);
        assert_eq!(direct_child("/a/b", "/a/bc"), None);
        assert_eq!(direct_child("/", "/x"), Some("x"));
        assert_eq!(last_segment("/dubbo/S/routers"), "routers");
    }

    #[test]
    fn strip() {
        assert_eq!(
            strip_variable_keys("d%3A%2F%2Fh%3A1%2FS%3Fa%3D1%26pid%3D1%26timestamp%3D2%26v%3D1"),
            "d%3A%2F%2Fh%3A1%2FS%3Fa%3D1%26v%3D1"
        );
        assert_eq!(
            strip_variable_keys("d%3A%2F%2Fh%3A1%2FS%3Ftimestamp%3D1"),
            "d%3A%2F%2Fh%3A1%2FS"
        );
        assert_eq!(
            strip_variable_keys("d%3A%2F%2Fh%3A1%2FS%3Fa%3D1%26timestamp%3D1"),
            "d%3A%2F%2Fh%3A1%2FS%3Fa%3D1"
        );
    }
}
