//! `dubbo-registry invoke <TARGET> <SERVICE> <METHOD> [ARGS_JSON]`: call a real provider.
//!
//! - TARGET is a registry URL (`zookeeper://`, `nacos://`, `memory://`): subscribe as a
//!   Dubbo 3.3 consumer of SERVICE with exactly the given group/version (absent means absent):
//!   both discovery levels in the migration step of the config centre's rule (default
//!   `APPLICATION_FIRST`, or `--migration`, or the rule of `--migration-file`; application level
//!   only for `registry-type=service`),
//!   with the config centre's routing and override rules, and call through directory →
//!   cluster (failover, Dubbo's 2 retries) → load balance → filters → protocol invoker. The
//!   output names the provider that answered and where it came from (interface level, or the
//!   application and revision). Or a provider URL (`dubbo://host:port[/SERVICE][?params]`): refer
//!   it directly and call once. `--retries N` overrides both.
//! - The arguments are a JSON array; `--types` gives the Java parameter types, else they are
//!   inferred ([`protocol_dubbo::infer_java_types`]). A normal call (method + descriptor), or
//!   `$invoke` with `--generic`.
//! - Exit codes: 0 result, 1 business exception thrown by the provider, 2 RPC or usage error.
//! - Limits on what a provider may send ([`LimitArgs`]): the largest `payload` a provider URL
//!   may set, and the Hessian2 decoder's depth and memory budget; a result over them is a
//!   serialization error (exit 2) that names the limit. Results print as they are written
//!   (no copy of the whole text in memory).
//!
//! Providers are referred through the front door's [`dubbo_consumer::Protocols`]
//! ([`protocols`]: `dubbo`, and `tri` with the Triple options); another protocol plugs in with
//! one entry there.

use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context};
use dubbo_consumer::Levels;
use dubbo_consumer::Protocols;
use invoker::cluster;
use invoker::directory::RegistryDirectory;
use invoker::rpc::{Invocation, InvokerFactory, RpcError, RpcErrorCode, RpcResult, SharedInvoker};
use invoker::trace_context::{TraceParent, TRACEPARENT};
use registry_core::Url;
use serde_json::{json, Value};

use crate::levels::{self, Level, Source};
use crate::registry_factory::{self, REGISTRY_URL_HELP};
use crate::safe_text::{escape, escape_keep_lines};
use invoker::rpc::Invoker;
use registry_core::url::secret::redact;

/// Registry URL schemes (anything else is a provider URL).
const REGISTRY_PROTOCOLS: &[&str] = &["zookeeper", "nacos", "memory", "service-discovery-registry"];
/// Dubbo's default `retries` for failover.
const DEFAULT_RETRIES: i64 = 2;

