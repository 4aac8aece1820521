//! `UrlUtils` matching and classification: which provider URLs a consumer URL accepts.

use crate::url::{comma_split, non_empty, Known, Url};

/// Wildcard value.
pub const ANY: &str = "*";
/// The providers category.
pub const PROVIDERS: &str = "providers";
/// The consumers category.
pub const CONSUMERS: &str = "consumers";
/// The routers category.
pub const ROUTERS: &str = "routers";
/// The configurators category.
pub const CONFIGURATORS: &str = "configurators";
/// Not a Dubbo category: the addresses (`protocol://host:port`) where a registry expects
/// providers soon, published only to subscriptions whose URL says [`PRECONNECT_PARAM`]`=true`
/// (the application-level registry: new instances whose MetadataInfo is being fetched), so
/// that the subscriber can open their connections meanwhile. `empty://` when none.
pub const PRECONNECT: &str = "preconnect";
/// The subscription parameter asking for the [`PRECONNECT`] category.
pub const PRECONNECT_PARAM: &str = "preconnect";

/// `UrlUtils.isMatch(consumerUrl, providerUrl)` (3.x / 2.7).
pub fn is_match(consumer: &Url, provider: &Url) -> bool {
    let ci = consumer.service_interface();
    let pi = provider.service_interface();
    if !(ci == Some(ANY) || pi == Some(ANY) || ci == pi) {
        return false;
    }
    if !category_enabled_group_version_match(
        consumer,
        provider,
        non_empty(provider.known(Known::Enabled)),
    ) {
        return false;
    }
    let cc = non_empty(consumer.known(Known::Classifier)).unwrap_or(ANY);
    cc == ANY || cc == non_empty(provider.known(Known::Classifier)).unwrap_or(ANY)
}

/// `UrlUtils.isMatch(consumer, provider)` as Dubbo 3.x evaluates it when the provider is a
/// `ServiceAddressURL` (ZooKeeper and Nacos provider URLs): the interface and the
/// classifier are read through the consumer (so they always agree: a provider without
/// `interface`/`path` still matches), `enabled` is the consumer's value when it has one, and
/// category, group and version are the provider's own. So a provider with no parameters at all
/// matches only a consumer without group and version (or with `*`).
pub fn is_match_service_address(consumer: &Url, provider: &Url) -> bool {
    category_enabled_group_version_match(
        consumer,
        provider,
        non_empty(consumer.known(Known::Enabled))
            .or_else(|| non_empty(provider.known(Known::Enabled))),
    )
}

/// The checks both `isMatch` forms share, in Dubbo's order: the provider's category against the
/// consumer's categories, `enabled` (the value each form reads, absent = enabled; a consumer
/// with `enabled=*` accepts a disabled provider), the group (`*`, equal, or one of the
/// consumer's comma-separated groups) and the version (`*` or equal).
fn category_enabled_group_version_match(
    consumer: &Url,
    provider: &Url,
    enabled: Option<&str>,
) -> bool {
    if !is_match_category(
        provider.category_or(PROVIDERS),
        consumer.category_or(PROVIDERS),
    ) {
        return false;
    }
    let enabled = enabled.is_none_or(|v| v.eq_ignore_ascii_case("true"));
    if !enabled && consumer.known(Known::Enabled) != Some(ANY) {
        return false;
    }
    let cg = consumer.known(Known::Group);
    let pg = provider.known(Known::Group);
    let group_ok = cg == Some(ANY)
        || cg == pg
        || match (cg, non_empty(pg)) {
            (Some(cg), Some(pg)) => comma_split(cg).contains(&pg),
            _ => false,
        };
    if !group_ok {
        return false;
    }
    let cv = consumer.known(Known::Version);
    cv == Some(ANY) || cv == provider.known(Known::Version)
}

/// `UrlUtils.isMatchCategory(category, categories)`: note the substring tests.
pub fn is_match_category(category: &str, categories: &str) -> bool {
    if categories.is_empty() {
        return category == PROVIDERS;
    }
    if categories.contains(ANY) {
        return true;
    }
    if categories.contains('-') {
        // Exclusion mode: `"-" + category` must not occur.
        return !contains_dash_prefixed(categories, category);
    }
    categories.contains(category)
}

fn contains_dash_prefixed(hay: &str, cat: &str) -> bool {
    hay.match_indices('-')
        .any(|(i, _)| hay[i + 1..].starts_with(cat))
}

/// `UrlUtils.isMatchGlobPattern(pattern, value, url)`: `$key` patterns read the URL's raw
/// param; only the last `*` is special.
pub fn is_match_glob_pattern(pattern: &str, value: Option<&str>, param_url: Option<&Url>) -> bool {
    let resolved;
    let pattern = match (param_url, pattern.strip_prefix('$')) {
        (Some(u), Some(key)) => {
            resolved = u.param(key).unwrap_or("");
            resolved
        }
        _ => pattern,
    };
    glob_match(pattern, value.unwrap_or(""))
}

