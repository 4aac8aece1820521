//! [`DirectoryHealth`]: what a [`super::RegistryDirectory`] holds and how it is doing, as a
//! watchable value ([`super::RegistryDirectory::health`]).
//!
//! It changes when a notification is applied, when an invoker's availability changes (the
//! directory's task re-counts every [`super::DirectoryOptions::health_interval`]) and when the
//! directory records an error (a provider it could not refer, a rule it refused).

use serde::Serialize;

/// Where a directory stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum DirectoryPhase {
    /// No providers list yet.
    Waiting,
    /// Providers known (possibly none available).
    Ready,
    /// The registry said `empty://`: calls are refused.
    Forbidden,
    /// Destroyed.
    Destroyed,
}

/// A directory's state at one moment.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DirectoryHealth {
    /// The service key (`group/interface:version`).
    pub service: String,
    /// Where it stands.
    pub phase: DirectoryPhase,
    /// Provider URLs in the last providers list (disabled ones included).
    pub providers: usize,
    /// Providers with an invoker (`dubbo_registry_directory_num_all`).
    pub invokers: usize,
    /// Invokers available for calls now (`dubbo_registry_directory_num_valid_total`).
    pub available: usize,
    /// Providers listed without an invoker: disabled by a configurator or not referable
    /// (`dubbo_registry_directory_num_disable_total`).
    pub disabled: usize,
    /// Notifications applied so far.
    pub notifications: u64,
    /// When the last notification was applied (ms since the Unix epoch).
    pub last_notify_unix_ms: Option<u64>,
    /// The last error the directory recorded (never a secret).
    pub last_error: Option<String>,
    /// When it was recorded (ms since the Unix epoch).
    pub last_error_unix_ms: Option<u64>,
}

impl DirectoryHealth {
    /// A directory of `service` waiting for its first list.
    pub fn waiting(service: String) -> Self {
        DirectoryHealth {
            service,
            phase: DirectoryPhase::Waiting,
            providers: 0,
            invokers: 0,
            available: 0,
            disabled: 0,
            notifications: 0,
            last_notify_unix_ms: None,
            last_error: None,
            last_error_unix_ms: None,
        }
    }

    /// Invokers whose connection is down (`dubbo_registry_directory_num_to_reconnect_total`).
    pub fn to_reconnect(&self) -> usize {
        self.invokers.saturating_sub(self.available)
    }
}
