//! `dubbo-bench [--quick] [--json]`: select cost of every load balancer at 255 and 10,000
//! invokers (time and allocations per select), notify apply at 1k/10k/100k providers (one
//! change vs. rebuild), memory per provider URL at 100k, and the Dubbo2 and Triple call paths
//! (offline codec costs; calls against a peer when given).
//!
//! Times are the fastest of 16 chunks (robust against other processes on the machine).
//! Allocations are counted by a counting global allocator (`stats_alloc`) installed for this
//! tooling binary only, never in the product. Build with `--release` for meaningful numbers:
//! `cargo run --release -p bench --bin dubbo-bench -- --json`.

mod app;
mod dubbo;
mod measure;
mod triple;

use std::alloc::System;
use std::hint::black_box;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use invoker::invoker_set::InvokerSet;
use invoker::loadbalance;
use invoker::rpc::{Invocation, InvokerFactory, SharedInvoker};
use invoker::testutil::providers::{self as bench_support, NoopFactory};
use registry_core::Url;
use serde_json::{json, Value};
use stats_alloc::{Region, StatsAlloc, INSTRUMENTED_SYSTEM};

#[global_allocator]
static GLOBAL: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

/// Measures load-balancer selects, notify apply, memory per provider and the call paths.
#[derive(Debug, clap::Parser)]
#[command(name = "dubbo-bench", version, about)]
struct Args {
    /// Shorter measurements (finishes in well under a minute).
    #[arg(long)]
    quick: bool,
    /// Print one JSON document instead of tables.
    #[arg(long)]
    json: bool,
    /// A Dubbo2 provider of `org.apache.dubbo.demo.DemoService:1.0.0` (e.g. the Java peer,
    /// `scripts/peers/java-dubbo.sh run`) for the Dubbo2 call-loop rows against a real
    /// provider; without it the Dubbo2 loops run against the in-process echo provider only.
    #[arg(long, value_name = "HOST:PORT")]
    dubbo_peer: Option<String>,
    /// A gRPC server serving `tritest.Greeter/SayHello` (protocol-triple's grpcio peer) for
    /// the Triple call-loop rows; without it only the offline Triple rows run.
    #[arg(long, value_name = "HOST:PORT")]
    triple_peer: Option<String>,
}

/// Invoker counts of the select measurements.
const SELECT_SIZES: [usize; 2] = [255, 10_000];
/// Provider counts of the apply measurements.
const APPLY_SIZES: [usize; 3] = [1_000, 10_000, 100_000];
/// Provider count of the memory measurement.
const MEMORY_PROVIDERS: usize = 100_000;
const BASE_TS: u64 = 1_700_000_000_000;

/// One select measurement.
#[derive(Debug)]
struct SelectRow {
    lb: &'static str,
    invokers: usize,
    ns_per_op: f64,
    allocs_per_op: f64,
}

fn invokers(n: usize) -> anyhow::Result<Vec<SharedInvoker>> {
    let f = NoopFactory;
    (0..n)
        .map(|i| {
            f.refer(&bench_support::provider(i, BASE_TS + i as u64))
                .map_err(anyhow::Error::from)
        })
        .collect()
}

/// Invocations with distinct first arguments (consistent hash spreads over the ring).
fn calls() -> Vec<Invocation> {
    (0..1024)
        .map(|k| {
            Invocation::new("sayHello").with_arguments(
                vec!["java.lang.String".into()],
                vec![Value::String(format!("user-{k}"))],
            )
        })
        .collect()
}

fn measure_select(
    name: &'static str,
    set: &InvokerSet,
    calls: &[Invocation],
    budget: Duration,
) -> SelectRow {
    let lb = loadbalance::by_name(name);
    // `measure` warms up first (rings, round-robin state, status arrays, scratch buffers),
    // then keeps the fastest chunk: on a shared machine the minimum filters out preemption.
    let mask = calls.len() - 1;
    let mut k = 0usize;
    let (ns_per_op, allocs_per_op) = measure::measure(GLOBAL, budget, || {
        k = k.wrapping_add(1);
        black_box(lb.select(set, black_box(&calls[k & mask])));
    });
    SelectRow {
        lb: name,
        invokers: set.len(),
        ns_per_op,
        allocs_per_op,
    }
}

