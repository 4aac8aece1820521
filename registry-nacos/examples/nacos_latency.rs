//! Measures, against a running Nacos server, (1) register/unregister → consumer-visible
//! latency (gRPC pushes, gRPC pushes + periodic query, or HTTP polling) and (2) the requests
//! the consumer sends while idle with `--services` subscribed services, plus the CPU time and
//! memory those subscriptions cost. Prints one JSON object.
//!
//! ```text
//! cargo run --release -p registry-nacos --example nacos_latency -- \
//!     [--addr 127.0.0.1:8848] [--transport grpc|http] [--changes 200] [--poll-interval 1000] \
//!     [--query-interval MS] [--services 5] [--idle-secs 10] \
//!     [--python PATH/TO/venv/bin/python] [--sdk PATH/TO/nacos-sdk-peer]
//! ```
//!
//! Independent push clients can subscribe to the same service **in the same run**, so every
//! change is seen by ours and by them at once:
//!
//! - `--python`: a venv with PyPI `nacos-sdk-python` 3.2 (`scripts/peers/python-nacos.sh`). It
//!   drops empty pushes, so only registrations are compared (`peers.python`).
//! - `--sdk`: the release binary of `bench/nacos-sdk-peer` (the official `nacos-sdk` crate,
//!   empty-push protection off), compared on registrations and removals (`peers.nacos_sdk`).
//!
//! The registered port changes every round so each registration is a new list. With gRPC the
//! arrival time of the push that carried each change is recorded too (`push_arrival_ms`: t0 →
//! the session task reading the `NotifySubscriberRequest`), which separates the server's push
//! delay from what the client adds after it (`after_push_ms`).

use std::time::{Duration, Instant};

use registry_core::{Registry, RegistryBackend, Url};
use registry_nacos::{NacosBackend, NacosRegistry, Naming};

/// (user+system CPU seconds, resident set size in KiB) of this process.
fn usage() -> (f64, u64) {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .map(|(_, r)| r.split_whitespace().collect())
        .unwrap_or_default();
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|v| v.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    let cpu = (ticks(11) + ticks(12)) / 100.0;
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let rss = status
        .lines()
        .find(|l| l.starts_with("VmRSS:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    (cpu, rss)
}

fn requests(r: &registry_nacos::NacosRegistry) -> (u64, u64) {
    match &**r.backend().naming() {
        Naming::Grpc(g) => {
            let s = g.stats();
            (
                s.requests.load(std::sync::atomic::Ordering::Relaxed),
                s.instance_requests
                    .load(std::sync::atomic::Ordering::Relaxed),
            )
        }
        Naming::Http(_) => {
            let n = r.backend().client().request_count();
            (n, n)
        }
    }
}

fn arg(name: &str, default: &str) -> String {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1).cloned())
        .unwrap_or_else(|| default.to_owned())
}

/// The push-client peer: prints `{"t": wall-clock seconds, "ports": [...]}` per callback.
const PEER: &str = r#"
import asyncio, json, sys, time
from v2.nacos import ClientConfigBuilder, NacosNamingService, SubscribeServiceParam
async def main():
    cfg = ClientConfigBuilder().server_address(sys.argv[1]).namespace_id(sys.argv[2]).log_level("ERROR").build()
    naming = await NacosNamingService.create_naming_service(cfg)
    async def cb(instances):
        print(json.dumps({"t": time.time(), "ports": [h.port for h in instances]}), flush=True)
    await naming.subscribe(SubscribeServiceParam(service_name=sys.argv[3], subscribe_callback=cb))
    print(json.dumps({"ready": True}), flush=True)
    await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)
asyncio.run(main())
"#;

fn wall() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

