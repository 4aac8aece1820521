//! `ServiceAddressURL`: a provider URL as a 3.x consumer sees it, layered over the
//! consumer URL and an optional override (configurator) URL without copying either.

use std::fmt;

use super::{non_empty, Url};

/// Consumer keys Dubbo removes before layering (`ProviderFirstParams`): for these the provider
/// value shows through.
const PROVIDER_FIRST: [&str; 5] = ["release", "dubbo", "methods", "timestamp", "dubbo.tag"];

/// Keys read from the provider only.
const PROVIDER_ONLY: [&str; 3] = ["group", "version", "category"];

/// A provider URL layered over the consumer URL and an optional override URL.
///
/// Lookup order for `param(k)`: override, consumer, provider (first non-empty), except
/// `group`/`version`/`category`/`application` (provider only), `remote.application` (the
/// provider's `application`) and `side` (consumer). Method parameters follow
/// `override.m.k > consumer.m.k > provider.m.k > override.k > consumer.k > provider.k`.
/// Equality ignores the consumer URL.
#[derive(Clone)]
pub struct ServiceAddressUrl {
    provider: Url,
    consumer: Url,
    overrides: Option<Url>,
}

impl ServiceAddressUrl {
    /// Layers `provider` over `consumer`.
    pub fn new(provider: Url, consumer: Url) -> Self {
        ServiceAddressUrl {
            provider,
            consumer,
            overrides: None,
        }
    }

    /// The same with an override URL (configurators applied); `None` removes it.
    pub fn with_overrides(&self, overrides: Option<Url>) -> Self {
        ServiceAddressUrl {
            overrides,
            ..self.clone()
        }
    }

    /// The provider URL as registered.
    pub fn provider(&self) -> &Url {
        &self.provider
    }

    /// The consumer URL.
    pub fn consumer(&self) -> &Url {
        &self.consumer
    }

    /// The override URL, if configurators changed anything.
    pub fn overrides(&self) -> Option<&Url> {
        self.overrides.as_ref()
    }

    /// Provider protocol.
    pub fn protocol(&self) -> Option<&str> {
        self.provider.protocol()
    }

    /// Provider host.
    pub fn host(&self) -> Option<&str> {
        self.provider.host()
    }

    /// Provider port.
    pub fn port(&self) -> i32 {
        self.provider.port()
    }

    /// Provider path, else the consumer path.
    pub fn path(&self) -> Option<&str> {
        self.provider.path().or_else(|| self.consumer.path())
    }

    /// The consumer's service interface.
    pub fn service_interface(&self) -> Option<&str> {
        self.consumer.service_interface()
    }

    /// The effective parameter value (see the type docs for the order).
    pub fn param(&self, key: &str) -> Option<&str> {
        match key {
            "group" | "version" | "category" | "application" => return self.provider.param(key),
            "remote.application" => return self.provider.param("application"),
            "side" => return self.consumer.param(key),
            _ => {}
        }
        let ov = self
            .overrides
            .as_ref()
            .and_then(|o| non_empty(o.param(key)));
        ov.or_else(|| self.consumer_param(key))
            .or_else(|| self.provider.param(key))
    }

    fn consumer_param(&self, key: &str) -> Option<&str> {
        if PROVIDER_FIRST.contains(&key) || PROVIDER_ONLY.contains(&key) {
            return None;
        }
        non_empty(self.consumer.param(key))
    }

    /// The effective value, or `default` when empty.
    pub fn param_or<'a>(&'a self, key: &str, default: &'a str) -> &'a str {
        non_empty(self.param(key)).unwrap_or(default)
    }

    /// The effective method parameter (see the type docs for the order).
    pub fn method_param(&self, method: &str, key: &str) -> Option<&str> {
        let ov = self.overrides.as_ref();
        ov.and_then(|o| non_empty(o.method_param_strict(method, key)))
            .or_else(|| {
                if PROVIDER_FIRST.contains(&key) {
                    None
                } else {
                    // The consumer's `methods` is removed before layering (ProviderFirstParams),
                    // so no `methods` filter applies to consumer method params.
                    non_empty(self.consumer.raw_method_param(method, key))
                }
            })
            .or_else(|| non_empty(self.provider.method_param_strict(method, key)))
            .or_else(|| self.param(key))
    }

    /// Integer method parameter: default when empty or invalid.
    pub fn method_param_i64(&self, method: &str, key: &str, default: i64) -> i64 {
        non_empty(self.method_param(method, key))
            .and_then(|s| s.trim().parse().ok())
            .unwrap_or(default)
    }

    /// Boolean method parameter: default when empty; only `true` (any case) is true.
    pub fn method_param_bool(&self, method: &str, key: &str, default: bool) -> bool {
        non_empty(self.method_param(method, key))
            .map_or(default, |s| s.eq_ignore_ascii_case("true"))
    }

    /// A plain URL with the effective parameters (provider, then consumer, then overrides),
    /// for display and for code that needs a single [`Url`].
    pub fn to_url(&self) -> Url {
        let mut params: Vec<(&str, &str)> = self.provider.params().collect();
        params.extend(self.consumer.params().filter(|(k, v)| {
            !v.is_empty()
                && !PROVIDER_FIRST.contains(k)
                && !PROVIDER_ONLY.contains(k)
                && *k != "application"
        }));
        if let Some(o) = &self.overrides {
            params.extend(o.params().filter(|(_, v)| !v.is_empty()));
        }
        if let Some(app) = self.provider.param("application") {
            params.push(("remote.application", app));
        }
        let path = self.path().unwrap_or("").to_owned();
        self.provider.with_replaced_params(params).with_path(&path)
    }
}

impl PartialEq for ServiceAddressUrl {
    fn eq(&self, other: &Self) -> bool {
        self.provider == other.provider && self.overrides == other.overrides
    }
}

impl Eq for ServiceAddressUrl {}

impl std::hash::Hash for ServiceAddressUrl {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.provider.hash(state);
        self.overrides.hash(state);
    }
}

impl fmt::Display for ServiceAddressUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.provider, f)
    }
}

impl fmt::Debug for ServiceAddressUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "ServiceAddressUrl({} over {})",
            self.provider, self.consumer
        )
    }
}
