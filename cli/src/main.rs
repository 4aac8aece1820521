//! `dubbo-registry`: inspect Dubbo registries (ZooKeeper, Nacos, memory), watch changes,
//! register URLs, read and write rules, call providers and run the demo.

mod cmd;
mod config_factory;
mod levels;
mod observe;
mod registry_factory;
mod safe_text;

use clap::{Parser, Subcommand};

/// Dubbo-compatible registry tool.
#[derive(Debug, Parser)]
#[command(name = "dubbo-registry", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run the whole story on the embedded memory:// registry (or --registry URL), narrated.
    Demo(cmd::demo::Args),
    /// List the current URLs of a service (providers, configurators, routers).
    List(cmd::list::Args),
    /// Watch a service: print every change until Ctrl-C.
    Watch(cmd::watch::Args),
    /// Register a URL until Ctrl-C or --duration.
    Register(cmd::register::Args),
    /// Read, watch and write rules in the config centre (the registry by default).
    Config(cmd::config::Args),
    /// Call a provider: through a registry (cluster, failover) or at a dubbo:// URL.
    Invoke(Box<cmd::invoke::Args>),
    /// Application-level discovery: the applications, one application's instances and services,
    /// or the applications an interface maps to.
    Apps(cmd::apps::Args),
}

fn main() -> std::process::ExitCode {
    let cli = Cli::parse();
    // The demo narrates what happens; the library's own warnings (failover retries, mock
    // answers) would repeat it, so it shows errors only unless RUST_LOG says otherwise.
    init_logging(match cli.command {
        Command::Demo(_) => "error",
        Command::Invoke(_) => "error",
        _ => "warn",
    });
    let result = match cli.command {
        Command::Demo(a) => cmd::demo::run(a),
        Command::List(a) => cmd::list::run(a),
        Command::Watch(a) => cmd::watch::run(a),
        Command::Register(a) => cmd::register::run(a),
        Command::Config(a) => cmd::config::run(a),
        Command::Invoke(a) => cmd::invoke::run(*a),
        Command::Apps(a) => cmd::apps::run(a),
    };
    match result {
        Ok(code) => code,
        // The reader of stdout went away (`watch ... | head -1`): nothing is wrong
        // and nobody is left to tell, so end quietly as `head`'s writers do.
        Err(e) if is_broken_pipe(&e) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            // Errors can quote a registry's or a provider's text.
            eprintln!("error: {}", safe_text::escape(&format!("{e:#}")));
            std::process::ExitCode::from(2)
        }
    }
}

/// Whether `e` (or anything it wraps) is a write to a closed pipe.
fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}

/// `RUST_LOG` selects the library's `tracing` output (default: `default`), written to stderr
/// so that `--json` output on stdout stays clean.
fn init_logging(default: &str) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .try_init();
}

#[cfg(test)]
mod tests {
    /// clap's own consistency checks over every subcommand (unique argument ids, valid
    /// `conflicts_with` targets), which otherwise fire only when a command is run.
    #[test]
    fn the_command_line_is_consistent() {
        use clap::CommandFactory;
        super::Cli::command().debug_assert();
    }
}
