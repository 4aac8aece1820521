//! Nacos service names (Dubbo's `NacosRegistry.getServiceName` and
//! `NacosServiceName`): how Dubbo names what it registers and what a
//! subscription asks for, and `NacosServiceName`'s wildcard/range compatibility test.
//!
//! Three forms exist:
//! - **current** `category:interface:version:group` (always four segments, blanks as `""`),
//!   used for registering and subscribing since Dubbo 2.7.2;
//! - **compatible** `category:interface[:version][:group]`, registered in addition when the
//!   registry URL has `nacos.register-compatible=true`;
//! - **legacy** `providers[:interface][:version][:group]` (blanks skipped), subscribed in
//!   addition when `nacos.subscribe.legacy-name=true`.
//!
//! Every name sent to Nacos goes through [`to_nacos_name`] (`$` → `___`, as Dubbo's naming
//! wrapper does for inner classes).

use std::borrow::Cow;
use std::fmt;

use registry_core::matching::PROVIDERS;
use registry_core::Url;

use crate::error::NacosError;

/// The segment separator of Dubbo's Nacos service names.
pub const NAME_SEPARATOR: char = ':';
/// The wildcard value of a name segment.
pub const WILDCARD: &str = "*";
const VALUE_SEPARATOR: char = ',';

/// `$` → `___` on a service name, as Dubbo's `NacosNamingServiceWrapper` does on every call
/// (Nacos rejects `$` in gRPC service names; inner classes are `Outer$Inner`).
pub fn to_nacos_name(name: &str) -> Cow<'_, str> {
    if name.contains('$') {
        Cow::Owned(name.replace('$', "___"))
    } else {
        Cow::Borrowed(name)
    }
}

/// `NacosRegistry#isConformRules`: exactly four `:`-separated segments.
pub fn is_conform_rules(name: &str) -> bool {
    name.split(NAME_SEPARATOR).count() == 4
}

/// The name Dubbo registers `url` under: `category:interface:version:group` with the category
/// `getCategory("providers")` and the interface `interface` param, else the path.
pub fn register_name(url: &Url) -> String {
    format!(
        "{}{NAME_SEPARATOR}{}",
        url.category_or(PROVIDERS),
        url.colon_separated_key()
    )
}

/// The additional name registered with `nacos.register-compatible=true`:
/// `category:interface[:version][:group]` (blank segments omitted).
pub fn compatible_register_name(url: &Url) -> String {
    format!(
        "{}{NAME_SEPARATOR}{}",
        url.category_or(PROVIDERS),
        url.compatible_colon_separated_key()
    )
}

/// The legacy (≤ 2.7.1) subscribe name: `providers[:interface][:version][:group]`, each segment
/// present only when the consumer param is not blank.
pub fn legacy_subscribe_name(consumer: &Url) -> String {
    let mut s = String::from(PROVIDERS);
    for key in ["interface", "version", "group"] {
        if let Some(v) = consumer.param(key).filter(|v| !is_blank(v)) {
            s.push(NAME_SEPARATOR);
            s.push_str(v);
        }
    }
    s
}

/// Java `StringUtils.isBlank`: empty or only whitespace (Java's definition).
pub(crate) fn is_blank(s: &str) -> bool {
    registry_core::url::is_java_blank(s)
}

/// Java `String.split(",")` item count: trailing empty items are dropped.
fn java_split_count(s: &str) -> usize {
    java_split(s).count()
}

/// Java `String.split(",")` (limit 0): trailing empty items dropped; `""` gives `[""]`.
fn java_split(s: &str) -> impl Iterator<Item = &str> {
    let items: Vec<&str> = s.split(VALUE_SEPARATOR).collect();
    let keep = if s.is_empty() {
        1
    } else {
        items
            .iter()
            .rposition(|x| !x.is_empty())
            .map_or(0, |i| i + 1)
    };
    items.into_iter().take(keep)
}

