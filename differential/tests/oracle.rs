//! Every differential operation against the Java oracle, a few hundred generated cases each:
//! a difference that is not a listed divergence fails.
//!
//! Needs the oracle (`bash scripts/peers/java-oracle.sh install`, which the test script runs).
//! Without it the test is skipped loudly, unless `DUBBO_TEST_REQUIRE_SERVERS=1` (the test
//! script, CI), where a missing oracle is a failure. `scripts/differential.sh` runs the full
//! 10,000 cases per operation.

use std::path::PathBuf;

use differential::{ops, run_operation, Oracle, RunOptions};

fn oracle() -> Option<Oracle> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let peers =
        std::env::var("DUBBO_TEST_PEERS_DIR").map_or_else(|_| root.join(".peers"), PathBuf::from);
    let built = peers.join("java-oracle/classes/oracle/Main.class").exists();
    let required = std::env::var("DUBBO_TEST_REQUIRE_SERVERS").is_ok_and(|v| v == "1");
    if !built && std::env::var(differential::oracle::ORACLE_CMD_ENV).is_err() {
        assert!(
            !required,
            "the Java oracle is not built (bash scripts/peers/java-oracle.sh install)"
        );
        eprintln!(
            "SKIPPED: the Java oracle is not built (bash scripts/peers/java-oracle.sh install)"
        );
        return None;
    }
    match Oracle::start(&root) {
        Ok(o) => Some(o),
        Err(e) => {
            assert!(!required, "the Java oracle does not start: {e}");
            eprintln!("SKIPPED: the Java oracle does not start: {e}");
            None
        }
    }
}

#[test]
fn every_operation_agrees_with_dubbo_or_diverges_as_listed() {
    let Some(mut oracle) = oracle() else {
        return;
    };
    let opts = RunOptions {
        cases: 300,
        seed: 7,
        ..RunOptions::default()
    };
    let mut failed = Vec::new();
    for op in ops::all() {
        assert!(
            oracle.ops().iter().any(|n| n == op.name()),
            "the oracle lacks {}",
            op.name()
        );
        let report = run_operation(&mut oracle, op.as_ref(), &opts)
            .unwrap_or_else(|e| panic!("{}: {e}", op.name()));
        assert!(report.cases >= 300, "{}: {} cases", op.name(), report.cases);
        if !report.passed() {
            failed.push(report.summary());
        }
    }
    assert!(failed.is_empty(), "{}", failed.join("\n"));
}

#[test]
fn an_unlisted_difference_fails_and_is_shrunk() {
    // A deliberately wrong operation: our answer to `url_codec` drops the round trip. The
    // runner must count every case as a difference and shrink the first to the empty text.
    #[derive(Debug)]
    struct Wrong;
    impl differential::Operation for Wrong {
        fn name(&self) -> &'static str {
            "url_codec"
        }
        fn strategy(&self) -> proptest::strategy::BoxedStrategy<serde_json::Value> {
            use proptest::prelude::*;
            "[a-z%]{0,12}"
                .prop_map(|t| serde_json::json!({ "text": t }))
                .boxed()
        }
        fn answer(&self, _input: &serde_json::Value) -> serde_json::Value {
            serde_json::json!({ "encoded": "?" })
        }
    }
    let Some(mut oracle) = oracle() else {
        return;
    };
    let opts = RunOptions {
        cases: 50,
        ..RunOptions::default()
    };
    let report = run_operation(&mut oracle, &Wrong, &opts).expect("runs");
    assert_eq!(report.differ, 50);
    assert!(!report.passed());
    let first = report.first.expect("a finding");
    assert_eq!(first.input, serde_json::json!({ "text": "" }));
}
