//! One key of a condition and how it reads its sample (`R/condition/matcher/**`).

use std::borrow::Cow;
use std::collections::BTreeSet;

use registry_core::Url;

use super::pattern::pattern_match;
use super::Dialect;
use crate::router::sample::{java_string, original_value, RouteCall};

/// The value Java's attachment and argument matchers return when the key cannot be read; an
/// ordinary value: `=` fails and `!=` passes.
pub(crate) const NOT_FOUND: &str = "dubbo_internal_not_found_argument_condition_value";

/// Which extension reads a key's value (by factory order: attachments, arguments, param).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MatcherKind {
    /// `URL` param (and `method`/`methods`), `UrlParamConditionMatcher`.
    Param,
    /// `attachments[k]`, `AttachmentConditionMatcher`.
    Attachment,
    /// `arguments[i]`, `ArgumentConditionMatcher`.
    Argument,
}

impl MatcherKind {
    /// The kind for a key in a dialect (2.x has no attachment matcher).
    pub fn of(key: &str, dialect: Dialect) -> MatcherKind {
        if key.starts_with("attachments") && dialect == Dialect::V3 {
            MatcherKind::Attachment
        } else if key.starts_with("arguments") {
            MatcherKind::Argument
        } else {
            MatcherKind::Param
        }
    }

    /// Name used by the conformance vectors.
    pub fn name(self) -> &'static str {
        match self {
            MatcherKind::Param => "param",
            MatcherKind::Attachment => "attachment",
            MatcherKind::Argument => "argument",
        }
    }
}

/// The match and mismatch sets of one key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyMatcher {
    /// The key as written (after `consumer.`/`provider.` removal).
    pub key: String,
    /// How the value is read.
    pub kind: MatcherKind,
    /// `=` values.
    pub matches: BTreeSet<String>,
    /// `!=` values.
    pub mismatches: BTreeSet<String>,
}

/// The text inside `<name>[...]` of the key's part before its first `.`.
fn bracket_index<'k>(key: &'k str, name: &str) -> Option<&'k str> {
    let head = key.split('.').next().unwrap_or("");
    let at = head.find(&format!("{name}["))?;
    let rest = &head[at + name.len() + 1..];
    let end = rest.find(']')?;
    let inner = &rest[..end];
    (!inner.is_empty()).then_some(inner)
}

impl KeyMatcher {
    /// A matcher with no values.
    pub fn new(key: &str, dialect: Dialect) -> KeyMatcher {
        KeyMatcher {
            key: key.to_owned(),
            kind: MatcherKind::of(key, dialect),
            matches: BTreeSet::new(),
            mismatches: BTreeSet::new(),
        }
    }

    /// True when the value depends on the invocation's arguments or attachments.
    pub fn reads_call_details(&self) -> bool {
        self.kind != MatcherKind::Param
    }

    /// True when the key reads the method name.
    pub fn reads_method(&self) -> bool {
        self.kind == MatcherKind::Param && (self.key == "method" || self.key == "methods")
    }

    fn value<'a>(
        &self,
        sample: &'a Url,
        call: Option<&RouteCall<'a>>,
        dialect: Dialect,
    ) -> Option<Cow<'a, str>> {
        match self.kind {
            MatcherKind::Param => match call {
                Some(c) if !c.is_none() && self.reads_method() => c.method.map(Cow::Borrowed),
                _ => original_value(sample, &self.key),
            },
            MatcherKind::Attachment => {
                let Some(call) = call.filter(|c| !c.is_none()) else {
                    return Some(Cow::Borrowed(NOT_FOUND));
                };
                match bracket_index(&self.key, "attachments")
                    .filter(|k| k.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_'))
                {
                    None => Some(Cow::Borrowed(NOT_FOUND)),
                    Some(k) => call.attachment(k).map(Cow::Borrowed),
                }
            }
            MatcherKind::Argument => {
                let idx = bracket_index(&self.key, "arguments")
                    .filter(|i| i.bytes().all(|b| b.is_ascii_digit()))
                    .and_then(|i| i.parse::<usize>().ok());
                let arg = call
                    .and_then(|c| c.arguments)
                    .zip(idx)
                    .and_then(|(args, i)| args.get(i));
                match (arg, dialect) {
                    (Some(v), _) => Some(java_string(v)),
                    (None, Dialect::V3) => Some(Cow::Borrowed(NOT_FOUND)),
                    (None, Dialect::V27) => None,
                }
            }
        }
    }

    /// The value a then-part reads from a provider URL (no call). Only a
    /// [`MatcherKind::Param`] key reads the URL; the other kinds give a constant.
    pub(crate) fn then_value<'a>(&self, sample: &'a Url, dialect: Dialect) -> Option<Cow<'a, str>> {
        self.value(sample, None, dialect)
    }

    /// `AbstractConditionMatcher#isMatch`. `sample` is the consumer URL (when-part) or the
    /// provider URL (then-part); `param` is the consumer URL in a then-part; `call` is the
    /// invocation in a when-part (`None` in a then-part).
    pub fn is_match(
        &self,
        sample: &Url,
        param: Option<&Url>,
        call: Option<&RouteCall<'_>>,
        is_when: bool,
        dialect: Dialect,
    ) -> bool {
        let value = self.value(sample, call, dialect);
        self.is_match_value(value.as_deref(), param, is_when, dialect)
    }

    /// [`KeyMatcher::is_match`] on the value already read (`None`: absent).
    pub fn is_match_value(
        &self,
        value: Option<&str>,
        param: Option<&Url>,
        is_when: bool,
        dialect: Dialect,
    ) -> bool {
        let Some(value) = value else {
            // 3.x: an absent value never matches; 2.x: it passes a mismatch-only condition.
            return dialect == Dialect::V27 && self.matches.is_empty();
        };
        let pm = |p: &String| match dialect {
            Dialect::V3 => pattern_match(p, value, param, is_when),
            Dialect::V27 => super::pattern::glob_with_ref(p, value, param),
        };
        if self.mismatches.iter().any(pm) {
            return false;
        }
        if !self.matches.is_empty() {
            return self.matches.iter().any(pm);
        }
        !self.mismatches.is_empty()
    }
}