/// `NacosServiceName.isWildcard`: exactly `*`.
pub fn is_wildcard(v: Option<&str>) -> bool {
    v == Some(WILDCARD)
}

/// `NacosServiceName.isRange`: contains `,` and splits into more than one item (`"a,"` is not
/// a range).
pub fn is_range(v: Option<&str>) -> bool {
    v.is_some_and(|v| v.contains(VALUE_SEPARATOR) && java_split_count(v) > 1)
}

/// `NacosServiceName.isConcrete(value)`: neither wildcard nor range (absent is concrete).
pub fn is_concrete_value(v: Option<&str>) -> bool {
    !is_wildcard(v) && !is_range(v)
}

/// `matchRange(range, value)`: a blank range matches anything; otherwise `range` must be a
/// range containing `value` as one of its exact (untrimmed) items.
fn match_range(range: Option<&str>, value: Option<&str>) -> bool {
    let Some(range) = range.filter(|r| !is_blank(r)) else {
        return true;
    };
    if !is_range(Some(range)) {
        return false;
    }
    value.is_some_and(|v| java_split(range).any(|item| item == v))
}

/// Dubbo's `NacosServiceName`: four segments, each possibly absent (Java `null`).
///
/// Absent segments are rendered as `null` by [`NacosServiceName::value`], as Java's string
/// concatenation does.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct NacosServiceName {
    /// `providers`, `consumers`, ... or a comma range such as `providers,configurators`.
    pub category: Option<String>,
    /// The service interface (never a wildcard in a compatibility test).
    pub interface: Option<String>,
    /// Version, `*` or a comma range.
    pub version: Option<String>,
    /// Group, `*` or a comma range.
    pub group: Option<String>,
    /// The text the name was parsed from, which Java keeps as its value (it differs from the
    /// four segments when the text has more than four); `None` for a built name.
    pub text: Option<String>,
}

impl NacosServiceName {
    /// A name from its four segments.
    pub fn new(category: &str, interface: &str, version: &str, group: &str) -> Self {
        NacosServiceName {
            category: Some(category.to_owned()),
            interface: Some(interface.to_owned()),
            version: Some(version.to_owned()),
            group: Some(group.to_owned()),
            text: None,
        }
    }

    /// `new NacosServiceName(String)`: `split(":", -1)`; fewer than four segments is an error
    /// (Java throws `ArrayIndexOutOfBoundsException`); extra segments are ignored by the
    /// fields but kept in [`NacosServiceName::value`], as Java keeps the text it was given.
    pub fn parse(value: &str) -> Result<Self, NacosError> {
        let mut it = value.split(NAME_SEPARATOR);
        match (it.next(), it.next(), it.next(), it.next()) {
            (Some(c), Some(i), Some(v), Some(g)) => Ok(NacosServiceName {
                text: it.next().is_some().then(|| value.to_owned()),
                ..NacosServiceName::new(c, i, v, g)
            }),
            _ => Err(NacosError::InvalidServiceName(value.to_owned())),
        }
    }

    /// `new NacosServiceName(URL)` (subscription side): interface = the `interface` param only;
    /// category = `providers` when the interface is concrete, else the raw `category` param;
    /// version and group default to `""`.
    ///
    /// Errors when the interface is not concrete and the URL has no `category` (Java fails
    /// with a `NullPointerException` there).
    pub fn from_subscribe_url(url: &Url) -> Result<Self, NacosError> {
        let interface = url.param("interface").map(str::to_owned);
        let category = if is_concrete_value(interface.as_deref()) {
            Some(PROVIDERS.to_owned())
        } else {
            url.param("category").map(str::to_owned)
        };
        if category.is_none() {
            return Err(NacosError::InvalidServiceName(format!(
                "subscription {url} has a non-concrete interface and no category"
            )));
        }
        let or_empty = |k: &str| {
            Some(
                url.param(k)
                    .filter(|v| !v.is_empty())
                    .unwrap_or("")
                    .to_owned(),
            )
        };
        Ok(NacosServiceName {
            category,
            interface,
            version: or_empty("version"),
            group: or_empty("group"),
            text: None,
        })
    }

