//! Codec behaviour without the Java peer: the spec's byte vectors, references and cycles,
//! stream tables, typed readers and bad input.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers outside #[test] functions

use hessian2::{Decoder, Encoder, Error, Limits, Value};

fn hex(s: &str) -> Vec<u8> {
    let s: String = s.split_whitespace().collect();
    (0..s.len() / 2)
        .map(|i| u8::from_str_radix(&s[2 * i..2 * i + 2], 16).unwrap())
        .collect()
}

fn enc(v: &Value) -> Vec<u8> {
    hessian2::to_bytes(v).unwrap()
}

fn s(x: &str) -> Value {
    Value::String(x.to_owned())
}

/// Vectors recorded from Java's Hessian2 (`Hessian2Output`).
#[test]
fn spec_vectors() {
    assert_eq!(enc(&Value::Int(1)), hex("91"));
    assert_eq!(enc(&Value::Int(300)), hex("c92c"));
    assert_eq!(enc(&Value::Long(1)), hex("e1"));
    assert_eq!(enc(&Value::Long(3_000_000_000)), hex("4c00000000b2d05e00"));
    assert_eq!(enc(&Value::Double(1.5)), hex("5f000005dc"));
    assert_eq!(enc(&Value::Date(0)), hex("4b00000000"));
    assert_eq!(enc(&s("😀")), hex("02 eda0bd edb880"));
    assert_eq!(enc(&s("é")), hex("01c3a9"));
    assert_eq!(enc(&Value::Binary(vec![1, 2])), hex("220102"));
    let list = Value::List {
        type_name: None,
        items: vec![Value::Int(1), Value::Int(2)],
    };
    assert_eq!(enc(&list), hex("7a9192"));
    let ints = Value::List {
        type_name: Some("[int".into()),
        items: vec![Value::Int(1), Value::Int(2)],
    };
    assert_eq!(enc(&ints), hex("72 04 5b696e74 91 92"));
    let map = Value::Map {
        type_name: None,
        entries: vec![(s("k"), s("v"))],
    };
    assert_eq!(enc(&map), hex("48016b01765a"));
    let user = Value::Object {
        class: "Gen$User".into(),
        fields: vec![("name".into(), s("u")), ("age".into(), Value::Int(3))],
    };
    assert_eq!(
        enc(&user),
        hex("43 08 47656e2455736572 92 04 6e616d65 03 616765 60 01 75 93")
    );
    for v in [
        Value::Int(300),
        Value::Long(3_000_000_000),
        s("😀"),
        list,
        ints,
        map,
        user,
    ] {
        assert_eq!(hessian2::from_bytes(&enc(&v)).unwrap(), v);
    }
}

/// The body of a Dubbo2 `sayHello("rust")` request, built with the stream API.
#[test]
fn dubbo_request_body() {
    let mut e = Encoder::new();
    e.write_str("2.0.2");
    e.write_str("org.apache.dubbo.demo.DemoService");
    e.write_str("1.0.0");
    e.write_str("sayHello");
    e.write_str(&hessian2::java_descriptor(&["java.lang.String"]));
    e.write_json(&serde_json::json!("rust"), Some("java.lang.String"))
        .unwrap();
    e.write_map_str([
        ("path", "org.apache.dubbo.demo.DemoService"),
        ("timeout", "3000"),
    ]);
    let b = e.as_bytes();
    assert_eq!(&b[..6], hex("05322e302e32").as_slice());
    // 33 characters: the two-byte string form (the fact sheet abbreviates it as `21`).
    assert_eq!(&b[6..8], &[0x30, 0x21]);
    let mut d = Decoder::new(b);
    assert_eq!(d.read_str().unwrap(), "2.0.2");
    assert_eq!(d.read_str().unwrap(), "org.apache.dubbo.demo.DemoService");
    assert_eq!(d.read_opt_str().unwrap().as_deref(), Some("1.0.0"));
    assert_eq!(d.read_str().unwrap(), "sayHello");
    assert_eq!(d.read_str().unwrap(), "Ljava/lang/String;");
    assert_eq!(d.read_json().unwrap(), serde_json::json!("rust"));
    let att = d.read_map_str().unwrap();
    assert_eq!(att.get("timeout").map(String::as_str), Some("3000"));
    assert!(d.is_empty());
    // Response body: flag 1 (int) then the value.
    let mut d = Decoder::new(&[
        0x91, 0x0a, b'H', b'e', b'l', b'l', b'o', b' ', b'r', b'u', b's', b't',
    ]);
    assert_eq!(d.read_int().unwrap(), 1);
    assert_eq!(d.read_str().unwrap(), "Hello rust");
}

