//! Shared generators: the realistic and nasty pieces that Dubbo URLs, rules and names are
//! built from (empty values, unicode, `%`-escapes, IPv6 hosts, `*`/`,`/`-` in group and
//! version, missing and duplicate keys, huge numbers).

use proptest::prelude::*;
use proptest::sample::select;

/// A string from a character set that stresses parsers (separators, escapes, unicode).
pub fn nasty_string(max: usize) -> BoxedStrategy<String> {
    proptest::collection::vec(nasty_char(), 0..=max)
        .prop_map(|c| c.into_iter().collect())
        .boxed()
}

/// One character: mostly letters and digits, often a separator, sometimes unicode.
pub fn nasty_char() -> BoxedStrategy<char> {
    prop_oneof![
        6 => select(&['a', 'b', 'c', 'x', 'Z', '0', '1', '9', '.', '_'][..]),
        3 => select(&[':', '/', '?', '&', '=', '@', '%', ',', '*', '-', ' ', '+', '#', ';', '[', ']', '!', '~'][..]),
        1 => select(&['é', 'ß', '中', '𝄞', '\u{7f}', '\u{a0}', '\t', '\u{fffd}', '\u{200b}'][..]),
    ]
    .boxed()
}

/// A word used in names: realistic tokens, empty, and nasty strings.
pub fn word() -> BoxedStrategy<String> {
    prop_oneof![
        5 => select(&["com.foo.Greeter", "org.apache.dubbo.demo.DemoService", "a", "b", "demo", "x.y.Z$Inner"][..])
            .prop_map(str::to_owned),
        2 => Just(String::new()),
        3 => nasty_string(8),
    ]
    .boxed()
}

/// A group or version value: concrete, wildcard, lists, negations, empty.
pub fn group_or_version() -> BoxedStrategy<String> {
    prop_oneof![
        4 => select(&["1.0.0", "2.0", "g1", "g2", "dev", "1.0.*"][..]).prop_map(str::to_owned),
        3 => select(&["*", "", ",", "g1,g2", "g2,g1", "*,g1", "-g1", "g1,-g2", " g1 ", "1.0.0,2.0", ",g1", "g1,"][..])
            .prop_map(str::to_owned),
        1 => nasty_string(6),
    ]
    .boxed()
}

/// A host as it appears in a URL: IPv4, IPv6 (bracketed), names, empty, nasty.
pub fn host() -> BoxedStrategy<String> {
    prop_oneof![
        5 => select(&["127.0.0.1", "10.20.30.40", "192.168.1.7", "0.0.0.0", "localhost", "example.com",
            "[::1]", "[fe80::1]", "[2001:db8::7]", "[::ffff:10.0.0.1]", "h-1.example", "*", "255.255.255.255", "1.2.3"][..])
            .prop_map(str::to_owned),
        1 => nasty_string(6),
    ]
    .boxed()
}

/// A port text: none, valid, zero, huge, negative, junk.
pub fn port() -> BoxedStrategy<Option<String>> {
    prop_oneof![
        3 => Just(None),
        4 => (1u32..65536).prop_map(|p| Some(p.to_string())),
        1 => select(&["0", "65536", "99999999999", "-1", "", "x", "2147483647", "2147483648"][..])
            .prop_map(|s| Some(s.to_owned())),
    ]
    .boxed()
}

/// A parameter key: Dubbo's keys and junk.
pub fn param_key() -> BoxedStrategy<String> {
    prop_oneof![
        6 => select(&["interface", "group", "version", "category", "enabled", "side", "timestamp",
            "weight", "default.group", "default.version", "classifier", "methods", "anyhost", "application",
            "dubbo", "release", "timeout", "sayHello.timeout", "a", "x.y", "default.timeout", "protocol",
            "path", "tag", "dubbo.tag", "disabled", "loadbalance", "warmup", "default.weight"][..])
            .prop_map(str::to_owned),
        1 => Just(String::new()),
        2 => nasty_string(5),
    ]
    .boxed()
}

/// A parameter value: realistic, empty, unicode, escapes, huge numbers.
pub fn param_value() -> BoxedStrategy<String> {
    prop_oneof![
        4 => select(&["1.0.0", "g1", "true", "false", "providers", "consumers", "routers,providers", "*",
            "100", "0", "-1", "9223372036854775807", "9223372036854775808", "1e3", "com.foo.Greeter",
            "a,b", "%20", "%2C", "%25", "%", "%zz", "é", "provider", "consumer"][..])
            .prop_map(str::to_owned),
        1 => Just(String::new()),
        2 => nasty_string(8),
    ]
    .boxed()
}

/// Parameters: 0-6 pairs, written `k=v`, `k=` or a bare `k`; duplicates happen.
pub fn params() -> BoxedStrategy<Vec<(String, Option<String>)>> {
    proptest::collection::vec(
        (
            param_key(),
            prop_oneof![6 => param_value().prop_map(Some), 1 => Just(None)],
        ),
        0..6,
    )
    .boxed()
}

/// A URL text put together from generated parts (and, rarely, a raw nasty string).
pub fn url_text() -> BoxedStrategy<String> {
    let protocol = prop_oneof![
        6 => select(&["dubbo", "tri", "consumer", "override", "route", "empty", "zookeeper", "file", "jar"][..])
            .prop_map(|s| Some(s.to_owned())),
        1 => Just(None),
        1 => nasty_string(4).prop_map(Some),
    ];
    let user = prop_oneof![
        6 => Just(None),
        1 => (word(), proptest::option::of(word())).prop_map(Some),
    ];
    let path = prop_oneof![
        4 => word().prop_map(Some),
        1 => Just(None),
        1 => select(&["com/foo/Bar", "/abs", "a//b", "/"][..]).prop_map(|s| Some(s.to_owned())),
    ];
    let composed = (
        protocol,
        user,
        host(),
        port(),
        path,
        params(),
        any::<bool>(),
    )
        .prop_map(|(protocol, user, host, port, path, params, amp_end)| {
            let mut s = String::new();
            if let Some(p) = protocol {
                s.push_str(&p);
                s.push_str("://");
            }
            if let Some((u, pw)) = user {
                s.push_str(&u);
                if let Some(pw) = pw {
                    s.push(':');
                    s.push_str(&pw);
                }
                s.push('@');
            }
            s.push_str(&host);
            if let Some(port) = port {
                s.push(':');
                s.push_str(&port);
            }
            if let Some(path) = path {
                s.push('/');
                s.push_str(&path);
            }
            if !params.is_empty() {
                s.push('?');
                let parts: Vec<String> = params
                    .iter()
                    .map(|(k, v)| match v {
                        Some(v) => format!("{k}={v}"),
                        None => k.clone(),
                    })
                    .collect();
                s.push_str(&parts.join("&"));
                if amp_end {
                    s.push('&');
                }
            }
            s
        });
    prop_oneof![12 => composed, 1 => nasty_string(24)].boxed()
}