/// Arguments of `invoke`.
#[derive(Debug, clap::Args)]
#[command(after_help = REGISTRY_URL_HELP)]
pub struct Args {
    /// TARGET: a registry URL (zookeeper://127.0.0.1:2181, nacos://127.0.0.1:8848, ...) or a
    /// provider URL `dubbo://host:port[/SERVICE][?params]`; when the first argument is not a
    /// URL, TARGET is left out and the registry comes from --registry-file or
    /// $DUBBO_REGISTRY. SERVICE: the service interface, e.g.
    /// org.apache.dubbo.demo.DemoService. METHOD: the method name. ARGS_JSON: the arguments,
    /// a JSON array (default []).
    #[arg(value_names = ["TARGET", "SERVICE", "METHOD", "ARGS_JSON"], num_args = 2..=4, required = true)]
    positional: Vec<String>,
    #[command(flatten)]
    source: registry_factory::RegistrySource,
    #[arg(skip)]
    target: String,
    #[arg(skip)]
    service: String,
    #[arg(skip)]
    method: String,
    #[arg(skip)]
    args_json: Option<String>,
    /// Java parameter types in order: java.lang.String, int, long, double, boolean,
    /// java.util.List, java.util.Map or a class name (default: inferred from the JSON).
    #[arg(long, value_delimiter = ',')]
    types: Option<Vec<String>>,
    /// The service group (default: none).
    #[arg(long)]
    group: Option<String>,
    /// The service version (default: none).
    #[arg(long)]
    version: Option<String>,
    /// Through a registry, call only providers of these protocols (`dubbo`, `tri`, comma
    /// separated): the consumer's `protocol` parameter, as in Dubbo (default: all).
    #[arg(long)]
    protocol: Option<String>,
    /// Per-attempt call timeout in ms (default: the URL's timeout, else 1000).
    #[arg(long)]
    timeout: Option<u64>,
    /// Retries after the first attempt (default: 2 through a registry, 0 for a provider URL).
    #[arg(long)]
    retries: Option<u32>,
    /// An attachment K=V (split at the first '='); repeatable.
    #[arg(long = "attachment", value_name = "K=V")]
    attachments: Vec<String>,
    /// Call `$invoke(method, types, args)` with generic=true instead of the method itself.
    #[arg(long)]
    generic: bool,
    /// Print one JSON object: {"result": ...} or {"exception": {"class", "message"}}.
    #[arg(long)]
    json: bool,
    /// Repeat the call N times and print calls/s, p50 and p99 instead of the result.
    #[arg(long, default_value_t = 1)]
    repeat: u64,
    /// Calls in flight during --repeat.
    #[arg(long, default_value_t = 1)]
    concurrency: u64,
    /// With --repeat: calls made (same concurrency) before measuring.
    #[arg(long, default_value_t = 0)]
    warmup: u64,
    /// Seconds to wait for the registry and its first provider list.
    #[arg(long, default_value_t = 10)]
    registry_timeout: u64,
    /// The migration step when the config centre has no rule: FORCE_INTERFACE,
    /// APPLICATION_FIRST (Dubbo 3.3's default) or FORCE_APPLICATION (the reference's
    /// `migration.step`).
    #[arg(long, value_name = "STEP")]
    migration: Option<String>,
    /// A migration rule (YAML) applied while the config centre has none, as Java's
    /// `dubbo.migration.file` (the reference's `migration.file`; the registry URL may carry it
    /// too).
    #[arg(long, value_name = "FILE")]
    migration_file: Option<String>,
    /// The consumer application (the migration rule is `<application>.migration`).
    #[arg(long, default_value = "dubbo-registry-invoke")]
    application: String,
    /// Triple (`tri://`) options (`--proto`).
    #[command(flatten)]
    triple: super::invoke_triple::TripleArgs,
    /// Limits on what providers may send.
    #[command(flatten)]
    limits: LimitArgs,
    /// Dubbo's metrics for Prometheus (`--metrics-addr`).
    #[command(flatten)]
    metrics: crate::observe::MetricsArgs,
    /// Send a new W3C trace context (`traceparent`, sampled) with every call, as a Java
    /// consumer with tracing on does; the trace id is printed (`trace_id` with --json).
    #[arg(long)]
    trace: bool,
    /// TLS to providers.
    #[command(flatten)]
    tls: super::tls_args::TlsArgs,
}

/// Limits on what providers may send (both protocols).
#[derive(Debug, Clone, clap::Args)]
pub struct LimitArgs {
    /// The largest body a provider URL may set with `payload` (bytes): a URL may lower the
    /// limit, not raise it past this (default: Dubbo's 8 MiB).
    #[arg(long, value_name = "BYTES", default_value_t = protocol_dubbo::frame::DEFAULT_PAYLOAD)]
    pub max_payload: usize,
    /// Memory a decoded Hessian2 result (and its JSON form) may take per byte of body.
    #[arg(long, value_name = "N", default_value_t = hessian2::Limits::DEFAULT.memory_per_byte)]
    pub decode_memory_per_byte: usize,
    /// Memory a decoded Hessian2 result may take whatever the body size (bytes).
    #[arg(long, value_name = "BYTES", default_value_t = hessian2::Limits::DEFAULT.min_memory)]
    pub decode_min_memory: usize,
    /// Deepest nesting of lists, maps and objects a Hessian2 result may have.
    #[arg(long, value_name = "N", default_value_t = hessian2::Limits::DEFAULT.max_depth)]
    pub decode_max_depth: usize,
}

impl LimitArgs {
    /// The Hessian2 decoder's limits.
    pub fn hessian(&self) -> hessian2::Limits {
        hessian2::Limits {
            max_depth: self.decode_max_depth,
            memory_per_byte: self.decode_memory_per_byte,
            min_memory: self.decode_min_memory,
            ..hessian2::Limits::DEFAULT
        }
    }
}

