//! `list`/`watch --method M [--attachment K=V]...`: which providers survive routing for one
//! call, through a real `RegistryDirectory` (configurators, condition and tag routers) fed by
//! the registry and by the governance rules of the config centre (the registry by default).
//!
//! The consumer used for routing is concrete: the interface with `--group`/`--version` when
//! given (no `*` default, since a multi-group reference skips routing, as in Java) and
//! `--application` (default `dubbo-registry`) for the application-scope rules; a full
//! `consumer://` SERVICE is used as given.

use std::io::Write;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{anyhow, Context};
use invoker::directory::{Directory, DirectoryOptions, RegistryDirectory, RuleWatcher};
use invoker::rpc::{
    Invocation, Invoker, InvokerFactory, RpcError, RpcErrorCode, RpcResult, SharedInvoker,
};
use registry_core::Url;
use serde_json::json;

use super::list::Filter;
use crate::safe_text::escape;
use crate::{config_factory, registry_factory};

/// Refers providers only to route over them: their invokers never call (the view lists who
/// would be called, it calls no one).
#[derive(Debug)]
struct ViewOnly;

#[derive(Debug)]
struct NoCall(Url);

#[async_trait::async_trait]
impl Invoker for NoCall {
    fn url(&self) -> &Url {
        &self.0
    }
    async fn invoke(&self, _invocation: &Invocation) -> RpcResult {
        Err(RpcError::new(
            RpcErrorCode::Unknown,
            "the routing view calls no provider",
        ))
    }
}

impl InvokerFactory for ViewOnly {
    fn refer(&self, provider: &Url) -> Result<SharedInvoker, RpcError> {
        Ok(Arc::new(NoCall(provider.clone())))
    }
}

/// Routing options of `list` and `watch`.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct RouteOpts {
    /// Show only the providers that survive routing for a call of this method.
    #[arg(long)]
    pub method: Option<String>,
    /// An invocation attachment for --method, e.g. dubbo.tag=gray (repeatable).
    #[arg(long = "attachment", value_name = "K=V", requires = "method")]
    pub attachments: Vec<String>,
    /// The consumer application (selects `<application>.condition-router` and
    /// `<application>.configurators`); used with --method.
    #[arg(long, default_value = "dubbo-registry", requires = "method")]
    pub application: String,
    /// Config centre URL for the rules instead of the registry (with --method).
    #[arg(long = "config-center", requires = "method")]
    pub config_center: Option<String>,
}

impl RouteOpts {
    fn invocation(&self) -> anyhow::Result<Invocation> {
        let mut inv = Invocation::new(self.method.clone().unwrap_or_default());
        for kv in &self.attachments {
            let (k, v) = kv
                .split_once('=')
                .ok_or_else(|| anyhow!("--attachment {kv:?} is not K=V"))?;
            inv = inv.with_attachment(k, v);
        }
        Ok(inv)
    }
}

/// The consumer URL routing is computed for.
fn consumer(filter: &Filter, opts: &RouteOpts) -> anyhow::Result<Url> {
    if filter.service.contains("://") {
        return Url::parse(&filter.service)
            .with_context(|| format!("invalid consumer URL {:?}", filter.service));
    }
    let iface = &filter.service;
    let mut s = format!(
        "consumer://127.0.0.1/{iface}?interface={iface}&side=consumer&application={}&category=providers,configurators,routers&check=false",
        opts.application
    );
    for (k, v) in [("group", &filter.group), ("version", &filter.version)] {
        if let Some(v) = v.as_deref().filter(|v| !v.is_empty()) {
            s.push_str(&format!("&{k}={v}"));
        }
    }
    Url::parse(&s).with_context(|| format!("invalid consumer URL {s:?}"))
}

struct Routed {
    dir: Arc<RegistryDirectory>,
    _rules: Option<RuleWatcher>,
    registry: Arc<dyn registry_core::Registry>,
}

