//! Checks against real Java Hessian (Debian's `libhessian-java`, Caucho 4.0.38, on the JDK).
//!
//! The peer `tests/java/hpeer/HessianPeer.java` is compiled at test time. In `gen` mode it
//! prints, for a wide set of Java values, the bytes `Hessian2Output` writes and a description
//! of what `Hessian2Input` reads back; in `read` mode it reads bytes we wrote and describes
//! what Java sees. Without a JDK or the jar the tests are skipped loudly, or fail when
//! `DUBBO_TEST_REQUIRE_SERVERS=1`. The jar is looked up in `DUBBO_TEST_HESSIAN_JAR`, then
//! `/usr/share/java/hessian-4.0.38.jar` and `/usr/share/java/hessian.jar`
//! (`bash scripts/peers/java-hessian.sh install` installs it).

#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers outside #[test] functions

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;

use hessian2::{Decoder, Encoder, Value};
use serde_json::{json, Value as Json};

struct Peer {
    classpath: String,
}

fn required() -> bool {
    std::env::var("DUBBO_TEST_REQUIRE_SERVERS").is_ok_and(|v| v == "1")
}

fn find_jar() -> Option<PathBuf> {
    let mut candidates = Vec::new();
    if let Ok(p) = std::env::var("DUBBO_TEST_HESSIAN_JAR") {
        candidates.push(PathBuf::from(p));
    }
    candidates.push(PathBuf::from("/usr/share/java/hessian-4.0.38.jar"));
    candidates.push(PathBuf::from("/usr/share/java/hessian.jar"));
    candidates.into_iter().find(|p| p.is_file())
}

fn build_peer() -> Result<Peer, String> {
    let jar = find_jar().ok_or("no hessian jar (run scripts/peers/java-hessian.sh install)")?;
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/java/hpeer");
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    let out = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("java-hessian-{}-{nanos}", std::process::id()));
    std::fs::create_dir_all(&out).map_err(|e| format!("mkdir {}: {e}", out.display()))?;
    let sources: Vec<PathBuf> = std::fs::read_dir(&src)
        .map_err(|e| format!("{}: {e}", src.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "java"))
        .collect();
    let status = Command::new("javac")
        .arg("-nowarn")
        .arg("-d")
        .arg(&out)
        .arg("-cp")
        .arg(&jar)
        .args(&sources)
        .status()
        .map_err(|e| format!("javac: {e} (is a JDK installed?)"))?;
    if !status.success() {
        return Err(format!("javac failed: {status}"));
    }
    Ok(Peer {
        classpath: format!("{}:{}", jar.display(), out.display()),
    })
}

fn peer(test: &str) -> Option<&'static Peer> {
    static PEER: OnceLock<Result<Peer, String>> = OnceLock::new();
    match PEER.get_or_init(build_peer) {
        Ok(p) => Some(p),
        Err(e) => {
            if required() {
                panic!(
                    "{test}: Java Hessian peer unavailable but DUBBO_TEST_REQUIRE_SERVERS=1: {e}"
                );
            }
            eprintln!("\n*** SKIPPED {test}: Java Hessian peer unavailable: {e} ***\n");
            None
        }
    }
}

