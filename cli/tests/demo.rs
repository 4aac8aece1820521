//! The README's first command: `dubbo-registry demo` on the embedded registry must succeed and
//! tell the whole story.

use std::process::Command;

#[test]
fn demo_runs_the_whole_story_on_memory() {
    let out = Command::new(env!("CARGO_BIN_EXE_dubbo-registry"))
        .args(["demo", "--calls", "40"])
        .output()
        .expect("run dubbo-registry demo");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "demo failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for needle in [
        "the directory sees 4 providers",
        "none across groups",
        "failed attempts were retried elsewhere",
        "retries stayed inside group",
        "one answer from each of the two groups",
        "the newcomer receives calls",
        "answer: fallback: DemoService is unavailable",
        "answer: forced answer",
        "demo finished",
    ] {
        assert!(stdout.contains(needle), "missing {needle:?} in:\n{stdout}");
    }
}

#[test]
fn demo_with_other_balancers_and_clusters() {
    for (lb, cluster) in [
        ("random", "failover"),
        ("leastactive", "failover"),
        ("p2c", "failover"),
        ("consistenthash", "failfast"),
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_dubbo-registry"))
            .args([
                "demo",
                "--calls",
                "40",
                "--loadbalance",
                lb,
                "--cluster",
                cluster,
            ])
            .output()
            .expect("run dubbo-registry demo");
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "demo {lb}/{cluster} failed:\n{stdout}"
        );
    }
}
