//! `dubbo-registry list <REGISTRY> <SERVICE>`: the current URLs of a service, per category,
//! from the interface level and the application level (`--level`), each row saying where it
//! came from (`interface`, or the application and revision).

use std::process::ExitCode;
use std::time::Duration;

use registry_core::Url;
use serde_json::json;

use crate::levels::{self, Level, Source};
use crate::registry_factory::{self, RegistrySource, REGISTRY_URL_HELP};
use crate::safe_text::escape;

/// Filter options shared by `list` and `watch`.
#[derive(Debug, Clone, clap::Args)]
pub struct Filter {
    /// The registry URL, e.g. zookeeper://127.0.0.1:2181 (see below; may be left out), and
    /// the interface name or full consumer:// URL.
    #[arg(value_names = ["REGISTRY", "SERVICE"], num_args = 1..=2, required = true)]
    args: Vec<String>,
    #[command(flatten)]
    source: RegistrySource,
    /// Registry URL (set by [`Filter::resolve`]).
    #[arg(skip)]
    pub registry: String,
    /// Interface name or full consumer:// URL (set by [`Filter::resolve`]).
    #[arg(skip)]
    pub service: String,
    /// Group(s) to match: a name, a comma list or * (default * for an interface name).
    #[arg(long)]
    pub group: Option<String>,
    /// Version to match, or * (default * for an interface name).
    #[arg(long)]
    pub version: Option<String>,
    /// Categories, comma-separated (default providers,configurators,routers; * = all).
    #[arg(long)]
    pub category: Option<String>,
    /// Seconds to wait for the registry before failing.
    #[arg(long, default_value_t = 10)]
    pub timeout: u64,
    /// Which registrations to read: interface, application or all (default; a
    /// registry-type=service registry has only the application level).
    #[arg(long, value_enum, default_value_t = Level::All)]
    pub level: Level,
}

impl Filter {
    /// Sets `registry` and `service` from the arguments (the registry from
    /// [`RegistrySource`] when left out).
    pub fn resolve(&mut self) -> anyhow::Result<()> {
        let (registry, rest) = self.source.split(self.args.clone(), 1)?;
        self.registry = registry;
        self.service = rest.into_iter().next().unwrap_or_default();
        Ok(())
    }

    /// The consumer URL to subscribe with.
    pub fn consumer(&self) -> anyhow::Result<Url> {
        registry_factory::consumer_url(
            &self.service,
            self.group.as_deref(),
            self.version.as_deref(),
            self.category.as_deref(),
        )
    }

    /// The `--timeout` as a duration.
    pub fn timeout(&self) -> Duration {
        Duration::from_secs(self.timeout.max(1))
    }
}

/// Arguments of `list`.
#[derive(Debug, clap::Args)]
#[command(after_help = REGISTRY_URL_HELP)]
pub struct Args {
    #[command(flatten)]
    filter: Filter,
    /// Print a JSON array of {url, category, address, interface, group, version, level,
    /// application, revision} sorted by url.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    route: super::route_view::RouteOpts,
}

/// One listed URL.
#[derive(Debug)]
struct Row {
    category: String,
    url: Url,
    text: String,
    source: Source,
}

