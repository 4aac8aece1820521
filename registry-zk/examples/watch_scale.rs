//! `watch` at scale against the raw baseline, measured in the same run on the same server.
//!
//! For each size N (default `0,100,10000`) it creates N real Dubbo 3.3 provider znodes
//! (~680-byte URLs, ~900-byte encoded names) in two services under a unique root, starts
//!
//! - `raw`: `examples/raw_watch.rs` (zookeeper-client, one persistent recursive watch, raw
//!   names kept once, the full list printed after every change), and
//! - `cli`: `dubbo-registry watch zookeeper://…?group=<root> <service> --category providers`
//!   (with `--json` the full list is printed as one NDJSON line per change; without it the
//!   human diff form),
//!
//! then does `--adds` single adds, alternating between the two services, and measures, per
//! add, the time from just before the `create` call to the moment this harness has read the
//! program's complete print of the new list (the `-- N names` line of `raw`, the NDJSON line
//! or the `+` line of the `cli`). Both programs' stdout goes to a pipe read by a thread of
//! this harness. Memory: the resident set of each process after the adds (`VmRSS`), and the
//! net bytes per provider `(RSS at N - RSS at 0) / N`, when 0 is among the sizes.
//!
//! ```text
//! cargo build --release -p cli -p registry-zk --examples --bins
//! target/release/examples/watch_scale --zk 127.0.0.1:2181 --cli target/release/dubbo-registry \
//!     --raw target/release/examples/raw_watch --sizes 0,100,10000 --adds 30 [--human]
//! ```
//! Prints one JSON document. The providers are deleted again at the end.

// A benchmark binary: failing loudly on a broken setup is the right behaviour.
#![allow(clippy::expect_used, clippy::unwrap_used)]

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use registry_core::codec::encode;
use registry_zk::testing::client::{Acls, Client, CreateMode};
use serde_json::json;

mod common;
use common::{create_provider, delete_children, median, populate, DEFAULT_ZK};

/// One provider as Dubbo 3.3 registers it (`toFullString`, sorted parameters).
fn provider(iface: &str, i: usize) -> String {
    let u = format!(
        "dubbo://10.{}.{}.{}:20880/{iface}?anyhost=true&application=scale-provider\
         &background=false&deprecated=false&dubbo=2.0.2&dynamic=true&executor-management-mode=isolation\
         &file-cache=true&generic=false&group=g1&interface={iface}&ipv6=fd00::{i:x}\
         &methods=sayHello,sayHelloAsync,sayBye,echo,listUsers,findUser,updateUser,deleteUser\
         &pid={}&prefer.serialization=fastjson2,hessian2&release=3.3.1&service-name-mapping=true\
         &side=provider&timeout=3000&timestamp={}&token=false&version=1.0.0&weight=100",
        (i >> 16) & 255,
        (i >> 8) & 255,
        i & 255,
        40_000 + i % 20_000,
        1_732_900_000_000u64 + i as u64,
    );
    encode(&u)
}

/// What a program printed: the instant its print of a list of `count` entries was complete.
#[derive(Debug)]
struct Printed {
    at: Instant,
    count: usize,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Kind {
    Raw,
    CliJson,
    CliHuman,
}

/// Reads `child`'s stdout on a thread and reports each complete list print.
fn reader(child: &mut Child, kind: Kind) -> mpsc::Receiver<Printed> {
    let out = child.stdout.take().expect("piped stdout");
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut r = BufReader::with_capacity(1 << 20, out);
        let mut line = String::new();
        let mut header_count = 0usize;
        loop {
            line.clear();
            match r.read_line(&mut line) {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
            let at = Instant::now();
            let count = match kind {
                Kind::Raw => match line.strip_prefix("-- ") {
                    Some(rest) => rest.split(' ').next().and_then(|n| n.parse().ok()),
                    None => None,
                },
                Kind::CliJson => serde_json::from_str::<serde_json::Value>(&line)
                    .ok()
                    .and_then(|v| v["urls"].as_array().map(Vec::len)),
                Kind::CliHuman => {
                    if let Some(rest) = line.strip_prefix("  + ") {
                        let _ = rest;
                        Some(header_count)
                    } else {
                        // `HH:MM:SS.mmm providers (N urls)`
                        if let Some(i) = line.find(" (") {
                            header_count = line[i + 2..]
                                .split(' ')
                                .next()
                                .and_then(|n| n.parse().ok())
                                .unwrap_or(0);
                        }
                        None
                    }
                }
            };
            if let Some(count) = count {
                if tx.send(Printed { at, count }).is_err() {
                    return;
                }
            }
        }
    });
    rx
}

fn wait_for(rx: &mpsc::Receiver<Printed>, count: usize, what: &str) -> Instant {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok(p) if p.count == count => return p.at,
            Ok(_) => {}
            Err(e) => panic!("{what}: no print of {count} entries: {e}"),
        }
    }
}

fn rss_bytes(pid: u32) -> u64 {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    s.lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map_or(0, |kb| kb * 1024)
}

async fn remove_tree(c: &Client, dir: &str) {
    delete_children(c, dir, 1000).await;
    let mut p = dir.to_owned();
    while let Some(i) = p.rfind('/') {
        if i == 0 {
            let _ = c.delete(&p, None).await;
            break;
        }
        let _ = c.delete(&p, None).await;
        p.truncate(i);
    }
}

fn stats(mut v: Vec<f64>) -> serde_json::Value {
    v.sort_by(|a, b| a.total_cmp(b));
    let q = |p: f64| v[((v.len() as f64 - 1.0) * p).round() as usize];
    let mean = v.iter().sum::<f64>() / v.len() as f64;
    json!({"p50_ms": q(0.50), "p90_ms": q(0.90), "mean_ms": mean, "min_ms": q(0.0), "n": v.len()})
}

