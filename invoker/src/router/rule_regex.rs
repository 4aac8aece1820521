//! [`RuleRegex`]: a `regex` field of a rule (`StringMatch.regex` in tag-rule and override-rule
//! `match` conditions), compiled once when the rule is parsed, within bounds.
//!
//! Java compiles the pattern on every call (`String#matches`) and throws on an invalid one
//! while routing; here an invalid pattern, or one over the limits below, refuses the whole
//! rule when it is parsed (the previous rule stays). The `regex` crate matches in linear
//! time, so no input makes a match slow; what a hostile rule could still cost is memory, so:
//!
//! | limit | value |
//! |---|---|
//! | compiled program size ([`REGEX_SIZE_LIMIT`]) | 64 KiB |
//! | lazy DFA cache ([`REGEX_DFA_SIZE_LIMIT`]) | 64 KiB |
//! | nesting of groups and repetitions ([`REGEX_NEST_LIMIT`]) | 64 |
//! | regexes in one rule ([`MAX_REGEXES_PER_RULE`]) | 256 |

use std::fmt;

use serde::{Serialize, Serializer};

use crate::router::RouterError;

/// Largest compiled program of one pattern (`RegexBuilder::size_limit`).
pub(crate) const REGEX_SIZE_LIMIT: usize = 64 * 1024;
/// Largest lazy-DFA cache of one pattern (`RegexBuilder::dfa_size_limit`).
pub(crate) const REGEX_DFA_SIZE_LIMIT: usize = 64 * 1024;
/// Deepest nesting of a pattern (`RegexBuilder::nest_limit`).
pub(crate) const REGEX_NEST_LIMIT: u32 = 64;
/// Most `regex` fields one rule may hold.
pub(crate) const MAX_REGEXES_PER_RULE: usize = 256;

/// A compiled full-match pattern (Java's `String#matches`: the whole input must match).
#[derive(Clone)]
pub struct RuleRegex {
    source: String,
    re: regex::Regex,
}

impl RuleRegex {
    /// Compiles `pattern` as a full match.
    ///
    /// Errors: [`RouterError::Invalid`] when the pattern does not parse or passes a limit.
    pub fn new(pattern: &str) -> Result<RuleRegex, RouterError> {
        let re = regex::RegexBuilder::new(&format!("^(?:{pattern})$"))
            .size_limit(REGEX_SIZE_LIMIT)
            .dfa_size_limit(REGEX_DFA_SIZE_LIMIT)
            .nest_limit(REGEX_NEST_LIMIT)
            .build()
            .map_err(|e| {
                let why = match e {
                    regex::Error::CompiledTooBig(_) => "too big when compiled".to_owned(),
                    other => other.to_string().lines().last().unwrap_or("").to_owned(),
                };
                RouterError::Invalid(format!("regex {pattern:?} refused: {why}"))
            })?;
        Ok(RuleRegex {
            source: pattern.to_owned(),
            re,
        })
    }

    /// True when the whole `input` matches.
    pub fn is_match(&self, input: &str) -> bool {
        self.re.is_match(input)
    }

    /// The pattern as written in the rule.
    pub fn as_str(&self) -> &str {
        &self.source
    }
}

impl PartialEq for RuleRegex {
    fn eq(&self, other: &Self) -> bool {
        self.source == other.source
    }
}

impl Eq for RuleRegex {}

impl fmt::Debug for RuleRegex {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "RuleRegex({:?})", self.source)
    }
}

impl Serialize for RuleRegex {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.source)
    }
}

/// Counts the `regex` fields of one rule against [`MAX_REGEXES_PER_RULE`] before each is
/// compiled.
#[derive(Debug, Default)]
pub(crate) struct RegexBudget {
    used: usize,
}

impl RegexBudget {
    /// Compiles `pattern` if the rule may hold one more regex.
    ///
    /// Errors: too many regexes in the rule, or [`RuleRegex::new`]'s.
    pub(crate) fn compile(&mut self, pattern: &str) -> Result<RuleRegex, RouterError> {
        self.used += 1;
        if self.used > MAX_REGEXES_PER_RULE {
            return Err(RouterError::Invalid(format!(
                "more than {MAX_REGEXES_PER_RULE} regex fields in one rule"
            )));
        }
        RuleRegex::new(pattern)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn full_match_compiled_once() {
        let r = RuleRegex::new("a.c|x").unwrap();
        assert!(r.is_match("abc") && r.is_match("x") && !r.is_match("abcd") && !r.is_match("xa"));
        assert_eq!(r.as_str(), "a.c|x");
        assert_eq!(r, RuleRegex::new("a.c|x").unwrap());
    }

    #[test]
    fn bounded() {
        for bad in [
            "gr(ay",
            "(?:a{1000}){1000}",
            &format!("{}a{}", "(".repeat(100), ")".repeat(100)),
        ] {
            let e = RuleRegex::new(bad).unwrap_err();
            assert!(e.to_string().contains("regex"), "{e}");
        }
        let mut b = RegexBudget::default();
        for _ in 0..MAX_REGEXES_PER_RULE {
            b.compile("a").unwrap();
        }
        assert!(b.compile("a").is_err());
    }
}