/// Lists the current URLs; exit 0 (also when there are none).
pub fn run(mut a: Args) -> anyhow::Result<ExitCode> {
    a.filter.resolve()?;
    if a.route.method.is_some() {
        return super::route_view::list(&a.filter, &a.route, a.json);
    }
    let rt = super::runtime()?;
    rt.block_on(async {
        let consumer = a.filter.consumer()?;
        let levels = levels::connect_read_only(
            &a.filter.registry,
            a.filter.level,
            a.filter.timeout(),
            a.filter.timeout(),
        )
        .await?;
        let mut rows = Vec::new();
        if let Some(registry) = &levels.interface {
            let sub = tokio::time::timeout(a.filter.timeout(), registry.subscribe(&consumer))
                .await
                .map_err(|_| anyhow::anyhow!("subscribe timed out after {:?}", a.filter.timeout()))?
                .map_err(|e| anyhow::anyhow!("subscribe failed: {e}"))?;
            let mut sub = sub;
            // The initial notifications are queued before `subscribe` returns.
            while let Some(n) = sub.try_next() {
                rows.retain(|r: &Row| r.category != *n.category);
                for u in n.urls.iter().filter(|u| u.protocol() != Some("empty")) {
                    rows.push(Row {
                        category: n.category.to_string(),
                        url: u.clone(),
                        text: u.to_string(),
                        source: Source::Interface,
                    });
                }
            }
        }
        if let Some(app) = &levels.app {
            rows.extend(app_rows(app, &consumer, a.filter.timeout()).await?);
        }
        levels.destroy().await;
        rows.sort_by(|x, y| {
            x.text
                .cmp(&y.text)
                .then_with(|| x.category.cmp(&y.category))
        });
        if a.json {
            let out: Vec<_> = rows
                .iter()
                .map(|r| {
                    let mut o = json!({
                        "url": r.text,
                        "category": r.category,
                        "address": r.url.address(),
                        "interface": r.url.service_interface(),
                        "group": r.url.group(),
                        "version": r.url.version(),
                    });
                    if let Some(m) = o.as_object_mut() {
                        r.source.json_fields(m);
                    }
                    o
                })
                .collect();
            println!("{}", serde_json::to_string_pretty(&out)?);
        } else {
            print_table(&rows);
        }
        Ok(ExitCode::SUCCESS)
    })
}

/// The application-level providers of `consumer` (the category filter applies: only
/// `providers` exist at this level).
async fn app_rows(
    app: &app_discovery::ServiceDiscoveryRegistry,
    consumer: &Url,
    timeout: std::time::Duration,
) -> anyhow::Result<Vec<Row>> {
    use registry_core::Registry;
    let cats = consumer.param_or("category", "providers");
    if !registry_core::matching::is_match_category("providers", cats) {
        return Ok(Vec::new());
    }
    let iface = consumer.service_interface().unwrap_or("");
    if iface.is_empty() || iface == "*" {
        return Ok(Vec::new());
    }
    let consumer = consumer.with_param("category", "providers");
    let mut sub = tokio::time::timeout(timeout, app.subscribe(&consumer))
        .await
        .map_err(|_| anyhow::anyhow!("application-level subscribe timed out after {timeout:?}"))?
        .map_err(|e| anyhow::anyhow!("application-level subscribe failed: {e}"))?;
    let mut latest: Vec<Url> = Vec::new();
    while let Some(n) = sub.try_next() {
        latest = n
            .urls
            .iter()
            .filter(|u| u.protocol() != Some("empty"))
            .cloned()
            .collect();
    }
    Ok(latest
        .into_iter()
        .map(|u| Row {
            category: "providers".into(),
            text: u.to_string(),
            source: Source::of(app, &u),
            url: u,
        })
        .collect())
}

fn print_table(rows: &[Row]) {
    if rows.is_empty() {
        println!("(no URLs)");
        return;
    }
    let cells: Vec<[String; 6]> = rows
        .iter()
        .map(|r| {
            [
                escape(&r.category).into_owned(),
                r.source.short(),
                escape(&r.url.address().unwrap_or_default()).into_owned(),
                escape(r.url.group().unwrap_or("-")).into_owned(),
                escape(r.url.version().unwrap_or("-")).into_owned(),
                escape(&r.text).into_owned(),
            ]
        })
        .collect();
    let head = ["CATEGORY", "SOURCE", "ADDRESS", "GROUP", "VERSION", "URL"];
    let mut w = head.map(str::len);
    for c in &cells {
        for i in 0..5 {
            w[i] = w[i].max(c[i].len());
        }
    }
    let line = |c: [&str; 6]| {
        println!(
            "{:<w0$}  {:<w1$}  {:<w2$}  {:<w3$}  {:<w4$}  {}",
            c[0],
            c[1],
            c[2],
            c[3],
            c[4],
            c[5],
            w0 = w[0],
            w1 = w[1],
            w2 = w[2],
            w3 = w[3],
            w4 = w[4]
        );
    };
    line(head);
    for c in &cells {
        line([&c[0], &c[1], &c[2], &c[3], &c[4], &c[5]]);
    }
}
