use super::*;

fn u(s: &str) -> Url {
    Url::parse(s).unwrap()
}

#[test]
fn parses_full_form() {
    let x = u("dubbo://ad@min:hello@1234@10.20.130.230:20880/context/path?version=1.0.0&application=morgan&pound=abcd#efg&protocol=registry");
    assert_eq!(x.protocol(), Some("dubbo"));
    assert_eq!(x.username(), Some("ad@min"));
    assert_eq!(x.password(), Some("hello@1234"));
    assert_eq!(x.host(), Some("10.20.130.230"));
    assert_eq!(x.port(), 20880);
    assert_eq!(x.path(), Some("context/path"));
    assert_eq!(x.param("pound"), Some("abcd#efg"));
    assert_eq!(x.param("protocol"), Some("registry"));
}

#[test]
fn default_copy_and_semicolons() {
    let x = u("dubbo://127.0.0.1:12345?timeout=1234&default.timeout=5678;default.retries=3");
    assert_eq!(x.param("timeout"), Some("1234"));
    assert_eq!(x.param("retries"), Some("3"));
    assert_eq!(x.param("default.retries"), Some("3"));
}

#[test]
fn errors_not_panics() {
    assert!(Url::parse("://192.168.1.1").is_err());
    assert!(Url::parse("dubbo://h:/S").is_err());
    assert!(Url::parse("dubbo://h:x1/S").is_err());
    assert!(Url::parse_encoded("dubbo%3a%2f%2f192.168.1.41%3fabc%3").is_err());
    assert!(Url::parse_encoded("%3a%2f192.168.1.1%3fabc%3dabc").is_err());
}

#[test]
fn ipv6() {
    let x = u("dubbo://[2408:4004:194:8896:3e8a:82ae:3e8a:82ae]:20881/S");
    assert_eq!(x.host(), Some("[2408:4004:194:8896:3e8a:82ae:3e8a:82ae]"));
    assert_eq!(x.port(), 20881);
    let z = u("dubbo://fe80:0:0:0:894:aeec:f37d:23e1%en0/path?abc=abc");
    assert_eq!(z.host(), Some("fe80:0:0:0:894:aeec:f37d:23e1%en0"));
    assert_eq!(z.port(), 0);
}

#[test]
fn encoded_equals_decoded() {
    for s in [
        "dubbo://127.0.0.1?test=中文测试",
        "dubbo://fe80:0:0:0:894:aeec:f37d:23e1%en0/path?abc=abc",
        "dubbo://1.2.3.4:20880/com.foo.Bar?a=1&b=x y&c=",
    ] {
        let enc = crate::codec::encode(s);
        assert_eq!(Url::parse_encoded(&enc).unwrap(), u(s), "{s}");
    }
    // `parseEncodedParams` decodes each escape before its separator switch, so an encoded
    // `;` separates items just like an encoded `&`.
    let x = Url::parse_encoded("dubbo%3A%2F%2Fh%3A1%2FS%3Fa%3D1%3B2%26b%3D3").unwrap();
    assert_eq!(x.param("a"), Some("1"));
    assert_eq!(x.param("2"), Some(""));
    assert_eq!(x.param("b"), Some("3"));
}

#[test]
fn strings() {
    let x = u(
        "dubbo://admin:hello1234@10.20.130.230:20880/context/path?version=1.0.0&application=morgan",
    );
    assert_eq!(
        x.to_string(),
        "dubbo://10.20.130.230:20880/context/path?application=morgan&version=1.0.0"
    );
    assert_eq!(
        x.to_full_string(),
        "dubbo://admin:hello1234@10.20.130.230:20880/context/path?application=morgan&version=1.0.0"
    );
    assert_eq!(
        x.to_identity_string(),
        "dubbo://admin:hello1234@10.20.130.230:20880/context/path"
    );
    assert!(!format!("{x:?}").contains("hello1234"));
}

