//! Secrets in URLs: the one rule that decides which values are never shown.
//!
//! A URL's password (user info) and the values of the parameters [`is_secret_key`] names
//! (`password`, `token`, `accessToken`, `secret*`, also as the last segment of a dotted key such
//! as `nacos.password`, and every key ending in `password`, such as the TLS key passwords
//! `client-key-password` and `tls.certPrivateKeyPassword`) are replaced by [`MASK`] wherever a URL is shown: its `Display`
//! (so `Debug`, logs and error messages), and [`redact`] for text that may not even parse.
//! The data forms ([`super::Url::to_full_string`], what is registered and cached) keep them.

use std::borrow::Cow;

/// What a secret value is shown as.
pub const MASK: &str = "******";

/// True when the value of parameter `key` is a secret: a key ending in `password` (any case:
/// `password`, `client-key-password`, `tls.certPrivateKeyPassword`), `token`, `accessToken`
/// (any case), a key starting with `secret` (any case), or a dotted key whose last segment is
/// one of those (`nacos.password`, `registry.secretKey`).
pub fn is_secret_key(key: &str) -> bool {
    const PASSWORD: &str = "password";
    let ends_in_password = key.len() >= PASSWORD.len()
        && key
            .get(key.len() - PASSWORD.len()..)
            .is_some_and(|tail| tail.eq_ignore_ascii_case(PASSWORD));
    let named = |k: &str| {
        k.eq_ignore_ascii_case("token")
            || k.eq_ignore_ascii_case("accesstoken")
            || k.get(..6).is_some_and(|p| p.eq_ignore_ascii_case("secret"))
    };
    ends_in_password || named(key) || key.rsplit_once('.').is_some_and(|(_, last)| named(last))
}

/// `text` (a URL, or something meant to be one, perhaps malformed) with its user-info
/// password and the values of secret parameters replaced by [`MASK`]. Borrowed when there
/// is nothing to mask.
pub fn redact(text: &str) -> Cow<'_, str> {
    let mut out: Option<String> = None;
    // User info: `scheme://user:password@host`, the last `@` before the path or query.
    if let Some(start) = text.find("://").map(|i| i + 3) {
        let authority_end = text[start..]
            .find(['/', '?', '#'])
            .map_or(text.len(), |i| start + i);
        let authority = &text[start..authority_end];
        if let Some(at) = authority.rfind('@') {
            if let Some(colon) = authority[..at].find(':') {
                let (pw_start, pw_end) = (start + colon + 1, start + at);
                if pw_end > pw_start {
                    let mut s = String::with_capacity(text.len());
                    s.push_str(&text[..pw_start]);
                    s.push_str(MASK);
                    s.push_str(&text[pw_end..]);
                    out = Some(s);
                }
            }
        }
    }
    let current = out.as_deref().unwrap_or(text);
    if let Some(masked) = redact_params(current) {
        out = Some(masked);
    }
    match out {
        Some(s) => Cow::Owned(s),
        None => Cow::Borrowed(text),
    }
}

/// Masks `key=value` items (starting the text or after `?`, `&`, `;` or whitespace, ending
/// at the next separator or whitespace) whose key is secret; `None` when there is none.
fn redact_params(text: &str) -> Option<String> {
    let mut out = String::new();
    let mut last = 0;
    let bytes = text.as_bytes();
    let mut i = 0;
    while i <= bytes.len() {
        let starts_item = i == 0
            || matches!(bytes[i - 1], b'?' | b'&' | b';')
            || bytes[i - 1].is_ascii_whitespace();
        if starts_item && i < bytes.len() {
            let key_start = i;
            let key_end = text[key_start..]
                .find(|c: char| c == '=' || c == '&' || c == ';' || c.is_whitespace())
                .map_or(text.len(), |j| key_start + j);
            if text[key_end..].starts_with('=') && is_secret_key(&text[key_start..key_end]) {
                let value_start = key_end + 1;
                let value_end = text[value_start..]
                    .find(|c: char| c == '&' || c == ';' || c == '#' || c.is_whitespace())
                    .map_or(text.len(), |j| value_start + j);
                out.push_str(&text[last..value_start]);
                out.push_str(MASK);
                last = value_end;
                i = value_end.max(i + 1);
                continue;
            }
        }
        i += 1;
    }
    if out.is_empty() {
        return None;
    }
    out.push_str(&text[last..]);
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secret_keys() {
        for k in [
            "password",
            "Password",
            "token",
            "accessToken",
            "accesstoken",
            "secret",
            "secretKey",
            "secret.key",
            "nacos.password",
            "registry.SecretKey",
            "client-key-password",
            "dubbo.ssl.client-key-password",
            "nacos.remote.client.rpc.tls.certPrivateKeyPassword",
            "tls.client.keyPassword",
            "zookeeper.ssl.keyStore.password",
        ] {
            assert!(is_secret_key(k), "{k}");
        }
        for k in [
            "username",
            "tokens",
            "timeout",
            "passwords",
            "accessKey",
            "mysecret",
            "",
        ] {
            assert!(!is_secret_key(k), "{k}");
        }
    }

    #[test]
    fn redacts_raw_text() {
        assert_eq!(
            redact("nacos://nacos:s3cr3t@127.0.0.1:8848?namespace=a&password=p&x=1"),
            "nacos://nacos:******@127.0.0.1:8848?namespace=a&password=******&x=1"
        );
        assert_eq!(
            redact("zookeeper://h:2181/x?token=abc;secretKey=def zz"),
            "zookeeper://h:2181/x?token=******;secretKey=****** zz"
        );
        assert_eq!(
            redact("bad url :// with password=x y"),
            "bad url :// with password=****** y"
        );
        assert_eq!(redact("token=t"), "token=******");
        assert_eq!(
            redact("dubbo://u@h:1/s?password="),
            "dubbo://u@h:1/s?password=******"
        );
        assert!(matches!(redact("dubbo://h:1/s?a=b"), Cow::Borrowed(_)));
        // An `@` in the path is not user info.
        assert_eq!(redact("dubbo://h:1/a:b@c"), "dubbo://h:1/a:b@c");
    }
}