fn pct(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let rank = (p * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// Wall-clock time of the last push the consumer's gRPC session received.
fn last_push(r: &registry_nacos::NacosRegistry) -> Option<f64> {
    match &**r.backend().naming() {
        Naming::Grpc(g) => {
            let us = g
                .stats()
                .last_push_unix_micros
                .load(std::sync::atomic::Ordering::Relaxed);
            (us > 0).then(|| us as f64 / 1e6)
        }
        Naming::Http(_) => None,
    }
}

/// An independent push client printing `{"t": wall seconds, "ports": [...]}` per callback.
struct Peer {
    name: &'static str,
    /// Fires on removals too (nacos-sdk with empty protection off); python drops empty pushes.
    sees_removals: bool,
    child: std::process::Child,
    rx: std::sync::mpsc::Receiver<serde_json::Value>,
    register: Vec<f64>,
    all: Vec<f64>,
    missed: usize,
}

impl Peer {
    fn spawn(
        name: &'static str,
        sees_removals: bool,
        mut cmd: std::process::Command,
    ) -> anyhow::Result<Peer> {
        let mut child = cmd
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()?;
        let out = child
            .stdout
            .take()
            .ok_or_else(|| anyhow::anyhow!("no peer stdout"))?;
        let (tx, rx) = std::sync::mpsc::channel::<serde_json::Value>();
        std::thread::spawn(move || {
            use std::io::BufRead;
            for l in std::io::BufReader::new(out).lines().map_while(Result::ok) {
                if let Ok(v) = serde_json::from_str(&l) {
                    if tx.send(v).is_err() {
                        break;
                    }
                }
            }
        });
        let ready = rx.recv_timeout(Duration::from_secs(30))?;
        anyhow::ensure!(ready["ready"] == true, "peer {name} not ready: {ready}");
        Ok(Peer {
            name,
            sees_removals,
            child,
            rx,
            register: Vec::new(),
            all: Vec::new(),
            missed: 0,
        })
    }

    /// Waits (≤ 30 s) for the callback showing `port` registered (or gone) and records its
    /// latency from `w0`.
    fn observe(&mut self, port: usize, registering: bool, w0: f64) {
        if !registering && !self.sees_removals {
            return;
        }
        let want = serde_json::json!(port);
        let deadline = Instant::now() + Duration::from_secs(30);
        while let Ok(v) = self
            .rx
            .recv_timeout(deadline.saturating_duration_since(Instant::now()))
        {
            let has = v["ports"].as_array().is_some_and(|a| a.contains(&want));
            if has == registering {
                let ms = (v["t"].as_f64().unwrap_or(w0) - w0) * 1000.0;
                self.all.push(ms);
                if registering {
                    self.register.push(ms);
                }
                return;
            }
        }
        self.missed += 1;
    }

    fn finish(mut self) -> serde_json::Value {
        let _ = self.child.kill();
        let _ = self.child.wait();
        self.register.sort_by(f64::total_cmp);
        self.all.sort_by(f64::total_cmp);
        serde_json::json!({
            "register_latency_ms": {
                "n": self.register.len(), "p50": pct(&self.register, 0.50), "p99": pct(&self.register, 0.99),
            },
            "latency_ms": {
                "n": self.all.len(), "p50": pct(&self.all, 0.50), "p99": pct(&self.all, 0.99),
            },
            "missed": self.missed,
        })
    }
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let addr = arg("--addr", "127.0.0.1:8848");
    let changes: usize = arg("--changes", "200").parse()?;
    let poll: u64 = arg("--poll-interval", "1000").parse()?;
    let services: usize = arg("--services", "5").parse()?;
    let idle: u64 = arg("--idle-secs", "10").parse()?;
    let transport = arg("--transport", "grpc");
    let query = arg("--query-interval", "");
    let ns = format!("bench-{}-{}", std::process::id(), fastrand::u32(..));
    let base =
        format!("nacos://{addr}?namespace={ns}&file-cache=false&nacos.transport={transport}");

    let provider = NacosBackend::new(&Url::parse(&base)?)?;
    let mut curl = format!("{base}&nacos.poll-interval={poll}");
    if !query.is_empty() {
        curl.push_str(&format!("&nacos.query-interval={query}"));
    }
    let consumer = NacosRegistry::new(&Url::parse(&curl)?)?;
    let iface = "org.bench.Latency";
    let provider_at = |port: usize| {
        Url::parse(&format!(
            "dubbo://127.0.0.1:{port}/{iface}?interface={iface}&side=provider&application=bench"
        ))
    };
    let python = arg("--python", "");
    let sdk = arg("--sdk", "");
    let service = format!("providers:{iface}::");
    let mut peers: Vec<Peer> = Vec::new();
    if !python.is_empty() {
        let script =
            std::env::temp_dir().join(format!("nacos-latency-peer-{}.py", std::process::id()));
        std::fs::write(&script, PEER)?;
        let mut cmd = std::process::Command::new(&python);
        cmd.arg(&script)
            .args([addr.as_str(), ns.as_str(), service.as_str()]);
        peers.push(Peer::spawn("python", false, cmd)?);
    }
    if !sdk.is_empty() {
        let mut cmd = std::process::Command::new(&sdk);
        cmd.args(["watch", addr.as_str(), ns.as_str(), service.as_str()]);
        peers.push(Peer::spawn("nacos_sdk", true, cmd)?);
    }
    let c = Url::parse(&format!(
        "consumer://127.0.0.1/{iface}?interface={iface}&category=providers&check=false"
    ))?;

    // (1) Latency: alternate register / unregister, wait for the consumer to see each change,
    // start each change at a random point of the poll cycle.
    let mut sub = consumer.subscribe(&c).await?;
    let first = sub
        .next()
        .await
        .ok_or_else(|| anyhow::anyhow!("stream ended"))?;
    anyhow::ensure!(first.is_empty_marker(), "namespace not empty");
    let mut lat = Vec::with_capacity(changes);
    let mut push_lat = Vec::with_capacity(changes);
    let mut after_push = Vec::with_capacity(changes);
    for i in 0..changes {
        tokio::time::sleep(Duration::from_millis(fastrand::u64(0..poll.max(1)))).await;
        let registering = i % 2 == 0;
        let port = 30001 + i / 2;
        let p = provider_at(port)?;
        let pushes0 = last_push(&consumer);
        let t0 = Instant::now();
        let w0 = wall();
        if registering {
            provider.do_register(&p).await?;
        } else {
            provider.do_unregister(&p).await?;
        }
        loop {
            let n = tokio::time::timeout(Duration::from_secs(30), sub.next())
                .await?
                .ok_or_else(|| anyhow::anyhow!("stream ended"))?;
            if n.is_empty_marker() != registering {
                break;
            }
        }
        let seen = t0.elapsed().as_secs_f64() * 1000.0;
        let w1 = wall();
        lat.push(seen);
        if let Some(at) = last_push(&consumer).filter(|at| Some(*at) != pushes0) {
            // The push that carried the change arrived `at` (wall clock).
            push_lat.push((at - w0) * 1000.0);
            after_push.push((w1 - at) * 1000.0);
        }
        for peer in &mut peers {
            peer.observe(port, registering, w0);
        }
    }
    let mut reg_lat: Vec<f64> = lat.iter().step_by(2).copied().collect();
    lat.sort_by(f64::total_cmp);
    reg_lat.sort_by(f64::total_cmp);
    push_lat.sort_by(f64::total_cmp);
    after_push.sort_by(f64::total_cmp);
    let mut peer_json = serde_json::Map::new();
    for peer in peers {
        peer_json.insert(peer.name.to_owned(), peer.finish());
    }

    // (2) Request rate while idle: `services` subscribed services (plus a second subscriber of
    // the first one, which shares its poller).
    drop(sub);
    let (cpu0, rss0) = usage();
    let started = Instant::now();
    let mut subs = Vec::new();
    for k in 0..services {
        let s = format!("org.bench.Idle{k}");
        let cu = Url::parse(&format!(
            "consumer://127.0.0.1/{s}?interface={s}&category=providers&check=false"
        ))?;
        subs.push(consumer.subscribe(&cu).await?);
        if k == 0 {
            subs.push(consumer.subscribe(&cu).await?);
        }
    }
    let subscribe_secs = started.elapsed().as_secs_f64();
    let (cpu1, rss1) = usage();
    tokio::time::sleep(Duration::from_millis(poll * 2)).await;
    let (r0, i0) = requests(&consumer);
    let (cpu2, _) = usage();
    let t0 = Instant::now();
    tokio::time::sleep(Duration::from_secs(idle)).await;
    let (r1, i1) = requests(&consumer);
    let (cpu3, rss3) = usage();
    let reqs = r1 - r0;
    let instance_reqs = i1 - i0;
    let secs = t0.elapsed().as_secs_f64();
    drop(subs);
    consumer.destroy().await;
    provider.do_destroy().await;

    let out = serde_json::json!({
        "server": addr,
        "transport": transport,
        "query_interval_ms": query,
        "poll_interval_ms": poll,
        "changes": lat.len(),
        "latency_ms": {
            "p50": pct(&lat, 0.50), "p90": pct(&lat, 0.90), "p99": pct(&lat, 0.99),
            "min": lat.first(), "max": lat.last(),
        },
        "register_latency_ms": {
            "n": reg_lat.len(), "p50": pct(&reg_lat, 0.50), "p99": pct(&reg_lat, 0.99),
        },
        "push_arrival_ms": {
            "n": push_lat.len(), "p50": pct(&push_lat, 0.50), "p99": pct(&push_lat, 0.99),
        },
        "after_push_ms": {
            "n": after_push.len(), "p50": pct(&after_push, 0.50), "p99": pct(&after_push, 0.99),
            "max": after_push.last(),
        },
        "peers": peer_json,
        "idle": {
            "subscribed_services": services,
            "subscriptions": services + 1,
            "seconds": secs,
            "requests": reqs,
            "instance_list_requests": instance_reqs,
            "requests_per_second_per_service": reqs as f64 / secs / services.max(1) as f64,
            "cpu_seconds_idle": cpu3 - cpu2,
        },
        "subscribe_cost": {
            "services": services,
            "seconds": subscribe_secs,
            "cpu_seconds": cpu1 - cpu0,
            "rss_kib_before": rss0,
            "rss_kib_after": rss3,
            "rss_kib_delta": rss3.saturating_sub(rss0),
            "rss_kib_after_subscribe": rss1,
        },
    });
    println!("{}", serde_json::to_string_pretty(&out)?);
    Ok(())
}
