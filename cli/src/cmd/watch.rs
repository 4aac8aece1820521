//! `dubbo-registry watch <REGISTRY> <SERVICE>`: follow changes until Ctrl-C.
//!
//! `--json` prints NDJSON, one `{"category":..,"urls":[..]}` line per notification. The human
//! form prints, per notification, the time, the category and `+`/`-` lines for what changed.
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

use super::list::Filter;
use crate::registry_factory::{self, REGISTRY_URL_HELP};
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
    let registry =
        registry_factory::connect_read_only(&a.filter.registry, a.filter.timeout()).await?;
    if a.status {
        let code = status::run(registry.clone(), consumer, a.json, interrupt.wait()).await;
        registry.destroy().await;
        return code;
    }
    let mut sub = tokio::time::timeout(a.filter.timeout(), registry.subscribe(&consumer))
        .await
        .map_err(|_| anyhow::anyhow!("subscribe timed out after {:?}", a.filter.timeout()))?
        .map_err(|e| anyhow::anyhow!("subscribe failed: {e}"))?;
    let mut view = View::new(a.json);
    let code = loop {
        let n = tokio::select! {
            biased;
            _ = interrupt.wait() => break ExitCode::SUCCESS,
            n = sub.next() => n,
        };
        let Some(n) = n else {
            eprintln!("registry ended the subscription");
            break ExitCode::FAILURE;
        };
        let mut out = std::io::stdout().lock();
        if a.json {
            view.write_json(&n, &mut out)?;
        } else {
            print_diff(&mut out, &n.category, &view.diff(&n))?;
        }
        out.flush()?;
    };
    drop(sub);
    registry.destroy().await;
    Ok(code)
}

/// The human form of one notification: the time, the category, the count, then `-` and `+`
/// lines (each group sorted), written in pieces of [`view::CHUNK`] bytes (a first list of 10k
/// providers is never built as one string).
fn print_diff(out: &mut impl Write, category: &str, d: &Diff) -> std::io::Result<()> {
    let mut w = std::io::BufWriter::with_capacity(view::CHUNK, out);
    writeln!(
        w,
        "{} {category} ({} url{})",
        clock(),
        d.count,
        if d.count == 1 { "" } else { "s" }
    )?;
    for (sign, texts) in [("  - ", &d.removed), ("  + ", &d.added)] {
        for t in texts {
            w.write_all(sign.as_bytes())?;
            w.write_all(t.as_bytes())?;
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
