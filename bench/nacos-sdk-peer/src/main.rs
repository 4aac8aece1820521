//! A push client on the official `nacos-sdk` crate, used as the same-run peer of
//! `registry-nacos/examples/nacos_latency.rs` (see `scripts/bench-nacos.sh`).
//!
//! ```text
//! nacos-sdk-peer watch ADDR NAMESPACE SERVICE
//!     subscribe SERVICE (group DEFAULT_GROUP, empty-push protection off so removals are seen),
//!     print {"ready":true} once subscribed, then {"t":<unix seconds>,"ports":[...]} per
//!     change event; exits when stdin closes.
//! nacos-sdk-peer many ADDR NAMESPACE PREFIX N IDLE_SECS
//!     subscribe N services PREFIX0..PREFIX{N-1} on one NamingService, idle IDLE_SECS, print
//!     one JSON object with the wall time, CPU seconds and RSS of subscribing and idling.
//! ```

use std::io::BufRead;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use nacos_sdk::api::naming::{
    NamingChangeEvent, NamingEventListener, NamingService, NamingServiceBuilder,
};
use nacos_sdk::api::props::ClientProps;

fn wall() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

/// (user+system CPU seconds, RSS KiB) of this process.
fn usage() -> (f64, u64) {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let f: Vec<&str> = stat
        .rsplit_once(')')
        .map(|(_, r)| r.split_whitespace().collect())
        .unwrap_or_default();
    let t = |i: usize| f.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
    let rss = std::fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .find(|l| l.starts_with("VmRSS:"))
        .and_then(|l| l.split_whitespace().nth(1).and_then(|v| v.parse().ok()))
        .unwrap_or(0);
    ((t(11) + t(12)) / 100.0, rss)
}

struct Printer;

impl NamingEventListener for Printer {
    fn event(&self, e: Arc<NamingChangeEvent>) {
        let t = wall();
        let ports: Vec<i32> = e
            .instances
            .as_deref()
            .unwrap_or_default()
            .iter()
            .map(|i| i.port)
            .collect();
        println!("{}", serde_json::json!({"t": t, "ports": ports}));
    }
}

struct Quiet;

impl NamingEventListener for Quiet {
    fn event(&self, _: Arc<NamingChangeEvent>) {}
}

async fn naming(addr: &str, ns: &str) -> Result<NamingService, String> {
    let cache = std::env::temp_dir().join(format!("nacos-sdk-peer-{}", std::process::id()));
    let props = ClientProps::new()
        .server_addr(addr)
        .namespace(ns)
        .app_name("nacos-sdk-peer")
        .naming_push_empty_protection(false)
        .cache_dir(cache)
        .env_first(false);
    NamingServiceBuilder::new(props)
        .build()
        .await
        .map_err(|e| format!("nacos-sdk build failed: {e}"))
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), String> {
    let args: Vec<String> = std::env::args().collect();
    let a = |i: usize| {
        args.get(i)
            .cloned()
            .ok_or_else(|| format!("missing argument {i}; see the source header"))
    };
    match a(1)?.as_str() {
        "watch" => {
            let n = naming(&a(2)?, &a(3)?).await?;
            n.subscribe(a(4)?, None, Vec::new(), Arc::new(Printer))
                .await
                .map_err(|e| format!("subscribe failed: {e}"))?;
            println!("{}", serde_json::json!({"ready": true}));
            // Block until the parent closes stdin.
            tokio::task::spawn_blocking(|| {
                for _ in std::io::stdin().lock().lines().map_while(Result::ok) {}
            })
            .await
            .map_err(|e| e.to_string())?;
        }
        "many" => {
            let prefix = a(4)?;
            let count: usize = a(5)?.parse().map_err(|e| format!("N: {e}"))?;
            let idle: u64 = a(6)?.parse().map_err(|e| format!("IDLE_SECS: {e}"))?;
            let n = naming(&a(2)?, &a(3)?).await?;
            tokio::time::sleep(Duration::from_secs(1)).await;
            let (cpu0, rss0) = usage();
            let t0 = Instant::now();
            let l: Arc<dyn NamingEventListener> = Arc::new(Quiet);
            for k in 0..count {
                n.subscribe(format!("{prefix}{k}"), None, Vec::new(), l.clone())
                    .await
                    .map_err(|e| format!("subscribe failed: {e}"))?;
            }
            let secs = t0.elapsed().as_secs_f64();
            let (cpu1, rss1) = usage();
            // Let the 1 s post-subscribe queries finish before the idle window.
            tokio::time::sleep(Duration::from_secs(3)).await;
            let (cpu2, _) = usage();
            tokio::time::sleep(Duration::from_secs(idle)).await;
            let (cpu3, rss3) = usage();
            println!(
                "{}",
                serde_json::json!({
                    "services": count,
                    "subscribe_seconds": secs,
                    "subscribe_cpu_seconds": cpu1 - cpu0,
                    "rss_kib_before": rss0,
                    "rss_kib_after_subscribe": rss1,
                    "rss_kib_after_idle": rss3,
                    "rss_kib_delta": rss3.saturating_sub(rss0),
                    "idle_seconds": idle,
                    "cpu_seconds_idle": cpu3 - cpu2,
                })
            );
        }
        other => return Err(format!("unknown mode {other:?}: watch | many")),
    }
    Ok(())
}
