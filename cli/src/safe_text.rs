//! Text from a registry, a config centre or a provider, made safe for a terminal.
//!
//! Anyone who can write a provider URL, a rule or a reply can put escape sequences in it
//! (`\x1b[2J` clears the screen, OSC sequences set the title or write to the clipboard,
//! bidirectional overrides reorder what is shown). Human output passes such text through
//! [`escape`] (or [`escape_keep_lines`] for multi-line documents): control characters and
//! bidirectional formatting characters are written as `\u{..}` escapes. JSON output needs
//! nothing more: serde_json escapes control characters itself.

use std::borrow::Cow;
use std::fmt::Write as _;

/// True for a character that must not reach a terminal raw.
fn is_unsafe(c: char, keep_lines: bool) -> bool {
    if keep_lines && (c == '\n' || c == '\t') {
        return false;
    }
    c.is_control()
        || matches!(c, '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

fn escape_with(s: &str, keep_lines: bool) -> Cow<'_, str> {
    if !s.chars().any(|c| is_unsafe(c, keep_lines)) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 16);
    for c in s.chars() {
        if is_unsafe(c, keep_lines) {
            match c {
                '\n' => out.push_str("\\n"),
                '\t' => out.push_str("\\t"),
                '\r' => out.push_str("\\r"),
                _ => {
                    let _ = write!(out, "\\u{{{:x}}}", u32::from(c));
                }
            }
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// `s` with every control or bidirectional formatting character escaped (one line).
pub fn escape(s: &str) -> Cow<'_, str> {
    escape_with(s, false)
}

/// [`escape`], keeping line feeds and tabs (a rule document printed as it is).
pub fn escape_keep_lines(s: &str) -> Cow<'_, str> {
    escape_with(s, true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_what_a_terminal_would_obey() {
        assert_eq!(
            escape("dubbo://h:1/S?x=\x1b[2J"),
            "dubbo://h:1/S?x=\\u{1b}[2J"
        );
        assert_eq!(escape("a\nb\tc\r"), "a\\nb\\tc\\r");
        assert_eq!(escape("\u{9b}31m \u{202e}abc"), "\\u{9b}31m \\u{202e}abc");
        assert!(matches!(escape("plain 中文 ok"), Cow::Borrowed(_)));
        assert_eq!(escape_keep_lines("a: 1\n\tb\x07\n"), "a: 1\n\tb\\u{7}\n");
    }
}
