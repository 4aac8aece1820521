//! `URL.valueOf` (3.x `URLStrParser.parseDecodedStr`) and `URLStrParser.parseEncodedStr`.
//!
//! The body parser mirrors Dubbo's index arithmetic exactly (absolute `> 0` tests, the `#` cut,
//! the "`:` is the last character" rule), because registry data is produced by Java.

use std::borrow::Cow;

use super::scratch::with_decode_buffer;
use super::{canonical, Url, UrlParts};
use crate::codec::{decode_cow, decode_into, into_string};
use crate::error::{Error, Result};

/// Parses a decoded URL string exactly as Dubbo 3.x `URL.valueOf` does.
pub(crate) fn parse_decoded(input: &str) -> Result<Url> {
    let (body, query) = match input.find('?') {
        Some(i) => (&input[..i], Some(&input[i + 1..])),
        None => (input, None),
    };
    let parts = parse_body(input, body)?;
    let mut params: Vec<(&str, &str)> = Vec::new();
    if let Some(q) = query {
        if let Some(url) = canonical::parse_canonical(parts, q) {
            return Ok(url);
        }
        // Typical items are 15-25 bytes; a slightly larger buffer avoids regrowing.
        params.reserve(q.len() / 16 + 4);
        scan_query(q, |start, eq, end| {
            match eq {
                Some(e) => params.push((&q[start..e], &q[e + 1..end])),
                None => params.push((&q[start..end], "")),
            }
            true
        });
    }
    Url::from_parsed(parts, params)
}

/// Splits a decoded query in one pass (`parseDecodedParams`): items end at `&` or `;`, the
/// first `=` splits name and value (`=` at the start of an item are skipped), an item without
/// `=` gets `""`, empty items are ignored.
///
/// Calls `item(start, eq, end)` for each non-empty item `q[start..end]`, `eq` being the index of
/// its first `=`; stops when it returns `false`.
pub(super) fn scan_query(q: &str, mut item: impl FnMut(usize, Option<usize>, usize) -> bool) {
    let mut push =
        |start: usize, eq: Option<usize>, end: usize| start >= end || item(start, eq, end);
    let b = q.as_bytes();
    let (mut start, mut eq) = (0usize, None);
    let mut i = 0;
    while i < b.len() {
        // Jump 8 bytes at a time to the next `&`, `;` or `=`.
        if let Some(chunk) = b.get(i..i + 8).and_then(|c| <[u8; 8]>::try_from(c).ok()) {
            let m = separator_mask(u64::from_le_bytes(chunk));
            if m == 0 {
                i += 8;
                continue;
            }
            // The lowest flagged byte is exact (false positives only appear above it).
            i += (m.trailing_zeros() / 8) as usize;
        }
        match b[i] {
            b'&' | b';' => {
                if !push(start, eq, i) {
                    return;
                }
                start = i + 1;
                eq = None;
            }
            b'=' if i == start => start = i + 1,
            b'=' if eq.is_none() => eq = Some(i),
            _ => {}
        }
        i += 1;
    }
    let _ = push(start, eq, q.len());
}

/// High bit set in the bytes of the word that are `&`, `;` or `=` (SWAR zero-byte test; bits
/// above the lowest flagged byte may be false positives).
fn separator_mask(w: u64) -> u64 {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let zero = |v: u64| v.wrapping_sub(ONES) & !v & HIGH;
    zero(w ^ (ONES * u64::from(b'&')))
        | zero(w ^ (ONES * u64::from(b';')))
        | zero(w ^ (ONES * u64::from(b'=')))
}

/// `URLParam.parse(rawParam)` (3.x): items split on `&`, each trimmed (Java `trim`), empty
/// items skipped; `k=v` puts `v`, an item without `=` puts **value == key**; `default.X`
/// also puts `X` if absent. Returns the parameters sorted by key.
pub fn parse_params_raw(raw: &str) -> Vec<(&str, &str)> {
    let items = raw
        .split('&')
        .map(|p| p.trim_matches(|c: char| c <= ' '))
        .filter(|p| !p.is_empty())
        .map(|p| match p.find('=') {
            Some(i) => (&p[..i], &p[i + 1..]),
            None => (p, p),
        })
        .collect();
    super::apply_java_puts(items)
}

/// Java `indexOf(str, ch, from, toExclusive)` of `URLStrParser`.
fn index_of(b: &[u8], ch: u8, from: usize, to: usize) -> Option<usize> {
    let to = to.min(b.len());
    if from > to {
        return None;
    }
    b[from..to].iter().position(|&c| c == ch).map(|i| i + from)
}

/// Java `lastIndexOf(str, ch, from, to)` of `URLStrParser` (note: `to` is inclusive there).
fn last_index_of(b: &[u8], ch: u8, from: usize, to: usize) -> Option<usize> {
    let to = to.min(b.len().checked_sub(1)?);
    if from > to {
        return None;
    }
    b[from..=to]
        .iter()
        .rposition(|&c| c == ch)
        .map(|i| i + from)
}

