//! Property tests (proptest): URL round trips, codec round trips, matching invariants, and
//! "bad input never panics".
#![allow(clippy::unwrap_used)] // strategies outside #[test] functions

use proptest::collection::btree_map;
use proptest::option;
use proptest::prelude::*;
use registry_core::address::{
    append_default_port, parse_registry_address, parse_registry_addresses,
};
use registry_core::matching::{
    empty_url_for_key, is_match, is_match_category, is_match_glob_pattern, parse_service_key,
};
use registry_core::url::parse_params_raw;
use registry_core::{codec, Url};

/// Parameter keys: no `default.` prefix (parsing would add the copied key).
fn key() -> impl Strategy<Value = String> {
    "[a-z][a-zA-Z0-9._-]{0,12}".prop_filter("no default.", |k| !k.starts_with("default."))
}

/// Values as Dubbo writes them: anything but the separators `&` `;`, no surrounding
/// whitespace (`toFullString` trims), may contain `=`, `:`, `/`, `*`, `%`, non-ASCII.
fn value() -> impl Strategy<Value = String> {
    "[a-zA-Z0-9=:/*%~,.!$()\\[\\]@ 中文ü+-]{0,16}".prop_map(|v| v.trim().to_owned())
}

prop_compose! {
    fn url()(
        protocol in "[a-z][a-z0-9+.-]{0,8}",
        creds in option::of(("[a-zA-Z0-9_]{1,8}", option::of("[a-zA-Z0-9_!]{1,8}"))),
        host in "[a-z0-9][a-z0-9.-]{0,14}",
        port in prop_oneof![Just(0), 1..65536i32],
        path in option::of("[a-zA-Z0-9_$][a-zA-Z0-9._$/-]{0,24}"),
        params in btree_map(key(), value(), 0..12),
        pid in option::of(1u32..100_000),
        ts in option::of(1_600_000_000_000u64..1_800_000_000_000),
        ipv6 in option::of("[0-9a-f:]{3,20}"),
    ) -> Url {
        let mut b = Url::builder(&protocol).host(&host).port(port);
        if let Some((u, p)) = &creds {
            b = b.credentials(u, p.as_deref());
        }
        if let Some(p) = &path {
            b = b.path(p);
        }
        for (k, v) in &params {
            b = b.param(k, v);
        }
        let pid = pid.map(|p| p.to_string());
        let ts = ts.map(|t| t.to_string());
        for (k, v) in [("pid", &pid), ("timestamp", &ts), ("ipv6", &ipv6)] {
            if let Some(v) = v {
                b = b.param(k, v);
            }
        }
        b.build()
    }
}

