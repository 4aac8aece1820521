//! `dubbo-registry register <REGISTRY> <URL>`: keep a registration until Ctrl-C or a duration.

use std::process::ExitCode;
use std::time::Duration;

use registry_core::url::secret::redact;
use registry_core::Url;

use crate::registry_factory::{self, RegistrySource, REGISTRY_URL_HELP};

/// Arguments of `register`.
#[derive(Debug, clap::Args)]
#[command(after_help = REGISTRY_URL_HELP)]
pub struct Args {
    /// The registry URL, e.g. zookeeper://127.0.0.1:2181 (see below; may be left out), and
    /// the URL to register, e.g. dubbo://10.0.0.1:20880/com.foo.Bar?version=1.0.
    #[arg(value_names = ["REGISTRY", "URL"], num_args = 1..=2, required = true)]
    args: Vec<String>,
    #[command(flatten)]
    source: RegistrySource,
    /// Unregister and exit after this many seconds (default: until Ctrl-C).
    #[arg(long)]
    duration: Option<u64>,
    /// Seconds to wait for the registry before failing.
    #[arg(long, default_value_t = 10)]
    timeout: u64,
}

/// Registers, waits, unregisters.
pub fn run(a: Args) -> anyhow::Result<ExitCode> {
    let (registry, rest) = a.source.split(a.args, 1)?;
    let text = rest.into_iter().next().unwrap_or_default();
    let url =
        Url::parse(&text).map_err(|e| anyhow::anyhow!("invalid URL {:?}: {e}", redact(&text)))?;
    let rt = super::runtime()?;
    rt.block_on(async {
        let timeout = Duration::from_secs(a.timeout.max(1));
        let registry = registry_factory::connect(&registry, timeout).await?;
        tokio::time::timeout(timeout, registry.register(&url))
            .await
            .map_err(|_| anyhow::anyhow!("register timed out after {timeout:?}"))?
            .map_err(|e| anyhow::anyhow!("register failed: {e}"))?;
        eprintln!("registered {url}");
        match a.duration {
            Some(s) => {
                tokio::select! {
                    _ = tokio::time::sleep(Duration::from_secs(s)) => {}
                    _ = tokio::signal::ctrl_c() => {}
                }
            }
            None => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
        if let Err(e) = registry.unregister(&url).await {
            eprintln!("unregister failed: {e}");
        }
        registry.destroy().await;
        eprintln!("unregistered {url}");
        Ok(ExitCode::SUCCESS)
    })
}
