//! The v3.0 override `match` condition (Dubbo's `ConditionMatch`, routers.md R6.2/R6.3).
//!
//! A v3.0 configurator item may carry `match: {address, providerAddress, service, app, param}`;
//! [`super::config_parser`] keeps it next to the configurator URL (Java's URL attribute
//! `MATCH_CONDITION`), and [`super::configurator::Configurator`] checks it before applying
//! its parameters. Unknown fields are dropped, as Java's `PojoUtils` does (so the documented
//! `match.application` is ignored: Java's field is `app`).

use registry_core::matching::is_match_glob_pattern;
use registry_core::rule_yaml::Yaml;
use registry_core::Url;
use serde::Serialize;

use crate::router::rule_regex::{RegexBudget, RuleRegex};
use crate::router::RouterError;

const ANYHOST: &str = "0.0.0.0";

/// `StringMatch`: the first set field decides, in the order exact, prefix, regex, wildcard,
/// empty, noempty (exact/prefix/regex/wildcard never match an absent input).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct StringMatch {
    /// Equal to.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exact: Option<String>,
    /// Starts with.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prefix: Option<String>,
    /// Java `String#matches` (the whole input), compiled when the rule was parsed (an
    /// invalid pattern refuses the rule).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub regex: Option<RuleRegex>,
    /// Equal to, or `*` for any present input.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub wildcard: Option<String>,
    /// The input is absent or empty.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub empty: Option<String>,
    /// The input is present and not empty.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub noempty: Option<String>,
}

impl StringMatch {
    /// `StringMatch#isMatch`.
    pub fn is_match(&self, input: Option<&str>) -> bool {
        if let (Some(e), Some(i)) = (&self.exact, input) {
            return i == e;
        }
        if let (Some(p), Some(i)) = (&self.prefix, input) {
            return i.starts_with(p.as_str());
        }
        if let (Some(r), Some(i)) = (&self.regex, input) {
            return r.is_match(i);
        }
        if let (Some(w), Some(i)) = (&self.wildcard, input) {
            return i == w || w == "*";
        }
        if self.empty.is_some() {
            return input.is_none_or(str::is_empty);
        }
        if self.noempty.is_some() {
            return input.is_some_and(|s| !s.is_empty());
        }
        false
    }

    fn from_yaml(y: &Yaml, regexes: &mut RegexBudget) -> Result<StringMatch, RouterError> {
        let f = |k: &str| scalar(&y[k]);
        let regex = match f("regex") {
            Some(r) => Some(regexes.compile(&r)?),
            None => None,
        };
        Ok(StringMatch {
            exact: f("exact"),
            prefix: f("prefix"),
            regex,
            wildcard: f("wildcard"),
            empty: f("empty"),
            noempty: f("noempty"),
        })
    }
}

/// `AddressMatch`: `cird` (CIDR or IP expression), `wildcard` (glob; `0.0.0.0`/`*` = any),
/// `exact`; the first set field decides. An empty input never matches.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct AddressMatch {
    /// CIDR (`10.0.0.0/8`) or IP expression (`10.0.0.*`, `10.0.0.1-9`), or the input itself.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cird: Option<String>,
    /// Glob on the input (only the last `*` is a wildcard).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub wildcard: Option<String>,
    /// Equal to.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exact: Option<String>,
}

impl AddressMatch {
    /// `AddressMatch#isMatch`.
    pub fn is_match(&self, input: Option<&str>) -> bool {
        let Some(input) = input.filter(|s| !s.is_empty()) else {
            return false;
        };
        if let Some(c) = &self.cird {
            return input == c || registry_core::ip::matches_address(c, input);
        }
        if let Some(w) = &self.wildcard {
            if w == ANYHOST || w == "*" {
                return true;
            }
            return is_match_glob_pattern(w, Some(input), None);
        }
        if let Some(e) = &self.exact {
            return input == e;
        }
        false
    }

    fn from_yaml(y: &Yaml) -> AddressMatch {
        AddressMatch {
            cird: scalar(&y["cird"]),
            wildcard: scalar(&y["wildcard"]),
            exact: scalar(&y["exact"]),
        }
    }
}

/// `ListStringMatch`: any of `oneof` matches.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ListStringMatch {
    /// The alternatives.
    pub oneof: Vec<StringMatch>,
}

impl ListStringMatch {
    /// True when one alternative matches.
    pub fn is_match(&self, input: Option<&str>) -> bool {
        self.oneof.iter().any(|m| m.is_match(input))
    }

    fn from_yaml(y: &Yaml, regexes: &mut RegexBudget) -> Result<ListStringMatch, RouterError> {
        let mut oneof = Vec::new();
        for v in y["oneof"].as_vec().map(Vec::as_slice).unwrap_or_default() {
            oneof.push(StringMatch::from_yaml(v, regexes)?);
        }
        Ok(ListStringMatch { oneof })
    }
}

/// `ParamMatch`: the URL parameter `key` is present and matches `value`.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ParamMatch {
    /// Parameter name.
    pub key: Option<String>,
    /// Its condition.
    pub value: StringMatch,
}