#[test]
fn attachments_tolerate_other_values() {
    let v = Value::Map {
        type_name: None,
        entries: vec![
            (s("a"), s("x")),
            (s("n"), Value::Int(5)),
            (s("b"), Value::Bool(true)),
            (s("gone"), Value::Null),
            (Value::Long(7), s("seven")),
            (
                s("list"),
                Value::List {
                    type_name: None,
                    items: vec![Value::Int(1)],
                },
            ),
        ],
    };
    let b = enc(&v);
    let m = Decoder::new(&b).read_map_str().unwrap();
    assert_eq!(m.get("a").unwrap(), "x");
    assert_eq!(m.get("n").unwrap(), "5");
    assert_eq!(m.get("b").unwrap(), "true");
    assert_eq!(m.get("7").unwrap(), "seven");
    assert_eq!(m.get("list").unwrap(), "[1]");
    assert!(!m.contains_key("gone"));
    assert!(Decoder::new(b"N").read_map_str().unwrap().is_empty());
    assert!(Decoder::new(b"\x91").read_map_str().is_err());
}

/// A shared reference expands into a copy; a cycle stays a `Ref` whose index is the one the
/// copy has in the decoded output, so re-encoding writes a correct stream.
#[test]
fn refs_expand_and_cycles_renumber() {
    // Value 0: [ {x:1}, Q1 ] -- the second element shares the map (stream index 1).
    // Value 1: Node{name, next: Q2} -- an object referencing itself (stream index 2).
    let mut b = vec![0x7a, b'H', 0x01, b'x', 0x91, b'Z', b'Q', 0x91];
    b.extend_from_slice(&[
        b'C', 0x04, b'N', b'o', b'd', b'e', 0x92, 0x04, b'n', b'a', b'm', b'e',
    ]);
    b.extend_from_slice(&[0x04, b'n', b'e', b'x', b't', 0x60, 0x01, b'a', b'Q', 0x92]);
    let mut d = Decoder::new(&b);
    let v0 = d.read().unwrap();
    let v1 = d.read().unwrap();
    assert!(d.is_empty());
    let m = Value::Map {
        type_name: None,
        entries: vec![(s("x"), Value::Int(1))],
    };
    assert_eq!(
        v0,
        Value::List {
            type_name: None,
            items: vec![m.clone(), m]
        }
    );
    // In the output the node is the 4th list/map/object (the copy took index 2).
    assert_eq!(
        v1,
        Value::Object {
            class: "Node".into(),
            fields: vec![("name".into(), s("a")), ("next".into(), Value::Ref(3))]
        }
    );
    let mut e = Encoder::new();
    e.write(&v0).unwrap();
    e.write(&v1).unwrap();
    let mut d2 = Decoder::new(e.as_bytes());
    assert_eq!(d2.read().unwrap(), v0);
    assert_eq!(d2.read().unwrap(), v1);
    assert_eq!(
        v1.to_json(),
        serde_json::json!({"class": "Node", "name": "a", "next": null})
    );
}

/// A reference to a value that itself contains a cycle: the copy's cycle points at the copy.
#[test]
fn copy_of_a_cyclic_value() {
    // [ L=[1, Q1], Q1 ] : element 0 is a self-containing list, element 1 shares it.
    let b = [0x7a, 0x7a, 0x91, b'Q', 0x91, b'Q', 0x91];
    let v = Decoder::new(&b).read().unwrap();
    let inner = |n| Value::List {
        type_name: None,
        items: vec![Value::Int(1), Value::Ref(n)],
    };
    assert_eq!(
        v,
        Value::List {
            type_name: None,
            items: vec![inner(1), inner(2)]
        }
    );
    assert_eq!(hessian2::from_bytes(&enc(&v)).unwrap(), v);
}

/// Exponential reference expansion is cut off by the limit.
#[test]
fn reference_bomb_is_bounded() {
    // L0 = [1]; L(k) = [Q(k-1), Q(k-1)] for 40 levels: 2^40 copies if unbounded.
    let mut b = vec![0x58, 0x90 + 41, 0x79, 0x91];
    for k in 0..40 {
        b.push(0x7a);
        for _ in 0..2 {
            b.push(b'Q');
            b.push(0x90 + k);
        }
    }
    let err = Decoder::new(&b).read().unwrap_err();
    assert!(err.is_limit(), "{err}");
    let small = Limits {
        max_depth: 64,
        max_len: 1 << 16,
        ..Limits::DEFAULT
    };
    let err = Decoder::with_limits(&b, small).read().unwrap_err();
    assert!(
        matches!(
            err,
            Error::TooLong {
                context: "reference expansion",
                ..
            }
        ),
        "{err}"
    );
}

