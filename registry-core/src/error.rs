//! The one error type of `registry-core`.

use thiserror::Error;

/// Errors raised by the URL model and by registries.
///
/// Messages never contain credentials: URLs are rendered with [`crate::Url`]'s `Display`, which
/// omits the user info and masks secret parameters, and echoed input is masked the same way
/// ([`crate::url::secret`]).
#[derive(Debug, Clone, Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum Error {
    /// The text is not a URL Dubbo would accept (missing protocol, bad port, ...).
    #[error("invalid URL: {reason}: {input:?}")]
    InvalidUrl {
        /// What is wrong.
        reason: &'static str,
        /// The offending input, truncated to 256 characters, with its password and secret
        /// parameters masked ([`crate::url::secret::redact`]).
        input: String,
    },
    /// A malformed `%` escape (truncated, or not hexadecimal).
    #[error("malformed percent escape in {input:?}")]
    InvalidEscape {
        /// The offending input, truncated to 256 characters, secrets masked.
        input: String,
    },
    /// A registry address was empty or unusable.
    #[error("invalid registry address: {0}")]
    InvalidAddress(String),
    /// The registry (or the connection to it) failed; the operation may succeed later.
    #[error("registry unavailable: {0}")]
    Unavailable(String),
    /// The operation did not complete in time.
    #[error("registry operation timed out: {0}")]
    Timeout(String),
    /// The registry refused the operation (authentication, permissions).
    #[error("registry refused the operation: {0}")]
    Refused(String),
    /// The registry answered with data that cannot be understood.
    #[error("malformed registry data: {0}")]
    Malformed(String),
    /// The registry has been destroyed.
    #[error("registry destroyed")]
    Destroyed,
    /// A local I/O problem (cache file).
    #[error("i/o error: {0}")]
    Io(String),
    /// A rule document passed a limit of [`crate::rule_yaml::YamlLimits`] (size, nesting,
    /// aliases, expanded size) and was not read.
    #[error("rule refused: {0}")]
    RuleLimit(String),
}

impl Error {
    /// True when retrying the same operation later may succeed (connection and server trouble).
    pub fn is_retryable(&self) -> bool {
        matches!(
            self,
            Error::Unavailable(_) | Error::Timeout(_) | Error::Io(_)
        )
    }

    /// True when the input itself is wrong; retrying cannot help.
    pub fn is_invalid_input(&self) -> bool {
        matches!(
            self,
            Error::InvalidUrl { .. }
                | Error::InvalidEscape { .. }
                | Error::InvalidAddress(_)
                | Error::RuleLimit(_)
        )
    }

    pub(crate) fn invalid_url(reason: &'static str, input: &str) -> Self {
        Error::InvalidUrl {
            reason,
            input: truncate(input),
        }
    }

    pub(crate) fn invalid_escape(input: &str) -> Self {
        Error::InvalidEscape {
            input: truncate(input),
        }
    }
}

impl From<std::io::Error> for Error {
    fn from(e: std::io::Error) -> Self {
        Error::Io(e.to_string())
    }
}

/// The first 256 characters of `s` (secrets masked first, so a cut cannot expose half of one).
fn truncate(s: &str) -> String {
    let s = crate::url::secret::redact(s);
    match s.char_indices().nth(256) {
        Some((i, _)) => format!("{}...", &s[..i]),
        None => s.into_owned(),
    }
}

/// Result alias of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;
