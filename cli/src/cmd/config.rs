//! `dubbo-registry config get|watch|put|delete <REGISTRY> <KEY> [--group dubbo]`: read and write
//! governance rules (condition/tag routers, override rules) in the config centre, which is the
//! registry address by default (as in Dubbo), or `--config-center URL`.
//!
//! Exit codes: 0 ok, 1 `get` of a missing key, 2 errors.

use std::io::Read;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{anyhow, Context};
use clap::{Args as ClapArgs, Subcommand};
use registry_core::config_center::DEFAULT_CONFIG_GROUP;

use crate::config_factory;
use crate::registry_factory::RegistrySource;
use crate::safe_text::escape_keep_lines;
use registry_core::url::secret::redact;

/// Arguments of `config`.
#[derive(Debug, ClapArgs)]
#[command(
    about = "Read, watch and write rules in the config centre (the registry by default)",
    after_help = "KEYS (group dubbo):\n  <interface>:<version>:<group>.condition-router   service condition rule (blank segments kept: com.foo.Svc::)\n  <application>.condition-router                   application condition rule\n  <provider application>.tag-router                tag rule\n  <interface>:<version>:<group>.configurators      service override rule\n  <application>.configurators                      application override rule\n\nZooKeeper layout: /<registry group, default dubbo>/config/<group>/<key>."
)]
pub struct Args {
    #[command(subcommand)]
    op: Op,
}

#[derive(Debug, ClapArgs)]
struct Target {
    /// The registry URL (zookeeper://, nacos://, memory://), whose config centre is used (may
    /// be left out: --registry-file or $DUBBO_REGISTRY), and the rule key, e.g.
    /// `com.foo.Svc::.condition-router`.
    #[arg(value_names = ["REGISTRY", "KEY"], num_args = 1..=2, required = true)]
    args: Vec<String>,
    #[command(flatten)]
    source: RegistrySource,
    #[arg(skip)]
    registry: String,
    #[arg(skip)]
    key: String,
    /// Config group.
    #[arg(long, default_value = DEFAULT_CONFIG_GROUP)]
    group: String,
    /// Config centre URL instead of the registry (Dubbo's `dubbo.config-center.address`).
    #[arg(long = "config-center")]
    config_center: Option<String>,
    /// Connect timeout in milliseconds.
    #[arg(long, default_value_t = 10_000)]
    timeout: u64,
}

#[derive(Debug, Subcommand)]
enum Op {
    /// Prints the value (exit 1 when the key does not exist).
    Get(Target),
    /// Prints the current value, then every change (`<deleted>` when removed), until Ctrl-C.
    Watch(Target),
    /// Writes the value from --value, --file or stdin.
    Put {
        #[command(flatten)]
        target: Target,
        /// The value.
        #[arg(long, conflicts_with = "value_file")]
        value: Option<String>,
        /// Read the value from this file (`-` = stdin, the default).
        // Its own argument id: `file` is the registry source's (`--registry-file`).
        #[arg(long = "file", value_name = "FILE")]
        value_file: Option<String>,
    },
    /// Deletes the key (a missing key is fine).
    Delete(Target),
}

/// Runs `config`.
pub fn run(a: Args) -> anyhow::Result<ExitCode> {
    super::runtime()?.block_on(run_async(a))
}

impl Target {
    /// Sets `registry` and `key` from the arguments.
    fn resolve(&mut self) -> anyhow::Result<()> {
        let (registry, rest) = self.source.split(self.args.clone(), 1)?;
        self.registry = registry;
        self.key = rest.into_iter().next().unwrap_or_default();
        Ok(())
    }
}

async fn center(t: &Target) -> anyhow::Result<registry_core::SharedConfigCenter> {
    config_factory::for_registry(
        &t.registry,
        t.config_center.as_deref(),
        Duration::from_millis(t.timeout),
    )
    .await?
    .ok_or_else(|| {
        anyhow!(
            "{} has use-as-config-center=false; pass --config-center URL",
            redact(&t.registry)
        )
    })
}

async fn run_async(a: Args) -> anyhow::Result<ExitCode> {
    match a.op {
        Op::Get(mut t) => {
            t.resolve()?;
            let cc = center(&t).await?;
            match cc.get(&t.key, &t.group).await? {
                Some(v) => {
                    print!("{}", escape_keep_lines(&v));
                    if !v.ends_with('\n') {
                        println!();
                    }
                    Ok(ExitCode::SUCCESS)
                }
                None => {
                    eprintln!("{} (group {}) does not exist", t.key, t.group);
                    Ok(ExitCode::from(1))
                }
            }
        }
        Op::Watch(mut t) => {
            t.resolve()?;
            let cc = center(&t).await?;
            // One listener for the whole loop: a Ctrl-C between two values is not lost.
            let mut interrupt = super::Interrupt::install().await;
            let mut w = cc.watch(&t.key, &t.group).await?;
            loop {
                let next = tokio::select! {
                    biased;
                    _ = interrupt.wait() => return Ok(ExitCode::SUCCESS),
                    v = w.next() => v,
                };
                match next {
                    None => return Err(anyhow!("the config centre closed the watch")),
                    Some(None) => println!("--- {} <deleted>", t.key),
                    Some(Some(v)) => {
                        println!("--- {}", t.key);
                        print!("{}", escape_keep_lines(&v));
                        if !v.ends_with('\n') {
                            println!();
                        }
                    }
                }
            }
        }
        Op::Put {
            mut target,
            value,
            value_file,
        } => {
            target.resolve()?;
            let text = match (value, value_file.as_deref()) {
                (Some(v), _) => v,
                (None, Some(f)) if f != "-" => {
                    std::fs::read_to_string(f).with_context(|| format!("cannot read {f}"))?
                }
                _ => {
                    let mut s = String::new();
                    std::io::stdin()
                        .read_to_string(&mut s)
                        .context("cannot read the value from stdin")?;
                    s
                }
            };
            let cc = center(&target).await?;
            cc.publish(&target.key, &target.group, &text).await?;
            eprintln!("wrote {} (group {})", target.key, target.group);
            Ok(ExitCode::SUCCESS)
        }
        Op::Delete(mut t) => {
            t.resolve()?;
            let cc = center(&t).await?;
            cc.remove(&t.key, &t.group).await?;
            eprintln!("deleted {} (group {})", t.key, t.group);
            Ok(ExitCode::SUCCESS)
        }
    }
}