/// The glob of `UrlUtils.isMatchGlobPattern` once `$` references are resolved: `*` matches
/// anything; otherwise only the last `*` is a wildcard (suffix, prefix or both, which may
/// overlap: `ab*ba` matches `aba`); both empty match, one empty does not. The one glob of the
/// project: `isMatch`, condition routers and configurators all use it.
pub fn glob_match(pattern: &str, value: &str) -> bool {
    if pattern == ANY {
        return true;
    }
    if pattern.is_empty() && value.is_empty() {
        return true;
    }
    if pattern.is_empty() || value.is_empty() {
        return false;
    }
    match pattern.rfind('*') {
        None => value == pattern,
        Some(i) if i == pattern.len() - 1 => value.starts_with(&pattern[..i]),
        Some(0) => value.ends_with(&pattern[1..]),
        Some(i) => value.starts_with(&pattern[..i]) && value.ends_with(&pattern[i + 1..]),
    }
}

/// `UrlUtils.isItemMatch(pattern, value)`: an empty pattern matches only an absent value.
pub fn is_item_match(pattern: Option<&str>, value: Option<&str>) -> bool {
    match non_empty(pattern) {
        None => value.is_none(),
        Some(p) => p == ANY || Some(p) == value,
    }
}

/// `UrlUtils.isServiceKeyMatch(pattern, value)`: equal interfaces, group and version by
/// [`is_item_match`]. A pattern without an `interface` param matches nothing (Java throws a
/// `NullPointerException`: divergence `service-key-match-without-interface`).
pub fn is_service_key_match(pattern: &Url, value: &Url) -> bool {
    pattern
        .param("interface")
        .is_some_and(|i| value.param("interface") == Some(i))
        && is_item_match(pattern.param("group"), value.param("group"))
        && is_item_match(pattern.param("version"), value.param("version"))
}

/// `UrlUtils.isConfigurator`: protocol `override` or category `configurators`.
pub fn is_configurator(url: &Url) -> bool {
    url.protocol() == Some("override") || url.category_or("") == CONFIGURATORS
}

/// `UrlUtils.isRoute`: protocol `route` or category `routers`.
pub fn is_route(url: &Url) -> bool {
    url.protocol() == Some("route") || url.category_or("") == ROUTERS
}

/// `UrlUtils.isProvider`: not override/route and category (default providers) is providers.
pub fn is_provider(url: &Url) -> bool {
    !matches!(url.protocol(), Some("override") | Some("route"))
        && url.category_or(PROVIDERS) == PROVIDERS
}

/// `UrlUtils.isRegistry`.
pub fn is_registry(url: &Url) -> bool {
    let p = url.protocol_str();
    p == "registry"
        || p.eq_ignore_ascii_case("service-discovery-registry")
        || p.ends_with("-registry-protocol")
}

/// `UrlUtils.isServiceDiscoveryURL`.
pub fn is_service_discovery_url(url: &Url) -> bool {
    url.protocol_str()
        .eq_ignore_ascii_case("service-discovery-registry")
        || url.param("registry-type") == Some("service")
}

/// `UrlUtils.isConsumer`: protocol `consumer` (any case) or port 0.
pub fn is_consumer(url: &Url) -> bool {
    url.protocol_str().eq_ignore_ascii_case("consumer") || url.port() == 0
}

/// `UrlUtils.parseServiceKey("g/i:v")` → `(group, interface, version)`.
pub fn parse_service_key(key: &str) -> (Option<&str>, &str, Option<&str>) {
    let (group, rest) = match key.find('/') {
        Some(i) if i > 0 => (Some(&key[..i]), &key[i + 1..]),
        _ => (None, key),
    };
    match rest.find(':') {
        Some(i) if i > 0 => (group, &rest[..i], Some(&rest[i + 1..])),
        _ => (group, rest, None),
    }
}

/// `UrlUtils.getEmptyUrl(serviceKey, category)`:
/// `empty://0.0.0.0/<iface>?category=<c>[&group=][&version=]`. Unlike
/// [`parse_service_key`], the version starts after the **last** `:`, and the text is parsed
/// with `URL.valueOf` (so a present but empty group/version gives an empty param).
pub fn empty_url_for_key(service_key: &str, category: &str) -> Url {
    let (group, rest) = match service_key.find('/') {
        Some(i) if i > 0 => (Some(&service_key[..i]), &service_key[i + 1..]),
        _ => (None, service_key),
    };
    let (iface, version) = match rest.rfind(':') {
        Some(i) if i > 0 => (&rest[..i], Some(&rest[i + 1..])),
        _ => (rest, None),
    };
    let mut s = format!("empty://0.0.0.0/{iface}?category={category}");
    if let Some(g) = group {
        s.push_str("&group=");
        s.push_str(g);
    }
    if let Some(v) = version {
        s.push_str("&version=");
        s.push_str(v);
    }
    Url::parse(&s).unwrap_or_else(|_| {
        let mut b = Url::builder("empty")
            .host("0.0.0.0")
            .path(iface)
            .param("category", category);
        for (k, v) in [("group", group), ("version", version)] {
            if let Some(v) = v {
                b = b.param(k, v);
            }
        }
        b.build()
    })
}