#[test]
fn class_definitions_and_types_persist_across_reads() {
    let user = |n: &str| Value::Object {
        class: "U".into(),
        fields: vec![("n".into(), s(n))],
    };
    let linked = |i| Value::List {
        type_name: Some("java.util.LinkedList".into()),
        items: vec![Value::Int(i)],
    };
    let mut e = Encoder::new();
    for v in [user("a"), linked(1), user("b"), linked(2)] {
        e.write(&v).unwrap();
    }
    let b = e.as_bytes().to_vec();
    // The second user is `60` + field, the second list refers to type 0.
    assert_eq!(b.iter().filter(|&&x| x == b'C').count(), 1);
    assert!(b.ends_with(&[0x71, 0x90, 0x92]));
    let mut d = Decoder::new(&b);
    assert_eq!(d.read().unwrap(), user("a"));
    assert_eq!(d.read().unwrap(), linked(1));
    assert_eq!(d.read().unwrap(), user("b"));
    assert_eq!(d.read().unwrap(), linked(2));
    // clear() starts a new stream: the definition is sent again.
    e.clear();
    e.write(&user("c")).unwrap();
    assert_eq!(e.as_bytes()[0], b'C');
    // Same class name with other fields is a second definition.
    e.write(&Value::Object {
        class: "U".into(),
        fields: vec![("m".into(), Value::Null)],
    })
    .unwrap();
    let mut d = Decoder::new(e.as_bytes());
    assert_eq!(d.read().unwrap(), user("c"));
    assert_eq!(d.read().unwrap().get("m"), Some(&Value::Null));
}

#[test]
fn typed_readers() {
    let mut e = Encoder::new();
    e.write_long(5_000_000_000);
    e.write_int(-3);
    e.write_long(7);
    e.write_bool(true);
    e.write_double(0.25);
    e.write_null();
    e.write_int(9);
    let mut d = Decoder::new(e.as_bytes());
    assert_eq!(d.read_long().unwrap(), 5_000_000_000);
    assert_eq!(d.read_int().unwrap(), -3);
    assert_eq!(d.read_int().unwrap(), 7); // a long form that fits
    assert!(d.read_bool().unwrap());
    assert_eq!(d.read_double().unwrap(), 0.25);
    assert!(d.peek_null());
    assert_eq!(d.read_opt_str().unwrap(), None);
    let at = d.position();
    let err = d.read_str().unwrap_err();
    assert_eq!(
        err,
        Error::UnexpectedTag {
            tag: 0x99,
            offset: at,
            expected: "a string"
        }
    );
    assert!(err.to_string().contains("offset"));
    let big = hessian2::to_bytes(&Value::Long(1 << 40)).unwrap();
    assert!(Decoder::new(&big).read_int().is_err());
}

#[test]
fn strings_chunks_and_surrogates() {
    // Exactly 0x8000 units: one final `S` chunk; one more: an `R` chunk then a 1-unit final.
    let a = "a".repeat(0x8000);
    let b = enc(&s(&a));
    assert_eq!(&b[..3], &[b'S', 0x80, 0x00]);
    let b = enc(&s(&format!("{a}b")));
    assert_eq!(&b[..3], &[b'R', 0x80, 0x00]);
    assert_eq!(&b[0x8003..], &[0x01, b'b']);
    // A pair that would straddle the boundary moves to the next chunk.
    let text = format!("{}😀", "é".repeat(0x7fff));
    let b = enc(&s(&text));
    assert_eq!(&b[..3], &[b'R', 0x7f, 0xff]);
    assert_eq!(hessian2::from_bytes(&b).unwrap(), s(&text));
    // A pair split across chunks by another writer still joins.
    let split = [b'R', 0x00, 0x01, 0xed, 0xa0, 0xbd, 0x01, 0xed, 0xb8, 0x80];
    assert_eq!(hessian2::from_bytes(&split).unwrap(), s("😀"));
    // Lone surrogates (legal in Java) become U+FFFD; real 4-byte UTF-8 counts as two units.
    assert_eq!(
        hessian2::from_bytes(&[0x01, 0xed, 0xa0, 0xbd]).unwrap(),
        s("\u{fffd}")
    );
    assert_eq!(
        hessian2::from_bytes(&[0x02, 0xed, 0xa0, 0xbd, 0x41]).unwrap(),
        s("\u{fffd}A")
    );
    assert_eq!(
        hessian2::from_bytes(&[0x02, 0xf0, 0x9f, 0x98, 0x80]).unwrap(),
        s("😀")
    );
    // Java's overlong NUL (modified UTF-8) is read as NUL.
    assert_eq!(hessian2::from_bytes(&[0x01, 0xc0, 0x80]).unwrap(), s("\0"));
}

