//! `dubbo-registry conformance <FILE> [--json]`.

use std::path::PathBuf;
use std::process::ExitCode;

/// Arguments of `conformance`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Vector file(s) in the format of dubbo-vectors-public.json.
    #[arg(required = true)]
    files: Vec<PathBuf>,
    /// Print one JSON document with every result instead of the table.
    #[arg(long)]
    json: bool,
}

/// Runs the vectors; exit code 1 when any failed.
pub fn run(a: Args) -> anyhow::Result<ExitCode> {
    let mut failed = 0;
    for f in &a.files {
        failed += crate::conformance::run_file(f, a.json)?;
    }
    Ok(if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}
