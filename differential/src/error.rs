//! The crate's error type.

/// What can go wrong running a differential test.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The oracle process could not be started, or answered badly.
    #[error("oracle: {0}")]
    Oracle(String),
    /// An operation names a divergence rule that `docs/divergences.json` does not list.
    #[error("operation {op}: divergence rule {rule:?} is not listed in docs/divergences.json")]
    UnlistedRule {
        /// The operation.
        op: String,
        /// The rule it named.
        rule: String,
    },
}

impl Error {
    /// Whether running again could help (a crashed oracle can be restarted).
    pub fn is_retryable(&self) -> bool {
        matches!(self, Error::Oracle(_))
    }
}
