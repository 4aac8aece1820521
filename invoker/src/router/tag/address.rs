//! Address patterns of tag rules (`NetUtils#matchIpExpression` plus the `0.0.0.0:<port>`
//! rule of `TagStateRouter#checkAddressMatch`).

use std::net::IpAddr;

/// True when `pattern` matches the provider `host:port`. Errors in the pattern count as no
/// match (Java swallows them). Host names are compared literally (no DNS lookup).
pub fn address_matches(pattern: &str, host: &str, port: i32) -> bool {
    ip_expression(pattern, host, port).unwrap_or(false) || pattern == format!("0.0.0.0:{port}")
}

fn ip_expression(pattern: &str, host: &str, port: i32) -> Option<bool> {
    if pattern.contains('/') {
        return cidr(pattern, host);
    }
    let pattern = pattern.trim();
    if pattern == "*.*.*.*" || pattern == "*" {
        return Some(true);
    }
    let host_ip: Option<IpAddr> = host
        .trim_start_matches('[')
        .trim_end_matches(']')
        .parse()
        .ok();
    let is_v4 = !matches!(host_ip, Some(IpAddr::V6(_)));
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
        if pp != port.to_string() {
            return Some(false);
        }
    }
    let host_text = match host_ip {
        Some(ip) => ip.to_string(),
        None => host.to_owned(),
    };
    if p_host == host_text {
        return Some(true);
    }
    let has_expr = p_host.contains('*') || p_host.contains('-');
    if !has_expr {
        // An exact match after resolving the pattern (IP literals only here).
        return Some(p_host.parse::<IpAddr>().ok().map(|ip| ip.to_string()) == Some(host_text));
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

fn cidr(pattern: &str, host: &str) -> Option<bool> {
    let (net, bits) = pattern.split_once('/')?;
    let bits: u32 = bits.trim().parse().ok()?;
    let net: IpAddr = net.trim().parse().ok()?;
    let host: IpAddr = host.parse().ok()?;
    match (net, host) {
        (IpAddr::V4(n), IpAddr::V4(h)) if bits <= 32 => {
            let mask = if bits == 0 {
                0
            } else {
                u32::MAX << (32 - bits)
            };
            Some(u32::from(n) & mask == u32::from(h) & mask)
        }
        (IpAddr::V6(n), IpAddr::V6(h)) if bits <= 128 => {
            let mask = if bits == 0 {
                0
            } else {
                u128::MAX << (128 - bits)
            };
            Some(u128::from(n) & mask == u128::from(h) & mask)
        }
        _ => Some(false),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
