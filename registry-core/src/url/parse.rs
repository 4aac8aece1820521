//! `URL.valueOf` (3.x `URLStrParser.parseDecodedStr`) and `URLStrParser.parseEncodedStr` (§1.1).

use std::borrow::Cow;

use super::{Url, UrlParts};
use crate::codec::decode_cow;
use crate::error::{Error, Result};

/// Parses a decoded URL string exactly as Dubbo 3.x `URL.valueOf` does.
pub(crate) fn parse_decoded(input: &str) -> Result<Url> {
    let (body, query) = match input.find('?') {
        Some(i) => (&input[..i], Some(&input[i + 1..])),
        None => (input, None),
    };
    let mut params: Vec<(&str, &str)> = Vec::with_capacity(32);
    if let Some(q) = query {
        for item in q.split(['&', ';']) {
            push_item(&mut params, item);
        }
    }
    let parts = parse_body(input, body)?;
    Url::from_parsed(parts, params)
}

/// Adds one `name=value` query item (first `=` splits; a leading `=` is skipped).
fn push_item<'a>(params: &mut Vec<(&'a str, &'a str)>, item: &'a str) {
    let item = item.strip_prefix('=').unwrap_or(item);
    if item.is_empty() {
        return;
    }
    match item.find('=') {
        Some(i) => params.push((&item[..i], &item[i + 1..])),
        None => params.push((item, "")),
    }
}

/// Everything before the query: protocol, user info, host, port, path.
fn parse_body<'a>(input: &str, body: &'a str) -> Result<UrlParts<'a>> {
    let body = match body.find('#') {
        Some(i) => &body[..i],
        None => body,
    };
    let (protocol, rest) = if let Some(i) = body.find("://") {
        if i == 0 {
            return Err(Error::invalid_url("url missing protocol", input));
        }
        (Some(&body[..i]), &body[i + 3..])
    } else if let Some(i) = body.find(":/") {
        if i == 0 {
            return Err(Error::invalid_url("url missing protocol", input));
        }
        (Some(&body[..i]), &body[i + 1..])
    } else {
        (None, body)
    };
    let (hostpart, path) = match rest.find('/') {
        Some(i) => (&rest[..i], Some(&rest[i + 1..])),
        None => (rest, None),
    };
    let (username, password, hostpart) = match hostpart.rfind('@') {
        Some(i) if i > 0 => {
            let info = &hostpart[..i];
            match info.find(':') {
                Some(j) => (Some(&info[..j]), Some(&info[j + 1..]), &hostpart[i + 1..]),
                None => (Some(info), None, &hostpart[i + 1..]),
            }
        }
        _ => (None, None, hostpart),
    };
    let (host, port) = match hostpart.rfind(':') {
        Some(i) if !hostpart[i..].contains('%') => {
            let port = parse_java_int(&hostpart[i + 1..])
                .ok_or_else(|| Error::invalid_url("invalid port", input))?;
            (&hostpart[..i], port)
        }
        _ => (hostpart, 0),
    };
    Ok(UrlParts {
        protocol,
        username,
        password,
        host: (!host.is_empty()).then_some(host),
        port,
        path,
    })
}

/// `Integer.parseInt`: optional sign, ASCII digits, 32-bit range.
pub(crate) fn parse_java_int(s: &str) -> Option<i32> {
    let digits = s.strip_prefix(['+', '-']).unwrap_or(s);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse::<i32>().ok()
}

/// Parses a fully `URL.encode`d string (a ZooKeeper node name) like `parseEncodedStr`.
pub(crate) fn parse_encoded(input: &str) -> Result<Url> {
    // Fast path: without literal separators and without an encoded `;`, decoding the whole
    // string first and parsing the decoded form splits at exactly the same places.
    let b = input.as_bytes();
    let literal_sep = b.iter().any(|c| matches!(c, b'?' | b'&' | b'=' | b'#' | b';'));
    if !literal_sep && find_ci(input, "%3B", 0).is_none() {
        let decoded = decode_cow(input)?;
        return parse_decoded(&decoded);
    }
    parse_encoded_exact(input)
}

fn parse_encoded_exact(input: &str) -> Result<Url> {
    let (body_enc, query_enc) = match find_ci(input, "%3F", 0) {
        Some(i) => (&input[..i], Some(&input[i + 3..])),
        None => (input, None),
    };
    let mut owned: Vec<(Cow<'_, str>, Cow<'_, str>)> = Vec::new();
    if let Some(q) = query_enc {
        for item in split_ci(q, "%26").flat_map(|s| s.split(';')) {
            if item.is_empty() {
                continue;
            }
            let item = strip_prefix_ci(item, "%3D").unwrap_or(item);
            if item.is_empty() {
                continue;
            }
            match find_ci(item, "%3D", 0) {
                Some(i) => owned.push((decode_cow(&item[..i])?, decode_cow(&item[i + 3..])?)),
                None => owned.push((decode_cow(item)?, Cow::Borrowed(""))),
            }
        }
    }
    let body = decode_cow(body_enc)?;
    let parts = parse_body(input, &body)?;
    let params: Vec<(&str, &str)> = owned.iter().map(|(k, v)| (&**k, &**v)).collect();
    Url::from_parsed(parts, params)
}

fn find_ci(hay: &str, needle: &str, from: usize) -> Option<usize> {
    let h = hay.as_bytes();
    let n = needle.as_bytes();
    if h.len() < n.len() {
        return None;
    }
    (from..=h.len() - n.len()).find(|&i| h[i..i + n.len()].eq_ignore_ascii_case(n))
}

fn strip_prefix_ci<'a>(s: &'a str, p: &str) -> Option<&'a str> {
    (s.len() >= p.len() && s.as_bytes()[..p.len()].eq_ignore_ascii_case(p.as_bytes()))
        .then(|| &s[p.len()..])
}

fn split_ci<'a>(s: &'a str, sep: &'a str) -> impl Iterator<Item = &'a str> + 'a {
    let mut start = Some(0usize);
    std::iter::from_fn(move || {
        let st = start?;
        match find_ci(s, sep, st) {
            Some(i) => {
                start = Some(i + sep.len());
                Some(&s[st..i])
            }
            None => {
                start = None;
                Some(&s[st..])
            }
        }
    })
}
