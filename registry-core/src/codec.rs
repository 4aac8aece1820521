//! `URL.encode` / `URL.decode`: exactly Java's `URLEncoder` / `URLDecoder` with UTF-8 (§1.2).
//!
//! `[A-Za-z0-9.-*_]` are kept, a space becomes `+`, everything else becomes `%XX` with upper-case
//! hex of the UTF-8 bytes (`*` is kept, `~` is encoded). ZooKeeper node names depend on this.
//!
//! Encoding uses `form_urlencoded` (its byte set is exactly `URLEncoder`'s). Decoding is one
//! small loop rather than `percent-encoding`: Java rejects malformed escapes (that crate passes
//! them through) and ZooKeeper children are decoded on every notification, so validation, `+`
//! and `%XX` are handled in a single pass.

use std::borrow::Cow;

use crate::error::{Error, Result};

/// Encodes like `java.net.URLEncoder.encode(s, "UTF-8")`; `""` for an empty input.
pub fn encode(s: &str) -> String {
    form_urlencoded::byte_serialize(s.as_bytes()).collect()
}

/// Decodes like `java.net.URLDecoder.decode(s, "UTF-8")`: `+` is a space, `%XX` a byte.
///
/// A truncated or non-hexadecimal escape is an error (Java throws `IllegalArgumentException`).
/// Invalid UTF-8 byte sequences decode to U+FFFD, as Java's decoder does.
pub fn decode(s: &str) -> Result<String> {
    decode_cow(s).map(Cow::into_owned)
}

/// Like [`decode`], borrowing when nothing needs decoding.
///
/// Validation, `+` handling and `%XX` decoding happen in one pass over the input (ZooKeeper
/// child names are decoded on every notification, so this is a hot path); the result is then
/// checked as UTF-8 once, with invalid sequences replaced by U+FFFD.
pub fn decode_cow(s: &str) -> Result<Cow<'_, str>> {
    let bytes = s.as_bytes();
    let Some(first) = bytes.iter().position(|&b| b == b'%' || b == b'+') else {
        return Ok(Cow::Borrowed(s));
    };
    let mut out: Vec<u8> = Vec::with_capacity(bytes.len());
    out.extend_from_slice(&bytes[..first]);
    let mut i = first;
    while i < bytes.len() {
        match bytes[i] {
            b'%' => {
                let hi = bytes.get(i + 1).and_then(|&c| hex(c));
                let lo = bytes.get(i + 2).and_then(|&c| hex(c));
                match (hi, lo) {
                    (Some(h), Some(l)) => out.push(h << 4 | l),
                    _ => return Err(Error::invalid_escape(s)),
                }
                i += 3;
            }
            b'+' => {
                out.push(b' ');
                i += 1;
            }
            c => {
                out.push(c);
                i += 1;
            }
        }
    }
    Ok(Cow::Owned(String::from_utf8(out).unwrap_or_else(|e| {
        String::from_utf8_lossy(e.as_bytes()).into_owned()
    })))
}

fn hex(c: u8) -> Option<u8> {
    (c as char).to_digit(16).and_then(|d| u8::try_from(d).ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn java_urlencoder_set() {
        assert_eq!(encode("a-z.A_Z*09"), "a-z.A_Z*09");
        assert_eq!(encode("~ $:/?&="), "%7E+%24%3A%2F%3F%26%3D");
        assert_eq!(encode("中文"), "%E4%B8%AD%E6%96%87");
        assert_eq!(encode(""), "");
    }

    #[test]
    fn decode_rules() {
        assert_eq!(decode("a+b%2Fc%e4%b8%ad").unwrap(), "a b/c中");
        assert!(decode("abc%3").is_err());
        assert!(decode("abc%zz").is_err());
        assert!(decode("%").is_err());
        assert_eq!(decode("plain").unwrap(), "plain");
    }
}
