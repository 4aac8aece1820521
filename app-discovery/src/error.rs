//! The one error type of `app-discovery`.

use thiserror::Error;

/// Errors of the application-level pipeline. Messages never contain credentials (URLs are
/// rendered with [`registry_core::Url`]'s `Display`).
#[derive(Debug, Clone, Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum Error {
    /// A registry, config centre or metadata report failed (connection, server, refusal).
    #[error(transparent)]
    Registry(#[from] registry_core::Error),
    /// Data that cannot be understood (MetadataInfo JSON, instance metadata, a rule).
    #[error("malformed {what}: {reason}")]
    Malformed {
        /// What was being read.
        what: &'static str,
        /// Why it was refused.
        reason: String,
    },
    /// The metadata report or the MetadataService has no MetadataInfo for this revision.
    #[error("no MetadataInfo for revision {revision} of {app} ({source_desc})")]
    NoMetadata {
        /// The application.
        app: String,
        /// The revision asked for.
        revision: String,
        /// Where it was asked (a MetadataService URL or the metadata report).
        source_desc: String,
    },
    /// A MetadataService call failed (refused connection, timeout, error status).
    #[error("MetadataService call to {target} failed: {reason}")]
    MetadataService {
        /// The MetadataService URL (no credentials).
        target: String,
        /// The failure.
        reason: String,
        /// True when another attempt may succeed (network, timeout).
        retryable: bool,
    },
    /// Nothing can fetch this kind of metadata (no client for the protocol, no metadata
    /// report configured for `remote` storage).
    #[error("unsupported: {0}")]
    Unsupported(String),
    /// The pipeline was destroyed.
    #[error("application-level discovery destroyed")]
    Destroyed,
}

impl Error {
    /// True when retrying the same operation later may succeed.
    pub fn is_retryable(&self) -> bool {
        match self {
            Error::Registry(e) => e.is_retryable(),
            Error::MetadataService { retryable, .. } => *retryable,
            // A provider may publish the revision a moment later (remote storage written
            // after the instance registered).
            Error::NoMetadata { .. } => true,
            Error::Malformed { .. } | Error::Unsupported(_) | Error::Destroyed => false,
        }
    }

    pub(crate) fn malformed(what: &'static str, reason: impl Into<String>) -> Self {
        Error::Malformed {
            what,
            reason: reason.into(),
        }
    }
}

impl From<Error> for registry_core::Error {
    fn from(e: Error) -> Self {
        match e {
            Error::Registry(e) => e,
            Error::Malformed { .. } => registry_core::Error::Malformed(e.to_string()),
            Error::Destroyed => registry_core::Error::Destroyed,
            other if other.is_retryable() => registry_core::Error::Unavailable(other.to_string()),
            other => registry_core::Error::Refused(other.to_string()),
        }
    }
}

/// Result alias of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;
