//! Override rules from the config centre → configurator URLs (Dubbo's `ConfigParser`,
//! routers.md R6.2).
//!
//! The rule text of `<service key>.configurators` or `<application>.configurators` is either
//! a JSON array of URL strings (taken as they are) or a YAML map:
//!
//! ```yaml
//! configVersion: v3.0          # kept as text in the URL (`null` when missing)
//! scope: service               # or application
//! key: g/com.foo.Svc:1.0.0     # service key (service scope) or application (application scope)
//! enabled: true
//! configs:
//!   - side: provider           # item fields: type, enabled, addresses, providerAddresses,
//!     addresses: [1.2.3.4:20880] #   services, applications, parameters, match, side
//!     parameters: {weight: 200}
//! ```
//!
//! Service scope gives one `override://<address>/<service>?category=dynamicconfigurators...`
//! URL per address (× application); application scope gives address × service URLs with
//! `application=<key>` and `category=appdynamicconfigurators`. The URL text is assembled as
//! Java does (parameters appended raw) and parsed with [`Url::parse`], so a duplicate key keeps
//! its last value. A v3.0 `match` object travels next to the URL ([`ParsedConfigurator`]).
//!
//! Refusals (the caller keeps its previous rules): not YAML / not a map, no `configs`, an item
//! without parameters, an empty service, a null parameter value; a rule over a limit of the
//! rule reader ([`registry_core::rule_yaml`]), an invalid or oversized `regex`
//! (the router's bounded rule regex), or one that would expand to more than
//! [`MAX_CONFIGURATOR_URLS`] URLs or [`MAX_CONFIGURATOR_BYTES`] bytes of URL text (addresses ×
//! applications or services, each URL repeating the parameters: a small rule can name
//! millions).

use std::sync::Arc;

use registry_core::rule_yaml::{self, Yaml, YamlLimits};
use registry_core::Url;

use super::condition_match::{scalar, ConditionMatch};
use super::configurator::Configurator;
use crate::router::rule_regex::RegexBudget;
use crate::router::RouterError;

const ANYHOST: &str = "0.0.0.0";

/// Most configurator URLs one rule may produce.
pub(crate) const MAX_CONFIGURATOR_URLS: usize = 65_536;
/// Most bytes of URL text one rule may produce.
pub(crate) const MAX_CONFIGURATOR_BYTES: usize = 16 * 1024 * 1024;

/// One configurator URL produced from a rule, with its v3.0 `match` condition.
#[derive(Debug, Clone)]
pub struct ParsedConfigurator {
    /// The `override://` URL.
    pub url: Url,
    /// The item's `match` (Java's URL attribute `MATCH_CONDITION`).
    pub match_condition: Option<Arc<ConditionMatch>>,
}

impl ParsedConfigurator {
    /// The configurator that applies this URL (and its match condition).
    pub fn to_configurator(&self) -> Option<Configurator> {
        Configurator::from_url(&self.url).map(|c| c.with_match(self.match_condition.clone()))
    }
}

/// `ConfigParser.parseConfigurators(raw)`.
///
/// Errors: the refusals of the module docs.
pub fn parse_configurators(raw: &str) -> Result<Vec<ParsedConfigurator>, RouterError> {
    let limits = YamlLimits::default();
    if raw.len() > limits.max_bytes {
        return Err(RouterError::Limit(format!(
            "the document has {} bytes, more than the limit of {}",
            raw.len(),
            limits.max_bytes
        )));
    }
    if let Some(urls) = parse_json_array(raw) {
        return Ok(urls);
    }
    let doc = rule_yaml::load_with(raw, &limits)
        .map_err(RouterError::from_yaml)?
        .unwrap_or(Yaml::Null);
    if doc.as_hash().is_none() {
        return Err(RouterError::Yaml("the top level is not a map".into()));
    }
    let config = RuleConfig {
        config_version: string_field(&doc, "configVersion")?,
        scope: string_field(&doc, "scope")?,
        key: string_field(&doc, "key")?,
        enabled: bool_field(&doc["enabled"]).unwrap_or(true),
    };
    let items = match &doc["configs"] {
        Yaml::Array(items) => items,
        Yaml::Null | Yaml::BadValue => {
            return Err(RouterError::Invalid(
                "no `configs` in the configurator rule".into(),
            ))
        }
        _ => return Err(RouterError::Invalid("`configs` is not a list".into())),
    };
    let mut out = Produced::default();
    let mut regexes = RegexBudget::default();
    for item in items {
        let item = Item::parse(item, &mut regexes)?;
        if config.scope.as_deref() == Some("application") {
            app_item(&item, &config, &mut out)?;
        } else {
            service_item(&item, &config, &mut out)?;
        }
    }
    Ok(out.urls)
}