/// Everything before the query: protocol, user info, host, port, path (`parseURLBody`).
fn parse_body<'a>(input: &str, body: &'a str) -> Result<UrlParts<'a>> {
    let b = body.as_bytes();
    let mut start = 0usize;
    let mut end = body.find('#').unwrap_or(body.len());
    let mut protocol = None;
    if let Some((i, n)) = find_protocol_end(b) {
        if i == 0 {
            return Err(Error::invalid_url("url missing protocol", input));
        }
        protocol = Some(&body[..i]);
        start = i + n;
    }
    let mut path = None;
    if let Some(i) = index_of(b, b'/', start, end) {
        path = Some(&body[i + 1..end]);
        end = i;
    }
    let (mut username, mut password) = (None, None);
    if let Some(at) = last_index_of(b, b'@', start, end).filter(|&i| i > 0) {
        match index_of(b, b':', start, at) {
            Some(c) => {
                username = Some(&body[start..c]);
                password = Some(&body[c + 1..at]);
            }
            None => username = Some(&body[start..at]),
        }
        start = at + 1;
    }
    let mut port = 0;
    if let Some(c) = last_index_of(b, b':', start, end).filter(|&i| i > 0 && i < b.len() - 1) {
        let zone = last_index_of(b, b'%', start, end).is_some_and(|p| p > c);
        if !zone {
            let text = body.get(c + 1..end).unwrap_or("");
            // The `URL` constructor keeps `Math.max(port, 0)`.
            port = parse_java_int(text)
                .ok_or_else(|| Error::invalid_url("invalid port", input))?
                .max(0);
            end = c;
        }
    }
    let host = (end > start).then(|| &body[start..end]);
    Ok(UrlParts {
        protocol,
        username,
        password,
        host,
        port,
        path,
    })
}

/// The first `://` (index, 3), else the first `:/` (index, 1).
fn find_protocol_end(b: &[u8]) -> Option<(usize, usize)> {
    let mut single = None;
    for (i, _) in b.iter().enumerate().filter(|(_, &c)| c == b':') {
        if b.get(i + 1) == Some(&b'/') {
            if b.get(i + 2) == Some(&b'/') {
                return Some((i, 3));
            }
            single = single.or(Some((i, 1)));
        }
    }
    single
}

/// `Integer.parseInt`: optional sign, ASCII digits, 32-bit range.
pub(crate) fn parse_java_int(s: &str) -> Option<i32> {
    // Up to 9 digits cannot overflow: the usual port needs no further checks.
    if (1..=9).contains(&s.len()) && s.bytes().all(|b| b.is_ascii_digit()) {
        return Some(s.bytes().fold(0, |n, b| n * 10 + i32::from(b - b'0')));
    }
    let digits = s.strip_prefix(['+', '-']).unwrap_or(s);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse::<i32>().ok()
}

/// Parses a fully `URL.encode`d string (a ZooKeeper node name) like `parseEncodedStr`.
pub(crate) fn parse_encoded(input: &str) -> Result<Url> {
    // Fast path: without literal separators and without an encoded `;`, decoding the whole
    // string first and parsing the decoded form splits at exactly the same places. The decoder
    // stops at either (or at a malformed escape), and the code below then decides as before.
    let fast = with_decode_buffer(|buf| {
        let mut bytes = std::mem::take(buf).into_bytes();
        let done = decode_into::<true>(input.as_bytes(), &mut bytes);
        if done.is_err() {
            bytes.clear();
        }
        *buf = into_string(bytes);
        done.ok().map(|()| parse_decoded(buf))
    });
    if let Some(url) = fast {
        return url;
    }
    let b = input.as_bytes();
    let needs_exact = b.iter().enumerate().any(|(i, &c)| match c {
        b'?' | b'&' | b'=' | b'#' | b';' => true,
        b'%' => b.get(i + 1) == Some(&b'3') && matches!(b.get(i + 2), Some(b'B' | b'b')),
        _ => false,
    });
    if !needs_exact {
        let decoded = decode_cow(input)?;
        return parse_decoded(&decoded);
    }
    parse_encoded_exact(input)
}

/// The general case: the body ends at the first `%3F` (any case); query items are separated
/// by `&` / `;` (encoded or literal) and split at the first `=` (encoded or literal); every
/// component is decoded with `+` as a space.
fn parse_encoded_exact(input: &str) -> Result<Url> {
    let (body_enc, query_enc) = match find_ci(input, "%3F", 0) {
        Some(i) => (&input[..i], Some(&input[i + 3..])),
        None => (input, None),
    };
    let mut owned: Vec<(Cow<'_, str>, Cow<'_, str>)> = Vec::new();
    if let Some(q) = query_enc {
        for item in split_encoded(q, |c| c == b'&' || c == b';')? {
            let item = skip_leading_eq(item);
            if item.is_empty() {
                continue;
            }
            match find_encoded(item, b'=') {
                Some((i, n)) => owned.push((decode_cow(&item[..i])?, decode_cow(&item[i + n..])?)),
                None => owned.push((decode_cow(item)?, Cow::Borrowed(""))),
            }
        }
    }
    let body = decode_cow(body_enc)?;
    let parts = parse_body(input, &body)?;
    let params: Vec<(&str, &str)> = owned.iter().map(|(k, v)| (&**k, &**v)).collect();
    Url::from_parsed(parts, params)
}