    /// The name string `category:interface:version:group` (absent segments as `null`).
    /// Errors when the category is absent (Java's `new StringBuilder(null)` throws).
    pub fn value(&self) -> Result<String, NacosError> {
        if let Some(text) = &self.text {
            return Ok(text.clone());
        }
        let Some(c) = &self.category else {
            return Err(NacosError::InvalidServiceName(
                "a service name needs a category".into(),
            ));
        };
        let seg = |s: &Option<String>| s.clone().unwrap_or_else(|| "null".to_owned());
        Ok(format!(
            "{c}{NAME_SEPARATOR}{}{NAME_SEPARATOR}{}{NAME_SEPARATOR}{}",
            seg(&self.interface),
            seg(&self.version),
            seg(&self.group)
        ))
    }

    /// True when interface, version and group are all concrete (no `*`, no comma range).
    pub fn is_concrete(&self) -> bool {
        is_concrete_value(self.interface.as_deref())
            && is_concrete_value(self.version.as_deref())
            && is_concrete_value(self.group.as_deref())
    }

    /// `pattern.isCompatible(concrete)`, exactly as Dubbo 3.3 evaluates it:
    /// categories equal or in range; interfaces **exactly** equal; then a `*` version or a
    /// `*` group accepts everything (the group `*` skips the version check too); otherwise
    /// version and group must be equal or in range, where a blank pattern field matches
    /// anything.
    pub fn is_compatible(&self, concrete: &NacosServiceName) -> bool {
        if !concrete.is_concrete() {
            return false;
        }
        if self.category != concrete.category
            && !match_range(self.category.as_deref(), concrete.category.as_deref())
        {
            return false;
        }
        if self.interface != concrete.interface {
            return false;
        }
        if is_wildcard(self.version.as_deref()) || is_wildcard(self.group.as_deref()) {
            return true;
        }
        if self.version != concrete.version
            && !match_range(self.version.as_deref(), concrete.version.as_deref())
        {
            return false;
        }
        self.group == concrete.group
            || match_range(self.group.as_deref(), concrete.group.as_deref())
    }

    /// The same name with `$` → `___` in the interface, so it compares with names as stored in
    /// Nacos.
    pub fn to_nacos_form(&self) -> NacosServiceName {
        NacosServiceName {
            interface: self
                .interface
                .as_deref()
                .map(|i| to_nacos_name(i).into_owned()),
            text: self.text.as_deref().map(|t| to_nacos_name(t).into_owned()),
            ..self.clone()
        }
    }
}

