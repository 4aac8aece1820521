//! `dubbo-registry demo`: the whole story on one registry, narrated step by step.
//!
//! Providers of `com.example.DemoService` (versions 1.0.0 and 2.0.0, groups blue and green)
//! register; a consumer with `version=*` / `group=*` follows them through a
//! `RegistryDirectory`. As in Dubbo, a multi-group reference is joined with the mergeable
//! cluster: each group is a cluster of its own (the `--cluster` strategy), and a method
//! without a `merger` calls only the first available group, spread by the load balancer over
//! that group's providers (never across groups). One provider fails and failover retries
//! inside its group, a provider joins that group live, a method with `merger=true` calls every
//! group and merges the lists, all providers go away and `mock=fail:` answers, and
//! `mock=force:` short-circuits. Every step checks what it claims: the exit code is 0 only
//! when the whole story happened as told.

use std::collections::BTreeMap;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::{bail, Context};
use async_trait::async_trait;
use invoker::cluster;
use invoker::directory::{Directory, DirectoryOptions, RegistryDirectory};
use invoker::rpc::{
    Invocation, Invoker, InvokerFactory, RpcError, RpcErrorCode, RpcResponse, RpcResult,
    SharedInvoker,
};
use parking_lot::Mutex;
use registry_core::{Registry, Url};
use serde_json::json;

use crate::registry_factory;

const SERVICE: &str = "com.example.DemoService";
/// The method whose results are merged across groups (`listHello.merger=true`).
const LIST_METHOD: &str = "listHello";

/// Arguments of `demo`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Registry to run the story on: memory://demo (in-process, default),
    /// zookeeper://127.0.0.1:2181 or nacos://127.0.0.1:8848.
    #[arg(long, default_value = "memory://demo")]
    registry: String,
    /// Load balancer: random, roundrobin, leastactive, shortestresponse, consistenthash, p2c.
    #[arg(long, default_value = "roundrobin")]
    loadbalance: String,
    /// Cluster strategy inside each group (the reference itself is mergeable, as group=*):
    /// failover, failfast, failsafe, failback, forking, broadcast, available.
    #[arg(long, default_value = "failover")]
    cluster: String,
    /// Calls per step.
    #[arg(long, default_value_t = 100)]
    calls: usize,
    /// How long to wait for the registry and for each change to arrive, in seconds.
    #[arg(long, default_value_t = 15)]
    timeout: u64,
}

/// What each simulated provider does and how many calls it got.
#[derive(Debug, Default)]
struct World {
    failing: Mutex<BTreeMap<String, bool>>,
    calls: Mutex<BTreeMap<String, usize>>,
}

impl World {
    fn set_failing(&self, addr: &str, failing: bool) {
        self.failing.lock().insert(addr.to_owned(), failing);
    }
    fn snapshot(&self) -> BTreeMap<String, usize> {
        self.calls.lock().clone()
    }
}

/// The demo's transport: invokers that answer in-process.
#[derive(Debug)]
struct DemoFactory(Arc<World>);

impl InvokerFactory for DemoFactory {
    fn refer(&self, provider: &Url) -> Result<SharedInvoker, RpcError> {
        Ok(Arc::new(DemoInvoker {
            url: provider.clone(),
            world: self.0.clone(),
        }))
    }
}

#[derive(Debug)]
struct DemoInvoker {
    url: Url,
    world: Arc<World>,
}

#[async_trait]
impl Invoker for DemoInvoker {
    fn url(&self) -> &Url {
        &self.url
    }

    async fn invoke(&self, invocation: &Invocation) -> RpcResult {
        let addr = self.url.address().unwrap_or_default();
        *self.world.calls.lock().entry(addr.clone()).or_default() += 1;
        // A little service time, so latency-aware balancers have something to measure.
        tokio::time::sleep(Duration::from_micros(200)).await;
        if self
            .world
            .failing
            .lock()
            .get(&addr)
            .copied()
            .unwrap_or(false)
        {
            return Err(RpcError::new(
                RpcErrorCode::Network,
                format!("{addr}: connection reset"),
            ));
        }
        let version = self.url.param("version").unwrap_or("");
        let group = self.url.param("group").unwrap_or("");
        let arg = invocation
            .arguments()
            .first()
            .and_then(|v| v.as_str())
            .unwrap_or("");
        let hello = format!("hello {arg}, from {addr} (v{version}, {group})");
        Ok(RpcResponse::new(match invocation.method() {
            // Declared as java.util.List<String>: mergeable with merger=true.
            LIST_METHOD => json!([hello]),
            _ => json!(hello),
        }))
    }
}

