//! `dubbo-registry`: inspect Dubbo registries (ZooKeeper, Nacos, memory), watch changes,
//! register URLs, run the demo, the conformance vectors and the benchmarks.

mod cmd;
mod conformance;

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
    /// Run conformance vectors (the format of dubbo-vectors-public.json) through the library.
    Conformance(cmd::conformance::Args),
}

fn main() -> std::process::ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Conformance(a) => cmd::conformance::run(a),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e:#}");
            std::process::ExitCode::from(2)
        }
    }
}
