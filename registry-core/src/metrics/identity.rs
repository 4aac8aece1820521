//! Who this process is, for the application-level labels of Dubbo's metrics
//! (`application_name`, `application_version`, `git_commit_id`, `hostname`, `ip`).
//!
//! One value per process, like Java's application model: set it once at start-up, before
//! registries and consumers are created ([`set_identity`]); metrics created earlier keep the
//! labels they were created with.

use std::sync::{Arc, OnceLock};

use metrics::Label;
use parking_lot::RwLock;

use super::names::{label, MODULE_ID};

/// The application labels of this process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    /// `application_name` (default `dubbo-rs-consumer`; a consumer URL's own `application`
    /// labels its call metrics).
    pub application_name: String,
    /// `application_version`: this workspace's version.
    pub application_version: String,
    /// `git_commit_id`: `$DUBBO_RS_GIT_COMMIT` at build time, else empty.
    pub git_commit_id: String,
    /// `hostname`: the kernel's host name.
    pub hostname: String,
    /// `ip`: the address this application registers (default 127.0.0.1).
    pub ip: String,
}

impl Default for Identity {
    fn default() -> Self {
        Identity {
            application_name: "dubbo-rs-consumer".to_owned(),
            application_version: env!("CARGO_PKG_VERSION").to_owned(),
            git_commit_id: option_env!("DUBBO_RS_GIT_COMMIT").unwrap_or("").to_owned(),
            hostname: host_name(),
            ip: "127.0.0.1".to_owned(),
        }
    }
}

impl Identity {
    /// `application_module_id`, `application_name`: the labels of application-level counts.
    pub fn app_labels(&self) -> Vec<Label> {
        vec![
            Label::new(label::APPLICATION_MODULE_ID, MODULE_ID),
            Label::new(label::APPLICATION_NAME, self.application_name.clone()),
        ]
    }

    /// [`Identity::app_labels`] plus version, commit, host name and address: the labels of
    /// registry operations.
    pub fn host_labels(&self) -> Vec<Label> {
        let mut l = self.app_labels();
        l.extend([
            Label::new(label::APPLICATION_VERSION, self.application_version.clone()),
            Label::new(label::GIT_COMMIT_ID, self.git_commit_id.clone()),
            Label::new(label::HOSTNAME, self.hostname.clone()),
            Label::new(label::IP, self.ip.clone()),
        ]);
        l
    }
}

fn slot() -> &'static RwLock<Arc<Identity>> {
    static SLOT: OnceLock<RwLock<Arc<Identity>>> = OnceLock::new();
    SLOT.get_or_init(|| RwLock::new(Arc::new(Identity::default())))
}

/// The identity now.
pub fn identity() -> Arc<Identity> {
    slot().read().clone()
}

/// Replaces the identity, and records `dubbo_application_info_total` for it.
pub fn set_identity(id: Identity) {
    metrics::counter!(super::names::APPLICATION_INFO.name, id.host_labels()).absolute(1);
    *slot().write() = Arc::new(id);
}

/// Sets only the application name.
pub fn set_application_name(name: &str) {
    let mut id = (*identity()).clone();
    id.application_name = name.to_owned();
    set_identity(id);
}

/// The kernel's host name (`/proc/sys/kernel/hostname`, `/etc/hostname`), else `localhost`.
fn host_name() -> String {
    ["/proc/sys/kernel/hostname", "/etc/hostname"]
        .iter()
        .filter_map(|p| std::fs::read_to_string(p).ok())
        .map(|s| s.trim().to_owned())
        .find(|s| !s.is_empty())
        .unwrap_or_else(|| "localhost".to_owned())
}