/// The protocols `invoke` can call: the front door's table ([`dubbo_consumer::Protocols`])
/// with the limits on what providers may send and the TLS settings (Dubbo's `SslConfig`
/// names on TARGET, `--tls*` flags first), and `tri` per `--proto` (IDL mode, else wrapper
/// mode) with the Triple options.
pub fn protocols(a: &Args) -> anyhow::Result<Protocols> {
    let target = Url::parse(&a.target)
        .map_err(|e| anyhow!("invalid TARGET {:?}: {e}", redact(&a.target)))?;
    let tls = a.tls.config_for(&target)?;
    let dubbo = protocol_dubbo::DubboInvokerFactory::with_options(protocol_dubbo::DubboOptions {
        max_payload: a.limits.max_payload,
        hessian: a.limits.hessian(),
        ..protocol_dubbo::DubboOptions::default()
    })
    .with_tls(&tls)?;
    Ok(Protocols::new().with("dubbo", Arc::new(dubbo)).with(
        "tri",
        super::invoke_triple::factory(&a.triple, &a.service, &a.limits, &tls)?,
    ))
}

impl Args {
    /// Sets TARGET, SERVICE, METHOD and ARGS_JSON from the positional arguments: TARGET is
    /// the first when it is a URL (`://`), else the registry of `--registry-file` or
    /// `$DUBBO_REGISTRY`.
    fn resolve(&mut self) -> anyhow::Result<()> {
        let mut rest = self.positional.clone();
        if rest.first().is_some_and(|p| p.contains("://")) {
            if self.source.file.is_some() {
                bail!("the registry is given twice: as TARGET and by --registry-file");
            }
            self.target = rest.remove(0);
        } else {
            self.target = self.source.read()?;
        }
        let mut it = rest.into_iter();
        let (Some(service), Some(method)) = (it.next(), it.next()) else {
            bail!("expected [TARGET] SERVICE METHOD [ARGS_JSON]");
        };
        self.service = service;
        self.method = method;
        self.args_json = it.next();
        if it.next().is_some() {
            bail!("expected [TARGET] SERVICE METHOD [ARGS_JSON]: too many arguments");
        }
        Ok(())
    }
}

/// The call, built from the command line (protocol-neutral).
fn invocation(a: &Args) -> anyhow::Result<Invocation> {
    let args: Vec<Value> = match &a.args_json {
        None => Vec::new(),
        Some(s) => {
            match serde_json::from_str(s).with_context(|| format!("ARGS_JSON is not JSON: {s}"))? {
                Value::Array(v) => v,
                other => bail!("ARGS_JSON must be a JSON array, got {other}"),
            }
        }
    };
    let types = match &a.types {
        Some(t) => {
            let t: Vec<String> = t
                .iter()
                .map(|s| s.trim().to_owned())
                .filter(|s| !s.is_empty())
                .collect();
            if t.len() != args.len() {
                bail!(
                    "--types lists {} types for {} arguments",
                    t.len(),
                    args.len()
                );
            }
            t
        }
        None => protocol_dubbo::infer_java_types(&args),
    };
    let mut inv = if a.generic {
        Invocation::new("$invoke")
            .with_arguments(
                vec![
                    "java.lang.String".into(),
                    "[Ljava.lang.String;".into(),
                    "[Ljava.lang.Object;".into(),
                ],
                vec![
                    json!(a.method),
                    Value::Array(types.into_iter().map(Value::String).collect()),
                    Value::Array(args),
                ],
            )
            .with_attachment("generic", "true")
    } else {
        Invocation::new(a.method.as_str()).with_arguments(types, args)
    };
    for kv in &a.attachments {
        let (k, v) = kv
            .split_once('=')
            .ok_or_else(|| anyhow!("--attachment {kv:?} is not K=V"))?;
        if k.is_empty() {
            bail!("--attachment {kv:?} has an empty key");
        }
        inv = inv.with_attachment(k, v);
    }
    Ok(inv)
}