impl fmt::Display for NacosServiceName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(text) = &self.text {
            return f.write_str(text);
        }
        let seg = |s: &Option<String>| s.clone().unwrap_or_else(|| "null".to_owned());
        write!(
            f,
            "{}{NAME_SEPARATOR}{}{NAME_SEPARATOR}{}{NAME_SEPARATOR}{}",
            seg(&self.category),
            seg(&self.interface),
            seg(&self.version),
            seg(&self.group)
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn n(s: &str) -> NacosServiceName {
        NacosServiceName::parse(s).unwrap()
    }

    #[test]
    fn a_parsed_name_keeps_its_text_as_value() {
        // Found by the differential tests: Java's NacosServiceName(String) keeps the whole
        // text as getValue(), extra segments included.
        let x = n("providers:a:1:g:extra");
        assert_eq!(x.group.as_deref(), Some("g"));
        assert_eq!(x.value().unwrap(), "providers:a:1:g:extra");
        assert_eq!(x.to_string(), "providers:a:1:g:extra");
        assert_eq!(n("providers:a:1:g").value().unwrap(), "providers:a:1:g");
        assert_ne!(x, n("providers:a:1:g:other"));
    }

    #[test]
    fn blank_is_java_whitespace() {
        // Character.isWhitespace: U+00A0 is not whitespace, U+001F is.
        assert!(is_blank("\t \u{1f}"));
        assert!(!is_blank("\u{a0}"));
    }

    #[test]
    fn parse_and_value() {
        let x = n("providers:com.foo.Bar:1.0.0:");
        assert_eq!(x.group.as_deref(), Some(""));
        assert!(x.is_concrete());
        assert_eq!(x.value().unwrap(), "providers:com.foo.Bar:1.0.0:");
        assert!(NacosServiceName::parse("providers:com.foo.Bar").is_err());
        assert_eq!(n("a:b:c:d:e").group.as_deref(), Some("d"));
        assert!(!is_conform_rules("a:b:c:d:e"));
        assert!(is_conform_rules("a:b::"));
    }

    #[test]
    fn ranges() {
        assert!(!is_range(Some("a,")));
        assert!(is_range(Some(",a")));
        assert!(!is_range(Some(",,")));
        assert!(is_range(Some("a,b")));
        assert!(match_range(Some(" "), Some("x")));
        assert!(match_range(Some("a,b"), Some("b")));
        assert!(!match_range(Some("a, b"), Some("b")));
    }

    #[test]
    fn compatibility_quirks() {
        assert!(n("providers:com.foo:1.0.0:*").is_compatible(&n("providers:com.foo:2.0.0:g1")));
        assert!(n("providers:com.foo:1.0.0:").is_compatible(&n("providers:com.foo:1.0.0:g1")));
        assert!(!n("providers:com.foo:1.0.0:g1").is_compatible(&n("providers:com.foo:1.0.0:")));
        assert!(!n("providers:*:*:*").is_compatible(&n("providers:com.foo:9:x")));
        assert!(n("providers,configurators:com.foo:*:").is_compatible(&n("providers:com.foo:1:")));
        assert!(n(":com.foo:*:").is_compatible(&n("providers:com.foo:1:")));
        assert!(n("providers:com.foo:1,2:a,b").is_compatible(&n("providers:com.foo:2:a")));
        assert!(!n("providers:com.foo:1,2:a,b").is_compatible(&n("providers:com.foo:3:a")));
        assert!(!n("providers:com.foo:*:").is_compatible(&n("providers:com.foo:1,2:")));
    }

    #[test]
    fn names_from_urls() {
        let p = Url::parse("dubbo://10.0.0.1:20880/com.foo.Outer$Inner?interface=com.foo.Outer$Inner&version=1.0&side=provider").unwrap();
        assert_eq!(register_name(&p), "providers:com.foo.Outer$Inner:1.0:");
        assert_eq!(
            compatible_register_name(&p),
            "providers:com.foo.Outer$Inner:1.0"
        );
        assert_eq!(
            to_nacos_name(&register_name(&p)),
            "providers:com.foo.Outer___Inner:1.0:"
        );
        let c =
            Url::parse("consumer://10.0.0.2/com.foo.Bar?interface=com.foo.Bar&group=g&version=")
                .unwrap();
        assert_eq!(legacy_subscribe_name(&c), "providers:com.foo.Bar:g");
        let s = NacosServiceName::from_subscribe_url(&c).unwrap();
        assert_eq!(s.value().unwrap(), "providers:com.foo.Bar::g");
        let w = Url::parse(
            "consumer://10.0.0.9/*?interface=*&category=providers,configurators,routers",
        )
        .unwrap();
        let s = NacosServiceName::from_subscribe_url(&w).unwrap();
        assert_eq!(s.value().unwrap(), "providers,configurators,routers:*::");
        assert!(!s.is_concrete());
        let bad = Url::parse("consumer://10.0.0.9/*?interface=*").unwrap();
        assert!(NacosServiceName::from_subscribe_url(&bad).is_err());
    }
}