impl ParamMatch {
    /// `ParamMatch#isMatch`.
    pub fn is_match(&self, url: &Url) -> bool {
        let Some(k) = &self.key else { return false };
        match url.param(k) {
            Some(v) => self.value.is_match(Some(v)),
            None => false,
        }
    }
}

/// `ConditionMatch`: every set part must hold.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ConditionMatch {
    /// On the host the configurator checks (provider host, or the consumer's own IP).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub address: Option<AddressMatch>,
    /// On the target URL's `host:port`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub provider_address: Option<AddressMatch>,
    /// On the target's service key (`[group/]interface[:version]`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub service: Option<ListStringMatch>,
    /// On the target's `application` param.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub app: Option<ListStringMatch>,
    /// On target params.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub param: Option<Vec<ParamMatch>>,
}

impl ConditionMatch {
    /// `ConditionMatch#isMatch(host, url)`.
    pub fn is_match(&self, host: &str, url: &Url) -> bool {
        if let Some(a) = &self.address {
            if !a.is_match(Some(host)) {
                return false;
            }
        }
        if let Some(a) = &self.provider_address {
            if !a.is_match(url.address().as_deref()) {
                return false;
            }
        }
        if let Some(s) = &self.service {
            if !s.is_match(url.service_key().as_deref()) {
                return false;
            }
        }
        if let Some(a) = &self.app {
            if !a.is_match(url.param("application")) {
                return false;
            }
        }
        if let Some(ps) = &self.param {
            if !ps.iter().all(|p| p.is_match(url)) {
                return false;
            }
        }
        true
    }

    /// The `match` object of a configurator item; `None` for a YAML null/absent value.
    ///
    /// Errors: an invalid or oversized `regex`, or too many of them in the rule.
    pub(crate) fn from_yaml(
        y: &Yaml,
        regexes: &mut RegexBudget,
    ) -> Result<Option<ConditionMatch>, RouterError> {
        if y.is_null() || y.is_badvalue() {
            return Ok(None);
        }
        let part = |k: &str| {
            let v = &y[k];
            (!v.is_null() && !v.is_badvalue()).then_some(v)
        };
        let list = |k: &str, regexes: &mut RegexBudget| {
            part(k)
                .map(|v| ListStringMatch::from_yaml(v, regexes))
                .transpose()
        };
        let service = list("service", regexes)?;
        let app = list("app", regexes)?;
        let param = match part("param") {
            None => None,
            Some(p) => {
                let mut out = Vec::new();
                for m in p.as_vec().map(Vec::as_slice).unwrap_or_default() {
                    out.push(ParamMatch {
                        key: scalar(&m["key"]),
                        value: StringMatch::from_yaml(&m["value"], regexes)?,
                    });
                }
                Some(out)
            }
        };
        Ok(Some(ConditionMatch {
            address: part("address").map(AddressMatch::from_yaml),
            provider_address: part("providerAddress").map(AddressMatch::from_yaml),
            service,
            app,
            param,
        }))
    }
}

/// A YAML scalar as Java's `toString` of the SnakeYAML value; `None` for null, absent or a
/// collection.
pub(crate) fn scalar(y: &Yaml) -> Option<String> {
    match y {
        Yaml::String(s) | Yaml::Real(s) => Some(s.clone()),
        Yaml::Integer(i) => Some(i.to_string()),
        Yaml::Boolean(b) => Some(b.to_string()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sm(exact: Option<&str>, wildcard: Option<&str>) -> StringMatch {
        StringMatch {
            exact: exact.map(str::to_owned),
            wildcard: wildcard.map(str::to_owned),
            ..StringMatch::default()
        }
    }

    #[test]
    fn string_match_order_and_null_input() {
        assert!(sm(Some("a"), None).is_match(Some("a")));
        assert!(!sm(Some("a"), None).is_match(None));
        assert!(sm(None, Some("*")).is_match(Some("x")));
        assert!(!sm(None, Some("*")).is_match(None));
        let re = StringMatch {
            regex: Some(RuleRegex::new("a.c").unwrap()),
            ..StringMatch::default()
        };
        assert!(re.is_match(Some("abc")));
        assert!(!re.is_match(Some("abcd")), "regex is a full match");
        let empty = StringMatch {
            empty: Some("true".into()),
            ..StringMatch::default()
        };
        assert!(empty.is_match(None) && empty.is_match(Some("")) && !empty.is_match(Some("x")));
    }

    #[test]
    fn addresses() {
        let cidr = AddressMatch {
            cird: Some("10.0.0.0/8".into()),
            ..AddressMatch::default()
        };
        assert!(cidr.is_match(Some("10.2.3.4")));
        assert!(cidr.is_match(Some("10.2.3.4:20880")));
        assert!(!cidr.is_match(Some("11.2.3.4")));
        assert!(!cidr.is_match(None));
        let v6 = AddressMatch {
            cird: Some("fd00::/8".into()),
            ..AddressMatch::default()
        };
        assert!(v6.is_match(Some("[fd00::1]:20880")));
        assert!(!v6.is_match(Some("[fe80::1]:20880")));
    }
}