/// The consumer URL parameters the options set (besides interface, side, category, check).
fn consumer_params(a: &Args) -> Vec<(&'static str, String)> {
    let mut p = vec![
        ("application", a.application.clone()),
        ("dubbo", "2.0.2".to_owned()),
        ("release", "3.3.1".to_owned()),
    ];
    if let Some(g) = &a.group {
        p.push(("group", g.clone()));
    }
    if let Some(v) = &a.version {
        p.push(("version", v.clone()));
    }
    if let Some(pr) = &a.protocol {
        p.push(("protocol", pr.clone()));
    }
    if let Some(t) = a.timeout {
        p.push(("timeout", t.to_string()));
    }
    if let Some(m) = &a.migration {
        p.push(("migration.step", m.clone()));
    }
    if let Some(f) = &a.migration_file {
        p.push((app_discovery::migration::MIGRATION_FILE_KEY, f.clone()));
    }
    p.push((
        "retries",
        a.retries.map_or(DEFAULT_RETRIES, i64::from).to_string(),
    ));
    p
}

/// The consumer URL of a direct call (its metrics labels).
fn consumer_url(a: &Args) -> Url {
    let mut b = Url::builder("consumer")
        .host("127.0.0.1")
        .path(&a.service)
        .param("interface", &a.service)
        .param("side", "consumer")
        .param("category", "providers,configurators,routers")
        .param("check", "false");
    for (k, v) in consumer_params(a) {
        b = b.param(k, &v);
    }
    b.build()
}

fn provider_url(a: &Args) -> anyhow::Result<Url> {
    let mut u = Url::parse(&a.target)
        .map_err(|e| anyhow!("invalid provider URL {:?}: {e}", redact(&a.target)))?;
    if u.path().is_none_or(str::is_empty) {
        u = u.with_path(&a.service);
    }
    let mut set: Vec<(&str, String)> = Vec::new();
    if !u.has_param("interface") {
        set.push(("interface", a.service.clone()));
    }
    if let Some(g) = &a.group {
        set.push(("group", g.clone()));
    }
    if let Some(v) = &a.version {
        set.push(("version", v.clone()));
    }
    if let Some(t) = a.timeout {
        set.push(("timeout", t.to_string()));
    }
    Ok(u.with_params(set.iter().map(|(k, v)| (*k, v.as_str()))))
}

/// The invoker of the target, and what to release afterwards.
struct Opened {
    invoker: SharedInvoker,
    provider: Option<String>,
    attempts: u32,
    reference: Option<Reference>,
}

/// A reference through a registry (the front door's, over both levels and the migration),
/// and what served the last call.
struct Reference {
    reference: dubbo_consumer::Reference,
    levels: Levels,
    served: Arc<parking_lot::Mutex<Option<Url>>>,
}

impl Reference {
    /// The provider that answered the last call and where it came from.
    fn served(&self) -> Option<(String, Source)> {
        let url = self.served.lock().clone()?;
        let addr = url.address().unwrap_or_default();
        let in_dir = |dir: Option<Arc<RegistryDirectory>>| {
            dir.is_some_and(|d| {
                d.invoker_urls().iter().any(|u| {
                    u.address() == url.address()
                        && u.path() == url.path()
                        && u.protocol() == url.protocol()
                })
            })
        };
        let app_dir = self
            .reference
            .migration()
            .and_then(|m| m.directory().application_directory());
        let source = match &self.levels.app {
            Some(app) if in_dir(app_dir) => Source::of(app, &url),
            _ => Source::Interface,
        };
        Some((addr, source))
    }
}

/// Refers through `inner` and remembers the URL of the invoker that answered last.
#[derive(Debug)]
struct Tracking {
    inner: Arc<dyn InvokerFactory>,
    served: Arc<parking_lot::Mutex<Option<Url>>>,
}

impl InvokerFactory for Tracking {
    fn refer(&self, provider: &Url) -> Result<SharedInvoker, RpcError> {
        Ok(Arc::new(Tracked {
            inner: self.inner.refer(provider)?,
            served: self.served.clone(),
        }))
    }
    fn preconnect(&self, endpoint: &Url) -> Option<invoker::rpc::Preconnect> {
        self.inner.preconnect(endpoint)
    }
}

#[derive(Debug)]
struct Tracked {
    inner: SharedInvoker,
    served: Arc<parking_lot::Mutex<Option<Url>>>,
}

#[async_trait::async_trait]
impl Invoker for Tracked {
    invoker::delegate_invoker!(inner);

    async fn invoke(&self, invocation: &Invocation) -> RpcResult {
        let r = self.inner.invoke(invocation).await;
        if r.is_ok() || r.as_ref().is_err_and(|e| e.is_biz()) {
            *self.served.lock() = Some(self.inner.url().clone());
        }
        r
    }
}

