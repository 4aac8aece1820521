//! Shared helpers for the integration tests in `tests/tests/`, which run against real
//! ZooKeeper and Nacos-compatible servers started by `scripts/test-all.sh`.
//!
//! Server addresses come from the environment (`DUBBO_TEST_ZK`, `DUBBO_TEST_NACOS`, ...).
//! When one is missing a plain `cargo test` skips the test with a loud message; with
//! `DUBBO_TEST_REQUIRE_SERVERS=1` (set by the test script and so by CI) a missing server is a
//! failure. The same holds for the real Dubbo peers [`peers`] starts (Java Dubbo 3.3, dubbo-go,
//! the Java nacos-client), installed by `scripts/peers/*.sh`.

pub mod certs;
pub mod contract;
pub mod dubbo2_peers;
pub mod fake_nacos_grpc;
pub mod fake_nacos_http;
pub mod hostile;
pub mod nacos;
pub mod peak_rss;
pub mod peers;
pub mod prometheus;
pub mod proxy;
pub mod recording;
pub mod stalled;
pub mod tls_front;
pub mod triple_peers;

use std::collections::BTreeSet;
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// True when servers are required (the README's test command sets this).
pub fn servers_required() -> bool {
    std::env::var("DUBBO_TEST_REQUIRE_SERVERS").is_ok_and(|v| v == "1")
}

/// The address in env var `var`, or `None` after a loud skip message. Panics when servers
/// are required and the variable is missing.
pub fn server_addr(var: &str, test: &str) -> Option<String> {
    match std::env::var(var) {
        Ok(v) if !v.is_empty() => Some(v),
        _ => {
            if servers_required() {
                panic!("{test}: {var} is not set but DUBBO_TEST_REQUIRE_SERVERS=1");
            }
            eprintln!(
                "\n*** SKIPPED {test}: {var} is not set. Run scripts/test-all.sh to test against \
                 real servers. ***\n"
            );
            None
        }
    }
}

/// ZooKeeper standalone address (`DUBBO_TEST_ZK`).
pub fn zk_addr(test: &str) -> Option<String> {
    server_addr("DUBBO_TEST_ZK", test)
}

/// Nacos address without auth (`DUBBO_TEST_NACOS`).
pub fn nacos_addr(test: &str) -> Option<String> {
    server_addr("DUBBO_TEST_NACOS", test)
}

/// The port of a server a test starts and stops itself: `$var` when set (the test script sets
/// one per server, from the free ports it chose), else a port below the ephemeral range
/// (a restarted server must find its port again) that is free now, together with
/// `port + offset` for each of `offsets` (Nacos: gRPC on +1000).
pub fn server_port(var: &str, offsets: &[u16]) -> u16 {
    if let Some(p) = std::env::var(var).ok().and_then(|p| p.parse().ok()) {
        return p;
    }
    let free = |p: u16| std::net::TcpListener::bind(("127.0.0.1", p)).is_ok();
    let seed = std::process::id() as usize
        + std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos() as usize);
    for i in 0..9000usize {
        let p = 20_000 + ((seed + i * 7) % 9000) as u16;
        if free(p) && offsets.iter().all(|o| free(p + o)) {
            return p;
        }
    }
    panic!("no free port for {var} in 20000-28999");
}

/// A name unique to this process and call, for ZooKeeper roots and Nacos namespaces/groups.
pub fn unique(prefix: &str) -> String {
    static N: AtomicU64 = AtomicU64::new(0);
    let n = N.fetch_add(1, Ordering::Relaxed);
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis())
        .unwrap_or(0);
    format!("{prefix}-{}-{t}-{n}", std::process::id())
}

/// The set of `items`, to compare with [`contract::Watch::addresses`].
pub fn set(items: &[&str]) -> BTreeSet<String> {
    items.iter().map(|s| (*s).to_owned()).collect()
}

/// Polls `check` until it returns `Some` or `deadline` passes (then panics with `what`).
pub async fn eventually<T, F, Fut>(what: &str, deadline: Duration, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let start = Instant::now();
    loop {
        if let Some(v) = check().await {
            return v;
        }
        if start.elapsed() > deadline {
            panic!("timed out after {deadline:?} waiting for: {what}");
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
