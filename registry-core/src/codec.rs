//! `URL.encode` / `URL.decode`: exactly Java's `URLEncoder` / `URLDecoder` with UTF-8.
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
/// A truncated or non-hexadecimal escape is an error (Java throws `IllegalArgumentException`),
/// except `%+X` (byte `X`) and `%-0` (byte 0), which `URLDecoder`'s `parseInt` accepts.
/// Invalid UTF-8 byte sequences decode to U+FFFD, as Java's decoder replaces them.
pub fn decode(s: &str) -> Result<String> {
    decode_url_decoder(s).map(Cow::into_owned)
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
    let mut out: Vec<u8> = Vec::with_capacity(bytes.len() + 8);
    out.extend_from_slice(&bytes[..first]);
    decode_into::<false>(&bytes[first..], &mut out).map_err(|_| Error::invalid_escape(s))?;
    Ok(Cow::Owned(into_string(out)))
}

/// [`decode`] alone: `URLDecoder` reads an escape with `Integer.parseInt(s, i + 1, i + 3, 16)`
/// and rejects only negative values, so a sign is accepted too: `%+b` is byte 11 and `%-0`
/// byte 0 (`URLStrParser`, which decodes node names, accepts hex digits only).
fn decode_url_decoder(s: &str) -> Result<Cow<'_, str>> {
    if !s.contains("%+") && !s.contains("%-0") {
        return decode_cow(s);
    }
    let mut fixed = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(i) = rest.find('%') {
        fixed.push_str(&rest[..i]);
        let esc = &rest[i..];
        let b = esc.as_bytes();
        match (b.get(1), b.get(2).copied().and_then(hex)) {
            (Some(b'+'), Some(v)) => {
                fixed.push_str(&format!("%0{v:X}"));
                rest = &esc[3..];
            }
            (Some(b'-'), Some(0)) => {
                fixed.push_str("%00");
                rest = &esc[3..];
            }
            _ => {
                fixed.push('%');
                rest = &esc[1..];
            }
        }
    }
    fixed.push_str(rest);
    decode_cow(&fixed)
        .map(|c| Cow::Owned(c.into_owned()))
        .map_err(|_| Error::invalid_escape(s))
}

/// Why [`decode_into`] stopped early.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Halt {
    /// A truncated or non-hexadecimal escape.
    BadEscape,
    /// A byte for which the caller's stop test holds.
    Stop,
}

/// Appends the decoded bytes of `s` to `out` (`+` is a space, `%XX` a byte), 8 bytes at a
/// time between escapes. Stops at the first malformed escape; with `SEPARATORS`, also at a
/// literal `?`, `&`, `=`, `#`, `;` or an escaped `;` (then `out` is incomplete).
pub(crate) fn decode_into<const SEPARATORS: bool>(
    s: &[u8],
    out: &mut Vec<u8>,
) -> std::result::Result<(), Halt> {
    let start = out.len();
    // The decoded form is never longer; the slack allows whole-word stores.
    out.resize(start + s.len() + 8, 0);
    let (mut i, mut o) = (0, start);
    let result = loop {
        if let Some(w) = s.get(i..i + 8).and_then(|w| <[u8; 8]>::try_from(w).ok()) {
            // Copy the word, then keep the bytes before its first special byte.
            out[o..o + 8].copy_from_slice(&w);
            let m = special_mask::<SEPARATORS>(u64::from_le_bytes(w));
            let plain = if m == 0 {
                8
            } else {
                (m.trailing_zeros() / 8) as usize
            };
            i += plain;
            o += plain;
            if plain == 8 {
                continue;
            }
        }
        let Some(&c) = s.get(i) else {
            break Ok(());
        };
        let (byte, len) = match c {
            b'%' => match (s.get(i + 1), s.get(i + 2)) {
                (Some(&h), Some(&l)) => match (hex(h), hex(l)) {
                    (Some(h), Some(l)) => (h << 4 | l, 3),
                    _ => break Err(Halt::BadEscape),
                },
                _ => break Err(Halt::BadEscape),
            },
            b'+' => (b' ', 1),
            b'?' | b'&' | b'=' | b'#' | b';' if SEPARATORS => break Err(Halt::Stop),
            c => (c, 1),
        };
        if SEPARATORS && len == 3 && byte == b';' {
            break Err(Halt::Stop);
        }
        out[o] = byte;
        o += 1;
        i += len;
    };
    out.truncate(o);
    result
}

/// High bit set in the bytes of `w` that need attention: `%`, `+` and, with `SEPARATORS`, the
/// query separators (SWAR zero-byte test; exact for the lowest flagged byte).
fn special_mask<const SEPARATORS: bool>(w: u64) -> u64 {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let zero = |c: u8| {
        let v = w ^ (ONES * u64::from(c));
        v.wrapping_sub(ONES) & !v & HIGH
    };
    let m = zero(b'%') | zero(b'+');
    if SEPARATORS {
        m | zero(b'?') | zero(b'&') | zero(b'=') | zero(b'#') | zero(b';')
    } else {
        m
    }
}