impl Opened {
    /// One call; a direct target retries retryable failures `--retries` times (the cluster
    /// does its own failover).
    async fn call(&self, inv: &Invocation) -> RpcResult {
        let mut r = self.invoker.invoke(inv).await;
        for _ in 1..self.attempts {
            match &r {
                Err(e) if e.is_retryable() => r = self.invoker.invoke(inv).await,
                _ => break,
            }
        }
        r
    }

    async fn close(self) {
        match self.reference {
            Some(r) => {
                r.reference.close().await;
                r.levels.destroy().await;
            }
            None => self.invoker.destroy(),
        }
    }
}

async fn open_registry(
    a: &Args,
    metrics: Option<invoker::metrics::MetricsOptions>,
) -> anyhow::Result<Opened> {
    let wait = Duration::from_secs(a.registry_timeout.max(1));
    let levels = levels::connect(&a.target, Level::All, wait, wait).await?;
    let served = Arc::new(parking_lot::Mutex::new(None));
    let factory: Arc<dyn InvokerFactory> = Arc::new(Tracking {
        inner: Arc::new(protocols(a)?),
        served: served.clone(),
    });
    let mut builder = dubbo_consumer::Reference::builder(&a.service)
        .host("127.0.0.1")
        .check(false)
        .register_consumer(false)
        .ready_timeout(wait)
        .invoker_factory(factory)
        .cluster_options(cluster::ClusterOptions {
            metrics,
            layers: crate::observe::trace_layer(a.trace).into_iter().collect(),
            ..cluster::ClusterOptions::default()
        });
    for (k, v) in consumer_params(a) {
        builder = builder.param(k, v);
    }
    let reference = builder.build_levels(&levels).await.map_err(|e| match e {
        dubbo_consumer::Error::Subscribe { source, .. } => anyhow!(
            "subscribe to {} in {} failed: {source}",
            a.service,
            redact(&a.target)
        ),
        e => e.into(),
    })?;
    Ok(Opened {
        invoker: reference.invoker(),
        provider: None,
        attempts: 1,
        reference: Some(Reference {
            reference,
            levels,
            served,
        }),
    })
}

fn open_direct(
    a: &Args,
    metrics: Option<invoker::metrics::MetricsOptions>,
) -> anyhow::Result<Opened> {
    use invoker::filter::InvokerLayer;
    let url = provider_url(a)?;
    let mut invoker = protocols(a)?.refer(&url).map_err(|e| {
        anyhow!(
            "cannot refer {}: {}",
            url.to_masked_identity_string(),
            e.message
        )
    })?;
    if let Some(t) = crate::observe::trace_layer(a.trace) {
        invoker = t.layer(invoker);
    }
    if let Some(m) = metrics {
        // Labelled as this consumer (not with the provider URL's application).
        invoker = invoker::metrics::MetricsLayer::for_consumer(consumer_url(a), m).layer(invoker);
    }
    Ok(Opened {
        invoker,
        provider: url.address(),
        attempts: 1 + a.retries.unwrap_or(0),
        reference: None,
    })
}

/// Latency statistics of a `--repeat` run.
#[derive(Debug, serde::Serialize)]
struct LoadStats {
    calls: u64,
    errors: u64,
    concurrency: u64,
    seconds: f64,
    calls_per_sec: f64,
    p50_us: f64,
    p99_us: f64,
    max_us: f64,
    /// This process's CPU time (user + system) per measured call.
    cpu_us_per_call: f64,
    first_error: Option<String>,
}

/// CPU time (user + system) this process has used so far, in microseconds.
fn process_cpu_us() -> f64 {
    use nix::sys::resource::{getrusage, UsageWho};
    getrusage(UsageWho::RUSAGE_SELF).map_or(0.0, |u| {
        let us = |t: nix::sys::time::TimeVal| t.tv_sec() as f64 * 1e6 + t.tv_usec() as f64;
        us(u.user_time()) + us(u.system_time())
    })
}