/// Runs the demo; exit code 1 when a step did not behave as told.
pub fn run(a: Args) -> anyhow::Result<ExitCode> {
    super::runtime()?.block_on(story(a))
}

fn provider(port: u16, version: &str, group: &str) -> Url {
    // Started an hour ago: past the 10-minute warm-up, so weights are steady.
    let started = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
        .saturating_sub(3_600_000);
    Url::builder("dubbo")
        .host("127.0.0.1")
        .port(i32::from(port))
        .path(SERVICE)
        .param("interface", SERVICE)
        .param("version", version)
        .param("group", group)
        .param("application", "demo-provider")
        .param("side", "provider")
        .param("methods", "sayHello,listHello")
        .param("timestamp", &started.to_string())
        .build()
}

fn consumer(extra: &[(&str, &str)]) -> Url {
    Url::builder("consumer")
        .host("127.0.0.1")
        .path(SERVICE)
        .param("interface", SERVICE)
        .param("application", "demo-consumer")
        .param("side", "consumer")
        .param("version", "*")
        .param("group", "*")
        .param("check", "false")
        .params(extra.iter().copied())
        .build()
}

struct Step {
    n: usize,
}

impl Step {
    fn next(&mut self, title: &str) {
        self.n += 1;
        println!("\n== Step {}: {title}", self.n);
    }
}

fn check(ok: bool, what: &str) -> anyhow::Result<()> {
    if ok {
        println!("   ok: {what}");
        Ok(())
    } else {
        bail!("demo step failed: {what}")
    }
}