/// The URLs made so far, and their text size.
#[derive(Default)]
struct Produced {
    urls: Vec<ParsedConfigurator>,
    bytes: usize,
}

fn parse_json_array(raw: &str) -> Option<Vec<ParsedConfigurator>> {
    let list: Vec<String> = serde_json::from_str(raw).ok()?;
    if list.is_empty() {
        return None;
    }
    let urls: Option<Vec<ParsedConfigurator>> = list
        .iter()
        .map(|s| {
            Url::parse(s).ok().map(|url| ParsedConfigurator {
                url,
                match_condition: None,
            })
        })
        .collect();
    urls
}

struct RuleConfig {
    config_version: Option<String>,
    scope: Option<String>,
    key: Option<String>,
    enabled: bool,
}

struct Item {
    kind: Option<String>,
    enabled: Option<bool>,
    addresses: Vec<String>,
    provider_addresses: Vec<String>,
    services: Vec<String>,
    applications: Vec<String>,
    parameters: Vec<(String, String)>,
    side: Option<String>,
    match_condition: Option<Arc<ConditionMatch>>,
}

impl Item {
    fn parse(y: &Yaml, regexes: &mut RegexBudget) -> Result<Item, RouterError> {
        if y.as_hash().is_none() {
            return Err(RouterError::Invalid("a `configs` item is not a map".into()));
        }
        let mut parameters = Vec::new();
        match &y["parameters"] {
            Yaml::Hash(h) => {
                for (k, v) in h {
                    let (Some(k), Some(v)) = (scalar(k), scalar(v)) else {
                        return Err(RouterError::Invalid(
                            "a parameter has a null or non-scalar name or value".into(),
                        ));
                    };
                    parameters.push((k, v));
                }
            }
            Yaml::Null | Yaml::BadValue => {}
            _ => return Err(RouterError::Invalid("`parameters` is not a map".into())),
        }
        Ok(Item {
            kind: string_field(y, "type")?,
            enabled: bool_field(&y["enabled"]),
            addresses: list_field(y, "addresses")?,
            provider_addresses: list_field(y, "providerAddresses")?,
            services: list_field(y, "services")?,
            applications: list_field(y, "applications")?,
            parameters,
            side: string_field(y, "side")?,
            match_condition: ConditionMatch::from_yaml(&y["match"], regexes)?.map(Arc::new),
        })
    }

    /// `parseAddresses`: the item's addresses, `0.0.0.0` when none.
    fn addresses(&self) -> Vec<&str> {
        if self.addresses.is_empty() {
            vec![ANYHOST]
        } else {
            self.addresses.iter().map(String::as_str).collect()
        }
    }
}

/// `toParameterString(item)`: `category=dynamicconfigurators[&side=..]&k=v...[&providerAddresses=..]`.
fn parameter_string(item: &Item, out: &mut String) -> Result<(), RouterError> {
    out.push_str("category=dynamicconfigurators");
    if let Some(side) = &item.side {
        out.push_str("&side=");
        out.push_str(side);
    }
    if item.parameters.is_empty() {
        return Err(RouterError::Invalid(
            "Invalid configurator rule, please specify at least one parameter you want to change in the rule.".into(),
        ));
    }
    for (k, v) in &item.parameters {
        out.push('&');
        out.push_str(k);
        out.push('=');
        out.push_str(v);
    }
    if !item.provider_addresses.is_empty() {
        out.push_str("&providerAddresses=");
        out.push_str(&item.provider_addresses.join(","));
    } else if item.side.as_deref() == Some("provider") {
        out.push_str("&providerAddresses=");
        out.push_str(&item.addresses().join(","));
    }
    Ok(())
}

