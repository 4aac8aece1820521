//! `URL.encode` / `URL.decode`: exactly Java's `URLEncoder` / `URLDecoder` with UTF-8 (§1.2).
//!
//! `[A-Za-z0-9.-*_]` are kept, a space becomes `+`, everything else becomes `%XX` with upper-case
//! hex of the UTF-8 bytes (`*` is kept, `~` is encoded). ZooKeeper node names depend on this.

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
pub fn decode_cow(s: &str) -> Result<Cow<'_, str>> {
    let bytes = s.as_bytes();
    if !bytes.iter().any(|&b| b == b'%' || b == b'+') {
        return Ok(Cow::Borrowed(s));
    }
    validate_escapes(s)?;
    let plus_free: Cow<'_, [u8]> = if bytes.contains(&b'+') {
        Cow::Owned(
            bytes
                .iter()
                .map(|&b| if b == b'+' { b' ' } else { b })
                .collect(),
        )
    } else {
        Cow::Borrowed(bytes)
    };
    let decoded: Vec<u8> = percent_encoding::percent_decode(&plus_free).collect();
    // Valid UTF-8 (the normal case) is taken over without another copy.
    Ok(Cow::Owned(String::from_utf8(decoded).unwrap_or_else(|e| {
        String::from_utf8_lossy(e.as_bytes()).into_owned()
    })))
}

fn validate_escapes(s: &str) -> Result<()> {
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let ok = b.get(i + 1).is_some_and(u8::is_ascii_hexdigit)
                && b.get(i + 2).is_some_and(u8::is_ascii_hexdigit);
            if !ok {
                return Err(Error::invalid_escape(s));
            }
            i += 3;
        } else {
            i += 1;
        }
    }
    Ok(())
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
