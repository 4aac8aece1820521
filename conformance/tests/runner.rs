//! The runner itself: outcomes are counted per kind, a wrong expectation fails, an unknown
//! kind is skipped, a malformed vector fails without stopping the run, and a file that cannot
//! be run is an error, not a panic.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::Write as _;

use conformance::{run_document, run_file, Error};
use serde_json::json;

fn build_key(id: &str, args: [&str; 3], expected: &str) -> serde_json::Value {
    json!({"id": id, "kind": "service_key", "fn": "URL.buildKey", "args": args, "expected": expected})
}

#[test]
fn outcomes_are_counted_per_kind() {
    let doc = json!({"vectors": [
        build_key("ok", ["com.foo.Bar", "g", "1.0"], "g/com.foo.Bar:1.0"),
        build_key("no-group", ["com.foo.Bar", "", "1.0"], "com.foo.Bar:1.0"),
        build_key("wrong", ["com.foo.Bar", "g", "1.0"], "com.foo.Bar"),
        {"id": "unknown", "kind": "not_a_kind"},
        {"id": "no-url", "kind": "is_match"},
    ]});
    let r = run_document(&doc).unwrap();
    assert_eq!((r.passed, r.failed, r.skipped, r.diverged), (2, 2, 1, 0));
    assert_eq!(r.per_kind["service_key"], [2, 1, 0, 0]);
    assert_eq!(r.per_kind["not_a_kind"], [0, 0, 1, 0]);
    let wrong = r.results.iter().find(|v| v.id == "wrong").unwrap();
    assert_eq!(wrong.status, "fail");
    assert!(wrong.detail.contains("com.foo.Bar"), "{}", wrong.detail);
    let text = r.to_text();
    assert!(text.contains("FAIL wrong [service_key]"), "{text}");
    assert!(text.contains("2 passed, 2 failed"), "{text}");
    let j = r.to_json();
    assert_eq!(j["failed"], 2);
    assert_eq!(j["results"].as_array().unwrap().len(), 5);
}

#[test]
fn a_bare_array_is_a_document_and_anything_else_is_an_error() {
    let r = run_document(&json!([build_key("a", ["S", "", ""], "S")])).unwrap();
    assert_eq!(r.passed, 1);
    assert!(matches!(
        run_document(&json!({"tests": []})),
        Err(Error::NoVectors(_))
    ));
}

#[test]
fn files_that_cannot_be_run_are_errors() {
    let dir = std::env::temp_dir();
    let missing = dir.join(format!("conformance-missing-{}.json", std::process::id()));
    assert!(matches!(run_file(&missing), Err(Error::Io { .. })));
    let garbage = dir.join(format!("conformance-garbage-{}.json", std::process::id()));
    std::fs::File::create(&garbage)
        .unwrap()
        .write_all(b"{ not json")
        .unwrap();
    let e = run_file(&garbage).unwrap_err();
    assert!(matches!(e, Error::Json { .. }), "{e}");
    assert!(!e.is_retryable());
    std::fs::remove_file(&garbage).unwrap();
}

#[test]
fn the_binary_exits_1_on_a_failure_and_0_when_all_pass() {
    let dir = std::env::temp_dir();
    let run = |name: &str, doc: serde_json::Value| {
        let path = dir.join(format!("conformance-{name}-{}.json", std::process::id()));
        std::fs::write(&path, doc.to_string()).unwrap();
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_dubbo-conformance"))
            .arg(&path)
            .arg("--json")
            .output()
            .unwrap();
        std::fs::remove_file(&path).unwrap();
        out
    };
    let ok = run("ok", json!([build_key("a", ["S", "", ""], "S")]));
    assert_eq!(ok.status.code(), Some(0));
    let report: serde_json::Value = serde_json::from_slice(&ok.stdout).unwrap();
    assert_eq!(report["passed"], 1);
    let bad = run("bad", json!([build_key("a", ["S", "", ""], "T")]));
    assert_eq!(bad.status.code(), Some(1));
}