async fn open(filter: &Filter, opts: &RouteOpts) -> anyhow::Result<Routed> {
    let consumer = consumer(filter, opts)?;
    let registry = registry_factory::connect_read_only(&filter.registry, filter.timeout()).await?;
    let options = DirectoryOptions {
        register: false,
        ready_timeout: filter.timeout(),
        ..DirectoryOptions::default()
    };
    let dir = RegistryDirectory::subscribe(registry.clone(), consumer, Arc::new(ViewOnly), options)
        .await
        .map_err(|e| anyhow!("subscribe failed: {e}"))?;
    let cc = config_factory::for_registry(
        &filter.registry,
        opts.config_center.as_deref(),
        filter.timeout(),
    )
    .await?;
    let rules = match cc {
        Some(cc) => Some(RuleWatcher::start(cc, &dir, filter.timeout()).await),
        None => None,
    };
    Ok(Routed {
        dir,
        _rules: rules,
        registry,
    })
}

/// The surviving providers' URLs (sorted), or the error `list` gives (forbidden, ...).
fn survivors(dir: &RegistryDirectory, inv: &Invocation) -> Result<Vec<Url>, String> {
    match dir.list(inv) {
        Ok(set) => {
            let mut v: Vec<Url> = set.invokers().iter().map(|i| i.url().clone()).collect();
            v.sort_by_key(|u| u.to_string());
            Ok(v)
        }
        Err(e) => Err(e.to_string()),
    }
}

fn print(
    out: &mut impl Write,
    dir: &RegistryDirectory,
    inv: &Invocation,
    json: bool,
) -> anyhow::Result<()> {
    let total = dir.invoker_urls().len();
    match survivors(dir, inv) {
        Ok(urls) => {
            if json {
                let rows: Vec<_> = urls
                    .iter()
                    .map(|u| json!({"address": u.address(), "url": u.to_string()}))
                    .collect();
                writeln!(out, "{}", serde_json::to_string(&rows)?)?;
            } else {
                writeln!(
                    out,
                    "{} of {} provider(s) survive routing for {}:",
                    urls.len(),
                    total,
                    inv.method()
                )?;
                for u in &urls {
                    writeln!(
                        out,
                        "  {}  {}",
                        escape(&u.address().unwrap_or_default()),
                        escape(&u.to_string())
                    )?;
                }
            }
        }
        Err(e) => {
            if json {
                writeln!(out, "{}", json!({ "error": e }))?;
            } else {
                writeln!(
                    out,
                    "no provider for {}: {}",
                    escape(inv.method()),
                    escape(&e)
                )?;
            }
        }
    }
    out.flush()?;
    Ok(())
}

/// `list --method`: prints the survivors once.
pub fn list(filter: &Filter, opts: &RouteOpts, json: bool) -> anyhow::Result<ExitCode> {
    super::runtime()?.block_on(async {
        let inv = opts.invocation()?;
        let r = open(filter, opts).await?;
        print(&mut std::io::stdout(), &r.dir, &inv, json)?;
        r.dir.destroy();
        r.registry.destroy().await;
        Ok(ExitCode::SUCCESS)
    })
}

/// `watch --method`: prints the survivors, then again whenever they change, until Ctrl-C.
pub fn watch(filter: &Filter, opts: &RouteOpts, json: bool) -> anyhow::Result<ExitCode> {
    super::runtime()?.block_on(async {
        // One listener for the whole command: a Ctrl-C between two ticks is not lost.
        let mut interrupt = super::Interrupt::install().await;
        let inv = opts.invocation()?;
        let r = open(filter, opts).await?;
        let mut out = std::io::stdout();
        let mut last = None;
        let mut tick = tokio::time::interval(std::time::Duration::from_millis(200));
        loop {
            tokio::select! {
                biased;
                _ = interrupt.wait() => break,
                _ = tick.tick() => {}
            }
            let now = survivors(&r.dir, &inv);
            if last.as_ref() != Some(&now) {
                print(&mut out, &r.dir, &inv, json)?;
                last = Some(now);
            }
        }
        r.dir.destroy();
        r.registry.destroy().await;
        Ok(ExitCode::SUCCESS)
    })
}