async fn load(
    opened: Arc<Opened>,
    inv: Arc<Invocation>,
    calls: u64,
    concurrency: u64,
) -> LoadStats {
    use std::sync::atomic::{AtomicU64, Ordering};
    let next = Arc::new(AtomicU64::new(0));
    let cpu_start = process_cpu_us();
    let start = Instant::now();
    let mut tasks = Vec::new();
    for _ in 0..concurrency.max(1) {
        let (opened, inv, next) = (opened.clone(), inv.clone(), next.clone());
        tasks.push(tokio::spawn(async move {
            let mut lat = Vec::new();
            let mut errors = 0u64;
            let mut first_error = None;
            while next.fetch_add(1, Ordering::Relaxed) < calls {
                let t = Instant::now();
                let r = opened.call(&inv).await;
                lat.push(t.elapsed().as_nanos() as u64);
                if let Err(e) = r {
                    errors += 1;
                    first_error.get_or_insert_with(|| e.to_string());
                }
            }
            (lat, errors, first_error)
        }));
    }
    let mut all = Vec::with_capacity(calls as usize);
    let (mut errors, mut first_error) = (0, None);
    for t in tasks {
        if let Ok((lat, e, fe)) = t.await {
            all.extend(lat);
            errors += e;
            if first_error.is_none() {
                first_error = fe;
            }
        }
    }
    let seconds = start.elapsed().as_secs_f64();
    let cpu_us = process_cpu_us() - cpu_start;
    all.sort_unstable();
    let pct = |p: f64| -> f64 {
        if all.is_empty() {
            return 0.0;
        }
        let i = ((all.len() as f64 * p).ceil() as usize).clamp(1, all.len()) - 1;
        all[i] as f64 / 1e3
    };
    LoadStats {
        calls: all.len() as u64,
        errors,
        concurrency,
        seconds,
        calls_per_sec: all.len() as f64 / seconds.max(1e-9),
        p50_us: pct(0.50),
        p99_us: pct(0.99),
        max_us: all.last().map_or(0.0, |v| *v as f64 / 1e3),
        cpu_us_per_call: cpu_us / (all.len().max(1) as f64),
        first_error,
    }
}

/// Runs the call and prints its outcome; exit 0/1/2.
pub fn run(mut a: Args) -> anyhow::Result<ExitCode> {
    a.resolve()?;
    let inv = invocation(&a)?;
    let target = Url::parse(&a.target)
        .map_err(|e| anyhow!("invalid TARGET {:?}: {e}", redact(&a.target)))?;
    let is_registry = target
        .protocol()
        .is_some_and(|p| REGISTRY_PROTOCOLS.contains(&p));
    let rt = super::runtime()?;
    rt.block_on(async {
        let metrics = a.metrics.install("dubbo-registry-invoke")?;
        let opened = if is_registry {
            open_registry(&a, metrics).await?
        } else {
            open_direct(&a, metrics)?
        };
        if a.repeat > 1 {
            let opened = Arc::new(opened);
            // One call first: connects, and warms both sides up.
            let _ = opened.call(&inv).await;
            let inv = Arc::new(inv);
            if a.warmup > 0 {
                load(opened.clone(), inv.clone(), a.warmup, a.concurrency).await;
            }
            let stats = load(opened.clone(), inv, a.repeat, a.concurrency).await;
            a.metrics.linger().await;
            if let Ok(o) = Arc::try_unwrap(opened) {
                o.close().await;
            }
            if a.json {
                println!("{}", serde_json::to_string(&stats)?);
            } else {
                println!(
                    "{} calls ({} errors), {} in flight: {:.0} calls/s, p50 {:.1} µs, p99 {:.1} µs, max {:.1} µs, CPU {:.1} µs/call",
                    stats.calls, stats.errors, stats.concurrency, stats.calls_per_sec, stats.p50_us, stats.p99_us, stats.max_us, stats.cpu_us_per_call
                );
                if let Some(e) = &stats.first_error {
                    eprintln!("first error: {e}");
                }
            }
            return Ok(if stats.errors == 0 { ExitCode::SUCCESS } else { ExitCode::from(2) });
        }
        // One call: its trace context is made here, so that its id can be printed (the
        // layer sends a context it finds on the call unchanged).
        let (inv, trace) = match (a.trace, inv.attachment(TRACEPARENT)) {
            (true, None) => {
                let tp = TraceParent::generate(true);
                (inv.with_attachment(TRACEPARENT, tp.to_string()), Some(tp))
            }
            (true, Some(given)) => {
                let tp = TraceParent::parse(given);
                (inv, tp)
            }
            (false, _) => (inv, None),
        };
        let start = Instant::now();
        let result = opened.call(&inv).await;
        let elapsed_ms = start.elapsed().as_secs_f64() * 1e3;
        let (provider, source) = match opened.reference.as_ref().and_then(Reference::served) {
            Some((p, s)) => (Some(p), Some(s)),
            None => (opened.provider.clone(), None),
        };
        a.metrics.linger().await;
        opened.close().await;
        if let (Some(tp), false) = (&trace, a.json) {
            eprintln!("(trace id {})", tp.trace_id_hex());
        }
        Ok(print(&a, result, provider, source, elapsed_ms, trace))
    })
}

