//! IP expressions (`NetUtils#matchIpExpression`): CIDR (`10.0.0.0/8`, `fd00::/8`), `*`
//! segments, `a-b` ranges, an optional `:port` (`[v6]:port` for IPv6), IPv4 and IPv6 alike,
//! plus the `0.0.0.0:<port>` form ("any host on this port", `TagStateRouter#checkAddressMatch`).
//! The one matcher of the project: tag rules' addresses and configurators' address
//! conditions use it.

use std::net::IpAddr;

/// True when `pattern` matches the provider `host:port`. Errors in the pattern count as no
/// match (Java swallows them). Host names are compared literally (no DNS lookup).
pub fn address_matches(pattern: &str, host: &str, port: i32) -> bool {
    AddressPattern::new(pattern).matches(&HostInfo::new(host, port))
}

/// [`address_matches`] for an address written `host`, `host:port`, `[v6]` or `[v6]:port`
/// (a bare IPv6 address has no port); without a port, a pattern with one does not match.
pub fn matches_address(pattern: &str, address: &str) -> bool {
    let (host, port) = split_address(address);
    address_matches(pattern, host, port.unwrap_or(-1))
}

/// `host` and port of `host`, `host:port`, `[v6]`, `[v6]:port` or a bare IPv6 address.
fn split_address(address: &str) -> (&str, Option<i32>) {
    if let Some(rest) = address.strip_prefix('[') {
        return match rest.split_once(']') {
            Some((h, tail)) => (h, tail.strip_prefix(':').and_then(|p| p.parse().ok())),
            None => (address, None),
        };
    }
    match address.rsplit_once(':') {
        Some((h, p)) if !h.contains(':') => (h, p.parse().ok()),
        _ => (address, None),
    }
}

/// A provider address parsed once for matching against many patterns.
#[derive(Debug, Clone)]
pub struct HostInfo {
    port: i32,
    /// The host without `[`/`]`, parsed.
    ip: Option<IpAddr>,
    /// The host as given, parsed (a bracketed host never parses).
    ip_plain: Option<IpAddr>,
    /// The host as `matchIpExpression` compares it: the IP's text, else the host.
    text: Box<str>,
}

impl HostInfo {
    /// The view of `host:port`.
    pub fn new(host: &str, port: i32) -> HostInfo {
        let trimmed = host.trim_start_matches('[').trim_end_matches(']');
        let ip: Option<IpAddr> = trimmed.parse().ok();
        let ip_plain = if host.len() == trimmed.len() {
            ip
        } else {
            None
        };
        let text: Box<str> = match ip {
            // A parsed IPv4 literal is already canonical (no leading zeros are accepted).
            Some(IpAddr::V4(_)) => Box::from(trimmed),
            // Java's `Inet6Address#getHostAddress`: eight groups, no `::` compression.
            Some(IpAddr::V6(v6)) => v6
                .segments()
                .iter()
                .map(|g| format!("{g:x}"))
                .collect::<Vec<_>>()
                .join(":")
                .into_boxed_str(),
            None => Box::from(host),
        };
        HostInfo {
            port,
            ip,
            ip_plain,
            text,
        }
    }
}

/// `s` is exactly `v.to_string()`.
fn is_decimal_of(s: &str, v: i32) -> bool {
    s.parse::<i32>() == Ok(v)
        && !s.starts_with('+')
        && (s == "0" || !(s.starts_with('0') || s.starts_with("-0")))
}

/// An address pattern prepared once for matching many providers (same answers as
/// [`address_matches`]).
#[derive(Debug, Clone)]
pub struct AddressPattern<'p> {
    pattern: &'p str,
    /// `0.0.0.0:<port>`: matches any host on that port.
    any_host_port: Option<i32>,
    /// A CIDR pattern: the network and prefix length (`None` inside: never matches).
    cidr: Option<Option<(IpAddr, u32)>>,
}

