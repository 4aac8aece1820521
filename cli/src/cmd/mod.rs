//! One module per subcommand.

pub mod bench;
pub mod bench_dubbo;
pub mod bench_measure;
pub mod bench_triple;
pub mod config;
pub mod conformance;
pub mod demo;
pub mod invoke;
pub mod invoke_triple;
pub mod list;
pub mod register;
pub mod route_view;
pub mod watch;

/// The tokio runtime every networked subcommand runs on: two workers (the CLI does little work
/// itself, it mostly waits on the network), or one when the process may use only one CPU
/// (`taskset`, a cgroup quota): two workers on one CPU hand the I/O driver back and forth
/// through futex wake-ups and context switches for nothing.
pub fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    use anyhow::Context;
    let cpus = std::thread::available_parallelism().map_or(2, std::num::NonZeroUsize::get);
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(cpus.clamp(1, 2))
        .enable_all()
        .build()
        .context("tokio runtime")
}
