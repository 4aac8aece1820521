//! Registry address parsing: `UrlUtils.parseURL` / `parseURLs`.

use crate::error::{Error, Result};
use crate::url::{non_empty, Url};

/// Defaults applied by [`parse_registry_address`].
#[derive(Debug, Default, Clone)]
pub struct AddressDefaults<'a> {
    /// Protocol when missing (else `dubbo`).
    pub protocol: Option<&'a str>,
    /// Port when missing (else 9090).
    pub port: Option<i32>,
    /// User name when empty.
    pub username: Option<&'a str>,
    /// Password when empty.
    pub password: Option<&'a str>,
    /// Path when empty.
    pub path: Option<&'a str>,
    /// Parameters filled in where the address has none (or an empty value).
    pub params: Vec<(&'a str, &'a str)>,
}

/// `UrlUtils.parseURL(address, defaults)`.
///
/// Input without `://` and without `?` is comma-split: the first item is the address and the
/// rest becomes `backup=a,b`. A missing protocol becomes the default or `dubbo`, a missing port
/// the default or 9090.
pub fn parse_registry_address(address: &str, defaults: &AddressDefaults<'_>) -> Result<Url> {
    if address.is_empty() {
        return Err(Error::InvalidAddress(
            "Address is not allowed to be empty, please re-enter.".into(),
        ));
    }
    let text: String = if !address.contains("://") && !address.contains('?') {
        let items: Vec<&str> = crate::url::comma_split(address);
        match items.split_first() {
            Some((first, rest)) if !rest.is_empty() => format!("{first}?backup={}", rest.join(",")),
            Some((first, _)) => (*first).to_owned(),
            None => address.to_owned(),
        }
    } else {
        address.to_owned()
    };
    let url = Url::parse(&text)?;
    let mut b = url.to_builder();
    if non_empty(url.protocol()).is_none() {
        b = b.protocol(non_empty(defaults.protocol).unwrap_or("dubbo"));
    }
    if url.port() <= 0 {
        b = b.port(defaults.port.filter(|p| *p > 0).unwrap_or(9090));
    }
    let username = non_empty(url.username()).or(non_empty(defaults.username));
    let password = non_empty(url.password()).or(non_empty(defaults.password));
    if username != url.username() || password != url.password() {
        b = b.credentials(username.unwrap_or(""), password);
    }
    if non_empty(url.path()).is_none() {
        if let Some(p) = non_empty(defaults.path) {
            b = b.path(p);
        }
    }
    for (k, v) in defaults.params.iter().filter(|(_, v)| !v.is_empty()) {
        if non_empty(url.param(k)).is_none() {
            b = b.param(k, v);
        }
    }
    Ok(b.build())
}

/// `UrlUtils.parseURLs`: addresses split on `\s*[|;]+\s*` with Java `String.split` rules
/// (a leading empty item is kept and fails as an empty address, trailing ones are dropped),
/// each parsed by [`parse_registry_address`].
pub fn parse_registry_addresses(
    addresses: &str,
    defaults: &AddressDefaults<'_>,
) -> Result<Vec<Url>> {
    if addresses.is_empty() {
        return Err(Error::InvalidAddress(
            "Address is not allowed to be empty, please re-enter.".into(),
        ));
    }
    let items = registry_split(addresses);
    if items.is_empty() {
        return Err(Error::InvalidAddress(
            "Addresses is not allowed to be empty, please re-enter.".into(),
        ));
    }
    items
        .into_iter()
        .map(|a| parse_registry_address(a, defaults))
        .collect()
}

/// Java `s.split("\\s*[|;]+\\s*")`.
fn registry_split(s: &str) -> Vec<&str> {
    let b = s.as_bytes();
    let is_ws = |c: u8| matches!(c, b' ' | b'\t' | b'\n' | 0x0B | 0x0C | b'\r');
    let is_sep = |c: u8| c == b'|' || c == b';';
    let mut out = Vec::new();
    let (mut item_start, mut i) = (0, 0);
    while i < b.len() {
        // Try a match starting at i: \s* [|;]+ \s*
        let mut j = i;
        while j < b.len() && is_ws(b[j]) {
            j += 1;
        }
        if j < b.len() && is_sep(b[j]) {
            while j < b.len() && is_sep(b[j]) {
                j += 1;
            }
            while j < b.len() && is_ws(b[j]) {
                j += 1;
            }
            out.push(&s[item_start..i]);
            item_start = j;
            i = j;
        } else {
            i += 1;
        }
    }
    out.push(&s[item_start..]);
    while out.last() == Some(&"") {
        out.pop();
    }
    out
}

/// `URL.appendDefaultPort(address, defaultPort)`: an address without `:` gets
/// `:<default_port>`; one whose text after the **first** `:` is the integer 0 gets the default
/// port instead. Empty addresses, non-positive default ports and anything else (including a
/// non-numeric port, where Java throws) are returned unchanged.
pub fn append_default_port(address: &str, default_port: i32) -> String {
    if address.is_empty() || default_port <= 0 {
        return address.to_owned();
    }
    match address.find(':') {
        None => format!("{address}:{default_port}"),
        Some(i) if crate::url::parse_java_int(&address[i + 1..]) == Some(0) => {
            format!("{}{default_port}", &address[..=i])
        }
        Some(_) => address.to_owned(),
    }
}

/// The local IP this host uses to reach `target` (`host:port`), as Dubbo's consumers and
/// Nacos clients announce themselves: the address of the interface a UDP socket connected
/// to `target` gets (no packet is sent). `127.0.0.1` when the target cannot be resolved or
/// routed.
pub fn local_ip_for(target: &str) -> String {
    std::net::UdpSocket::bind("0.0.0.0:0")
        .and_then(|s| s.connect(target).map(|()| s))
        .and_then(|s| s.local_addr())
        .map_or_else(|_| "127.0.0.1".to_owned(), |a| a.ip().to_string())
}

/// [`local_ip_for`] the address of a registry URL; `127.0.0.1` for one without an address
/// (`memory://`).
pub fn local_ip_towards(registry: &Url) -> String {
    match (non_empty(registry.host()), registry.port()) {
        (Some(host), port) if port > 0 && registry.protocol() != Some("memory") => {
            local_ip_for(&format!("{host}:{port}"))
        }
        _ => "127.0.0.1".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backup_and_defaults() {
        let u =
            parse_registry_address("127.0.0.1:2181,127.0.0.1:2182", &AddressDefaults::default())
                .unwrap();
        assert_eq!(
            u.to_string(),
            "dubbo://127.0.0.1:2181?backup=127.0.0.1:2182"
        );
        let d = AddressDefaults {
            port: Some(10000),
            ..Default::default()
        };
        let all = parse_registry_addresses("192.168.0.1|192.168.0.2", &d).unwrap();
        assert_eq!(all[1].address().unwrap(), "192.168.0.2:10000");
        assert!(parse_registry_address("", &d).is_err());
        assert_eq!(
            append_default_port("10.20.153.10:0", 2181),
            "10.20.153.10:2181"
        );
    }
}