#[test]
fn equality_ignores_timestamp_value() {
    let a = u("dubbo://h:1/S?timestamp=1&pid=2&x=y");
    let b = u("dubbo://h:1/S?timestamp=9&pid=2&x=y");
    let c = u("dubbo://h:1/S?pid=2&x=y");
    assert_eq!(a, b);
    assert_ne!(a, c);
    use std::collections::hash_map::DefaultHasher;
    let h = |x: &Url| {
        let mut s = DefaultHasher::new();
        x.hash(&mut s);
        s.finish()
    };
    assert_eq!(h(&a), h(&b));
}

#[test]
fn method_params() {
    let x = u("dubbo://h:1/S?methods=foo&bar.timeout=5&timeout=1&foo.timeout=7");
    assert_eq!(x.method_param("bar", "timeout"), Some("1"));
    assert_eq!(x.method_param("foo", "timeout"), Some("7"));
    assert_eq!(x.method_param_i64("zzz", "timeout", 0), 1);
    let y = u("dubbo://h:1/S?m.a.b=1");
    assert_eq!(y.method_param_strict("m", "a.b"), Some("1"));
    assert_eq!(
        u("a://h?aaa.method1=aaa&bbb.method2=bbb").any_method_param("method1"),
        Some("aaa")
    );
}

#[test]
fn keys() {
    let x = u("dubbo://h:1/com.foo.Bar?group=*&version=*");
    assert_eq!(x.service_key().unwrap(), "*/com.foo.Bar:*");
    assert_eq!(
        u("10.20.130.230:20880/org.x.I").colon_separated_key(),
        "org.x.I::"
    );
    assert_eq!(
        u("dubbo://h:1/com.foo.Bar?version=1.0.0").compatible_colon_separated_key(),
        "com.foo.Bar:1.0.0"
    );
}

#[test]
fn derived_urls_share_tables() {
    let a = u("dubbo://a:1/S?application=x&methods=a,b&pid=1&timestamp=5");
    let b = u("dubbo://b:1/S?application=x&methods=a,b&pid=2&timestamp=6");
    assert!(Arc::ptr_eq(&a.inner.table, &b.inner.table));
    let c = a.with_param("weight", "5");
    assert_eq!(c.param("weight"), Some("5"));
    assert_eq!(c.param("pid"), Some("1"));
    assert_eq!(c.without_params(&["weight"]), a);
    assert_eq!(
        a.with_params_if_absent([("application", "y"), ("k", "v")])
            .param("application"),
        Some("x")
    );
}

#[test]
fn comma_split_java() {
    assert_eq!(comma_split("a, b ,,c,"), vec!["a", "b", "c"]);
    assert_eq!(comma_split(",a"), vec!["", "a"]);
    assert!(comma_split(",,").is_empty());
}

#[test]
fn service_string_keeps_credentials_but_no_params() {
    let x = u("zookeeper://admin:pw@10.20.130.230:4444/a.B?version=1.0.0&group=aaa&k=v");
    assert_eq!(
        x.to_service_string(),
        "zookeeper://admin:pw@10.20.130.230:4444/aaa/a.B:1.0.0"
    );
    assert!(!x.to_string().contains("admin"));
}

#[test]
fn service_string_with_keys_keeps_them_as_a_query() {
    let x = u("dubbo://admin:pw@10.0.0.1:20880/a.B?version=1.0.0&group=g&k=v&app=x&z=1");
    assert_eq!(
        x.to_service_string_with(&["z", "k", "missing"]),
        "dubbo://admin:pw@10.0.0.1:20880/g/a.B:1.0.0?k=v&z=1"
    );
    assert_eq!(
        x.to_service_string_with(&["missing"]),
        "dubbo://admin:pw@10.0.0.1:20880/g/a.B:1.0.0"
    );
    // An empty key list keeps every parameter (Java's buildParameters with an empty array).
    assert_eq!(
        x.to_service_string_with(&[]),
        "dubbo://admin:pw@10.0.0.1:20880/g/a.B:1.0.0?app=x&group=g&k=v&version=1.0.0&z=1"
    );
}

