//! Registration → first call, measured against the Java consumer in the same run: one
//! application of 1,000 instances (a real Apache Dubbo 3.3.6 provider plus 999 more instance
//! nodes announcing its revision at other loopback addresses, which the provider also answers
//! on: it listens on every address), the consumers subscribed (`APPLICATION_FIRST`), then a new
//! provider of the application registers with a tag of its own; a consumer calls with that
//! `dubbo.tag` and `dubbo.force.tag=true` every millisecond, so only the new provider can
//! answer. The time from its instance node's creation (ZooKeeper `ctime`) to each
//! consumer's first successful call is printed (BENCHMARKS.md "Application level"); the test
//! asserts only that both consumers reach the new provider.
//!
//! The Java consumer runs JIT-compiled code; ours is the library compiled into this test, so
//! the numbers compare only when the test is built with `--release` (BENCHMARKS.md); a debug
//! build says so in its output and still checks that both consumers reach the new provider.
//!
//! Each round measures each consumer alone against a fresh provider of its own, in turns
//! (which goes first alternates): at the same moment on a small machine, the waiting Java
//! consumer (0.6–0.75 of a CPU, printed in that mode) competes with the new provider for the
//! CPU, and whoever reaches the new provider first pays its first-request costs for both.
//! `APP_LATENCY_TOGETHER=1` measures both against one provider at the same moment instead.
//!
//! `APP_LATENCY_INSTANCES` (default 1000) and `APP_LATENCY_ROUNDS` (default 3) change the size,
//! `APP_LATENCY_METADATA=remote` makes the providers store their MetadataInfo in ZooKeeper (then
//! no consumer waits for the new provider's MetadataService to answer its first request),
//! `APP_LATENCY_PRECONNECT=false` makes ours open no connection while the MetadataInfo is
//! fetched; with `APP_LATENCY_OUT=FILE` each round is also appended to FILE as a JSON line.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use app_discovery::migration::{MigrationReference, ReferenceConfig};
use app_discovery::{
    AppDiscoveryOptions, InvokerMetadataClient, MetadataReport, MetadataResolver,
    MetadataServiceClients, ReportLayout, ResolverOptions, ServiceDiscoveryRegistry,
};
use common::app::{java_provider, stop};
use invoker::directory::{Directory, DirectoryOptions};
use invoker::rpc::{Invocation, InvokerFactory};
use registry_core::Url;
use registry_zk::testing::client::{Acls, Client, CreateMode};
use registry_zk::{ZkConfigCenter, ZkServiceDiscovery, ZookeeperRegistry};
use tests::peers::PeerProcess;

const DEMO: &str = "com.example.peer.DemoService";

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64
}

fn env_usize(k: &str, d: usize) -> usize {
    std::env::var(k)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(d)
}

