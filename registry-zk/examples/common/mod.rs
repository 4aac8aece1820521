//! Helpers shared by the ZooKeeper benchmark examples (`latency`, `watch_scale`, `raw_watch`):
//! filling a providers directory with pipelined creates, emptying it with pipelined deletes,
//! the command-line ZooKeeper address and the median of a sample. Not an example itself.

// Each example uses only some of these.
#![allow(dead_code)]

use registry_zk::testing::client::{Acls, Client, CreateMode, CreateOptions};

/// The ZooKeeper address an example talks to when none is given.
pub const DEFAULT_ZK: &str = "127.0.0.1:2181";

/// The first command-line argument, or [`DEFAULT_ZK`].
pub fn zk_addr_arg(args: &[String]) -> String {
    args.first().cloned().unwrap_or_else(|| DEFAULT_ZK.into())
}

/// Creates `dir` (and its parents) and the children `provider(iface, i)` for `i` in
/// `from..to`, `chunk` creates in flight at a time.
pub async fn populate(
    c: &Client,
    dir: &str,
    iface: &str,
    (from, to): (usize, usize),
    chunk: usize,
    provider: fn(&str, usize) -> String,
) {
    let opts = CreateMode::Persistent.with_acls(Acls::anyone_all());
    c.mkdir(dir, &opts).await.expect("mkdir");
    for chunk in (from..to).collect::<Vec<_>>().chunks(chunk) {
        let names: Vec<String> = chunk
            .iter()
            .map(|i| format!("{dir}/{}", provider(iface, *i)))
            .collect();
        let futs: Vec<_> = names.iter().map(|n| c.create(n, &[], &opts)).collect();
        for f in futs {
            f.await.expect("create");
        }
    }
}

/// Creates the one child `provider(iface, i)` of `dir` and waits for the reply.
pub async fn create_provider(
    c: &Client,
    opts: &CreateOptions<'_>,
    dir: &str,
    iface: &str,
    i: usize,
    provider: fn(&str, usize) -> String,
) {
    c.create(&format!("{dir}/{}", provider(iface, i)), &[], opts)
        .await
        .expect("create");
}

/// Deletes every child of `dir`, `chunk` deletes in flight at a time (errors ignored).
pub async fn delete_children(c: &Client, dir: &str, chunk: usize) {
    let children = c.list_children(dir).await.unwrap_or_default();
    for chunk in children.chunks(chunk) {
        let names: Vec<String> = chunk.iter().map(|n| format!("{dir}/{n}")).collect();
        let futs: Vec<_> = names.iter().map(|n| c.delete(n, None)).collect();
        for f in futs {
            let _ = f.await;
        }
    }
}

/// The median (upper middle) of a non-empty sample.
pub fn median(v: &[f64]) -> f64 {
    let mut v = v.to_vec();
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}
