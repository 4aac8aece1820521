//! One module per subcommand.

pub mod apps;
pub mod config;
pub mod demo;
pub mod invoke;
pub mod invoke_triple;
pub mod list;
pub mod register;
pub mod route_view;
pub mod tls_args;
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

/// Ctrl-C as a future whose signal handler is installed now rather than at its first poll: a
/// Ctrl-C that comes before the loop first waits on it ends the loop instead of killing the
/// process (the default action while no handler is installed).
pub struct Interrupt {
    fut: std::pin::Pin<Box<dyn std::future::Future<Output = std::io::Result<()>> + Send>>,
    fired: bool,
}

impl Interrupt {
    /// Installs the handler.
    pub async fn install() -> Interrupt {
        let mut fut: std::pin::Pin<Box<dyn std::future::Future<Output = _> + Send>> =
            Box::pin(tokio::signal::ctrl_c());
        let fired = tokio::select! {
            biased;
            _ = &mut fut => true,
            () = std::future::ready(()) => false,
        };
        Interrupt { fut, fired }
    }

    /// Waits for Ctrl-C (at once if it already came).
    pub async fn wait(&mut self) {
        if !self.fired {
            let _ = (&mut self.fut).await;
            self.fired = true;
        }
    }
}

impl std::fmt::Debug for Interrupt {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Interrupt")
            .field("fired", &self.fired)
            .finish()
    }
}