async fn our_reference(reg: &Url) -> MigrationReference {
    let dubbo = Arc::new(protocol_dubbo::DubboInvokerFactory::new());
    let clients = MetadataServiceClients::new()
        .with_v1("dubbo", Arc::new(InvokerMetadataClient::new(dubbo.clone())))
        .with_v2(Arc::new(protocol_triple::MetadataServiceV2Client::new()));
    let root = registry_zk::config_center::metadata_root(reg);
    let report = MetadataReport::new(
        Arc::new(ZkConfigCenter::connect_with_root(reg, &root).await.unwrap()),
        ReportLayout::Tree,
    );
    let app = ServiceDiscoveryRegistry::new(
        reg.clone(),
        Arc::new(ZkServiceDiscovery::connect(reg).await.unwrap()),
        Some(report.clone()),
        MetadataResolver::new(Some(report), clients, ResolverOptions::default()),
        AppDiscoveryOptions::default(),
    );
    // APP_LATENCY_PRECONNECT=false: no connection opened while the MetadataInfo is fetched.
    let preconnect = std::env::var("APP_LATENCY_PRECONNECT").unwrap_or_else(|_| "true".into());
    let consumer = Url::parse(&format!(
        "consumer://127.0.0.1/{DEMO}?interface={DEMO}&application=latency-consumer&protocol=dubbo&check=false&retries=0&timeout=3000&preconnect={preconnect}"
    ))
    .unwrap();
    let factory: Arc<dyn InvokerFactory> = dubbo;
    MigrationReference::open(ReferenceConfig {
        consumer,
        factory,
        options: DirectoryOptions {
            register: false,
            ready_timeout: Duration::from_secs(120),
            ..DirectoryOptions::default()
        },
        interface_registry: Some(Arc::new(ZookeeperRegistry::connect(reg).await.unwrap())),
        app_registry: Some(app),
        config_center: Some(Arc::new(ZkConfigCenter::connect(reg).await.unwrap())),
        rule_wait: Duration::from_secs(10),
    })
    .await
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn registration_to_first_call_against_the_java_consumer() {
    let Some(addr) = tests::zk_addr("registration_to_first_call") else {
        return;
    };
    // RUST_LOG shows where the time goes (e.g. app_discovery=debug,registry_zk=debug).
    let _ = tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_writer(std::io::stderr)
        .try_init();
    let instances = env_usize("APP_LATENCY_INSTANCES", 1000);
    let rounds = env_usize("APP_LATENCY_ROUNDS", 3);
    let root = tests::unique("appjava-latency");
    let reg_s = format!("zookeeper://{addr}?group={root}");
    let reg = Url::parse(&reg_s).unwrap();
    let app = tests::unique("lat");
    let metadata = std::env::var("APP_LATENCY_METADATA").unwrap_or_else(|_| "local".into());
    let start_provider = |name: String, tag: Option<String>| {
        let (reg_s, app, metadata) = (reg_s.clone(), app.clone(), metadata.clone());
        async move {
            let mut extra = vec!["--metadata-type", metadata.as_str()];
            if let Some(t) = &tag {
                extra.extend(["--tag", t.as_str()]);
            }
            java_provider(&name, &reg_s, &app, "instance", &["demo"], &extra).await
        }
    };
    let Some(p0) = start_provider("latency-p0".into(), None).await else {
        return;
    };

    // 999 more instances of the application: the same node, other loopback addresses.
    let zk = Client::connect(&addr).await.unwrap();
    let port = p0.dubbo_port;
    let node0 = format!("/{root}/{app}/127.0.0.1:{port}");
    let (data, _) = zk.get_data(&node0).await.unwrap();
    let template: serde_json::Value = serde_json::from_slice(&data).unwrap();
    let opts = CreateMode::Ephemeral.with_acls(Acls::anyone_all());
    for i in 1..instances {
        let host = format!("127.0.{}.{}", i / 250, 2 + i % 250);
        let id = format!("{host}:{port}");
        let mut v = template.clone();
        v["id"] = id.clone().into();
        v["address"] = host.into();
        v["payload"]["id"] = id.clone().into();
        zk.create(
            &format!("/{root}/{app}/{id}"),
            v.to_string().as_bytes(),
            &opts,
        )
        .await
        .unwrap();
    }

    let ours = our_reference(&reg).await;
    let dir = ours.directory();
    let appdir = dir.application_directory().unwrap();
    tests::eventually(
        "our consumer holds every instance",
        Duration::from_secs(120),
        || async { (appdir.invoker_count() == instances).then_some(()) },
    )
    .await;
    let cluster = invoker::cluster::join(dir.clone() as Arc<dyn Directory>);

    let together = std::env::var("APP_LATENCY_TOGETHER").is_ok_and(|v| v == "1");
    let mut results = Vec::new();
    for round in 0..rounds {
        // Alone (the default): each consumer against a fresh provider of its own, in turns
        // (which goes first alternates), so neither finds a provider the other has warmed.
        // Together: both against the same provider, at the same moment.
        let turns: Vec<(bool, bool)> = if together {
            vec![(true, true)]
        } else if round % 2 == 0 {
            vec![(true, false), (false, true)]
        } else {
            vec![(false, true), (true, false)]
        };
        let (mut ours_ms, mut java_ms, mut call_ms) = (0, 0, 0);
        for (turn, (with_ours, with_java)) in turns.into_iter().enumerate() {
            let tag = format!("fresh{round}x{turn}");
            // The Java consumer, subscribed before the new provider exists.
            let java = if with_java {
                Some(java_first_success(&reg_s, &tag).await)
            } else {
                None
            };
            // Together: the Java consumer's CPU, sampled (its work competes with the new
            // provider's on a small machine).
            let java_cpu = java
                .as_ref()
                .and_then(|(_, pid)| *pid)
                .filter(|_| together)
                .map(CpuSampler::start);
            // Ours: a loop in the background.
            let ours_task = with_ours.then(|| {
                let cluster = cluster.clone();
                let tag = tag.clone();
                tokio::spawn(async move {
                    let inv = Invocation::new("whoAmI")
                        .with_attachment("dubbo.tag", tag.as_str())
                        .with_attachment("dubbo.force.tag", "true");
                    loop {
                        let sent = now_ms();
                        if let Ok(r) = cluster.invoke(&inv).await {
                            let at = now_ms();
                            return (at, at - sent, r.value);
                        }
                        tokio::time::sleep(Duration::from_millis(1)).await;
                    }
                })
            });
            let name = format!("latency-p{}x{turn}", round + 1);
            let Some(p) = start_provider(name, Some(tag.clone())).await else {
                return;
            };
            let node = format!("/{root}/{app}/127.0.0.1:{}", p.dubbo_port);
            let stat = tokio::time::timeout(Duration::from_secs(30), async {
                loop {
                    if let Ok(Some(s)) = zk.check_stat(&node).await {
                        return s;
                    }
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            })
            .await
            .expect("the new instance node");
            let registered = stat.ctime as u64;
            if let Some(task) = ours_task {
                let (at, call, who) = tokio::time::timeout(Duration::from_secs(120), task)
                    .await
                    .expect("our consumer called the new provider")
                    .unwrap();
                assert!(who.as_str().unwrap().contains(&tag), "{who}");
                ours_ms = at.saturating_sub(registered);
                call_ms = call;
            }
            if let Some((java, _)) = java {
                let at = java.await.unwrap();
                java_ms = at.saturating_sub(registered);
                if let (Some(cpu), true) = (java_cpu, ours_ms > 0) {
                    let window = ours_ms;
                    let before = cpu.used(registered.saturating_sub(window), registered);
                    let during = cpu.used(registered, registered + window);
                    eprintln!(
                        "the Java consumer's CPU in the {window} ms from the registration to our first call: {during} ms (in the {window} ms before: {before} ms)"
                    );
                }
            }
            stop(p).await;
        }
        let row = (ours_ms, java_ms);
        eprintln!(
            "registration -> first call, {instances} instances, round {round} ({}): ours {} ms (the successful call itself {call_ms} ms: the new JVM's first request), Java {} ms",
            if together { "together" } else { "alone" },
            row.0, row.1
        );
        if let Ok(path) = std::env::var("APP_LATENCY_OUT") {
            use std::io::Write as _;
            let line = serde_json::json!({"instances": instances, "metadata": metadata, "together": together, "preconnect": std::env::var("APP_LATENCY_PRECONNECT").as_deref() != Ok("false"), "round": round, "ours_ms": row.0, "ours_call_ms": call_ms, "java_ms": row.1});
            if let Ok(mut f) = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
            {
                let _ = writeln!(f, "{line}");
            }
        }
        results.push(row);
    }
    let mean = |f: fn(&(u64, u64)) -> u64| {
        results.iter().map(f).sum::<u64>() as f64 / results.len() as f64
    };
    let median = |f: fn(&(u64, u64)) -> u64| {
        let mut v: Vec<u64> = results.iter().map(f).collect();
        v.sort_unstable();
        v.get(v.len() / 2).copied().unwrap_or(0)
    };
    let profile = if cfg!(debug_assertions) {
        "debug build: not comparable with the JIT-compiled Java consumer, build with --release"
    } else {
        "release build"
    };
    let (m_ours, m_java) = (median(|r| r.0), median(|r| r.1));
    eprintln!(
        "registration -> first call, {instances} instances, {metadata} metadata, {rounds} rounds, {}, preconnect {} ({profile}): median ours {m_ours} ms, Java {m_java} ms ({:.2}x); mean ours {:.0} ms, Java {:.0} ms",
        if together { "together" } else { "alone" },
        if std::env::var("APP_LATENCY_PRECONNECT").as_deref() == Ok("false") { "off" } else { "on" },
        m_ours as f64 / m_java.max(1) as f64,
        mean(|r| r.0),
        mean(|r| r.1)
    );
    drop(p0);
}

/// CPU time of a process, sampled every 5 ms from `/proc/<pid>/stat` until dropped.
struct CpuSampler {
    samples: Arc<parking_lot::Mutex<Vec<(u64, u64)>>>,
    task: tokio::task::JoinHandle<()>,
}

impl CpuSampler {
    fn start(pid: u32) -> CpuSampler {
        let samples: Arc<parking_lot::Mutex<Vec<(u64, u64)>>> = Arc::default();
        let s = samples.clone();
        let task = tokio::spawn(async move {
            loop {
                let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
                    return;
                };
                // After the command name's closing parenthesis: utime and stime are the
                // 12th and 13th fields, in clock ticks (USER_HZ, 100 per second).
                let ticks: Option<u64> = stat.rsplit_once(')').and_then(|(_, rest)| {
                    let f: Vec<&str> = rest.split_whitespace().collect();
                    Some(f.get(11)?.parse::<u64>().ok()? + f.get(12)?.parse::<u64>().ok()?)
                });
                if let Some(t) = ticks {
                    s.lock().push((now_ms(), t * 10));
                }
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        });
        CpuSampler { samples, task }
    }

    /// CPU milliseconds used between `from` and `to` (epoch ms), from the nearest samples.
    fn used(&self, from: u64, to: u64) -> u64 {
        let s = self.samples.lock();
        let at = |t: u64| {
            s.iter()
                .min_by_key(|(when, _)| when.abs_diff(t))
                .map_or(0, |(_, cpu)| *cpu)
        };
        at(to).saturating_sub(at(from))
    }
}

impl Drop for CpuSampler {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Starts the Java consumer in `first-success` mode for `tag` and waits until it subscribed
/// (its READY line); the returned task resolves to its first-success time. Also its pid.
async fn java_first_success(reg: &str, tag: &str) -> (tokio::task::JoinHandle<u64>, Option<u32>) {
    let t_attach = format!("dubbo.tag={tag}");
    let args: Vec<String> = [
        "--registry",
        reg,
        "--interface",
        DEMO,
        "--mode",
        "first-success",
        "--method",
        "whoAmI",
        "--attachment",
        t_attach.as_str(),
        "--attachment",
        "dubbo.force.tag=true",
        "--retries",
        "0",
        "--protocol",
        "dubbo",
        "--wait-ms",
        "120000",
    ]
    .iter()
    .map(|s| (*s).to_owned())
    .collect();
    let mut consumer = PeerProcess::spawn(
        &format!("latency-java-{tag}"),
        "java-dubbo3",
        "consumer",
        &args,
    )
    .await;
    let pid = consumer.pid();
    let task = tokio::spawn(async move {
        let v = consumer
            .next_json(
                "the Java consumer's result",
                Duration::from_secs(180),
                |_| true,
            )
            .await;
        v["first_success_ms"]
            .as_u64()
            .unwrap_or_else(|| panic!("the Java consumer did not reach the new provider: {v}"))
    });
    (task, pid)
}
