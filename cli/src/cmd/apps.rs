//! `dubbo-registry apps <REGISTRY> [APP]`: application-level discovery as an operator sees it.
//!
//! - without APP: the applications registered (instances, revisions, interfaces served);
//! - with APP: its instances (address, revision, metadata storage, MetadataService version,
//!   endpoints) and, per resolved revision, the services it exports (match key, port); revisions
//!   that could not be resolved, with the reason;
//! - `--interface I`: the applications the metadata report maps interface I to.
//!
//! `--json` prints one JSON document.

use std::process::ExitCode;
use std::time::Duration;

use app_discovery::{AppSnapshot, ServiceDiscoveryRegistry};
use registry_core::instance::{ENDPOINTS_KEY, METADATA_SERVICE_VERSION_KEY, STORAGE_TYPE_KEY};
use serde_json::{json, Value};

use crate::levels::{self, Level};
use crate::registry_factory::REGISTRY_URL_HELP;

/// Arguments of `apps`.
#[derive(Debug, clap::Args)]
#[command(after_help = REGISTRY_URL_HELP)]
pub struct Args {
    /// Registry URL, e.g. zookeeper://127.0.0.1:2181.
    registry: String,
    /// An application: show its instances, revisions and services.
    app: Option<String>,
    /// Show the applications the metadata report maps this interface to.
    #[arg(long)]
    interface: Option<String>,
    /// Print JSON.
    #[arg(long)]
    json: bool,
    /// Seconds to wait for the registry and the MetadataInfo of each revision.
    #[arg(long, default_value_t = 10)]
    timeout: u64,
}

/// Runs the command; exit 0.
pub fn run(a: Args) -> anyhow::Result<ExitCode> {
    let rt = super::runtime()?;
    rt.block_on(async {
        let timeout = Duration::from_secs(a.timeout.max(1));
        let levels = levels::connect(&a.registry, Level::Application, timeout, timeout).await?;
        let Some(reg) = levels.app else {
            anyhow::bail!("{}: no application level", a.registry);
        };
        let out = if let Some(iface) = &a.interface {
            mapping(&reg, iface, a.json).await?
        } else if let Some(app) = &a.app {
            let snap = reg.describe_app(app, timeout).await;
            describe(app, &snap, a.json)
        } else {
            list(&reg, timeout, a.json).await?
        };
        println!("{out}");
        registry_core::Registry::destroy(&reg).await;
        Ok(ExitCode::SUCCESS)
    })
}

async fn mapping(
    reg: &ServiceDiscoveryRegistry,
    iface: &str,
    json: bool,
) -> anyhow::Result<String> {
    let apps = match reg.report() {
        Some(r) => r.mapping(iface).await?,
        None => Default::default(),
    };
    Ok(if json {
        json!({"interface": iface, "applications": apps}).to_string()
    } else if apps.is_empty() {
        format!("{iface}: no application mapped")
    } else {
        format!(
            "{iface}: {}",
            apps.into_iter().collect::<Vec<_>>().join(", ")
        )
    })
}

async fn list(
    reg: &ServiceDiscoveryRegistry,
    timeout: Duration,
    json: bool,
) -> anyhow::Result<String> {
    let names = reg.discovery().applications().await?;
    let mut rows = Vec::new();
    for n in names {
        let s = reg.describe_app(&n, timeout).await;
        let mut ifaces: Vec<&str> = s
            .revisions
            .iter()
            .flat_map(|r| r.metadata.interfaces())
            .collect();
        ifaces.sort_unstable();
        ifaces.dedup();
        rows.push(json!({
            "application": n,
            "instances": s.instances + s.skipped,
            "revisions": s.revisions.iter().map(|r| r.revision.to_string()).chain(s.unresolved.iter().map(|u| u.revision.to_string())).collect::<Vec<_>>(),
            "unresolved": s.unresolved.len(),
            "interfaces": ifaces,
        }));
    }
    if json {
        return Ok(Value::Array(rows).to_string());
    }
    if rows.is_empty() {
        return Ok("(no applications)".into());
    }
    let mut out = format!(
        "{:<32} {:>9} {:>9} {:>10}\n",
        "APPLICATION", "INSTANCES", "REVISIONS", "INTERFACES"
    );
    for r in &rows {
        out.push_str(&format!(
            "{:<32} {:>9} {:>9} {:>10}\n",
            r["application"].as_str().unwrap_or(""),
            r["instances"],
            r["revisions"].as_array().map_or(0, Vec::len),
            r["interfaces"].as_array().map_or(0, Vec::len),
        ));
    }
    Ok(out.trim_end().to_owned())
}

fn describe(app: &str, s: &AppSnapshot, json: bool) -> String {
    let instances: Vec<Value> = s
        .revisions
        .iter()
        .flat_map(|r| {
            r.instances.iter().map(move |i| {
                let announced = i.revision().unwrap_or("").to_owned();
                json!({
                    "address": i.address(),
                    "revision": announced,
                    "serving_revision": r.revision.to_string(),
                    "storage_type": i.get(STORAGE_TYPE_KEY).unwrap_or("local"),
                    "metadata_service_version": i.get(METADATA_SERVICE_VERSION_KEY),
                    "endpoints": i.get(ENDPOINTS_KEY),
                })
            })
        })
        .collect();
    let revisions: Vec<Value> = s
        .revisions
        .iter()
        .map(|r| {
            json!({
                "revision": r.revision.to_string(),
                "instances": r.instances.len(),
                "services": r.services.iter().map(|su| json!({
                    "match_key": su.info.match_key(),
                    "interface": su.info.name,
                    "group": su.info.group,
                    "version": su.info.version,
                    "protocol": su.info.protocol,
                    "port": su.info.port,
                    "path": su.info.path,
                    "urls": su.urls.len(),
                })).collect::<Vec<_>>(),
            })
        })
        .collect();
    let unresolved: Vec<Value> = s
        .unresolved
        .iter()
        .map(|u| {
            json!({
                "revision": u.revision.to_string(),
                "instances": u.instances,
                "error": u.error.as_ref().map(ToString::to_string),
            })
        })
        .collect();
    let doc = json!({
        "application": app,
        "instances": instances,
        "revisions": revisions,
        "unresolved": unresolved,
        "skipped_instances": s.skipped,
    });
    if json {
        return doc.to_string();
    }
    let mut out = format!(
        "application {app}: {} instance(s)\n",
        s.instances + s.skipped
    );
    for i in &instances {
        out.push_str(&format!(
            "  {}  revision {}  storage {}  meta-v {}\n",
            i["address"].as_str().unwrap_or(""),
            i["revision"].as_str().unwrap_or(""),
            i["storage_type"].as_str().unwrap_or(""),
            i["metadata_service_version"].as_str().unwrap_or("-"),
        ));
    }
    for r in &revisions {
        out.push_str(&format!(
            "revision {} ({} instance(s)):\n",
            r["revision"].as_str().unwrap_or(""),
            r["instances"]
        ));
        for svc in r["services"].as_array().into_iter().flatten() {
            out.push_str(&format!(
                "  {}  port {}\n",
                svc["match_key"].as_str().unwrap_or(""),
                svc["port"]
            ));
        }
    }
    for u in &unresolved {
        out.push_str(&format!(
            "revision {} unresolved: {}\n",
            u["revision"].as_str().unwrap_or(""),
            u["error"].as_str().unwrap_or("being fetched")
        ));
    }
    out.trim_end().to_owned()
}
