//! Value patterns of a condition (`R/condition/matcher/pattern`): integer ranges (`1~100`)
//! and globs with `$` references.

use registry_core::Url;

use crate::router::sample::raw_parameter;

/// `StringUtils.parseInteger`: digits only, else 0; `None` on overflow (Java throws).
fn parse_integer(s: &str) -> Option<i32> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return Some(0);
    }
    s.parse::<i32>().ok()
}

/// `RangeValuePattern#match`: `a~b` inclusive, `~b`, `a~` (invalid: split drops the empty
/// tail). Invalid patterns and overflowing numbers give `!is_when`.
pub(crate) fn range_match(pattern: &str, value: &str, is_when: bool) -> bool {
    let default = !is_when;
    let Some(v) = parse_integer(value) else {
        return default;
    };
    // Java's split("~") drops trailing empty strings.
    let mut parts: Vec<&str> = pattern.split('~').collect();
    while parts.last().is_some_and(|p| p.is_empty()) {
        parts.pop();
    }
    if parts.len() < 2 {
        return default;
    }
    let (start, end) = (parts[0], parts[1]);
    if start.is_empty() {
        match parse_integer(end) {
            Some(e) => v <= e,
            None => default,
        }
    } else if end.is_empty() {
        match parse_integer(start) {
            Some(s) => v >= s,
            None => default,
        }
    } else {
        match (parse_integer(start), parse_integer(end)) {
            (Some(s), Some(e)) => v >= s && v <= e,
            _ => default,
        }
    }
}

/// `UrlUtils#isMatchGlobPattern(pattern, value)` ([`registry_core::matching::glob_match`]);
/// an absent pattern is the empty one.
pub(crate) fn glob_match(pattern: Option<&str>, value: &str) -> bool {
    registry_core::matching::glob_match(pattern.unwrap_or(""), value)
}

/// One value pattern of a matcher against a sample value. `param` is the consumer URL in a
/// then-part (`$name` references), `None` in a when-part.
pub(crate) fn pattern_match(
    pattern: &str,
    value: &str,
    param: Option<&Url>,
    is_when: bool,
) -> bool {
    if pattern.contains('~') {
        return range_match(pattern, value, is_when);
    }
    match (param, pattern.strip_prefix('$')) {
        (Some(url), Some(name)) => glob_match(raw_parameter(url, name).as_deref(), value),
        _ => glob_match(Some(pattern), value),
    }
}

/// 2.x: a glob with `$` references (no ranges: `~` is a literal).
pub(crate) fn glob_with_ref(pattern: &str, value: &str, param: Option<&Url>) -> bool {
    match (param, pattern.strip_prefix('$')) {
        (Some(url), Some(name)) => glob_match(raw_parameter(url, name).as_deref(), value),
        _ => glob_match(Some(pattern), value),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs_use_only_the_last_star() {
        assert!(glob_match(Some("*"), "x"));
        assert!(glob_match(Some("10.0*.2"), "10.0.0.2"));
        assert!(!glob_match(Some("10.0*.2"), "10.0.0.3"));
        assert!(glob_match(Some("get*"), "getFoo"));
        assert!(glob_match(Some("*Foo"), "getFoo"));
        assert!(glob_match(Some("a*b*"), "a*bcd"));
        assert!(!glob_match(Some("a*b*"), "axbcd"));
        assert!(glob_match(None, ""));
        assert!(!glob_match(None, "x"));
    }

    #[test]
    fn ranges() {
        assert!(range_match("1~100", "50", true));
        assert!(!range_match("1~100", "101", true));
        assert!(range_match("~100", "abc", true));
        assert!(!range_match("1~", "5", true));
        assert!(range_match("1~", "5", false));
        assert!(!range_match("1~100", "99999999999", true));
    }
}