/// The byte a position stands for: a literal byte, or the byte of a `%XX` escape (with its
/// length). A truncated or non-hex escape is an error, as in Java.
fn unit_at(s: &str, i: usize) -> Result<(u8, usize)> {
    let b = s.as_bytes();
    if b[i] != b'%' {
        return Ok((b[i], 1));
    }
    let hex = s
        .get(i + 1..i + 3)
        .ok_or_else(|| Error::invalid_escape(s))?;
    u8::from_str_radix(hex, 16)
        .map(|v| (v, 3))
        .map_err(|_| Error::invalid_escape(s))
}

fn split_encoded(s: &str, is_sep: impl Fn(u8) -> bool) -> Result<Vec<&str>> {
    let mut out = Vec::new();
    let (mut i, mut item_start) = (0, 0);
    while i < s.len() {
        let (c, n) = unit_at(s, i)?;
        if is_sep(c) {
            out.push(&s[item_start..i]);
            item_start = i + n;
        }
        i += n;
    }
    out.push(&s[item_start..]);
    Ok(out)
}

/// First `=` (literal or `%3D`) as (index, length). Escapes were validated by the split.
fn find_encoded(s: &str, ch: u8) -> Option<(usize, usize)> {
    let mut i = 0;
    while i < s.len() {
        let (c, n) = unit_at(s, i).ok()?;
        if c == ch {
            return Some((i, n));
        }
        i += n;
    }
    None
}

fn skip_leading_eq(mut s: &str) -> &str {
    while let Some((b'=', n)) = (!s.is_empty()).then(|| unit_at(s, 0).ok()).flatten() {
        s = &s[n..];
    }
    s
}

fn find_ci(hay: &str, needle: &str, from: usize) -> Option<usize> {
    let h = hay.as_bytes();
    let n = needle.as_bytes();
    if h.len() < n.len() {
        return None;
    }
    (from..=h.len() - n.len()).find(|&i| h[i..i + n.len()].eq_ignore_ascii_case(n))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn java_index_rules() {
        // `@` at absolute index > 0 after the protocol: empty user name.
        let u = Url::parse("dubbo://@h:1/S").unwrap();
        assert_eq!((u.username(), u.host(), u.port()), (Some(""), Some("h"), 1));
        // A leading `:` is not a port separator (index 0).
        let u = Url::parse(":20880").unwrap();
        assert_eq!((u.host(), u.port()), (Some(":20880"), 0));
        // `:` as the very last character is not a port separator.
        let u = Url::parse("dubbo://h:").unwrap();
        assert_eq!((u.host(), u.port()), (Some("h:"), 0));
        assert!(Url::parse("dubbo://h:#x").is_err());
        // Repeated leading `=` are skipped.
        let u = Url::parse("dubbo://h/S?==a=b").unwrap();
        assert_eq!(u.param("a"), Some("b"));
        // A protocol found after `#` leaves everything else absent (no panic).
        let u = Url::parse("a#b://c").unwrap();
        assert_eq!(
            (u.protocol(), u.host(), u.path()),
            (Some("a#b"), None, None)
        );
    }

    #[test]
    fn protocol_separator_and_ports() {
        assert_eq!(find_protocol_end(b"a:/b://c"), Some((4, 3)));
        assert_eq!(find_protocol_end(b"a:/b:/c"), Some((1, 1)));
        assert_eq!(find_protocol_end(b"a:b"), None);
        assert_eq!(parse_java_int("20880"), Some(20880));
        assert_eq!(parse_java_int("+7"), Some(7));
        assert_eq!(parse_java_int("-2147483648"), Some(i32::MIN));
        assert_eq!(parse_java_int("2147483648"), None);
        assert_eq!(parse_java_int("0000000000012"), Some(12));
        assert_eq!(parse_java_int(""), None);
        assert_eq!(parse_java_int("1x"), None);
    }

    #[test]
    fn raw_params_and_default_order() {
        let p = parse_params_raw("version=2.0&&default.version=1.0& key &k=");
        assert_eq!(
            p,
            vec![
                ("default.version", "1.0"),
                ("k", ""),
                ("key", "key"),
                ("version", "2.0")
            ]
        );
        let u = Url::parse("dubbo://h/S?default.x=1&default.x=2").unwrap();
        assert_eq!((u.param("x"), u.param("default.x")), (Some("1"), Some("2")));
    }

    #[test]
    fn encoded_separators() {
        let u = Url::parse_encoded("dubbo%3A%2F%2Fh%3A1%2FS%3Fa%3D1%3Bb%3D2%26c%3Dx%3Dy").unwrap();
        assert_eq!(
            (u.param("a"), u.param("b"), u.param("c")),
            (Some("1"), Some("2"), Some("x=y"))
        );
        assert!(Url::parse_encoded("dubbo%3A%2F%2Fh%3Fa%3D1%2").is_err());
        assert!(Url::parse_encoded("dubbo%3A%2F%2Fh%3Fa%3D1%zz&b=1").is_err());
    }
}
