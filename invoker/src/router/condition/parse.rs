//! Condition rule text → when/then matchers (`ConditionStateRouter#init/parseRule`).

use std::collections::BTreeMap;

use registry_core::url::{is_java_blank, java_trim};

use super::matcher::KeyMatcher;
use super::Dialect;
use crate::router::RouterError;

/// The matchers of one side, by key.
pub type Side = BTreeMap<String, KeyMatcher>;

/// A parsed condition: `when` (empty = match all) and `then` (`None` = blocklist).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Parsed {
    /// The rule after removing every `consumer.` and `provider.`.
    pub rewritten: String,
    /// When-part matchers; empty matches every request.
    pub when: Side,
    /// Then-part matchers; `None` is the blocklist (`x =>`, `x => false`).
    pub then: Option<Side>,
}

fn err(rule: &str, reason: impl Into<String>) -> RouterError {
    RouterError::Condition {
        condition: rule.to_owned(),
        reason: reason.into(),
    }
}

/// Parses a condition rule.
///
/// Errors: a blank rule, or a separator other than `&`, `=`, `!=`, `,` (or a value before
/// any key).
pub fn parse_condition(rule: &str, dialect: Dialect) -> Result<Parsed, RouterError> {
    // StringUtils.isBlank, String.trim and the regex `\s` are Java's, not Unicode's: a no-break
    // space is content.
    if is_java_blank(rule) {
        return Err(err(rule, "Illegal route rule!"));
    }
    let rewritten = rule.replace("consumer.", "").replace("provider.", "");
    let (when_text, then_text) = match rewritten.find("=>") {
        Some(i) => (
            Some(java_trim(&rewritten[..i])),
            java_trim(&rewritten[i + 2..]),
        ),
        None => (None, java_trim(&rewritten)),
    };
    let when = match when_text {
        None | Some("") | Some("true") => Side::new(),
        Some(w) => parse_side(w, dialect).map_err(|r| err(rule, r))?,
    };
    let then = if then_text.is_empty() || then_text == "false" {
        None
    } else {
        Some(parse_side(then_text, dialect).map_err(|r| err(rule, r))?)
    };
    Ok(Parsed {
        rewritten,
        when,
        then,
    })
}

/// Java regex `\s`: `[ \t\n\x0B\f\r]`.
fn is_java_space(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\n' | '\x0B' | '\x0C' | '\r')
}

fn is_sep(c: char) -> bool {
    matches!(c, '&' | '!' | '=' | ',')
}

/// The tokens of `([&!=,]*)\s*([^&!=,\s]+)` found one after the other (Java `Matcher#find`).
fn tokens(s: &str) -> Vec<(&str, &str)> {
    let mut out = Vec::new();
    let mut pos = 0;
    while pos < s.len() {
        let mut found = None;
        // The earliest start where the pattern matches.
        for (start, _) in s[pos..].char_indices().map(|(i, c)| (i + pos, c)) {
            let rest = &s[start..];
            let sep_len = rest.find(|c: char| !is_sep(c)).unwrap_or(rest.len());
            let after_sep = &rest[sep_len..];
            let ws = after_sep
                .find(|c: char| !is_java_space(c))
                .unwrap_or(after_sep.len());
            let content_start = &after_sep[ws..];
            let content_len = content_start
                .find(|c: char| is_sep(c) || is_java_space(c))
                .unwrap_or(content_start.len());
            if content_len > 0 {
                let content = &content_start[..content_len];
                let end = start + sep_len + ws + content_len;
                found = Some((&rest[..sep_len], content, end));
                break;
            }
            // With a shorter separator the content would have to start with a separator
            // char, which it cannot; so no match at this start.
        }
        match found {
            Some((sep, content, end)) => {
                out.push((sep, content));
                pos = end;
            }
            None => break,
        }
    }
    out
}

