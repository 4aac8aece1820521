//! Registration → first call, measured against the Java consumer in the same run: one
//! application of 1,000 instances (a real Apache Dubbo 3.3.6 provider plus 999 more instance
//! nodes announcing its revision at other loopback addresses, which the provider also answers
//! on: it listens on every address), both consumers subscribed (`APPLICATION_FIRST`), then a new
//! provider of the application registers with the tag `fresh`; both consumers call with
//! `dubbo.tag=fresh` and `dubbo.force.tag=true` every millisecond, so only the new provider
//! can answer. The time from its instance node's creation (ZooKeeper `ctime`) to each
//! consumer's first successful call is printed (BENCHMARKS.md "Application level"); the test
//! asserts only that both consumers reach the new provider.
//!
//! The Java consumer runs JIT-compiled code; ours is the library compiled into this test, so
//! the numbers compare only when the test is built with `--release` (BENCHMARKS.md); a debug
//! build says so in its output and still checks that both consumers reach the new provider.
//!
//! `APP_LATENCY_INSTANCES` (default 1000) and `APP_LATENCY_ROUNDS` (default 3) change the size,
//! `APP_LATENCY_METADATA=remote` makes the providers store their MetadataInfo in ZooKeeper (then
//! no consumer waits for the new provider's MetadataService to answer its first request);
//! with `APP_LATENCY_OUT=FILE` each round is also appended to FILE as a JSON line.

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
    let consumer = Url::parse(&format!(
        "consumer://127.0.0.1/{DEMO}?interface={DEMO}&application=latency-consumer&protocol=dubbo&check=false&retries=0&timeout=3000"
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

    let mut results = Vec::new();
    for round in 0..rounds {
        let tag = format!("fresh{round}");
        // The Java consumer, subscribed before the new provider exists.
        let java = java_first_success(&reg_s, &tag).await;
        // Ours: a loop in the background.
        let ours_task = {
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
        };
        let Some(p) = start_provider(format!("latency-p{}", round + 1), Some(tag.clone())).await
        else {
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
        let (our_at, our_call_ms, who) = tokio::time::timeout(Duration::from_secs(120), ours_task)
            .await
            .expect("our consumer called the new provider")
            .unwrap();
        assert!(who.as_str().unwrap().contains(&tag), "{who}");
        let java_at = java.await.unwrap();
        let row = (
            our_at.saturating_sub(registered),
            java_at.saturating_sub(registered),
        );
        eprintln!(
            "registration -> first call, {instances} instances, round {round}: ours {} ms (the successful call itself {our_call_ms} ms: the new JVM's first request), Java {} ms (instance node created at {registered} ms since the epoch)",
            row.0, row.1
        );
        if let Ok(path) = std::env::var("APP_LATENCY_OUT") {
            use std::io::Write as _;
            let line = serde_json::json!({"instances": instances, "metadata": metadata, "round": round, "ours_ms": row.0, "ours_call_ms": our_call_ms, "java_ms": row.1});
            if let Ok(mut f) = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
            {
                let _ = writeln!(f, "{line}");
            }
        }
        results.push(row);
        stop(p).await;
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
        "registration -> first call, {instances} instances, {metadata} metadata, {rounds} rounds ({profile}): median ours {m_ours} ms, Java {m_java} ms ({:.2}x); mean ours {:.0} ms, Java {:.0} ms",
        m_ours as f64 / m_java.max(1) as f64,
        mean(|r| r.0),
        mean(|r| r.1)
    );
    drop(p0);
}

/// Starts the Java consumer in `first-success` mode for `tag` and waits until it subscribed
/// (its READY line); the returned task resolves to its first-success time.
async fn java_first_success(reg: &str, tag: &str) -> tokio::task::JoinHandle<u64> {
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
    tokio::spawn(async move {
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
    })
}