/// Net bytes allocated per provider by parsing `n` distinct provider URLs (and keeping them).
fn url_bytes_per_provider(n: usize) -> f64 {
    let region = Region::new(GLOBAL);
    let urls: Vec<Url> = (0..n)
        .map(|i| bench_support::provider(i, BASE_TS + i as u64))
        .collect();
    let s = region.change();
    let net = s.bytes_allocated as f64 - s.bytes_deallocated as f64 + s.bytes_reallocated as f64;
    drop(black_box(urls));
    net / n as f64
}

/// Net bytes per provider of a directory holding `n` providers (URLs, invokers, tables,
/// snapshot and [`InvokerSet`] metadata), the URLs excluded.
fn directory_bytes_per_provider(n: usize) -> f64 {
    let urls: Vec<Url> = (0..n)
        .map(|i| bench_support::provider(i, BASE_TS + i as u64))
        .collect();
    let region = Region::new(GLOBAL);
    let dir = bench_support::directory_with(&urls);
    let s = region.change();
    let net = s.bytes_allocated as f64 - s.bytes_deallocated as f64 + s.bytes_reallocated as f64;
    drop(black_box(dir));
    net / n as f64
}

fn main() -> ExitCode {
    use clap::Parser as _;
    match run(Args::parse()) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::from(2)
        }
    }
}

/// The tokio runtime of the call-path measurements (two workers, as the CLI).
fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    use anyhow::Context;
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("tokio runtime")
}