/// The `empty://` URL a registry emits for an empty category (`toUrlsWithEmpty`): the consumer URL
/// with protocol `empty` and `category=<category>`.
pub fn empty_url(consumer: &Url, category: &str) -> Url {
    consumer
        .with_protocol("empty")
        .with_param("category", category)
}

/// True for an `empty://` URL.
pub fn is_empty_url(url: &Url) -> bool {
    url.protocol() == Some("empty")
}

/// The categories a subscription covers: `*` gives providers, consumers, routers,
/// configurators; otherwise `COMMA_SPLIT` of `category` (default providers).
pub fn subscribed_categories(consumer: &Url) -> Vec<String> {
    let c = consumer.category_or(PROVIDERS);
    if c == ANY {
        return [PROVIDERS, CONSUMERS, ROUTERS, CONFIGURATORS]
            .map(String::from)
            .to_vec();
    }
    comma_split(c)
        .into_iter()
        .filter(|s| !s.is_empty())
        .map(String::from)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn u(s: &str) -> Url {
        Url::parse(s).unwrap()
    }

    #[test]
    fn category_substring_and_exclusion() {
        assert!(is_match_category("provider", "providers"));
        assert!(is_match_category("configurators", "dynamicconfigurators"));
        assert!(!is_match_category("routers", "-routers"));
        assert!(is_match_category("consumers", "providers,-routers"));
        assert!(is_match_category("providers", ""));
        assert!(!is_match_category("routers", ""));
    }

    #[test]
    fn group_list_and_version() {
        let c = u("consumer://1.1.1.1/S?group=a,b&version=1");
        assert!(is_match(&c, &u("dubbo://2.2.2.2:1/S?group=b&version=1")));
        assert!(!is_match(&c, &u("dubbo://2.2.2.2:1/S?group=c&version=1")));
        assert!(!is_match(&c, &u("dubbo://2.2.2.2:1/S?group=b&version=2")));
        let any = u("consumer://1.1.1.1/S?group=*&version=*");
        assert!(is_match(&any, &u("dubbo://2.2.2.2:1/S")));
    }

    #[test]
    fn glob() {
        assert!(is_match_glob_pattern("v*e", Some("value"), None));
        assert!(is_match_glob_pattern("*ue", Some("value"), None));
        assert!(!is_match_glob_pattern("va*x", Some("value"), None));
        assert!(is_match_glob_pattern("*", None, None));
        let p = u("dubbo://h/S?k=val*");
        assert!(is_match_glob_pattern("$k", Some("value"), Some(&p)));
    }

    #[test]
    fn empty_url_shape() {
        let c = u("consumer://10.0.0.9/com.foo.Bar?application=web&category=providers,configurators,routers&interface=com.foo.Bar&side=consumer&version=1.0");
        assert_eq!(
            empty_url(&c, "providers").to_full_string(),
            "empty://10.0.0.9/com.foo.Bar?application=web&category=providers&interface=com.foo.Bar&side=consumer&version=1.0"
        );
        assert_eq!(
            empty_url_for_key("dubbo/a.b.c.Foo:1.0.0", "test").to_full_string(),
            "empty://0.0.0.0/a.b.c.Foo?category=test&group=dubbo&version=1.0.0"
        );
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod service_address_tests {
    use super::*;

    #[test]
    fn interface_comes_from_the_consumer() {
        let c = Url::parse("consumer://1.1.1.1/S?interface=S&group=g&version=1").unwrap();
        let p = Url::parse("dubbo://10.0.0.1:1/?group=g&version=1").unwrap();
        assert!(is_match_service_address(&c, &p));
        assert!(!is_match(&c, &p));
        let other =
            Url::parse("dubbo://10.0.0.1:1/Other?interface=Other&group=g&version=1").unwrap();
        assert!(is_match_service_address(&c, &other));
    }

    #[test]
    fn bare_provider_only_for_a_consumer_without_group_and_version() {
        let bare = Url::parse("dubbo://10.0.0.1:1/S").unwrap();
        let c = |q: &str| Url::parse(&format!("consumer://1.1.1.1/S?interface=S{q}")).unwrap();
        assert!(is_match_service_address(&c(""), &bare));
        assert!(is_match_service_address(&c("&group=*&version=*"), &bare));
        assert!(!is_match_service_address(&c("&group=g"), &bare));
        assert!(!is_match_service_address(&c("&version=1"), &bare));
        assert!(!is_match_service_address(&c("&group="), &bare));
        assert!(!is_match_service_address(&c("&enabled=false"), &bare));
        assert!(is_match_service_address(&c("&enabled=*"), &bare));
    }
}