/// `appendService`: `<interface>?[group=g&][version=v&]`.
fn append_service(service: Option<&str>, out: &mut String) -> Result<(), RouterError> {
    let Some(mut name) = service.filter(|s| !s.is_empty()) else {
        return Err(RouterError::Invalid(
            "service field in configuration is null.".into(),
        ));
    };
    let mut query = String::new();
    if let Some(i) = name.find('/').filter(|&i| i > 0) {
        query.push_str("group=");
        query.push_str(&name[..i]);
        query.push('&');
        name = &name[i + 1..];
    }
    if let Some(j) = name.find(':').filter(|&j| j > 0) {
        query.push_str("version=");
        query.push_str(&name[j + 1..]);
        query.push('&');
        name = &name[..j];
    }
    out.push_str(name);
    out.push('?');
    out.push_str(&query);
    Ok(())
}

/// `parseEnabled`: general items use the rule's `enabled`, typed items their own (`null`
/// when unset, which reads as false).
fn append_enabled(item: &Item, config: &RuleConfig, out: &mut String) {
    out.push_str("&enabled=");
    let general = item.kind.as_deref().is_none_or(|t| t == "general");
    if general {
        out.push_str(if config.enabled { "true" } else { "false" });
    } else {
        out.push_str(match item.enabled {
            Some(true) => "true",
            Some(false) => "false",
            None => "null",
        });
    }
}

fn push_url(text: &str, item: &Item, out: &mut Produced) -> Result<(), RouterError> {
    out.bytes += text.len();
    if out.urls.len() >= MAX_CONFIGURATOR_URLS || out.bytes > MAX_CONFIGURATOR_BYTES {
        return Err(RouterError::Limit(format!(
            "the rule expands to more than {MAX_CONFIGURATOR_URLS} configurator URLs or {MAX_CONFIGURATOR_BYTES} bytes of them"
        )));
    }
    let url = Url::parse(text)
        .map_err(|e| RouterError::Invalid(format!("bad configurator URL {text:?}: {e}")))?;
    out.urls.push(ParsedConfigurator {
        url,
        match_condition: item.match_condition.clone(),
    });
    Ok(())
}

fn version_text(config: &RuleConfig) -> &str {
    config.config_version.as_deref().unwrap_or("null")
}

fn service_item(item: &Item, config: &RuleConfig, out: &mut Produced) -> Result<(), RouterError> {
    for addr in item.addresses() {
        let mut s = format!("override://{addr}/");
        append_service(config.key.as_deref(), &mut s)?;
        parameter_string(item, &mut s)?;
        append_enabled(item, config, &mut s);
        s.push_str("&configVersion=");
        s.push_str(version_text(config));
        if item.applications.is_empty() {
            push_url(&s, item, out)?;
        } else {
            for app in &item.applications {
                push_url(&format!("{s}&application={app}"), item, out)?;
            }
        }
    }
    Ok(())
}

fn app_item(item: &Item, config: &RuleConfig, out: &mut Produced) -> Result<(), RouterError> {
    let any = ["*".to_owned()];
    let services: &[String] = if item.services.is_empty() {
        &any
    } else {
        &item.services
    };
    for addr in item.addresses() {
        for svc in services {
            let mut s = format!("override://{addr}/");
            append_service(Some(svc), &mut s)?;
            parameter_string(item, &mut s)?;
            s.push_str("&application=");
            s.push_str(config.key.as_deref().unwrap_or("null"));
            append_enabled(item, config, &mut s);
            s.push_str("&category=appdynamicconfigurators&configVersion=");
            s.push_str(version_text(config));
            push_url(&s, item, out)?;
        }
    }
    Ok(())
}