/// `parseRule` of one side.
///
/// Errors: an illegal separator (the message says where).
pub(crate) fn parse_side(text: &str, dialect: Dialect) -> Result<Side, String> {
    let mut side = Side::new();
    let mut current: Option<String> = None;
    // The set the last `=`/`!=` wrote (key, true = matches): Java's `values`, which a new key
    // (`&`) does not reset, so `a = 1 & b = ,x` adds `x` to a's matches.
    let mut last: Option<(String, bool)> = None;
    for (sep, content) in tokens(text) {
        match sep {
            "" => {
                side.insert(content.to_owned(), KeyMatcher::new(content, dialect));
                current = Some(content.to_owned());
            }
            "&" => {
                side.entry(content.to_owned())
                    .or_insert_with(|| KeyMatcher::new(content, dialect));
                current = Some(content.to_owned());
            }
            "=" | "!=" => {
                let Some(key) = current.clone().filter(|k| side.contains_key(k)) else {
                    return Err(format!(
                        "Illegal route rule \"{text}\", The error char '{sep}' before '{content}'."
                    ));
                };
                last = Some((key, sep == "="));
                insert(&mut side, last.as_ref(), content);
            }
            "," => {
                if !insert(&mut side, last.as_ref(), content) {
                    return Err(format!(
                        "Illegal route rule \"{text}\", The error char ',' before '{content}'."
                    ));
                }
            }
            other => {
                return Err(format!(
                    "Illegal route rule \"{text}\", The error char '{other}' at the front of '{content}'."
                ))
            }
        }
    }
    Ok(side)
}

/// Adds `content` to the set `last` names; false when there is none.
fn insert(side: &mut Side, last: Option<&(String, bool)>, content: &str) -> bool {
    let Some((key, is_match)) = last else {
        return false;
    };
    let Some(m) = side.get_mut(key) else {
        return false;
    };
    if *is_match {
        m.matches.insert(content.to_owned());
    } else {
        m.mismatches.insert(content.to_owned());
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn found_by_the_differential_tests() {
        // A comma after a new key adds to the set written last (Java's `values`).
        let s = parse_side("host = 10.0.0.1 & region = ,a", Dialect::V3).unwrap();
        assert_eq!(keys(&s)[0], ("host", vec!["10.0.0.1", "a"], vec![]));
        assert_eq!(keys(&s)[1], ("region", vec![], vec![]));
        // A comma before any `=`/`!=` is illegal.
        assert!(parse_side("host ,a", Dialect::V3).is_err());
        // Java's `\s` is ASCII: a no-break space is a value (and `!` before it is illegal).
        assert!(parse_condition("host = !\u{a0}", Dialect::V3).is_err());
        let s = parse_side("host = \u{a0}", Dialect::V3).unwrap();
        assert_eq!(keys(&s)[0], ("host", vec!["\u{a0}"], vec![]));
    }

    fn keys(s: &Side) -> Vec<(&str, Vec<&str>, Vec<&str>)> {
        s.values()
            .map(|m| {
                (
                    m.key.as_str(),
                    m.matches.iter().map(String::as_str).collect(),
                    m.mismatches.iter().map(String::as_str).collect(),
                )
            })
            .collect()
    }

    #[test]
    fn grammar() {
        let p =
            parse_condition("k = a = b & host = 1 & host = 2 => x != y, z", Dialect::V3).unwrap();
        assert_eq!(
            keys(&p.when),
            vec![
                ("host", vec!["1", "2"], vec![]),
                ("k", vec!["a", "b"], vec![])
            ]
        );
        assert_eq!(
            keys(p.then.as_ref().unwrap()),
            vec![("x", vec![], vec!["y", "z"])]
        );
        let p = parse_condition("a = b , , c => x", Dialect::V3).unwrap();
        assert_eq!(keys(&p.when), vec![("a", vec!["b", "c"], vec![])]);
        assert!(parse_condition("true => false", Dialect::V3)
            .unwrap()
            .then
            .is_none());
        assert!(parse_condition("x => FALSE", Dialect::V3)
            .unwrap()
            .then
            .is_some());
        assert!(parse_condition("=a => b=c", Dialect::V3).is_err());
        assert!(parse_condition("a=b&&c=d => x=y", Dialect::V3).is_err());
        assert!(parse_condition("a==b => x=y", Dialect::V3).is_err());
        assert!(parse_condition("   ", Dialect::V3).is_err());
        let p = parse_condition(
            "consumer.host = 1 => provider.region = consumer.x",
            Dialect::V3,
        )
        .unwrap();
        assert_eq!(p.rewritten, "host = 1 => region = x");
        let p = parse_condition("host = 1", Dialect::V3).unwrap();
        assert!(p.when.is_empty());
        assert_eq!(
            keys(p.then.as_ref().unwrap()),
            vec![("host", vec!["1"], vec![])]
        );
    }
}