#[test]
#[allow(clippy::approx_constant)] // Java's bytes for the literal 3.14159
fn doubles_like_java() {
    for (v, h) in [
        (0.0, "5b"),
        (-0.0, "5b"),
        (1.0, "5c"),
        (-128.0, "5d80"),
        (32767.0, "5e7fff"),
        (32768.0, "5f01f40000"),
        (0.001, "5f00000001"),
        (3.14159, "44400921f9f01b866e"),
        (f64::NAN, "447ff8000000000000"),
    ] {
        assert_eq!(enc(&Value::Double(v)), hex(h), "{v}");
    }
    // 0x5f decodes as 0.001 * mills, exactly as Java computes it.
    let v = hessian2::from_bytes(&hex("5f075bcd15")).unwrap();
    assert_eq!(v, Value::Double(0.001 * 123_456_789.0));
    assert_eq!(v.to_json().to_string(), "123456.789");
}

fn err_of(b: &[u8]) -> Error {
    Decoder::new(b).read().unwrap_err()
}

#[test]
fn bad_input_is_a_clear_error() {
    assert!(err_of(b"").is_eof());
    assert!(err_of(&[0x05, b'a']).is_eof());
    assert!(err_of(&[b'I', 0, 0]).is_eof());
    assert!(matches!(
        err_of(&[0x40]),
        Error::UnexpectedTag {
            tag: 0x40,
            offset: 0,
            ..
        }
    ));
    assert!(matches!(
        err_of(&[b'Q', 0x90]),
        Error::Invalid {
            context: "reference",
            ..
        }
    ));
    assert!(matches!(
        err_of(&[0x60]),
        Error::Invalid {
            context: "object",
            ..
        }
    ));
    assert!(matches!(
        err_of(&[0x71, 0x95, 0x90]),
        Error::Invalid {
            context: "type reference",
            ..
        }
    ));
    assert!(matches!(
        err_of(&[b'X', 0x8f]),
        Error::Invalid {
            context: "list length",
            ..
        }
    ));
    assert!(err_of(&[b'X', b'I', 0x7f, 0xff, 0xff, 0xff]).is_limit());
    assert!(err_of(&[b'V', 0x00, b'I', 0x00, 0x10, 0x00, 0x00, 0x90]).is_eof());
    assert!(matches!(
        err_of(&[0x01, 0xff]),
        Error::Invalid {
            context: "string",
            ..
        }
    ));
    assert!(matches!(
        err_of(&[0x02, 0xc3, 0x41]),
        Error::Invalid {
            context: "string",
            ..
        }
    ));
    assert!(err_of(&[b'H', 0x91]).is_eof());
    assert!(err_of(&[b'W', 0x91]).is_eof());
    assert!(err_of(&[b'R', 0x00, 0x01, b'a']).is_eof());
    assert!(matches!(
        err_of(&[b'A', 0x00, 0x00, 0x91]),
        Error::UnexpectedTag { .. }
    ));
    // Depth.
    let deep = vec![0x79; 300];
    assert!(matches!(err_of(&deep), Error::TooDeep { limit: 256, .. }));
    let lim = Limits {
        max_depth: 4,
        max_len: 100,
        ..Limits::DEFAULT
    };
    assert!(Decoder::with_limits(&[0x79, 0x79, 0x79, 0x79, 0x90], lim)
        .read()
        .is_ok());
    assert!(
        Decoder::with_limits(&[0x79, 0x79, 0x79, 0x79, 0x79, 0x90], lim)
            .read()
            .unwrap_err()
            .is_limit()
    );
    // Lengths.
    let long = enc(&s(&"x".repeat(101)));
    assert!(Decoder::with_limits(&long, lim)
        .read()
        .unwrap_err()
        .is_limit());
    let bin = enc(&Value::Binary(vec![0; 101]));
    assert!(Decoder::with_limits(&bin, lim)
        .read()
        .unwrap_err()
        .is_limit());
    // A long run of class definitions does not recurse.
    let mut defs = Vec::new();
    for _ in 0..200_000 {
        defs.extend_from_slice(&[b'C', 0x01, b'K', 0x90]);
    }
    defs.push(0x60);
    let v = Decoder::new(&defs).read().unwrap();
    assert_eq!(
        v,
        Value::Object {
            class: "K".into(),
            fields: vec![]
        }
    );
    assert!(!Error::Eof {
        offset: 0,
        context: "x"
    }
    .is_retryable());
}

#[test]
fn encoder_rejects_dangling_refs() {
    let mut e = Encoder::new();
    assert!(e.write(&Value::Ref(0)).is_err());
    let v = Value::List {
        type_name: None,
        items: vec![Value::Ref(0), Value::Ref(1)],
    };
    assert!(e.write(&v).is_err());
}

#[test]
fn encoder_reuses_buffers() {
    let mut e = Encoder::with_buffer(Vec::with_capacity(64));
    e.write_str("x");
    assert_eq!(e.len(), 2);
    e.clear();
    assert!(e.is_empty());
    assert_eq!(e.ref_count(), 0);
    e.write_raw(&[0x91]);
    assert_eq!(e.into_bytes(), vec![0x91]);
}
