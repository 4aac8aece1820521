//! YAML rule documents from the config centre (`AbstractRouterRule`, `ConditionRuleParser`,
//! `TagRuleParser`; routers.md R3.2, R4.1): the fields as Java reads them, before the
//! conditions are compiled.
//!
//! Every rule text is read once through [`load_rule`] ([`registry_core::rule_yaml`]: size,
//! nesting, alias and expansion limits), and `regex` fields are compiled while the document
//! is read (the bounded `RuleRegex`), so a hostile rule is refused as a whole before it is applied.

use registry_core::rule_yaml::{self, Yaml};

use crate::router::rule_regex::{RegexBudget, RuleRegex};
use crate::router::RouterError;

/// Fields every rule has. `runtime`, `priority`, `dynamic`, `scope` and `key` are parsed
/// and, as in Java, never used for routing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuleCommon {
    /// `force` (default false).
    pub force: bool,
    /// `enabled` (default true).
    pub enabled: bool,
    /// `runtime` (default true).
    pub runtime: bool,
    /// `valid` (default true; false when there is nothing to apply).
    pub valid: bool,
    /// `dynamic` (default false).
    pub dynamic: bool,
    /// `priority` (default 0).
    pub priority: i32,
    /// `scope`.
    pub scope: Option<String>,
    /// `key`.
    pub key: Option<String>,
    /// `configVersion`.
    pub config_version: Option<String>,
}

/// The body of a condition rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConditionBody {
    /// v3.0 (and anything below v3.1): condition strings applied in order.
    V30(Vec<String>),
    /// v3.1: `from`/`to` conditions.
    V31(Vec<MultiDestSpec>),
}

/// One v3.1 condition: `from.match` and the `to` entries `(match, weight)`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MultiDestSpec {
    /// `from.match` (absent = every call).
    pub from: Option<String>,
    /// `to` entries.
    pub to: Vec<(Option<String>, i64)>,
}

/// A condition rule document.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConditionDoc {
    /// Common fields.
    pub common: RuleCommon,
    /// The conditions.
    pub body: ConditionBody,
}

/// One tag of a tag rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TagSpec {
    /// `name`.
    pub name: String,
    /// `addresses` (absent when not a list).
    pub addresses: Option<Vec<String>>,
    /// `match` (`key`, StringMatch), read only under `configVersion: v3.0*`.
    pub matches: Vec<(String, StringMatch)>,
}

/// Dubbo's `StringMatch`: the first field set decides.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct StringMatch {
    /// `exact`.
    pub exact: Option<String>,
    /// `prefix`.
    pub prefix: Option<String>,
    /// `regex` (full match), compiled when the rule was parsed.
    pub regex: Option<RuleRegex>,
    /// `wildcard` (equal, or `*` = any non-null).
    pub wildcard: Option<String>,
    /// `empty`: the input is null or "".
    pub empty: Option<String>,
    /// `noempty`: the input is non-empty.
    pub noempty: Option<String>,
}

impl StringMatch {
    /// `StringMatch#isMatch`.
    pub fn is_match(&self, input: Option<&str>) -> bool {
        if let Some(e) = &self.exact {
            return input == Some(e.as_str());
        }
        if let Some(p) = &self.prefix {
            return input.is_some_and(|i| i.starts_with(p.as_str()));
        }
        if let Some(r) = &self.regex {
            return input.is_some_and(|i| r.is_match(i));
        }
        if let Some(w) = &self.wildcard {
            return input.is_some_and(|i| i == w || w == "*");
        }
        if self.empty.is_some() {
            return input.is_none_or(str::is_empty);
        }
        if self.noempty.is_some() {
            return input.is_some_and(|i| !i.is_empty());
        }
        false
    }
}

/// A tag rule document.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TagDoc {
    /// Common fields (`valid` false when there are no tags).
    pub common: RuleCommon,
    /// The tags.
    pub tags: Vec<TagSpec>,
}

/// Reads a rule text ([`registry_core::rule_yaml::load`], bounded) whose top level must be
/// a map.
///
/// Errors: [`RouterError::Limit`] past a limit, [`RouterError::Yaml`] when it is not YAML or
/// not a map.
pub fn load_rule(raw: &str) -> Result<Yaml, RouterError> {
    match rule_yaml::load(raw).map_err(RouterError::from_yaml)? {
        y @ Yaml::Hash(_) => Ok(y),
        _ => Err(RouterError::Yaml("the top level is not a map".into())),
    }
}