fn run_java(peer: &Peer, mode: &str, input: &str) -> String {
    let mut child = Command::new("java")
        .args([
            "--add-opens",
            "java.base/java.lang=ALL-UNNAMED",
            "--add-opens",
            "java.base/java.util=ALL-UNNAMED",
            "-cp",
            &peer.classpath,
            "hpeer.HessianPeer",
            mode,
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("start java");
    let mut stdin = child.stdin.take().expect("stdin");
    let input = input.to_owned();
    let writer = std::thread::spawn(move || {
        stdin.write_all(input.as_bytes()).expect("write to java");
    });
    let out = child.wait_with_output().expect("java output");
    writer.join().expect("writer thread");
    assert!(out.status.success(), "java {mode} failed: {}", out.status);
    String::from_utf8(out.stdout).expect("utf-8 from java")
}

/// One `gen` vector.
struct Golden {
    name: String,
    exact: bool,
    count: usize,
    bytes: Vec<u8>,
    java: Json,
}

fn unhex(s: &str) -> Vec<u8> {
    (0..s.len() / 2)
        .map(|i| u8::from_str_radix(&s[2 * i..2 * i + 2], 16).expect("hex"))
        .collect()
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn golden(test: &str) -> Option<&'static [Golden]> {
    static GEN: OnceLock<Vec<Golden>> = OnceLock::new();
    let p = peer(test)?;
    Some(GEN.get_or_init(|| {
        run_java(p, "gen", "")
            .lines()
            .map(|l| {
                let f: Vec<&str> = l.split('\t').collect();
                assert_eq!(f.len(), 5, "bad gen line {l:.100}");
                Golden {
                    name: f[0].to_owned(),
                    exact: f[1] == "1",
                    count: f[2].parse().expect("count"),
                    bytes: unhex(f[3]),
                    java: serde_json::from_str(f[4]).unwrap_or_else(|e| panic!("{}: {e}", f[0])),
                }
            })
            .collect()
    }))
}

/// The peer's description of a value (see HessianPeer.describe).
fn describe(v: &Value) -> Json {
    match v {
        Value::Null => Json::Null,
        Value::Bool(b) => json!(b),
        Value::Int(i) => json!({ "int": i }),
        Value::Long(l) => json!({ "long": l }),
        Value::Double(d) => json!({ "double": format!("{:x}", d.to_bits()) }),
        Value::Date(ms) => json!({ "date": ms }),
        Value::String(s) => json!({ "string": s }),
        Value::Binary(b) => json!({ "binary": hessian2::base64_encode(b) }),
        Value::List { items, .. } => {
            json!({ "list": items.iter().map(describe).collect::<Vec<_>>() })
        }
        Value::Map { entries, .. } => json!({
            "map": entries.iter().map(|(k, v)| json!([describe(k), describe(v)])).collect::<Vec<_>>()
        }),
        Value::Object { class, fields } => {
            let m: serde_json::Map<String, Json> = fields
                .iter()
                .map(|(k, v)| (k.to_string(), describe(v)))
                .collect();
            json!({ "object": &**class, "fields": m })
        }
        Value::Ref(_) => json!({ "cycle": 1 }),
    }
}

/// Map entries in a canonical order (Java's HashMap iteration order is not the stream's).
fn normalize(j: &mut Json) {
    match j {
        Json::Array(a) => a.iter_mut().for_each(normalize),
        Json::Object(m) => {
            m.values_mut().for_each(normalize);
            if let Some(Json::Array(entries)) = m.get_mut("map") {
                entries.sort_by_key(|e| e.to_string());
            }
        }
        _ => {}
    }
}

fn decode_all(bytes: &[u8], count: usize) -> Result<Vec<Value>, hessian2::Error> {
    let mut d = Decoder::new(bytes);
    let mut out = Vec::new();
    for _ in 0..count {
        out.push(d.read()?);
    }
    assert!(d.is_empty(), "trailing bytes after {count} values");
    Ok(out)
}

#[test]
fn decodes_what_java_writes() {
    let Some(vectors) = golden("decodes_what_java_writes") else {
        return;
    };
    assert!(vectors.len() > 140, "only {} vectors", vectors.len());
    let mut failures = Vec::new();
    for g in vectors {
        match decode_all(&g.bytes, g.count) {
            Ok(values) => {
                let mut ours = Json::Array(values.iter().map(describe).collect());
                let mut java = g.java.clone();
                normalize(&mut ours);
                normalize(&mut java);
                if ours != java {
                    failures.push(format!("{}: ours {ours:.300} java {java:.300}", g.name));
                }
            }
            Err(e) => failures.push(format!("{}: {e}", g.name)),
        }
    }
    assert!(
        failures.is_empty(),
        "{} mismatches:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn encodes_the_same_bytes_as_java() {
    let Some(vectors) = golden("encodes_the_same_bytes_as_java") else {
        return;
    };
    let mut failures = Vec::new();
    let mut checked = 0;
    for g in vectors.iter().filter(|g| g.exact) {
        let values = match decode_all(&g.bytes, g.count) {
            Ok(v) => v,
            Err(e) => {
                failures.push(format!("{}: {e}", g.name));
                continue;
            }
        };
        let mut e = Encoder::new();
        for v in &values {
            e.write(v).expect("write");
        }
        if e.as_bytes() != g.bytes.as_slice() {
            failures.push(format!(
                "{}:\n  ours {:.400}\n  java {:.400}",
                g.name,
                hex(e.as_bytes()),
                hex(&g.bytes)
            ));
        }
        checked += 1;
    }
    assert!(checked > 130, "only {checked} exact vectors");
    assert!(
        failures.is_empty(),
        "{} mismatches:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn java_exception_shape() {
    let Some(vectors) = golden("java_exception_shape") else {
        return;
    };
    let g = vectors
        .iter()
        .find(|g| g.name == "exception:runtime")
        .expect("vector");
    let v = Decoder::new(&g.bytes).read().expect("decode");
    let Value::Object { class, .. } = &v else {
        panic!("not an object: {v:?}")
    };
    assert_eq!(&**class, "java.lang.RuntimeException");
    assert_eq!(v.get("detailMessage"), Some(&Value::String("boom".into())));
    // cause == this: a cycle back to the exception itself, the first object of the stream.
    assert_eq!(v.get("cause"), Some(&Value::Ref(0)));
    match v.get("stackTrace") {
        Some(Value::List {
            type_name: Some(t),
            items,
        }) => {
            assert_eq!(&**t, "[java.lang.StackTraceElement");
            assert!(!items.is_empty());
            assert!(items[0].get("methodName").is_some());
        }
        other => panic!("stackTrace: {other:?}"),
    }
    let j = v.to_json();
    assert_eq!(j["class"], "java.lang.RuntimeException");
    assert_eq!(j["detailMessage"], "boom");
    assert_eq!(j["cause"], Json::Null);
    assert!(j["stackTrace"].as_array().is_some_and(|a| !a.is_empty()));

    let g = vectors
        .iter()
        .find(|g| g.name == "exception:with-cause")
        .expect("vector");
    let j = Decoder::new(&g.bytes).read_json().expect("decode");
    assert_eq!(j["class"], "java.lang.IllegalStateException");
    assert_eq!(j["cause"]["class"], "java.io.IOException");
    assert_eq!(j["cause"]["detailMessage"], "inner");
    assert_eq!(j["cause"]["cause"], Json::Null);
}

/// Values we write for Java to read (beyond re-encoding every golden vector).
fn our_vectors() -> Vec<(String, Vec<Value>)> {
    let mut v: Vec<(String, Vec<Value>)> = Vec::new();
    let mut add = |name: String, vals: Vec<Value>| v.push((name, vals));
    for i in [
        i32::MIN,
        -262_145,
        -262_144,
        -2049,
        -2048,
        -17,
        -16,
        0,
        47,
        48,
        2047,
        2048,
        262_143,
        262_144,
        i32::MAX,
    ] {
        add(format!("int:{i}"), vec![Value::Int(i)]);
    }
    for l in [
        i64::MIN,
        -2_147_483_649,
        i32::MIN as i64,
        -262_145,
        -262_144,
        -2049,
        -2048,
        -9,
        -8,
        0,
        15,
        16,
        2047,
        2048,
        262_143,
        262_144,
        i32::MAX as i64,
        2_147_483_648,
        i64::MAX,
    ] {
        add(format!("long:{l}"), vec![Value::Long(l)]);
    }
    for d in [
        0.0,
        1.0,
        -1.0,
        127.0,
        -128.0,
        128.0,
        32767.0,
        -32768.0,
        32768.0,
        1.5,
        0.001,
        -0.001,
        0.1,
        2147483.647,
        2147483.648,
        1e300,
        f64::MIN_POSITIVE,
        f64::NAN,
        f64::INFINITY,
        0.30000000000000004,
        5e-324,
    ] {
        add(format!("double:{d}"), vec![Value::Double(d)]);
    }
    let long_unicode: String = "é中😀z".repeat(20_000);
    let mut pair_end = "a".repeat(32767);
    pair_end.push_str("😀b");
    for (i, s) in [
        "".to_owned(),
        "x".repeat(31),
        "x".repeat(32),
        "x".repeat(1023),
        "x".repeat(1024),
        "x".repeat(32768),
        "x".repeat(32769),
        "x".repeat(100_000),
        "é😀日本".to_owned(),
        long_unicode,
        pair_end,
        "\u{0}\u{7f}\u{80}\u{7ff}\u{800}\u{ffff}\u{10000}\u{10ffff}".to_owned(),
    ]
    .into_iter()
    .enumerate()
    {
        add(format!("string:{i}"), vec![Value::String(s)]);
    }
    for n in [0usize, 15, 16, 1023, 1024, 32768, 32769, 100_000] {
        add(
            format!("binary:{n}"),
            vec![Value::Binary((0..n).map(|i| (i * 31) as u8).collect())],
        );
    }
    for ms in [
        0i64,
        -1,
        60_000 * 12345,
        -60_000,
        1_700_000_000_123,
        60_000 * i32::MAX as i64 + 60_000,
    ] {
        add(format!("date:{ms}"), vec![Value::Date(ms)]);
    }
    let user = |n: &str, a: i32| Value::Object {
        class: "hpeer.User".into(),
        fields: vec![
            ("name".into(), Value::String(n.into())),
            ("age".into(), Value::Int(a)),
        ],
    };
    add("user".into(), vec![user("u", 1)]);
    add(
        "user-fields-reordered".into(),
        vec![Value::Object {
            class: "hpeer.User".into(),
            fields: vec![
                ("age".into(), Value::Int(9)),
                ("name".into(), Value::String("r".into())),
            ],
        }],
    );
    add(
        "stream:classes-across-values".into(),
        vec![
            user("a", 1),
            Value::String("x".into()),
            user("b", 2),
            Value::List {
                type_name: None,
                items: vec![user("c", 3)],
            },
        ],
    );
    let list = |items: Vec<Value>| Value::List {
        type_name: None,
        items,
    };
    add(
        "list:sizes".into(),
        vec![
            list(vec![]),
            list((0..7).map(Value::Int).collect()),
            list((0..8).map(Value::Int).collect()),
            list((0..1000).map(Value::Int).collect()),
        ],
    );
    add(
        "list:typed".into(),
        vec![
            Value::List {
                type_name: Some("java.util.LinkedList".into()),
                items: vec![Value::Int(1)],
            },
            Value::List {
                type_name: Some("java.util.LinkedList".into()),
                items: (0..9).map(Value::Int).collect(),
            },
            Value::List {
                type_name: Some("[int".into()),
                items: vec![Value::Int(1), Value::Int(2)],
            },
            Value::List {
                type_name: Some("[string".into()),
                items: vec![Value::String("s".into())],
            },
        ],
    );
    add(
        "map:untyped".into(),
        vec![Value::Map {
            type_name: None,
            entries: vec![
                (Value::String("k".into()), Value::Long(1)),
                (Value::Int(2), Value::Null),
            ],
        }],
    );
    add(
        "map:typed".into(),
        vec![Value::Map {
            type_name: Some("java.util.TreeMap".into()),
            entries: vec![(Value::String("a".into()), Value::Bool(true))],
        }],
    );
    // A self-cycle: Node.next == the node (Ref 0 is the first object of the stream).
    add(
        "cycle:self".into(),
        vec![Value::Object {
            class: "hpeer.Node".into(),
            fields: vec![
                ("name".into(), Value::String("me".into())),
                ("next".into(), Value::Ref(0)),
            ],
        }],
    );
    add(
        "cycle:list".into(),
        vec![list(vec![Value::Int(1), Value::Ref(0)])],
    );
    // 17 classes: the 17th instance needs the `O` form.
    let ks: Vec<Value> = (0..17)
        .chain([16, 0])
        .map(|i| Value::Object {
            class: format!("hpeer.K{i}").into(),
            fields: vec![("v".into(), Value::Int(i))],
        })
        .collect();
    add("object:17-classes".into(), vec![list(ks)]);
    add(
        "enum".into(),
        vec![Value::Object {
            class: "hpeer.Color".into(),
            fields: vec![("name".into(), Value::String("RED".into()))],
        }],
    );
    v
}

/// Values made by [`Encoder::write_json`] with Java parameter types.
fn json_vectors() -> Vec<(String, Json, Option<&'static str>)> {
    vec![
        (
            "json:string".into(),
            json!("héllo 😀"),
            Some("java.lang.String"),
        ),
        ("json:int".into(), json!(-5), Some("int")),
        (
            "json:Integer-null".into(),
            json!(null),
            Some("java.lang.Integer"),
        ),
        (
            "json:long".into(),
            json!(9_007_199_254_740_993i64),
            Some("long"),
        ),
        ("json:double".into(), json!(1.25), Some("double")),
        ("json:boolean".into(), json!(true), Some("boolean")),
        (
            "json:list".into(),
            json!([1, "a", 2.5, null, [true]]),
            Some("java.util.List"),
        ),
        (
            "json:map".into(),
            json!({"a": 1, "b": {"c": "d"}}),
            Some("java.util.Map"),
        ),
        ("json:int[]".into(), json!([1, 2, 3]), Some("int[]")),
        (
            "json:String[]".into(),
            json!(["x", "y"]),
            Some("java.lang.String[]"),
        ),
        ("json:byte[]".into(), json!("AQID"), Some("byte[]")),
        (
            "json:date".into(),
            json!(1_700_000_000_000i64),
            Some("java.util.Date"),
        ),
        (
            "json:user-class".into(),
            json!({"name": "n", "age": 3}),
            Some("hpeer.User"),
        ),
        (
            "json:inferred-object".into(),
            json!({"class": "hpeer.Node", "name": "x", "next": {"class": "hpeer.Node", "name": "y", "next": null}}),
            None,
        ),
        (
            "json:inferred".into(),
            json!([1, -1.5, "s", true, null, {"k": [1]}]),
            None,
        ),
        ("json:enum".into(), json!("GREEN"), Some("hpeer.Color")),
        ("json:set".into(), json!([1, 2]), Some("java.util.HashSet")),
    ]
}

#[test]
fn java_reads_what_we_write() {
    let Some(p) = peer("java_reads_what_we_write") else {
        return;
    };
    let vectors = golden("java_reads_what_we_write").unwrap_or(&[]);
    // (name, count, bytes, what we decode from our bytes, optional explicit expectation)
    let mut cases: Vec<(String, usize, Vec<u8>, Json)> = Vec::new();
    let mut push = |name: String, values: &[Value]| {
        let mut e = Encoder::new();
        for v in values {
            e.write(v).expect("write");
        }
        let bytes = e.into_bytes();
        let back = decode_all(&bytes, values.len()).expect("our own bytes decode");
        let desc = Json::Array(back.iter().map(describe).collect());
        cases.push((name, values.len(), bytes, desc));
    };
    for g in vectors {
        let values = decode_all(&g.bytes, g.count).expect("golden decodes");
        push(format!("golden:{}", g.name), &values);
    }
    for (name, values) in our_vectors() {
        push(name, &values);
    }
    for (name, j, t) in json_vectors() {
        let mut e = Encoder::new();
        e.write_json(&j, t)
            .unwrap_or_else(|err| panic!("{name}: {err}"));
        let bytes = e.into_bytes();
        let back = decode_all(&bytes, 1).expect("decode");
        let mut desc = Json::Array(back.iter().map(describe).collect());
        if name == "json:user-class" {
            // Java converts the long we infer for `age` to the int field.
            desc = json!([{ "object": "hpeer.User", "fields": { "name": { "string": "n" }, "age": { "int": 3 } } }]);
        }
        cases.push((name, 1, bytes, desc));
    }
    let input: String = cases
        .iter()
        .map(|(n, c, b, _)| format!("{n}\t{c}\t{}\n", hex(b)))
        .collect();
    let output = run_java(p, "read", &input);
    let seen: std::collections::HashMap<&str, &str> =
        output.lines().filter_map(|l| l.split_once('\t')).collect();
    let mut failures = Vec::new();
    for (name, _, _, ours) in &cases {
        let Some(java) = seen.get(name.as_str()) else {
            failures.push(format!("{name}: no answer from java"));
            continue;
        };
        if java.starts_with("ERROR") {
            failures.push(format!("{name}: java could not read it: {java}"));
            continue;
        }
        let mut java: Json = serde_json::from_str(java).unwrap_or_else(|e| panic!("{name}: {e}"));
        let mut ours = ours.clone();
        normalize(&mut java);
        normalize(&mut ours);
        if java != ours {
            failures.push(format!("{name}: java {java:.300} ours {ours:.300}"));
        }
    }
    assert!(cases.len() > 250, "only {} cases", cases.len());
    assert!(
        failures.is_empty(),
        "{} mismatches:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