#[test]
fn any_method_param_honours_the_methods_list() {
    // Listed methods are consulted in list order; unlisted ones never.
    let x = u("a://h?methods=b,a&a.timeout=1&b.timeout=2&c.timeout=3");
    assert_eq!(x.any_method_param("timeout"), Some("2"));
    let y = u("a://h?methods=a,c&b.timeout=2&c.timeout=3");
    assert_eq!(y.any_method_param("timeout"), Some("3"));
    let z = u("a://h?methods=a&b.timeout=2");
    assert_eq!(z.any_method_param("timeout"), None);
    // Exact names, not the substring test of getMethodParameterStrict.
    let w = u("a://h?methods=sayHello&say.timeout=2");
    assert_eq!(w.any_method_param("timeout"), None);
    assert_eq!(w.method_param_strict("say", "timeout"), Some("2"));
    // No methods list: any method.
    assert_eq!(
        u("a://h?b.timeout=2").any_method_param("timeout"),
        Some("2")
    );
}

#[test]
fn service_address_consumer_methods_do_not_filter() {
    let p = u("dubbo://10.0.0.1:20880/S?methods=a,b&timeout=1");
    let c = u("consumer://10.0.0.9/S?methods=x&b.timeout=7");
    let sa = ServiceAddressUrl::new(p, c);
    assert_eq!(sa.method_param("b", "timeout"), Some("7"));
}

// ----- cases found by the differential tests against Dubbo 3.3.6 (differential/) -----

#[test]
fn side_is_a_fixed_value_as_in_urlparam() {
    // DefaultDynamicParamSource: side is consumer or provider (matched lower-cased); URL.valueOf
    // throws for anything else, the empty value included.
    assert!(Url::parse("consumer://10.0.0.1/S?side=consumers").is_err());
    assert!(Url::parse("dubbo://h/S?side=").is_err());
    assert!(Url::parse_encoded("dubbo%3A%2F%2Fh%2FS%3Fside%3D%2525zz").is_err());
    let x = u("dubbo://h/S?side=Provider&a=1");
    assert_eq!(x.param("side"), Some("provider"));
    assert_eq!(x.to_full_string(), "dubbo://h/S?a=1&side=provider");
    assert_eq!(
        u("dubbo://h/S?side=consumer").param("side"),
        Some("consumer")
    );
}

#[test]
fn a_negative_port_is_zero() {
    // The URL constructor keeps Math.max(port, 0).
    let x = u("file://10.20.30.40:-1/p");
    assert_eq!(x.port(), 0);
    assert_eq!(x.address().as_deref(), Some("10.20.30.40"));
}

#[test]
fn printed_values_are_trimmed_the_java_way() {
    // String.trim strips chars <= ' ' only: a no-break space stays.
    assert_eq!(u("a://h/p?k= v\t").to_full_string(), "a://h/p?k=v");
    assert_eq!(u("a://h/p?k=\u{a0}v").to_full_string(), "a://h/p?k=\u{a0}v");
}

#[test]
fn colon_separated_keys_skip_blank_segments_and_print_null_without_interface() {
    assert_eq!(
        u("tri://h/*?version=\t&group=g").colon_separated_key(),
        "*::g"
    );
    // U+00A0 is not whitespace to Java's Character.isWhitespace.
    assert_eq!(
        u("tri://h/S?version=\u{a0}").colon_separated_key(),
        "S:\u{a0}:"
    );
    assert_eq!(u("a://h?x=1").colon_separated_key(), "null::");
    assert_eq!(u("a://h?x=1").compatible_colon_separated_key(), "null");
}

#[test]
fn service_key_match_needs_an_interface_in_the_pattern() {
    // Java throws a NullPointerException here (divergence service-key-match-without-interface).
    let pattern = u("consumer://h/S");
    let value = u("dubbo://h/S");
    assert!(!crate::matching::is_service_key_match(&pattern, &value));
    assert!(crate::matching::is_service_key_match(
        &u("consumer://h/p?interface=S"),
        &u("dubbo://h/p?interface=S")
    ));
}
