//! Which [`ServiceInfo`]s a reference uses: Dubbo's `ProtocolServiceKey.Matcher.isMatch`
//! (interface exact; version and group `*`, a comma list, or exact with "absent matches only
//! absent"; protocol `*`/absent = any, a comma list, or exact) plus the directory's rule that a
//! reference without a protocol skips services marked `isExtra`
//! (`ServiceDiscoveryRegistryDirectory.toInvokers`).

use registry_core::matching::ANY;
use registry_core::Url;

use crate::metadata_info::ServiceInfo;

/// The parameter marking a service exported on an extra protocol (used only when the reference
/// names a protocol).
pub const IS_EXTRA: &str = "isExtra";

/// The key a reference matches services with.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ServiceMatcher {
    interface: String,
    version: Option<String>,
    group: Option<String>,
    protocol: Option<String>,
}

impl ServiceMatcher {
    /// The matcher of a reference: `interface`, `version`, `group`, `protocol` (absent, or
    /// the URL's own `consumer` protocol, means any).
    pub fn from_consumer(consumer: &Url) -> Self {
        let protocol = consumer
            .param("protocol")
            .or(consumer.protocol())
            .filter(|p| !p.is_empty() && *p != "consumer")
            .map(str::to_owned);
        ServiceMatcher {
            interface: consumer.service_interface().unwrap_or("").to_owned(),
            version: consumer.version().map(str::to_owned),
            group: consumer.group().map(str::to_owned),
            protocol,
        }
    }

    /// A matcher from its parts (`None` = absent).
    pub fn new(
        interface: &str,
        group: Option<&str>,
        version: Option<&str>,
        protocol: Option<&str>,
    ) -> Self {
        ServiceMatcher {
            interface: interface.to_owned(),
            version: version.map(str::to_owned),
            group: group.map(str::to_owned),
            protocol: protocol.map(str::to_owned),
        }
    }

    /// The interface.
    pub fn interface(&self) -> &str {
        &self.interface
    }

    /// True when the reference uses `s` (see the module docs).
    pub fn matches(&self, s: &ServiceInfo) -> bool {
        if self.interface != s.name {
            return false;
        }
        if !item_match(self.version.as_deref(), s.version.as_deref())
            || !item_match(self.group.as_deref(), s.group.as_deref())
        {
            return false;
        }
        match self.protocol.as_deref().filter(|p| !p.is_empty()) {
            None => s.param(IS_EXTRA).is_none_or(str::is_empty),
            Some(ANY) => true,
            Some(rule) => list_match(rule, s.protocol.as_deref()),
        }
    }
}

/// Version/group rule of `ServiceKey.Matcher`.
fn item_match(rule: Option<&str>, target: Option<&str>) -> bool {
    let target = target.filter(|t| !t.is_empty());
    match rule.filter(|r| !r.is_empty()) {
        None => target.is_none(),
        Some(ANY) => true,
        Some(rule) => list_match(rule, target),
    }
}

/// Exact, or membership in a comma list (an empty item matches an absent target).
fn list_match(rule: &str, target: Option<&str>) -> bool {
    let target = target.unwrap_or("");
    if rule.contains(',') {
        rule.split(',').map(str::trim).any(|r| r == target)
    } else {
        rule == target
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn svc(group: Option<&str>, version: Option<&str>, protocol: &str) -> ServiceInfo {
        let mut s = ServiceInfo::new("com.foo.S", protocol);
        s.group = group.map(str::to_owned);
        s.version = version.map(str::to_owned);
        s
    }

    #[test]
    fn version_and_group_rules() {
        let m = |g: Option<&str>, v: Option<&str>| ServiceMatcher::new("com.foo.S", g, v, None);
        assert!(m(None, None).matches(&svc(None, None, "dubbo")));
        assert!(
            !m(None, None).matches(&svc(None, Some("1.0"), "dubbo")),
            "absent matches absent only"
        );
        assert!(m(None, Some("*")).matches(&svc(None, Some("1.0"), "dubbo")));
        assert!(m(None, Some("1.0,2.0")).matches(&svc(None, Some("2.0"), "dubbo")));
        assert!(
            m(None, Some("1.0,")).matches(&svc(None, None, "dubbo")),
            "empty item = absent"
        );
        assert!(!m(None, Some("1.0")).matches(&svc(None, Some("1.00"), "dubbo")));
        assert!(m(Some("*"), None).matches(&svc(Some("g"), None, "dubbo")));
        assert!(!m(Some("g"), None).matches(&svc(None, None, "dubbo")));
        assert!(
            !ServiceMatcher::new("com.foo.T", None, None, None).matches(&svc(None, None, "dubbo"))
        );
    }

    #[test]
    fn protocol_and_extra_rules() {
        let mut extra = svc(None, None, "rest");
        extra.params.insert(IS_EXTRA.into(), "true".into());
        let any = ServiceMatcher::new("com.foo.S", None, None, None);
        assert!(any.matches(&svc(None, None, "tri")));
        assert!(
            !any.matches(&extra),
            "no protocol: extra services are skipped"
        );
        let rest = ServiceMatcher::new("com.foo.S", None, None, Some("rest"));
        assert!(rest.matches(&extra));
        let list = ServiceMatcher::new("com.foo.S", None, None, Some("dubbo, tri"));
        assert!(list.matches(&svc(None, None, "tri")));
        assert!(!list.matches(&svc(None, None, "rest")));
        let star = ServiceMatcher::new("com.foo.S", None, None, Some("*"));
        assert!(star.matches(&extra));
    }

    #[test]
    fn from_consumer_url() {
        let c = Url::parse("consumer://1.2.3.4/com.foo.S?interface=com.foo.S&version=1.0&group=*")
            .unwrap();
        let m = ServiceMatcher::from_consumer(&c);
        assert_eq!(
            m,
            ServiceMatcher::new("com.foo.S", Some("*"), Some("1.0"), None)
        );
        let c = c.with_param("protocol", "tri");
        assert_eq!(
            ServiceMatcher::from_consumer(&c).protocol.as_deref(),
            Some("tri")
        );
    }
}