fn print(
    a: &Args,
    result: RpcResult,
    provider: Option<String>,
    source: Option<Source>,
    elapsed_ms: f64,
    trace: Option<TraceParent>,
) -> ExitCode {
    match result {
        Ok(r) => {
            if a.json {
                let mut o = serde_json::Map::new();
                o.insert("result".into(), r.value);
                if let Some(p) = &provider {
                    o.insert("provider".into(), json!(p));
                }
                if let Some(s) = &source {
                    s.json_fields(&mut o);
                }
                if let Some(t) = &trace {
                    o.insert("trace_id".into(), json!(t.trace_id_hex()));
                    o.insert("span_id".into(), json!(t.span_id_hex()));
                }
                o.insert(
                    "elapsed_ms".into(),
                    json!((elapsed_ms * 1000.0).round() / 1000.0),
                );
                o.insert("attachments".into(), json!(r.attachments));
                println!("{}", Value::Object(o));
            } else {
                match &r.value {
                    Value::String(s) => println!("{}", escape_keep_lines(s)),
                    v => print_pretty(v),
                }
                match (&provider, &source) {
                    (Some(p), Some(s)) => {
                        eprintln!("(ok in {elapsed_ms:.1} ms from {p}, {})", s.short())
                    }
                    _ => eprintln!("(ok in {elapsed_ms:.1} ms)"),
                }
            }
            ExitCode::SUCCESS
        }
        Err(e) if e.is_biz() => {
            let class = e.exception_class.clone().unwrap_or_default();
            if a.json {
                println!(
                    "{}",
                    json!({"exception": {"class": class, "message": e.message}, "elapsed_ms": (elapsed_ms * 1000.0).round() / 1000.0})
                );
            } else {
                println!(
                    "exception {}: {}",
                    escape(&class),
                    escape_keep_lines(&e.message)
                );
            }
            ExitCode::from(1)
        }
        Err(e) => {
            eprintln!(
                "error: {} {}.{}: {}",
                describe(&e),
                a.service,
                a.method,
                escape(&e.to_string())
            );
            ExitCode::from(2)
        }
    }
}

/// Prints `v` as pretty JSON straight to stdout (a large result is never held twice).
fn print_pretty(v: &Value) {
    use std::io::Write;
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    let _ = serde_json::to_writer_pretty(&mut out, v);
    let _ = writeln!(out);
    let _ = out.flush();
}

fn describe(e: &RpcError) -> &'static str {
    match e.code {
        RpcErrorCode::Timeout | RpcErrorCode::TimeoutTerminate => "timeout calling",
        RpcErrorCode::Forbidden | RpcErrorCode::NoInvokerAvailableAfterFilter => "no provider for",
        RpcErrorCode::Network => "network error calling",
        RpcErrorCode::Serialization => "serialization error calling",
        _ => "failed to call",
    }
}

#[cfg(test)]
mod tests {
    /// ARGS_JSON numbers parse to the nearest double (serde_json's `float_roundtrip`; without
    /// it these two come out one ulp off: `399.96` and a double above `Float.MAX_VALUE`).
    #[test]
    fn args_json_numbers_parse_to_the_nearest_double() {
        for text in ["399.96000000000004", "3.4028234663852886e38", "4.9e-324"] {
            let v: serde_json::Value = serde_json::from_str(&format!("[{text}]")).unwrap();
            let want: f64 = text.parse().unwrap();
            assert_eq!(
                v[0].as_f64().map(f64::to_bits),
                Some(want.to_bits()),
                "{text}"
            );
        }
    }
}