/// A field Java reads with a `(String)` cast: a non-string scalar is refused.
fn string_field(y: &Yaml, key: &str) -> Result<Option<String>, RouterError> {
    match &y[key] {
        Yaml::String(s) => Ok(Some(s.clone())),
        Yaml::Null | Yaml::BadValue => Ok(None),
        _ => Err(RouterError::Invalid(format!("`{key}` is not a string"))),
    }
}

/// `Boolean.parseBoolean(value.toString())`, YAML 1.1 booleans (`yes`/`on`) included as
/// SnakeYAML reads them.
fn bool_field(y: &Yaml) -> Option<bool> {
    match y {
        Yaml::Boolean(b) => Some(*b),
        Yaml::String(s) => Some(
            matches!(
                s.as_str(),
                "true" | "True" | "TRUE" | "yes" | "Yes" | "YES" | "on" | "On" | "ON"
            ) || s.eq_ignore_ascii_case("true"),
        ),
        Yaml::Null | Yaml::BadValue => None,
        other => Some(scalar(other).is_some_and(|s| s.eq_ignore_ascii_case("true"))),
    }
}

fn list_field(y: &Yaml, key: &str) -> Result<Vec<String>, RouterError> {
    match &y[key] {
        Yaml::Array(v) => Ok(v.iter().filter_map(scalar).collect()),
        Yaml::Null | Yaml::BadValue => Ok(Vec::new()),
        _ => Err(RouterError::Invalid(format!("`{key}` is not a list"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn service_scope_with_group_version_and_apps() {
        let r = parse_configurators(
            "configVersion: v2.7\nscope: service\nkey: g1/com.foo.Svc:1.0.0\nconfigs:\n- addresses: [1.1.1.1:20880]\n  applications: [a1, a2]\n  side: consumer\n  parameters: {timeout: 100}\n",
        )
        .unwrap();
        assert_eq!(r.len(), 2);
        let u = &r[1].url;
        assert_eq!(u.protocol(), Some("override"));
        assert_eq!((u.host(), u.port()), (Some("1.1.1.1"), 20880));
        assert_eq!(u.path(), Some("com.foo.Svc"));
        for (k, v) in [
            ("group", "g1"),
            ("version", "1.0.0"),
            ("timeout", "100"),
            ("application", "a2"),
            ("side", "consumer"),
            ("category", "dynamicconfigurators"),
            ("enabled", "true"),
            ("configVersion", "v2.7"),
        ] {
            assert_eq!(u.param(k), Some(v), "{k}");
        }
    }

    #[test]
    fn refusals() {
        assert!(matches!(
            parse_configurators("a: [b"),
            Err(RouterError::Yaml(_))
        ));
        assert!(matches!(
            parse_configurators("- 1\n- 2\n"),
            Err(RouterError::Yaml(_))
        ));
        assert!(parse_configurators("configVersion: v2.7\nkey: S\n").is_err());
        // an item without parameters
        assert!(parse_configurators("key: S\nconfigs:\n- addresses: [0.0.0.0]\n").is_err());
        // an empty service
        assert!(parse_configurators("configs:\n- parameters: {a: b}\n").is_err());
        // configVersion is not a string
        assert!(parse_configurators(
            "configVersion: 3.0\nkey: S\nconfigs:\n- parameters: {a: b}\n"
        )
        .is_err());
    }

    #[test]
    fn json_array() {
        let r = parse_configurators(
            r#"["override://0.0.0.0/S?timeout=1&rule=x&category=configurators"]"#,
        )
        .unwrap();
        assert_eq!(r.len(), 1);
        assert_eq!(r[0].url.param("timeout"), Some("1"));
        assert!(r[0].to_configurator().is_some());
    }

    #[test]
    fn rule_disabled_and_typed_items() {
        let r = parse_configurators(
            "key: S\nenabled: false\nconfigs:\n- parameters: {a: b}\n- type: weight\n  enabled: true\n  parameters: {weight: 1}\n",
        )
        .unwrap();
        assert_eq!(r[0].url.param("enabled"), Some("false"));
        assert_eq!(r[1].url.param("enabled"), Some("true"));
    }
}
