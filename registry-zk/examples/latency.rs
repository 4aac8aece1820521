//! Notification latency: create a provider znode → the subscriber sees it, p50/p99 over N
//! changes, measured in the same run as two floors on the same server:
//! - `relist_floor`: the raw zookeeper-client child watch + re-list (`getChildren` with a
//!   watch after every event, what a Curator-style child listener does);
//! - `persistent_floor`: the raw persistent recursive watch event alone (no list at all);
//! - `registry`: `ZookeeperRegistry::subscribe` (persistent watch, incremental apply, parse,
//!   publish, delivery through the `Subscription`).
//!
//! The three are interleaved change by change, for each size of pre-existing child list.
//!
//! ```text
//! cargo run --release -p registry-zk --example latency -- [ZK_ADDR] [CHANGES] [EXISTING,...]
//! # defaults: 127.0.0.1:2181 500 0,10000
//! ```
//! Prints one JSON document (also the time of the initial `subscribe`, which lists and parses
//! every existing child).

// A benchmark binary: failing loudly on a broken setup is the right behaviour.
#![allow(clippy::expect_used, clippy::unwrap_used)]

use std::time::{Duration, Instant};

use registry_core::codec::encode;
use registry_core::{Registry, Url};
use registry_zk::testing::client::{Acls, AddWatchMode, Client, CreateMode, EventType};
use registry_zk::ZookeeperRegistry;
use serde_json::json;

mod common;
use common::{create_provider, delete_children, median, populate, zk_addr_arg};

fn provider(iface: &str, i: usize) -> String {
    let u = format!(
        "dubbo://10.{}.{}.{}:20880/{iface}?anyhost=true&application=bench-provider&deprecated=false\
         &dubbo=2.0.2&dynamic=true&generic=false&interface={iface}&methods=sayHello,sayBye,echo\
         &pid=4242&release=3.3.1&side=provider&timestamp=1700000000000&weight=100",
        (i >> 16) & 255,
        (i >> 8) & 255,
        i & 255
    );
    encode(&u)
}

fn stats(mut v: Vec<f64>) -> serde_json::Value {
    v.sort_by(|a, b| a.total_cmp(b));
    let q = |p: f64| v[((v.len() as f64 - 1.0) * p).round() as usize];
    let mean = v.iter().sum::<f64>() / v.len() as f64;
    json!({"p50_ms": q(0.50), "p99_ms": q(0.99), "mean_ms": mean, "max_ms": q(1.0), "n": v.len()})
}

async fn run(addr: &str, changes: usize, existing: usize) -> serde_json::Value {
    let root = format!("bench-{}-{existing}", std::process::id());
    let raw = Client::connect(addr).await.expect("connect");
    let opts = CreateMode::Persistent.with_acls(Acls::anyone_all());
    let ifaces = ["bench.Relist", "bench.Persistent", "bench.Registry"];
    let dirs: Vec<String> = ifaces
        .iter()
        .map(|i| format!("/{root}/{i}/providers"))
        .collect();
    for (d, i) in dirs.iter().zip(ifaces) {
        populate(&raw, d, i, (0, existing), 2000, provider).await;
    }
    // Floor A: child watch + re-list.
    let watcher_client = Client::connect(addr).await.expect("connect");
    let (_, mut child_watch) = watcher_client
        .list_and_watch_children(&dirs[0])
        .await
        .expect("list");
    // Floor B: persistent recursive watch.
    let mut pw = watcher_client
        .watch(&dirs[1], AddWatchMode::PersistentRecursive)
        .await
        .expect("watch");
    // Ours.
    let reg_url = Url::parse(&format!("zookeeper://{addr}?group={root}")).expect("url");
    let reg = ZookeeperRegistry::connect(&reg_url)
        .await
        .expect("registry");
    let consumer = Url::parse(&format!(
        "consumer://127.0.0.1/{0}?interface={0}&category=providers&check=false&side=consumer",
        ifaces[2]
    ))
    .expect("consumer");
    let t_sub = Instant::now();
    let mut sub = reg.subscribe(&consumer).await.expect("subscribe");
    let subscribe_ms = t_sub.elapsed().as_secs_f64() * 1e3;
    while sub.try_next().is_some() {}

    let (mut a, mut b, mut c) = (Vec::new(), Vec::new(), Vec::new());
    for k in 0..changes {
        let i = existing + k;
        // A
        let t0 = Instant::now();
        create_provider(&raw, &opts, &dirs[0], ifaces[0], i, provider).await;
        child_watch.changed().await;
        let (children, w) = watcher_client
            .list_and_watch_children(&dirs[0])
            .await
            .expect("relist");
        child_watch = w;
        assert_eq!(children.len(), i + 1);
        a.push(t0.elapsed().as_secs_f64() * 1e3);
        // B
        let t0 = Instant::now();
        create_provider(&raw, &opts, &dirs[1], ifaces[1], i, provider).await;
        loop {
            let ev = pw.changed().await;
            if ev.event_type == EventType::NodeCreated {
                break;
            }
        }
        b.push(t0.elapsed().as_secs_f64() * 1e3);
        // Ours
        let t0 = Instant::now();
        create_provider(&raw, &opts, &dirs[2], ifaces[2], i, provider).await;
        loop {
            let n = tokio::time::timeout(Duration::from_secs(10), sub.next())
                .await
                .expect("notification in time")
                .expect("stream open");
            if n.urls.len() == i + 1 {
                break;
            }
        }
        c.push(t0.elapsed().as_secs_f64() * 1e3);
    }
    drop(sub);
    reg.destroy().await;
    // Clean up (pipelined deletes).
    for d in &dirs {
        delete_children(&raw, d, 2000).await;
    }
    let ratio = |x: &[f64], y: &[f64]| median(x) / median(y);
    json!({
        "existing_children": existing,
        "changes": changes,
        "initial_subscribe_ms": subscribe_ms,
        "relist_floor": stats(a.clone()),
        "persistent_floor": stats(b.clone()),
        "registry": stats(c.clone()),
        "registry_p50_over_relist_floor_p50": ratio(&c, &a),
        "registry_p50_over_persistent_floor_p50": ratio(&c, &b),
    })
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let addr = zk_addr_arg(&args);
    let changes: usize = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(500);
    let sizes: Vec<usize> = args
        .get(2)
        .map(|s| s.split(',').filter_map(|x| x.parse().ok()).collect())
        .unwrap_or_else(|| vec![0, 10_000]);
    let mut runs = Vec::new();
    for existing in sizes {
        runs.push(run(&addr, changes, existing).await);
    }
    println!(
        "{}",
        serde_json::to_string_pretty(&json!({"zookeeper": addr, "runs": runs})).unwrap_or_default()
    );
}
