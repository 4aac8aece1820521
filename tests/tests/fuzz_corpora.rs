//! The fuzz targets' corpora as regression tests: every file of `fuzz/seeds/<target>/` (and of
//! `fuzz/corpus/<target>/` when a local fuzzing run left one) goes through the target's own
//! body, compiled unchanged from `fuzz/fuzz_targets/<target>.rs` with `libfuzzer_sys` standing
//! in as `fuzz-shim` (`fuzz_target!` becomes `pub fn run`). Stable Rust, no libFuzzer; an input
//! that once crashed a target, added to its seeds, stays fixed.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};

#[allow(unused_attributes, dead_code, missing_docs)]
#[path = "../../fuzz/fuzz_targets/dubbo_frame.rs"]
mod dubbo_frame;
#[allow(unused_attributes, dead_code, missing_docs)]
#[path = "../../fuzz/fuzz_targets/hessian2_decode.rs"]
mod hessian2_decode;
#[allow(unused_attributes, dead_code, missing_docs)]
#[path = "../../fuzz/fuzz_targets/nacos_json.rs"]
mod nacos_json;
#[allow(unused_attributes, dead_code, missing_docs)]
#[path = "../../fuzz/fuzz_targets/parse.rs"]
mod parse;
#[allow(unused_attributes, dead_code, missing_docs)]
#[path = "../../fuzz/fuzz_targets/rule_yaml.rs"]
mod rule_yaml;
#[allow(unused_attributes, dead_code, missing_docs)]
#[path = "../../fuzz/fuzz_targets/triple_frame.rs"]
mod triple_frame;
#[allow(unused_attributes, dead_code, missing_docs)]
#[path = "../../fuzz/fuzz_targets/zk_child.rs"]
mod zk_child;

/// A fuzz target's entry point.
type Entry = fn(&[u8]);

/// Every target: (name, entry point).
const TARGETS: &[(&str, Entry)] = &[
    ("parse", parse::run),
    ("zk_child", zk_child::run),
    ("nacos_json", nacos_json::run),
    ("rule_yaml", rule_yaml::run),
    ("triple_frame", triple_frame::run),
    ("dubbo_frame", dubbo_frame::run),
    ("hessian2_decode", hessian2_decode::run),
];

fn fuzz_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz")
}

/// The files of `dir` (none when it does not exist), sorted.
fn files(dir: &Path) -> Vec<PathBuf> {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut v: Vec<PathBuf> = rd
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.is_file())
        .collect();
    v.sort();
    v
}

#[test]
fn every_target_has_seeds() {
    for (name, _) in TARGETS {
        let seeds = files(&fuzz_dir().join("seeds").join(name));
        assert!(!seeds.is_empty(), "fuzz/seeds/{name} has no inputs");
    }
}

#[test]
fn corpora_replay_through_the_targets() {
    let mut total = 0;
    for (name, run) in TARGETS {
        for kind in ["seeds", "corpus"] {
            for file in files(&fuzz_dir().join(kind).join(name)) {
                let data = std::fs::read(&file).unwrap();
                let r = std::panic::catch_unwind(|| run(&data));
                assert!(r.is_ok(), "{name}: {} panicked", file.display());
                total += 1;
            }
        }
    }
    eprintln!("{total} corpus inputs replayed");
}