async fn wait_for(
    dir: &RegistryDirectory,
    timeout: Duration,
    what: &str,
    cond: impl Fn(&RegistryDirectory) -> bool,
) -> anyhow::Result<Duration> {
    let start = Instant::now();
    while !cond(dir) {
        if start.elapsed() > timeout {
            bail!("timed out after {timeout:?} waiting for {what}");
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    Ok(start.elapsed())
}

fn diff(
    after: &BTreeMap<String, usize>,
    before: &BTreeMap<String, usize>,
) -> BTreeMap<String, usize> {
    after
        .iter()
        .map(|(k, v)| (k.clone(), v - before.get(k).copied().unwrap_or(0)))
        .filter(|(_, v)| *v > 0)
        .collect()
}

fn print_counts(counts: &BTreeMap<String, usize>, urls: &[Url]) {
    for (addr, n) in counts {
        let u = urls
            .iter()
            .find(|u| u.address().as_deref() == Some(addr.as_str()));
        let (v, g) = u.map_or(("?", "?"), |u| {
            (u.param_or("version", "?"), u.param_or("group", "?"))
        });
        println!(
            "   {addr:<16} v{v:<6} group {g:<6} {n:>5} calls  {}",
            "#".repeat((*n).min(60))
        );
    }
}

/// The groups of the providers that received calls.
fn groups_of(counts: &BTreeMap<String, usize>, urls: &[Url]) -> Vec<String> {
    let mut g: Vec<String> = counts
        .keys()
        .filter_map(|addr| {
            urls.iter()
                .find(|u| u.address().as_deref() == Some(addr.as_str()))
                .map(|u| u.param_or("group", "").to_owned())
        })
        .collect();
    g.sort();
    g.dedup();
    g
}

async fn calls(invoker: &SharedInvoker, n: usize) -> (usize, usize, Option<String>) {
    let (mut ok, mut failed, mut last) = (0, 0, None);
    for i in 0..n {
        let inv = Invocation::new("sayHello")
            .with_arguments(
                vec!["java.lang.String".into()],
                vec![json!(format!("caller-{i}"))],
            )
            .with_return_type("java.lang.String");
        match invoker.invoke(&inv).await {
            Ok(r) => {
                ok += 1;
                last = r
                    .value
                    .as_str()
                    .map(str::to_owned)
                    .or(Some(r.value.to_string()));
            }
            Err(e) => {
                failed += 1;
                last = Some(format!("error: {e}"));
            }
        }
    }
    (ok, failed, last)
}

async fn story(a: Args) -> anyhow::Result<ExitCode> {
    let timeout = Duration::from_secs(a.timeout);
    let mut step = Step { n: 0 };
    println!(
        "dubbo-registry demo on {} (loadbalance={}, cluster={})",
        a.registry, a.loadbalance, a.cluster
    );
    let registry: Arc<dyn Registry> = registry_factory::connect(&a.registry, timeout)
        .await
        .with_context(|| format!("cannot open {}", a.registry))?;
    let world = Arc::new(World::default());
    let factory: Arc<dyn InvokerFactory> = Arc::new(DemoFactory(world.clone()));

    step.next("four providers register (versions 1.0.0 / 2.0.0, groups blue / green)");
    let providers = vec![
        provider(20880, "1.0.0", "blue"),
        provider(20881, "1.0.0", "green"),
        provider(20882, "2.0.0", "blue"),
        provider(20883, "2.0.0", "green"),
    ];
    for p in &providers {
        registry
            .register(p)
            .await
            .with_context(|| format!("register {p}"))?;
        println!("   + {p}");
    }

    step.next("a consumer with version=* and group=* subscribes");
    let main_url = consumer(&[
        ("loadbalance", a.loadbalance.as_str()),
        ("cluster", a.cluster.as_str()),
        ("retries", "2"),
        ("listHello.merger", "true"),
        (
            "mock",
            "fail:return \"fallback: DemoService is unavailable\"",
        ),
    ]);
    println!("   {main_url}");
    let started = Instant::now();
    let dir = RegistryDirectory::subscribe(
        registry.clone(),
        main_url,
        factory.clone(),
        DirectoryOptions::default(),
    )
    .await
    .map_err(|e| anyhow::anyhow!("subscribe failed: {e}"))?;
    let took = wait_for(&dir, timeout, "4 providers", |d| d.provider_count() == 4).await?;
    println!(
        "   the directory sees {} providers after {:.1} ms",
        dir.provider_count(),
        (started.elapsed().max(took)).as_secs_f64() * 1e3
    );
    for u in dir.invoker_urls() {
        println!(
            "   - {} v{} group {}",
            u.address().unwrap_or_default(),
            u.param_or("version", ""),
            u.param_or("group", "")
        );
    }
    let reference = cluster::join(dir.clone() as Arc<dyn Directory>);
    println!(
        "   group=* is a multi-group reference: Dubbo joins it with the mergeable cluster, one \
         {} cluster per group inside",
        a.cluster
    );

    step.next(&format!(
        "{} calls go to the first available group, spread there by the {} load balancer",
        a.calls, a.loadbalance
    ));
    let before = world.snapshot();
    let (ok, failed, last) = calls(&reference, a.calls).await;
    let spread = diff(&world.snapshot(), &before);
    print_counts(&spread, &providers);
    println!("   last answer: {}", last.unwrap_or_default());
    check(
        ok == a.calls && failed == 0,
        &format!("{ok} of {} calls succeeded", a.calls),
    )?;
    let served = groups_of(&spread, &providers);
    check(
        served.len() == 1,
        &format!(
            "every call went to one group ({}), none across groups",
            served.join(", ")
        ),
    )?;
    let group = served.first().cloned().unwrap_or_default();
    // Latency-aware balancers (p2c, shortestresponse) rightly prefer the fastest provider and
    // consistent hashing pins keys: only the spreading balancers must reach every provider.
    if matches!(
        a.loadbalance.as_str(),
        "random" | "roundrobin" | "leastactive"
    ) {
        check(
            spread.len() == 2,
            &format!("both providers of group {group} received calls"),
        )?;
    }

    // The provider the balancer picks next fails (one more call finds it), so the balancer is
    // sure to try it: a latency-aware one (p2c) keeps picking the provider it prefers, and
    // failed calls do not change its preference.
    let before = world.snapshot();
    calls(&reference, 1).await;
    let victim = diff(&world.snapshot(), &before)
        .into_keys()
        .next()
        .or_else(|| {
            spread
                .iter()
                .max_by_key(|(_, n)| **n)
                .map(|(addr, _)| addr.clone())
        })
        .unwrap_or_else(|| "127.0.0.1:20880".to_owned());
    step.next(&format!(
        "{victim} starts failing; failover retries on another provider of group {group}"
    ));
    world.set_failing(&victim, true);
    let before = world.snapshot();
    let (ok, failed, _) = calls(&reference, a.calls).await;
    let spread = diff(&world.snapshot(), &before);
    print_counts(&spread, &providers);
    let attempts: usize = spread.values().sum();
    println!(
        "   {ok} answered, {failed} failed, {attempts} attempts ({} retried)",
        attempts - a.calls
    );
    if a.cluster == "failover" {
        check(ok == a.calls && failed == 0, "every call still succeeded")?;
        check(
            spread.get(&victim).copied().unwrap_or(0) > 0,
            "the failing provider was tried",
        )?;
        check(attempts > a.calls, "failed attempts were retried elsewhere")?;
        check(
            groups_of(&spread, &providers) == [group.clone()],
            &format!("retries stayed inside group {group}"),
        )?;
    }
    world.set_failing(&victim, false);

    step.next(&format!(
        "a new provider (2.0.0, {group}) joins group {group} live"
    ));
    let newcomer = provider(20884, "2.0.0", &group);
    registry
        .register(&newcomer)
        .await
        .context("register newcomer")?;
    println!("   + {newcomer}");
    let took = wait_for(&dir, timeout, "the newcomer", |d| d.provider_count() == 5).await?;
    println!("   the directory saw it after {took:?}");
    let before = world.snapshot();
    let (ok, _, _) = calls(&reference, a.calls).await;
    let spread = diff(&world.snapshot(), &before);
    let mut all = providers.clone();
    all.push(newcomer.clone());
    print_counts(&spread, &all);
    check(ok == a.calls, "every call succeeded")?;
    let newcomer_calls = spread.get("127.0.0.1:20884").copied().unwrap_or(0);
    println!(
        "   the newcomer received {newcomer_calls} of {} calls",
        a.calls
    );
    check(
        newcomer_calls > 0 || matches!(a.loadbalance.as_str(), "p2c" | "shortestresponse"),
        "the newcomer receives calls",
    )?;

    step.next(&format!(
        "{LIST_METHOD} has merger=true: every group is called and the lists are merged"
    ));
    let before = world.snapshot();
    let inv = Invocation::new(LIST_METHOD)
        .with_arguments(vec!["java.lang.String".into()], vec![json!("everyone")])
        .with_return_type("java.util.List<java.lang.String>");
    let merged = reference
        .invoke(&inv)
        .await
        .map_err(|e| anyhow::anyhow!("{LIST_METHOD} failed: {e}"))?;
    let answers: Vec<String> = merged
        .value
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|v| v.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default();
    for line in &answers {
        println!("   {line}");
    }
    let spread = diff(&world.snapshot(), &before);
    check(
        answers.len() == 2 && groups_of(&spread, &all).len() == 2,
        "one answer from each of the two groups, merged into one list",
    )?;

    step.next("every provider goes away; mock=fail:return answers");
    for p in &all {
        registry
            .unregister(p)
            .await
            .with_context(|| format!("unregister {p}"))?;
        println!("   - {p}");
    }
    let took = wait_for(&dir, timeout, "no providers", |d| d.provider_count() == 0).await?;
    println!("   the registry said empty:// after {took:?}");
    let before = world.snapshot();
    let (ok, failed, last) = calls(&reference, 3).await;
    println!("   answer: {}", last.clone().unwrap_or_default());
    check(ok == 3 && failed == 0, "the mock answered every call")?;
    check(
        last.as_deref() == Some("fallback: DemoService is unavailable"),
        "the answer is the mock value",
    )?;
    check(
        diff(&world.snapshot(), &before).is_empty(),
        "no provider was called",
    )?;

    step.next("mock=force:return short-circuits even with providers present");
    registry
        .register(&providers[0])
        .await
        .context("re-register")?;
    let forced_url = consumer(&[
        ("mock", "force:return \"forced answer\""),
        ("register", "false"),
    ]);
    let forced_dir = RegistryDirectory::subscribe(
        registry.clone(),
        forced_url,
        factory.clone(),
        DirectoryOptions {
            register: false,
            ..DirectoryOptions::default()
        },
    )
    .await
    .map_err(|e| anyhow::anyhow!("subscribe failed: {e}"))?;
    wait_for(&forced_dir, timeout, "1 provider", |d| {
        d.provider_count() == 1
    })
    .await?;
    let forced = cluster::join(forced_dir.clone() as Arc<dyn Directory>);
    let before = world.snapshot();
    let (ok, _, last) = calls(&forced, 3).await;
    println!("   answer: {}", last.clone().unwrap_or_default());
    check(
        ok == 3 && last.as_deref() == Some("forced answer"),
        "the forced mock answered",
    )?;
    check(
        diff(&world.snapshot(), &before).is_empty(),
        "the provider was never called",
    )?;

    let m = invoker::metrics::snapshot();
    let r = registry_core::metrics::snapshot();
    println!(
        "\nmetrics: registry published {} notifications ({} background retries); directories \
         applied {} and published {} snapshots; {} cluster retries; {} mocked calls",
        r.notifications, r.retries, m.notifications, m.snapshots, m.retries, m.mocked
    );
    check(
        r.notifications > 0
            && (m.retries > 0 || a.cluster != "failover")
            && m.mocked >= 6
            && m.snapshots > 0,
        "the counters saw it all",
    )?;
    registry.unregister(&providers[0]).await.ok();
    forced_dir.destroy();
    dir.destroy();
    registry.destroy().await;
    println!("\ndemo finished: every step behaved as described.");
    Ok(ExitCode::SUCCESS)
}
