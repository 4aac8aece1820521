//! `dubbo-conformance <FILE>... [--json]`: runs conformance vector files (the format of
//! `dubbo-vectors-public.json`) through the library and prints the report; exit code 1 when
//! any vector failed, 2 when a file cannot be run.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;

/// Runs Dubbo conformance vectors through the library.
#[derive(Debug, Parser)]
#[command(name = "dubbo-conformance", version, about)]
struct Args {
    /// Vector file(s) in the format of dubbo-vectors-public.json.
    #[arg(required = true)]
    files: Vec<PathBuf>,
    /// Print one JSON document per file with every result instead of the table.
    #[arg(long)]
    json: bool,
}

fn main() -> ExitCode {
    let a = Args::parse();
    let mut failed = 0;
    for f in &a.files {
        match conformance::run_file(f) {
            Ok(report) => {
                failed += report.failed;
                if a.json {
                    match serde_json::to_string_pretty(&report.to_json()) {
                        Ok(text) => println!("{text}"),
                        Err(e) => {
                            eprintln!("error: {e}");
                            return ExitCode::from(2);
                        }
                    }
                } else {
                    print!("{}", report.to_text());
                }
            }
            Err(e) => {
                eprintln!("error: {e}");
                return ExitCode::from(2);
            }
        }
    }
    if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