impl<'p> AddressPattern<'p> {
    /// Prepares `pattern`.
    pub fn new(pattern: &'p str) -> AddressPattern<'p> {
        let any_host_port = pattern
            .strip_prefix("0.0.0.0:")
            .and_then(|r| r.parse::<i32>().ok().filter(|p| is_decimal_of(r, *p)));
        let cidr = pattern.contains('/').then(|| {
            let (net, bits) = pattern.split_once('/')?;
            let bits: u32 = bits.trim().parse().ok()?;
            let net: IpAddr = net.trim().parse().ok()?;
            Some((net, bits))
        });
        AddressPattern {
            pattern,
            any_host_port,
            cidr,
        }
    }

    /// True when the pattern matches `host`.
    pub fn matches(&self, host: &HostInfo) -> bool {
        if self.any_host_port == Some(host.port) {
            return true;
        }
        match self.cidr {
            Some(net) => net.is_some_and(|(n, bits)| cidr(n, bits, host)),
            None => ip_expression(self.pattern, host).unwrap_or(false),
        }
    }
}

fn ip_expression(pattern: &str, h: &HostInfo) -> Option<bool> {
    let pattern = pattern.trim();
    if pattern == "*.*.*.*" || pattern == "*" {
        return Some(true);
    }
    let is_v4 = !matches!(h.ip, Some(IpAddr::V6(_)));
    // host:port split of the pattern.
    let (p_host, p_port) = if is_v4 {
        match pattern.rsplit_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (pattern, None),
        }
    } else if let Some(rest) = pattern.strip_prefix('[') {
        match rest.split_once("]:") {
            Some((h, p)) => (h, Some(p)),
            None => (rest.trim_end_matches(']'), None),
        }
    } else {
        (pattern, None)
    };
    if let Some(pp) = p_port {
        if !is_decimal_of(pp, h.port) {
            return Some(false);
        }
    }
    let host_text: &str = &h.text;
    if p_host == host_text {
        return Some(true);
    }
    let has_expr = p_host.contains('*') || p_host.contains('-');
    if !has_expr {
        // An exact match after resolving the pattern (IP literals only here): equal IP
        // texts are equal addresses, and a host that is not an IP never equals one.
        return Some(matches!((p_host.parse::<IpAddr>(), h.ip), (Ok(a), Some(b)) if a == b));
    }
    let sep = if is_v4 { '.' } else { ':' };
    let mask: Vec<&str> = p_host.split(sep).collect();
    let ip: Vec<&str> = host_text.split(sep).collect();
    if is_v4 && mask.len() != 4 {
        return None;
    }
    let radix = if is_v4 { 10 } else { 16 };
    for (i, m) in mask.iter().enumerate() {
        let seg = ip.get(i)?;
        if *m == "*" || m == seg {
            continue;
        }
        if m.contains('-') {
            let parts: Vec<&str> = m.split('-').filter(|s| !s.is_empty()).collect();
            if parts.len() != 2 {
                return None;
            }
            let min = u32::from_str_radix(parts[0], radix).ok()?;
            let max = u32::from_str_radix(parts[1], radix).ok()?;
            let v = u32::from_str_radix(seg, radix).ok()?;
            if v < min || v > max {
                return Some(false);
            }
        } else if *seg == "0" && matches!(*m, "0" | "00" | "000" | "0000") {
            continue;
        } else {
            return Some(false);
        }
    }
    Some(true)
}

fn cidr(net: IpAddr, bits: u32, h: &HostInfo) -> bool {
    match (net, h.ip_plain) {
        (IpAddr::V4(n), Some(IpAddr::V4(h))) if bits <= 32 => {
            let mask = if bits == 0 {
                0
            } else {
                u32::MAX << (32 - bits)
            };
            u32::from(n) & mask == u32::from(h) & mask
        }
        (IpAddr::V6(n), Some(IpAddr::V6(h))) if bits <= 128 => {
            let mask = if bits == 0 {
                0
            } else {
                u128::MAX << (128 - bits)
            };
            u128::from(n) & mask == u128::from(h) & mask
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_with_and_without_ports() {
        assert!(matches_address("10.0.0.1-5", "10.0.0.3"));
        assert!(!matches_address("10.0.0.1-5", "10.0.0.6"));
        assert!(matches_address("10.0.*.1:80", "10.0.9.1:80"));
        assert!(!matches_address("10.0.*.1:80", "10.0.9.1:81"));
        assert!(!matches_address("0.0.0.0", "10.0.9.1"));
        assert!(matches_address("0.0.0.0:80", "10.0.9.1:80"));
        assert!(matches_address("10.0.0.0/8", "10.2.3.4:20880"));
        assert!(matches_address("fd00::/8", "[fd00::1]:20880"));
        assert!(matches_address("fd00::/8", "fd00::1"));
        assert!(!matches_address("fd00::/8", "fe80::1"));
        assert!(matches_address("[fd00::1]:20880", "[fd00::1]:20880"));
        assert!(!matches_address("[fd00::1]:20880", "[fd00::1]:20881"));
        assert!(matches_address("fd00:0:0:0:0:0:0:1-9", "fd00::5"));
    }

    #[test]
    fn patterns() {
        assert!(address_matches("10.0.1.0/24", "10.0.1.4", 1));
        assert!(!address_matches("10.0.1.0/24", "10.0.2.4", 1));
        assert!(address_matches("10.0.*.*", "10.0.2.5", 1));
        assert!(address_matches("10.0.0.2:20880", "10.0.0.2", 20880));
        assert!(!address_matches("10.0.0.2:20880", "10.0.0.2", 20881));
        assert!(address_matches("10.0.0.1-3", "10.0.0.2", 1));
        assert!(!address_matches("10.0.0.1-3", "10.0.0.4", 1));
        assert!(address_matches("0.0.0.0:20881", "10.0.0.3", 20881));
        assert!(!address_matches("0.0.0.0", "10.0.0.3", 20881));
        assert!(address_matches("*", "x", 1));
    }
}
