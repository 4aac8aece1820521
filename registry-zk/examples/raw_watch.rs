//! The "raw" baseline of the `watch` benchmarks: the least a program can do to follow one
//! ZooKeeper path and print its list. It uses `zookeeper-client` directly: one persistent
//! recursive watch added before a plain `getChildren`, the raw (encoded) child names kept once
//! in a sorted set, and after the initial list and after every batch of events the full list
//! printed to stdout, one name per line, then a line `-- <count> names`.
//!
//! ```text
//! cargo run --release -p registry-zk --example raw_watch -- ZK_ADDR PATH
//! ```
//! Runs until it is killed. `examples/watch_scale.rs` starts it next to
//! `dubbo-registry watch` and compares the two.

// A benchmark binary: failing loudly on a broken setup is the right behaviour.
#![allow(clippy::expect_used, clippy::unwrap_used)]

use std::collections::BTreeSet;
use std::io::Write;

use futures::FutureExt;
use registry_zk::testing::client::{AddWatchMode, Client, EventType};

mod common;
use common::zk_addr_arg;

fn print(names: &BTreeSet<Box<str>>, buf: &mut Vec<u8>) {
    buf.clear();
    for n in names {
        buf.extend_from_slice(n.as_bytes());
        buf.push(b'\n');
    }
    buf.extend_from_slice(format!("-- {} names\n", names.len()).as_bytes());
    let mut out = std::io::stdout().lock();
    out.write_all(buf).expect("stdout");
    out.flush().expect("stdout");
}

fn apply(names: &mut BTreeSet<Box<str>>, dir: &str, ev: &zookeeper_client::WatchedEvent) -> bool {
    let Some(child) = ev
        .path
        .strip_prefix(dir)
        .and_then(|r| r.strip_prefix('/'))
        .filter(|c| !c.is_empty() && !c.contains('/'))
    else {
        return false;
    };
    match ev.event_type {
        EventType::NodeCreated => names.insert(child.into()),
        EventType::NodeDeleted => names.remove(child),
        _ => false,
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let addr = zk_addr_arg(&args);
    let dir = args.get(1).cloned().expect("usage: raw_watch ZK_ADDR PATH");
    let client = Client::connect(&addr).await.expect("connect");
    let mut watcher = client
        .watch(&dir, AddWatchMode::PersistentRecursive)
        .await
        .expect("watch");
    let mut names: BTreeSet<Box<str>> = client
        .list_children(&dir)
        .await
        .unwrap_or_default()
        .into_iter()
        .map(String::into_boxed_str)
        .collect();
    let mut buf = Vec::new();
    print(&names, &mut buf);
    loop {
        let ev = watcher.changed().await;
        let mut changed = apply(&mut names, &dir, &ev);
        while let Some(ev) = watcher.changed().now_or_never() {
            changed |= apply(&mut names, &dir, &ev);
        }
        if changed {
            print(&names, &mut buf);
        }
    }
}
