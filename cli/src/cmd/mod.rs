//! One module per subcommand.

pub mod apps;
pub mod bench;
pub mod bench_app;
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

/// The tokio runtime every networked subcommand runs on (two workers: the CLI does little
/// work itself, it mostly waits on the registry).
pub fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    use anyhow::Context;
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("tokio runtime")
}