struct Opts {
    zk: String,
    cli: String,
    raw: String,
    sizes: Vec<usize>,
    adds: usize,
    human: bool,
}

struct Run {
    value: serde_json::Value,
    raw_rss: u64,
    cli_rss: u64,
}

async fn run(o: &Opts, existing: usize) -> Run {
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis();
    let root = format!("watchscale-{}-{t}-{existing}", std::process::id());
    let zk = Client::connect(&o.zk).await.expect("connect");
    let ifaces = ["scale.RawService", "scale.CliService"];
    let dirs: Vec<String> = ifaces
        .iter()
        .map(|i| format!("/{root}/{i}/providers"))
        .collect();
    for (d, i) in dirs.iter().zip(ifaces) {
        populate(&zk, d, i, (0, existing), 1000, provider).await;
    }
    let t_start = Instant::now();
    let mut raw = Command::new(&o.raw)
        .args([&o.zk, &dirs[0]])
        .stdout(Stdio::piped())
        .spawn()
        .expect("start raw_watch");
    let raw_rx = reader(&mut raw, Kind::Raw);
    wait_for(&raw_rx, existing, "raw initial list");
    let raw_initial_ms = t_start.elapsed().as_secs_f64() * 1e3;

    let kind = if o.human {
        Kind::CliHuman
    } else {
        Kind::CliJson
    };
    let reg = format!("zookeeper://{}?group={root}", o.zk);
    let mut args = vec![
        "watch".to_owned(),
        reg,
        ifaces[1].to_owned(),
        "--category".into(),
        "providers".into(),
    ];
    if !o.human {
        args.push("--json".into());
    }
    let t_start = Instant::now();
    let mut cli = Command::new(&o.cli)
        .args(&args)
        .env("RUST_LOG", "warn")
        .stdout(Stdio::piped())
        .spawn()
        .expect("start dubbo-registry");
    let cli_rx = reader(&mut cli, kind);
    // The human form prints nothing for an empty initial list, only its header.
    if existing > 0 || kind == Kind::CliJson {
        wait_for(
            &cli_rx,
            if kind == Kind::CliJson {
                existing.max(1)
            } else {
                existing
            },
            "cli initial list",
        );
    } else {
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    let cli_initial_ms = t_start.elapsed().as_secs_f64() * 1e3;

    let opts = CreateMode::Persistent.with_acls(Acls::anyone_all());
    let (mut raw_ms, mut cli_ms) = (Vec::new(), Vec::new());
    for k in 0..o.adds {
        let i = existing + k;
        let t0 = Instant::now();
        create_provider(&zk, &opts, &dirs[0], ifaces[0], i, provider).await;
        let at = wait_for(&raw_rx, i + 1, "raw after add");
        raw_ms.push(at.duration_since(t0).as_secs_f64() * 1e3);
        let t0 = Instant::now();
        create_provider(&zk, &opts, &dirs[1], ifaces[1], i, provider).await;
        let at = wait_for(&cli_rx, i + 1, "cli after add");
        cli_ms.push(at.duration_since(t0).as_secs_f64() * 1e3);
    }
    // Let both settle, then read their memory.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let raw_rss = rss_bytes(raw.id());
    let cli_rss = rss_bytes(cli.id());
    let _ = raw.kill();
    let _ = cli.kill();
    let _ = raw.wait();
    let _ = cli.wait();
    for d in &dirs {
        remove_tree(&zk, d).await;
    }
    let value = json!({
        "existing_providers": existing,
        "adds": o.adds,
        "cli_mode": if o.human { "human" } else { "json" },
        "raw_initial_ms": raw_initial_ms,
        "cli_initial_ms": cli_initial_ms,
        "raw_add_to_print": stats(raw_ms.clone()),
        "cli_add_to_print": stats(cli_ms.clone()),
        "cli_p50_over_raw_p50": median(&cli_ms) / median(&raw_ms),
        "raw_rss_bytes": raw_rss,
        "cli_rss_bytes": cli_rss,
    });
    Run {
        value,
        raw_rss,
        cli_rss,
    }
}

fn parse_args() -> Opts {
    let mut o = Opts {
        zk: DEFAULT_ZK.into(),
        cli: "target/release/dubbo-registry".into(),
        raw: "target/release/examples/raw_watch".into(),
        sizes: vec![0, 100, 10_000],
        adds: 30,
        human: false,
    };
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        let mut val = || it.next().expect("option value");
        match a.as_str() {
            "--zk" => o.zk = val(),
            "--cli" => o.cli = val(),
            "--raw" => o.raw = val(),
            "--sizes" => o.sizes = val().split(',').map(|x| x.parse().expect("size")).collect(),
            "--adds" => o.adds = val().parse().expect("adds"),
            "--human" => o.human = true,
            other => panic!("unknown option {other}"),
        }
    }
    o
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let o = parse_args();
    let mut runs = Vec::new();
    let mut base: Option<(u64, u64)> = None;
    for &n in &o.sizes {
        let r = run(&o, n).await;
        let mut v = r.value;
        if n == 0 {
            base = Some((r.raw_rss, r.cli_rss));
        } else if let Some((raw0, cli0)) = base {
            let per = |rss: u64, b: u64| (rss.saturating_sub(b)) as f64 / (n + o.adds) as f64;
            v["raw_net_bytes_per_provider"] = json!(per(r.raw_rss, raw0));
            v["cli_net_bytes_per_provider"] = json!(per(r.cli_rss, cli0));
        }
        eprintln!("{v}");
        runs.push(v);
    }
    println!(
        "{}",
        serde_json::to_string_pretty(&json!({"zookeeper": o.zk, "runs": runs})).unwrap()
    );
}
