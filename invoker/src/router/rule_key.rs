//! [`RuleKey`]: which router a config-centre value is for, and the Dubbo 3.3 key names.

use registry_core::Url;

/// The config-centre group of every routing rule (`GovernanceRuleRepository.DEFAULT_GROUP`).
pub const RULE_GROUP: &str = "dubbo";
/// Suffix of condition-rule keys.
pub const CONDITION_SUFFIX: &str = ".condition-router";
/// Suffix of tag-rule keys.
pub const TAG_SUFFIX: &str = ".tag-router";

/// Which rule a raw config-centre value is for (Dubbo 3.3 keys, group [`RULE_GROUP`]).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum RuleKey {
    /// `<app>.condition-router`. When `app` is the consumer's `application` this is the
    /// application-scope rule (AppStateRouter, order 150); otherwise it is the rule of a
    /// provider application (ProviderAppStateRouter, order 145), which applies while that
    /// application is the one of the first provider in the list.
    AppCondition(String),
    /// `<interface:version:group>.condition-router` of the directory's consumer (ServiceStateRouter,
    /// order 140). See [`service_rule_key`].
    ServiceCondition,
    /// `<provider app>.tag-router` (TagStateRouter, order 100): applies while `app` is the
    /// application of the first provider in the list.
    AppTag(String),
}

impl RuleKey {
    /// The config-centre key (in group [`RULE_GROUP`]) this rule is read from, for `consumer`.
    pub fn config_key(&self, consumer: &Url) -> String {
        match self {
            RuleKey::AppCondition(app) => format!("{app}{CONDITION_SUFFIX}"),
            RuleKey::ServiceCondition => {
                format!("{}{CONDITION_SUFFIX}", service_rule_key(consumer))
            }
            RuleKey::AppTag(app) => format!("{app}{TAG_SUFFIX}"),
        }
    }
}

/// `URL#getColonSeparatedKey`: `interface:version:group` with blank segments kept
/// (`com.foo.Svc::`, `com.foo.Svc:1.0.0:g1`, `com.foo.Svc::g1`).
pub fn service_rule_key(consumer: &Url) -> String {
    consumer.colon_separated_key()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn service_key_keeps_blank_segments() {
        let u = Url::parse("consumer://1.2.3.4/com.foo.Svc?interface=com.foo.Svc&application=a")
            .unwrap();
        assert_eq!(service_rule_key(&u), "com.foo.Svc::");
        assert_eq!(
            RuleKey::ServiceCondition.config_key(&u),
            "com.foo.Svc::.condition-router"
        );
        let u = u.with_params([("version", "1.0.0"), ("group", "g1")]);
        assert_eq!(service_rule_key(&u), "com.foo.Svc:1.0.0:g1");
        let u = Url::parse("consumer://1.2.3.4/com.foo.Svc?group=g1").unwrap();
        assert_eq!(service_rule_key(&u), "com.foo.Svc::g1");
        assert_eq!(RuleKey::AppTag("p".into()).config_key(&u), "p.tag-router");
    }
}