/// Runs the benchmarks and prints the report.
fn run(a: Args) -> anyhow::Result<ExitCode> {
    let budget = if a.quick {
        Duration::from_millis(60)
    } else {
        Duration::from_millis(400)
    };
    let calls = calls();
    let mut selects = Vec::new();
    for n in SELECT_SIZES {
        let set = Arc::new(InvokerSet::new(invokers(n)?));
        for name in loadbalance::NAMES {
            selects.push(measure_select(name, &set, &calls, budget));
        }
    }
    let mut applies = Vec::new();
    for n in APPLY_SIZES {
        let (one, rebuild) = bench_support::apply_timings(n);
        applies.push((n, one, rebuild));
    }
    let url_bytes = url_bytes_per_provider(MEMORY_PROVIDERS);
    let dir_bytes = directory_bytes_per_provider(MEMORY_PROVIDERS);
    let dubbo = dubbo::offline(GLOBAL, budget)?;
    let dubbo_calls = dubbo::calls(GLOBAL, a.dubbo_peer.as_deref(), a.quick)?;
    let triple = triple::offline(GLOBAL, budget)?;
    let app = app::run(GLOBAL, 1000, 50, if a.quick { 20 } else { 100 })?;
    let triple_calls = match &a.triple_peer {
        Some(addr) => triple::calls(GLOBAL, addr, a.quick)?,
        None => Value::Null,
    };

    if a.json {
        let doc = json!({
            "select": selects.iter().map(|r| json!({
                "lb": r.lb, "invokers": r.invokers,
                "ns_per_op": round1(r.ns_per_op), "allocs_per_op": r.allocs_per_op,
            })).collect::<Vec<_>>(),
            "directory_apply": applies.iter().map(|(n, one, re)| json!({
                "providers": n, "one_change_us": round1(*one), "rebuild_us": round1(*re),
            })).collect::<Vec<_>>(),
            "memory": [{"providers": MEMORY_PROVIDERS, "bytes_per_provider": round1(url_bytes)}],
            "dubbo2": {"offline": dubbo, "calls": dubbo_calls},
            "triple": {"offline": triple, "calls": triple_calls},
            "application_level": app,
            "application_level": app,
        });
        println!("{}", serde_json::to_string(&doc)?);
        return Ok(ExitCode::SUCCESS);
    }
    println!("select (one thread; targets: <= 200 ns at 255, <= 1000 ns at 10000, 0 allocations)");
    println!(
        "{:<18} {:>9} {:>12} {:>14}",
        "lb", "invokers", "ns/op", "allocs/op"
    );
    for r in &selects {
        println!(
            "{:<18} {:>9} {:>12.1} {:>14.4}",
            r.lb, r.invokers, r.ns_per_op, r.allocs_per_op
        );
    }
    println!();
    println!(
        "directory apply (targets: one change <= 1000 us at 10k and >= 20x faster than rebuild)"
    );
    println!(
        "{:>10} {:>16} {:>14} {:>9}",
        "providers", "one_change_us", "rebuild_us", "speedup"
    );
    for (n, one, re) in &applies {
        println!(
            "{n:>10} {one:>16.1} {re:>14.1} {:>8.1}x",
            re / one.max(1e-9)
        );
    }
    println!();
    println!("memory (target: <= 300 B per provider URL)");
    println!(
        "{:>10} {:>22} {:>40}",
        "providers", "bytes/provider URL", "bytes/provider in a directory (no URL)"
    );
    println!("{MEMORY_PROVIDERS:>10} {url_bytes:>22.1} {dir_bytes:>40.1}");
    println!();
    println!("application level (1 application x 1,000 instances x 50 interfaces, 50 subscriptions, in process)");
    println!(
        "{:>14} {:>26} {:>28} {:>20}",
        "first lists ms", "restart, same services us", "restart, own revision us", "bytes/instance"
    );
    println!(
        "{:>14} {:>26} {:>28} {:>20}",
        app["first_lists_ms"],
        app["restart_same_services_us"],
        app["restart_new_revision_us"],
        app["bytes_per_instance"]
    );
    println!();
    println!("application level (1 application x 1,000 instances x 50 interfaces, 50 subscriptions, in process)");
    println!(
        "{:>14} {:>26} {:>28} {:>20}",
        "first lists ms", "restart, same services us", "restart, own revision us", "bytes/instance"
    );
    println!(
        "{:>14} {:>26} {:>28} {:>20}",
        app["first_lists_ms"],
        app["restart_same_services_us"],
        app["restart_new_revision_us"],
        app["bytes_per_instance"]
    );
    print_dubbo(&dubbo, &dubbo_calls);
    println!();
    println!("triple (offline, one thread)");
    println!("{:<34} {:>12} {:>14}", "op", "ns/op", "allocs/op");
    for r in triple.as_array().into_iter().flatten() {
        println!(
            "{:<34} {:>12.1} {:>14.1}",
            r["op"].as_str().unwrap_or_default(),
            r["ns_per_op"].as_f64().unwrap_or_default(),
            r["allocs_per_op"].as_f64().unwrap_or_default()
        );
    }
    if let Some(rows) = triple_calls.as_array() {
        println!(
            "triple calls against {}",
            a.triple_peer.as_deref().unwrap_or_default()
        );
        for r in rows {
            println!("{r}");
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// The Hessian 2.0 / Dubbo2 tables (`bench_dubbo`).
fn print_dubbo(offline: &Value, calls: &Value) {
    println!();
    println!("hessian2 / dubbo2 codec (one thread)");
    println!(
        "{:<36} {:>7} {:>10} {:>12} {:>10}",
        "op", "bytes", "ns/op", "ops/s", "allocs/op"
    );
    for r in offline.as_array().into_iter().flatten() {
        println!(
            "{:<36} {:>7} {:>10.1} {:>12} {:>10.1}",
            r["op"].as_str().unwrap_or_default(),
            r["bytes"].as_u64().unwrap_or_default(),
            r["ns_per_op"].as_f64().unwrap_or_default(),
            r["ops_per_sec"].as_f64().unwrap_or_default(),
            r["allocs_per_op"].as_f64().unwrap_or_default()
        );
    }
    println!();
    println!("dubbo2 calls (sayHello, one connection)");
    println!(
        "{:<32} {:>9} {:>10} {:>9} {:>9} {:>12}",
        "target", "in flight", "calls/s", "p50 us", "p99 us", "allocs/call"
    );
    for r in calls.as_array().into_iter().flatten() {
        println!(
            "{:<32} {:>9} {:>10} {:>9.1} {:>9.1} {:>12}",
            r["target"].as_str().unwrap_or_default(),
            r["in_flight"].as_u64().unwrap_or_default(),
            r["calls_per_sec"].as_f64().unwrap_or_default(),
            r["p50_us"].as_f64().unwrap_or_default(),
            r["p99_us"].as_f64().unwrap_or_default(),
            r["allocs_per_call"]
                .as_f64()
                .map_or("-".to_owned(), |a| format!("{a:.2}"))
        );
    }
}

fn round1(x: f64) -> f64 {
    (x * 10.0).round() / 10.0
}
