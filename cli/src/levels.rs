//! Which discovery levels a command reads (`--level`): interface level
//! (`/dubbo/<interface>/providers`, Nacos `providers:...`) and application level (mapping →
//! instances → MetadataInfo). By default both, as a Java 3.3 consumer in its default
//! `APPLICATION_FIRST` step subscribes both; a `registry-type=service` registry has only the
//! application level. The levels are connected by the front door
//! ([`dubbo_consumer::Connector::levels`]); this module adds the CLI's defaults and where a
//! listed URL came from ([`Source`]).

use std::time::Duration;

use app_discovery::ServiceDiscoveryRegistry;
use dubbo_consumer::Levels;
use registry_core::Url;

use crate::registry_factory;

/// `--level`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum Level {
    /// Interface-level registrations only.
    Interface,
    /// Application-level registrations only.
    Application,
    /// Both (default).
    #[default]
    All,
}

impl From<Level> for dubbo_consumer::Level {
    fn from(l: Level) -> Self {
        match l {
            Level::Interface => dubbo_consumer::Level::Interface,
            Level::Application => dubbo_consumer::Level::Application,
            Level::All => dubbo_consumer::Level::All,
        }
    }
}

/// Connects the levels `level` asks for with the CLI's defaults
/// ([`registry_factory::connector`]); `subscribe_wait` bounds an application-level
/// subscription's wait for its first list.
pub async fn connect(
    registry: &str,
    level: Level,
    timeout: Duration,
    subscribe_wait: Duration,
) -> anyhow::Result<Levels> {
    open(registry, level, timeout, subscribe_wait, false).await
}

/// Like [`connect`] for looking only (`list`, `watch`): the interface level writes nothing to
/// the registry ([`dubbo_consumer::Connector::read_only`]); the application level never
/// writes.
pub async fn connect_read_only(
    registry: &str,
    level: Level,
    timeout: Duration,
    subscribe_wait: Duration,
) -> anyhow::Result<Levels> {
    open(registry, level, timeout, subscribe_wait, true).await
}

async fn open(
    registry: &str,
    level: Level,
    timeout: Duration,
    subscribe_wait: Duration,
    read_only: bool,
) -> anyhow::Result<Levels> {
    Ok(registry_factory::connector(registry, timeout)?
        .read_only(read_only)
        .subscribe_wait(subscribe_wait)
        .levels(level.into())
        .await?)
}

/// Where a listed URL came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// Interface level.
    Interface,
    /// Application level: the application and the revision whose MetadataInfo built it (and
    /// the revision the instance announces when that one is not resolved yet).
    Application {
        /// The provider application.
        app: String,
        /// The revision the URL was built from.
        revision: String,
        /// A newer revision the instance announces, not resolved yet.
        announced: Option<String>,
    },
}

impl Source {
    /// The source of `url` published by `app` (application level).
    pub fn of(app: &ServiceDiscoveryRegistry, url: &Url) -> Source {
        match app.origin(url) {
            Some(o) => Source::Application {
                app: o.app,
                revision: o.revision,
                announced: o.announced,
            },
            None => Source::Application {
                app: String::new(),
                revision: String::new(),
                announced: None,
            },
        }
    }

    /// `interface` or `application`.
    pub fn level(&self) -> &'static str {
        match self {
            Source::Interface => "interface",
            Source::Application { .. } => "application",
        }
    }

    /// A short form for tables: `interface`, or `app:<name>@<revision>` (the revision cut to
    /// 12 characters; `->next` when a newer revision is pending).
    pub fn short(&self) -> String {
        match self {
            Source::Interface => "interface".into(),
            Source::Application {
                app,
                revision,
                announced,
            } => {
                let cut = |r: &str| r.chars().take(12).collect::<String>();
                let mut s = format!("app:{app}@{}", cut(revision));
                if let Some(a) = announced {
                    s.push_str("->");
                    s.push_str(&cut(a));
                }
                s
            }
        }
    }

    /// The JSON fields added to a row: `level`, `application`, `revision`.
    pub fn json_fields(&self, o: &mut serde_json::Map<String, serde_json::Value>) {
        use serde_json::Value;
        o.insert("level".into(), Value::from(self.level()));
        match self {
            Source::Interface => {
                o.insert("application".into(), Value::Null);
                o.insert("revision".into(), Value::Null);
            }
            Source::Application {
                app,
                revision,
                announced,
            } => {
                o.insert("application".into(), Value::from(app.as_str()));
                o.insert("revision".into(), Value::from(revision.as_str()));
                if let Some(a) = announced {
                    o.insert("announced_revision".into(), Value::from(a.as_str()));
                }
            }
        }
    }
}