fn params(u: &Url) -> Vec<(String, String)> {
    u.params()
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn parse_of_full_string_is_identity(u in url()) {
        let s = u.to_full_string();
        let back = Url::parse(&s).unwrap();
        prop_assert_eq!(&back, &u, "{}", s);
        prop_assert_eq!(params(&back), params(&u));
        prop_assert_eq!(back.to_full_string(), s);
        prop_assert_eq!(back.param("timestamp"), u.param("timestamp"));
    }

    #[test]
    fn encoded_form_parses_to_the_same_url(u in url()) {
        let s = u.to_full_string();
        let enc = codec::encode(&s);
        let back = Url::parse_encoded(&enc).unwrap();
        prop_assert_eq!(&back, &u, "{}", enc);
        prop_assert_eq!(params(&back), params(&u));
    }

    #[test]
    fn params_iterate_sorted_and_agree_with_lookup(u in url()) {
        let ps = params(&u);
        prop_assert!(ps.windows(2).all(|w| w[0].0 < w[1].0), "{:?}", ps);
        prop_assert_eq!(ps.len(), u.param_count());
        for (k, v) in &ps {
            prop_assert_eq!(u.param(k), Some(v.as_str()));
        }
    }

    #[test]
    fn equality_ignores_timestamp_value_only(u in url(), ts in 1u64..1_000_000) {
        if u.param("timestamp").is_some() {
            let other = u.with_param("timestamp", &ts.to_string());
            prop_assert_eq!(&other, &u);
        }
        let changed = u.with_param("weight", "12345");
        prop_assert_eq!(changed == u, u.param("weight") == Some("12345"));
    }

    #[test]
    fn encode_decode_round_trip(s in any::<String>()) {
        let e = codec::encode(&s);
        prop_assert!(e.bytes().all(|b| b.is_ascii_alphanumeric() || b"._-*+%".contains(&b)), "{}", e);
        prop_assert_eq!(codec::decode(&e).unwrap(), s);
    }

    #[test]
    fn wildcard_consumer_matches_enabled_provider(u in url(), iface in "[a-z][a-zA-Z0-9.$]{0,20}") {
        let provider = u.with_params([("interface", iface.as_str())])
            .without_params(&["enabled", "category", "classifier"]);
        let consumer = Url::parse(&format!(
            "consumer://10.0.0.1/{iface}?interface={iface}&group=*&version=*"
        )).unwrap();
        prop_assert!(is_match(&consumer, &provider));
        let disabled = provider.with_param("enabled", "false");
        prop_assert!(!is_match(&consumer, &disabled));
        let any = consumer.with_param("enabled", "*");
        prop_assert!(is_match(&any, &disabled));
        let other = consumer.with_params([("interface", "zz.Other")]);
        prop_assert_eq!(is_match(&other, &provider), iface == "zz.Other");
    }

    #[test]
    fn exact_group_and_version_match(g in "[a-z]{1,6}", v in "[0-9.]{1,6}", u in url()) {
        let p = u.with_params([("interface", "S"), ("group", g.as_str()), ("version", v.as_str())])
            .without_params(&["enabled", "category", "classifier"]);
        let c = Url::parse(&format!("consumer://h/S?group=x,{g}&version={v}")).unwrap();
        prop_assert!(is_match(&c, &p));
        let c2 = c.with_param("version", &format!("{v}.1"));
        prop_assert!(!is_match(&c2, &p));
    }

    #[test]
    fn category_and_glob_invariants(c in "[a-z*-]{1,12}", v in "[a-zA-Z0-9.]{1,12}") {
        prop_assert!(is_match_category(&c, &c));
        prop_assert!(is_match_category(&c, "*"));
        prop_assert!(is_match_glob_pattern(&v, Some(&v), None));
        prop_assert!(is_match_glob_pattern("*", Some(&v), None));
        let prefix = format!("{}*", &v[..v.len() / 2]);
        prop_assert!(is_match_glob_pattern(&prefix, Some(&v), None));
    }

    #[test]
    fn service_keys_round_trip(g in option::of("[a-z]{1,6}"), i in "[a-z][a-zA-Z.]{0,12}", v in option::of("[0-9.]{1,6}")) {
        let u = Url::builder("dubbo").host("h").path(&i).build();
        let u = match &g { Some(g) => u.with_param("group", g), None => u };
        let u = match &v { Some(v) => u.with_param("version", v), None => u };
        let key = u.service_key().unwrap();
        let (pg, pi, pv) = parse_service_key(&key);
        prop_assert_eq!((pg, pi, pv), (g.as_deref(), i.as_str(), v.as_deref()));
        let e = empty_url_for_key(&key, "providers");
        prop_assert_eq!(e.service_key().unwrap(), key);
    }

    #[test]
    fn bad_input_never_panics(s in any::<String>(), b in proptest::collection::vec(any::<u8>(), 0..64)) {
        let _ = Url::parse(&s);
        let _ = Url::parse_encoded(&s);
        let _ = codec::decode(&s);
        let _ = parse_params_raw(&s);
        let _ = parse_registry_address(&s, &Default::default());
        let _ = parse_registry_addresses(&s, &Default::default());
        let _ = empty_url_for_key(&s, &s);
        let _ = append_default_port(&s, 2181);
        let _ = parse_service_key(&s);
        let lossy = String::from_utf8_lossy(&b);
        let _ = Url::parse(&lossy);
        let _ = Url::parse_encoded(&lossy);
        if let Ok(u) = Url::parse(&s) {
            let _ = (u.to_full_string(), u.service_key(), u.to_service_string());
            let _ = is_match(&u, &u);
        }
    }

    #[test]
    fn url_like_garbage_never_panics(s in "[a-z:/@%?&;=#\\[\\]0-9A-F.+ -]{0,40}") {
        let _ = Url::parse(&s);
        let _ = Url::parse_encoded(&s);
        let _ = parse_registry_addresses(&s, &Default::default());
    }
}