fn get<'y>(map: &'y Yaml, key: &str) -> Option<&'y Yaml> {
    match map {
        Yaml::Hash(h) => h
            .get(&Yaml::String(key.to_owned()))
            .filter(|v| !matches!(v, Yaml::Null)),
        _ => None,
    }
}

/// Java's `String.valueOf(object)` of a YAML value (`None` for null).
pub fn to_java_string(y: &Yaml) -> Option<String> {
    Some(match y {
        Yaml::String(s) | Yaml::Real(s) => s.clone(),
        Yaml::Integer(i) => i.to_string(),
        Yaml::Boolean(b) => b.to_string(),
        Yaml::Null | Yaml::BadValue => return None,
        Yaml::Array(a) => format!(
            "[{}]",
            a.iter()
                .map(|v| to_java_string(v).unwrap_or_else(|| "null".into()))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        Yaml::Hash(h) => format!(
            "{{{}}}",
            h.iter()
                .map(|(k, v)| format!(
                    "{}={}",
                    to_java_string(k).unwrap_or_else(|| "null".into()),
                    to_java_string(v).unwrap_or_else(|| "null".into())
                ))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        Yaml::Alias(_) => return None,
    })
}

/// `Boolean.parseBoolean(value.toString())`, with YAML 1.1's `yes`/`on` as booleans
/// (SnakeYAML resolves them; a quoted `'yes'` is therefore also true here).
fn bool_field(map: &Yaml, key: &str, default: bool) -> bool {
    match get(map, key) {
        None => default,
        Some(Yaml::Boolean(b)) => *b,
        Some(v) => to_java_string(v).is_some_and(|s| {
            s.eq_ignore_ascii_case("true")
                || matches!(s.as_str(), "yes" | "Yes" | "YES" | "on" | "On" | "ON")
        }),
    }
}

/// A field Java casts to `String`: any other YAML type is refused (ClassCastException).
fn string_field(map: &Yaml, key: &str) -> Result<Option<String>, RouterError> {
    match get(map, key) {
        None => Ok(None),
        Some(Yaml::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(RouterError::Invalid(format!("{key} must be a string"))),
    }
}

fn common(map: &Yaml) -> Result<RuleCommon, RouterError> {
    let priority = match get(map, "priority") {
        None => 0,
        Some(v) => to_java_string(v)
            .and_then(|s| s.parse::<i32>().ok())
            .ok_or_else(|| RouterError::Invalid("priority must be an integer".into()))?,
    };
    Ok(RuleCommon {
        force: bool_field(map, "force", false),
        enabled: bool_field(map, "enabled", true),
        runtime: bool_field(map, "runtime", true),
        valid: bool_field(map, "valid", true),
        dynamic: bool_field(map, "dynamic", false),
        priority,
        scope: string_field(map, "scope")?,
        key: string_field(map, "key")?,
        config_version: string_field(map, "configVersion")?,
    })
}

/// Java's `String#compareToIgnoreCase` (by UTF-16 unit, lower-cased).
fn compare_ignore_case(a: &str, b: &str) -> std::cmp::Ordering {
    let la: Vec<u16> = a.to_lowercase().encode_utf16().collect();
    let lb: Vec<u16> = b.to_lowercase().encode_utf16().collect();
    la.cmp(&lb)
}

/// Parses a condition rule (`ConditionRuleParser#parse`). `Ok(None)`: a version above v3.1
/// (Java returns a null rule).
///
/// Errors: not YAML or not a map; a field of the wrong type; a v3.1 rule without
/// `conditions` or with a malformed condition or weight.
pub fn parse_condition_doc(raw: &str) -> Result<Option<ConditionDoc>, RouterError> {
    condition_doc(&load_rule(raw)?)
}

/// [`parse_condition_doc`] of a document already read with [`load_rule`].
///
/// Errors: as [`parse_condition_doc`].
pub fn condition_doc(map: &Yaml) -> Result<Option<ConditionDoc>, RouterError> {
    let mut common = common(map)?;
    let version = common.config_version.clone();
    let lower = version.as_deref().map(str::to_lowercase);
    let body = if lower.as_deref().is_some_and(|v| v.starts_with("v3.1")) {
        let Some(conds) = get(map, "conditions") else {
            return Err(RouterError::Invalid("a v3.1 rule needs conditions".into()));
        };
        let Yaml::Array(items) = conds else {
            return Err(RouterError::Invalid("conditions must be a list".into()));
        };
        let mut specs = Vec::with_capacity(items.len());
        for item in items {
            specs.push(multi_dest_spec(item)?);
        }
        ConditionBody::V31(specs)
    } else if version
        .as_deref()
        .is_some_and(|v| compare_ignore_case(v, "v3.1").is_gt())
    {
        return Ok(None);
    } else {
        let conds = match get(map, "conditions") {
            Some(Yaml::Array(items)) => items
                .iter()
                .map(|v| to_java_string(v).unwrap_or_else(|| "null".into()))
                .collect(),
            _ => Vec::new(),
        };
        ConditionBody::V30(conds)
    };
    let empty = match &body {
        ConditionBody::V30(c) => c.is_empty(),
        ConditionBody::V31(c) => c.is_empty(),
    };
    if empty {
        common.valid = false;
    }
    Ok(Some(ConditionDoc { common, body }))
}

fn multi_dest_spec(item: &Yaml) -> Result<MultiDestSpec, RouterError> {
    let bad = |what: &str| RouterError::Invalid(format!("v3.1 condition: {what}"));
    if !matches!(item, Yaml::Hash(_)) {
        return Err(bad("each condition must be a map"));
    }
    let from = match get(item, "from") {
        None => None,
        Some(f @ Yaml::Hash(_)) => get(f, "match").and_then(to_java_string),
        Some(_) => return Err(bad("from must be a map")),
    };
    let mut to = Vec::new();
    match get(item, "to") {
        None => {}
        Some(Yaml::Array(entries)) => {
            for e in entries {
                if !matches!(e, Yaml::Hash(_)) {
                    return Err(bad("each to entry must be a map"));
                }
                let m = get(e, "match").and_then(to_java_string);
                let w = match get(e, "weight") {
                    None => i64::from(crate::keys::DEFAULT_WEIGHT),
                    Some(v) => to_java_string(v)
                        .and_then(|s| s.trim().parse::<i32>().ok())
                        .map(i64::from)
                        .ok_or_else(|| bad("weight must be an integer"))?,
                };
                to.push((m, w));
            }
        }
        Some(_) => return Err(bad("to must be a list")),
    }
    Ok(MultiDestSpec { from, to })
}

/// Parses a tag rule (`TagRuleParser#parse`).
///
/// Errors: not YAML or not a map; a field of the wrong type.
pub fn parse_tag_doc(raw: &str) -> Result<TagDoc, RouterError> {
    tag_doc(&load_rule(raw)?)
}

/// [`parse_tag_doc`] of a document already read with [`load_rule`].
///
/// Errors: as [`parse_tag_doc`], and an invalid or oversized `regex`.
pub fn tag_doc(map: &Yaml) -> Result<TagDoc, RouterError> {
    let mut common = common(map)?;
    let mut regexes = RegexBudget::default();
    let read_match = common
        .config_version
        .as_deref()
        .is_some_and(|v| v.starts_with("v3.0"));
    let mut tags = Vec::new();
    if let Some(Yaml::Array(items)) = get(map, "tags") {
        for item in items {
            if !matches!(item, Yaml::Hash(_)) {
                return Err(RouterError::Invalid("each tag must be a map".into()));
            }
            let name = match get(item, "name") {
                None => String::new(),
                Some(Yaml::String(s)) => s.clone(),
                Some(_) => return Err(RouterError::Invalid("tag name must be a string".into())),
            };
            let addresses = match get(item, "addresses") {
                Some(Yaml::Array(a)) => Some(
                    a.iter()
                        .map(|v| to_java_string(v).unwrap_or_else(|| "null".into()))
                        .collect(),
                ),
                _ => None,
            };
            let mut matches = Vec::new();
            if read_match {
                if let Some(m) = get(item, "match") {
                    let Yaml::Array(ms) = m else {
                        return Err(RouterError::Invalid("tag match must be a list".into()));
                    };
                    for pm in ms {
                        let key = get(pm, "key").and_then(to_java_string).unwrap_or_default();
                        let v = get(pm, "value");
                        let f = |k: &str| v.and_then(|v| get(v, k)).and_then(to_java_string);
                        let regex = match f("regex") {
                            Some(r) => Some(regexes.compile(&r)?),
                            None => None,
                        };
                        matches.push((
                            key,
                            StringMatch {
                                exact: f("exact"),
                                prefix: f("prefix"),
                                regex,
                                wildcard: f("wildcard"),
                                empty: f("empty"),
                                noempty: f("noempty"),
                            },
                        ));
                    }
                }
            }
            tags.push(TagSpec {
                name,
                addresses,
                matches,
            });
        }
    }
    if tags.is_empty() {
        common.valid = false;
    }
    Ok(TagDoc { common, tags })
}

/// The `configVersion` of a rule document, when it has one as a string.
pub fn config_version_of(map: &Yaml) -> Option<String> {
    string_field(map, "configVersion").ok().flatten()
}

/// True when the document is a script rule (`ScriptRule` YAML with `script:`/`type:`),
/// which is refused.
pub fn is_script_rule(map: &Yaml) -> bool {
    get(map, "script").is_some()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn yaml_is_read_as_snakeyaml_reads_it() {
        // Found by the differential tests against ServiceStateRouter / ConfigParser.
        // A non-printable character makes the whole text unreadable.
        assert!(load_rule("conditions:\n  - ' => group != \u{7f}'\n").is_err());
        assert!(load_rule("a: \u{0}\n").is_err());
        assert!(load_rule("a: 'tab\tand nbsp\u{a0} ok'\n").is_ok());
        // A duplicate key keeps its last value, in the first one's place.
        let doc = load_rule("a: 1\nb: 2\na: 3\n").unwrap();
        let h = doc.as_hash().unwrap();
        let pairs: Vec<(String, i64)> = h
            .iter()
            .map(|(k, v)| (k.as_str().unwrap().to_owned(), v.as_i64().unwrap()))
            .collect();
        assert_eq!(pairs, vec![("a".to_owned(), 3), ("b".to_owned(), 2)]);
        // Anchors and aliases still resolve; nesting is kept.
        let doc = load_rule("x: &v [1, {y: 2}]\nz: *v\n").unwrap();
        assert_eq!(doc["z"], doc["x"]);
        assert_eq!(doc["x"][1]["y"].as_i64(), Some(2));
    }

    #[test]
    fn condition_versions() {
        let d = parse_condition_doc("conditions:\n  - => a=b\n")
            .unwrap()
            .unwrap();
        assert_eq!(d.body, ConditionBody::V30(vec!["=> a=b".into()]));
        assert!(d.common.valid && !d.common.force && d.common.enabled && d.common.runtime);
        assert!(
            parse_condition_doc("configVersion: v3.2\nconditions:\n  - => a=b\n")
                .unwrap()
                .is_none()
        );
        assert!(parse_condition_doc("configVersion: 3.0\nconditions:\n  - => a=b\n").is_err());
        let d = parse_condition_doc("configVersion: v3.0\nforce: yes\nconditions:\n  - => a=b\n")
            .unwrap()
            .unwrap();
        assert!(d.common.force);
        let d = parse_condition_doc("configVersion: v3.0\nconditions: []\n")
            .unwrap()
            .unwrap();
        assert!(!d.common.valid);
        assert!(parse_condition_doc("configVersion: v3.1\n").is_err());
        assert!(parse_condition_doc("- a\n- b\n").is_err());
        assert!(parse_condition_doc("a: [\n").is_err());
        let d = parse_condition_doc("configVersion: V3.1\nconditions:\n  - from:\n    to:\n      - match: a=b\n        weight: 0\n").unwrap().unwrap();
        assert_eq!(
            d.body,
            ConditionBody::V31(vec![MultiDestSpec {
                from: None,
                to: vec![(Some("a=b".into()), 0)]
            }])
        );
        assert!(parse_condition_doc(
            "configVersion: v3.1\nconditions:\n  - to:\n      - match: a=b\n        weight: x\n"
        )
        .is_err());
    }

    #[test]
    fn string_match() {
        let m = StringMatch {
            wildcard: Some("*".into()),
            ..Default::default()
        };
        assert!(m.is_match(Some("x")) && !m.is_match(None));
        let m = StringMatch {
            regex: Some(RuleRegex::new("a.c").unwrap()),
            ..Default::default()
        };
        assert!(m.is_match(Some("abc")) && !m.is_match(Some("abcd")));
        let m = StringMatch {
            empty: Some("true".into()),
            ..Default::default()
        };
        assert!(m.is_match(None) && m.is_match(Some("")) && !m.is_match(Some("a")));
    }
}
