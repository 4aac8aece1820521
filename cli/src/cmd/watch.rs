//! `dubbo-registry watch <REGISTRY> <SERVICE>`: follow changes until Ctrl-C.
//!
//! `--json` prints NDJSON, one `{"category":..,"urls":[..]}` line per notification. The human
//! form prints, per notification, the time, the category and `+`/`-` lines for what changed.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::process::ExitCode;

use serde_json::json;

use super::list::Filter;
use crate::registry_factory::{self, REGISTRY_URL_HELP};

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
}

/// Watches until Ctrl-C (exit 0) or until the registry ends the stream (exit 1).
pub fn run(a: Args) -> anyhow::Result<ExitCode> {
    if a.route.method.is_some() {
        return super::route_view::watch(&a.filter, &a.route, a.json);
    }
    let rt = super::runtime()?;
    rt.block_on(async {
        let consumer = a.filter.consumer()?;
        let registry = registry_factory::connect(&a.filter.registry, a.filter.timeout()).await?;
        let mut sub = tokio::time::timeout(a.filter.timeout(), registry.subscribe(&consumer))
            .await
            .map_err(|_| anyhow::anyhow!("subscribe timed out after {:?}", a.filter.timeout()))?
            .map_err(|e| anyhow::anyhow!("subscribe failed: {e}"))?;
        let mut last: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        let mut out = std::io::stdout();
        let code = loop {
            let n = tokio::select! {
                _ = tokio::signal::ctrl_c() => break ExitCode::SUCCESS,
                n = sub.next() => n,
            };
            let Some(n) = n else {
                eprintln!("registry ended the subscription");
                break ExitCode::FAILURE;
            };
            let urls: Vec<String> = n.urls.iter().map(ToString::to_string).collect();
            if a.json {
                writeln!(out, "{}", json!({"category": &*n.category, "urls": urls}))?;
            } else {
                let now: BTreeSet<String> = if n.is_empty_marker() {
                    BTreeSet::new()
                } else {
                    urls.into_iter().collect()
                };
                let before = last.entry(n.category.to_string()).or_default();
                writeln!(
                    out,
                    "{} {} ({} url{})",
                    clock(),
                    n.category,
                    now.len(),
                    if now.len() == 1 { "" } else { "s" }
                )?;
                for u in before.difference(&now) {
                    writeln!(out, "  - {u}")?;
                }
                for u in now.difference(before) {
                    writeln!(out, "  + {u}")?;
                }
                *before = now;
            }
            out.flush()?;
        };
        drop(sub);
        registry.destroy().await;
        Ok(code)
    })
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