/// The decoded bytes as text, invalid UTF-8 sequences replaced by U+FFFD as Java does.
pub(crate) fn into_string(bytes: Vec<u8>) -> String {
    String::from_utf8(bytes).unwrap_or_else(|e| java_lossy(e.as_bytes()))
}

/// UTF-8 with malformed input replaced as Java's decoder (`new String(bytes, UTF_8)`) does:
/// one U+FFFD per maximal invalid subpart, except that a three-byte form of a surrogate
/// (`ED A0..BF xx`) is one unit to Java (one U+FFFD for all three bytes; for `ED A0..BF` before
/// a non-continuation byte or the end, one for the two).
fn java_lossy(mut bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len() + 8);
    loop {
        match std::str::from_utf8(bytes) {
            Ok(rest) => {
                out.push_str(rest);
                return out;
            }
            Err(e) => {
                let (valid, bad) = bytes.split_at(e.valid_up_to());
                // `valid` is UTF-8 by the error's contract.
                out.push_str(std::str::from_utf8(valid).unwrap_or_default());
                out.push('\u{FFFD}');
                let skip = match bad {
                    [0xED, 0xA0..=0xBF, 0x80..=0xBF, ..] => 3,
                    [0xED, 0xA0..=0xBF, ..] => 2,
                    _ => e.error_len().unwrap_or(bad.len()),
                };
                bytes = &bad[skip.min(bad.len())..];
            }
        }
    }
}

/// The value of a hexadecimal digit (either case).
fn hex(c: u8) -> Option<u8> {
    let v = HEX[usize::from(c)];
    (v != NOT_HEX).then_some(v)
}

const NOT_HEX: u8 = 0xFF;

/// Digit values by byte (a table: escapes are decoded on every ZooKeeper notification).
static HEX: [u8; 256] = {
    let mut t = [NOT_HEX; 256];
    let mut i = 0;
    while i < 10 {
        t[b'0' as usize + i] = i as u8;
        i += 1;
    }
    let mut i = 0;
    while i < 6 {
        t[b'a' as usize + i] = 10 + i as u8;
        t[b'A' as usize + i] = 10 + i as u8;
        i += 1;
    }
    t
};

#[cfg(test)]
mod tests {
    #[test]
    fn malformed_utf8_is_replaced_as_java_does() {
        // Found by the differential tests against URL.decode (Dubbo 3.3.6, JDK 17): a
        // surrogate's three-byte form is one replacement to Java, other bad bytes one each.
        assert_eq!(super::decode("%ED%A0%80z").unwrap(), "\u{FFFD}z");
        assert_eq!(super::decode("%ED%A0z").unwrap(), "\u{FFFD}z");
        assert_eq!(super::decode("%ED%BF").unwrap(), "\u{FFFD}");
        assert_eq!(super::decode("%C3%28").unwrap(), "\u{FFFD}(");
        assert_eq!(super::decode("%80%80").unwrap(), "\u{FFFD}\u{FFFD}");
        assert_eq!(super::decode("%F0%9D%84%9E").unwrap(), "\u{1D11E}");
    }

    #[test]
    fn url_decoder_accepts_a_signed_escape() {
        // URLDecoder parses an escape with Integer.parseInt(.., 16), rejecting only negatives.
        assert_eq!(super::decode("a%+bc").unwrap(), "a\u{b}c");
        assert_eq!(super::decode("%-0").unwrap(), "\0");
        assert!(super::decode("%-1").is_err());
        assert!(super::decode("%+").is_err());
        assert!(super::decode("%+g").is_err());
    }

    use super::*;

    #[test]
    fn java_urlencoder_set() {
        assert_eq!(encode("a-z.A_Z*09"), "a-z.A_Z*09");
        assert_eq!(encode("~ $:/?&="), "%7E+%24%3A%2F%3F%26%3D");
        assert_eq!(encode("中文"), "%E4%B8%AD%E6%96%87");
        assert_eq!(encode(""), "");
    }

    #[test]
    fn decode_long_inputs_word_by_word() {
        let text = "dubbo://10.0.0.1:20880/a.B?x=1&y=a b,c&z=中文&long=abcdefghijklmnopqrstuvwxyz";
        assert_eq!(decode(&encode(text)).unwrap(), text);
        assert_eq!(
            decode("abcdefgh+ijklmnop%41").unwrap(),
            "abcdefgh ijklmnopA"
        );
        assert!(decode("abcdefghijklmnop%4").is_err());
    }

    #[test]
    fn decode_into_stops_at_separators() {
        let run = |s: &str| {
            let mut out = Vec::new();
            decode_into::<true>(s.as_bytes(), &mut out).map(|()| out)
        };
        assert_eq!(run("a%26b%3Dc%3Fd%23e").unwrap(), b"a&b=c?d#e");
        for s in [
            "abcdefghij&k",
            "a=b",
            "a?b",
            "a#b",
            "a;b",
            "abcdefghij%3Bk",
            "a%3bb",
        ] {
            assert_eq!(run(s), Err(Halt::Stop), "{s}");
        }
        assert_eq!(run("abcdefghij%zz"), Err(Halt::BadEscape));
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
