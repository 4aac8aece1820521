//! `dubbo-registry watch <REGISTRY> <SERVICE>`: follow changes until Ctrl-C.
//!
//! `--json` prints NDJSON, one `{"category":..,"urls":[..]}` line per notification; lines of
//! the application level (followed beside the interface level by default, see `--level`) also
//! say `"level":"application"`. The human form prints, per notification, the time, the
//! category (`providers [application]` for the application level) and `+`/`-` lines for what
//! changed; an added application-level provider names its application and revision.
//!
//! `--status` prints the health of the registry connection and of the service instead
//! ([`status`]); `--metrics-addr` serves Dubbo's registry metrics for Prometheus (with
//! `--status` also the directory gauges `dubbo_registry_directory_num_*`).
//!
//! Each provider is rendered once and its printable form kept ([`view`]), so a change among
//! 10k providers renders one URL.

mod status;
mod view;

use std::io::Write;
use std::process::ExitCode;
use std::sync::Arc;

use super::list::Filter;
use crate::levels::{self, Source};
use crate::registry_factory::REGISTRY_URL_HELP;
use registry_core::{Registry, Subscription, Url};
use view::{Diff, View};

/// Arguments of `watch`.
#[derive(Debug, clap::Args)]
#[command(after_help = REGISTRY_URL_HELP)]
pub struct Args {
    #[command(flatten)]
    filter: Filter,
    /// Print NDJSON: one {"category":..,"urls":[..]} line per notification.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    route: super::route_view::RouteOpts,
    /// Print the health of the registry connection and of the service (providers known,
    /// available, disabled, last notify, last error), one line per change, instead of the
    /// provider diff.
    #[arg(long, conflicts_with = "method")]
    status: bool,
    /// Dubbo's metrics for Prometheus (`--metrics-addr`).
    #[command(flatten)]
    metrics: crate::observe::MetricsArgs,
}

/// Watches until Ctrl-C (exit 0) or until the registry ends the stream (exit 1).
pub fn run(mut a: Args) -> anyhow::Result<ExitCode> {
    a.filter.resolve()?;
    if a.route.method.is_some() {
        return super::route_view::watch(&a.filter, &a.route, a.json);
    }
    let rt = super::runtime()?;
    // The loop runs as a task on a worker, not in `block_on` on this thread: a notification
    // published by a registry task then wakes it on the same worker (no thread hand-off).
    let task = rt.spawn(watch(a));
    rt.block_on(task)?
}

async fn watch(a: Args) -> anyhow::Result<ExitCode> {
    let mut interrupt = super::Interrupt::install().await;
    let consumer = a.filter.consumer()?;
    a.metrics.install("dubbo-registry-watch")?;
    let levels = levels::connect_read_only(
        &a.filter.registry,
        a.filter.level,
        a.filter.timeout(),
        a.filter.timeout(),
    )
    .await?;
    if a.status {
        let Some(registry) = levels.interface.clone() else {
            levels.destroy().await;
            anyhow::bail!("--status follows the interface level; use --level interface or all");
        };
        let code = status::run(registry, consumer, a.json, interrupt.wait()).await;
        levels.destroy().await;
        return code;
    }
    let timeout = a.filter.timeout();
    let subscribe = |r: Arc<dyn Registry>, c: Url| async move {
        tokio::time::timeout(timeout, r.subscribe(&c))
            .await
            .map_err(|_| anyhow::anyhow!("subscribe timed out after {timeout:?}"))?
            .map_err(|e| anyhow::anyhow!("subscribe failed: {e}"))
    };
    let mut iface: Option<(Subscription, View)> = match &levels.interface {
        Some(r) => Some((
            subscribe(r.clone(), consumer.clone()).await?,
            View::new(a.json),
        )),
        None => None,
    };
    let app_consumer = consumer.with_param("category", "providers");
    let app_wanted = registry_core::matching::is_match_category(
        "providers",
        consumer.param_or("category", "providers"),
    ) && consumer
        .service_interface()
        .is_some_and(|i| !i.is_empty() && i != "*");
    let mut app: Option<(Subscription, View)> = match &levels.app {
        Some(r) if app_wanted => Some((
            subscribe(Arc::new(r.clone()), app_consumer).await?,
            View::with_level(a.json, "application"),
        )),
        _ => None,
    };
    let code = loop {
        let (n, is_app) = tokio::select! {
            biased;
            _ = interrupt.wait() => break ExitCode::SUCCESS,
            n = next(&mut iface) => (n, false),
            n = next(&mut app) => (n, true),
        };
        let Some(n) = n else {
            eprintln!("registry ended the subscription");
            break ExitCode::FAILURE;
        };
        let Some((_, view)) = (if is_app { app.as_mut() } else { iface.as_mut() }) else {
            continue;
        };
        let mut out = std::io::stdout().lock();
        if a.json {
            view.write_json(&n, &mut out)?;
        } else {
            let label = if is_app {
                format!("{} [application]", n.category)
            } else {
                n.category.to_string()
            };
            let d = view.diff(&n);
            let sources = match (&levels.app, is_app) {
                (Some(r), true) => d
                    .added
                    .iter()
                    .map(|t| {
                        Url::parse(t)
                            .map(|u| Source::of(r, &u).short())
                            .unwrap_or_default()
                    })
                    .collect(),
                _ => Vec::new(),
            };
            print_diff(&mut out, &label, &d, &sources)?;
        }
        out.flush()?;
    };
    drop(iface);
    drop(app);
    levels.destroy().await;
    Ok(code)
}

/// The next notification of `s`; pending forever without a subscription.
async fn next(s: &mut Option<(Subscription, View)>) -> Option<registry_core::Notification> {
    match s {
        Some((sub, _)) => sub.next().await,
        None => std::future::pending().await,
    }
}

/// The human form of one notification: the time, the category, the count, then `-` and `+`
/// lines (each group sorted), written in pieces of [`view::CHUNK`] bytes (a first list of 10k
/// providers is never built as one string).
fn print_diff(
    out: &mut impl Write,
    category: &str,
    d: &Diff,
    added_sources: &[String],
) -> std::io::Result<()> {
    let mut w = std::io::BufWriter::with_capacity(view::CHUNK, out);
    writeln!(
        w,
        "{} {category} ({} url{})",
        clock(),
        d.count,
        if d.count == 1 { "" } else { "s" }
    )?;
    for (sign, texts) in [("  - ", &d.removed), ("  + ", &d.added)] {
        for (i, t) in texts.iter().enumerate() {
            w.write_all(sign.as_bytes())?;
            w.write_all(t.as_bytes())?;
            if sign == "  + " {
                if let Some(s) = added_sources.get(i).filter(|s| !s.is_empty()) {
                    w.write_all(b"  (")?;
                    w.write_all(s.as_bytes())?;
                    w.write_all(b")")?;
                }
            }
            w.write_all(b"\n")?;
        }
    }
    w.flush()
}

/// `HH:MM:SS.mmm` UTC.
fn clock() -> String {
    let d = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    let s = d.as_secs() % 86_400;
    format!(
        "{:02}:{:02}:{:02}.{:03}",
        s / 3600,
        (s / 60) % 60,
        s % 60,
        d.subsec_millis()
    )
}
