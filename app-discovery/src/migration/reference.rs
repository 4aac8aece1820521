//! [`MigrationReference`]: a consumer reference over both discovery levels, migrating between
//! them as the migration rule says (Java's `MigrationRuleListener` + `MigrationRuleHandler` +
//! `MigrationInvoker`).
//!
//! ```text
//! config centre <app>.migration (group DUBBO_SERVICEDISCOVERY_MIGRATION) --watch--> rule
//!   --> step: FORCE_INTERFACE | APPLICATION_FIRST | FORCE_APPLICATION
//!   --> interface-level RegistryDirectory  \
//!   --> application-level RegistryDirectory --> MigrationDirectory (per-call choice) --> cluster
//! ```
//!
//! - **Rule**: read at start, then followed live; an empty or deleted rule is the default rule
//!   (everything from the reference parameters, else `APPLICATION_FIRST`); an unparsable one
//!   keeps the previous rule; an unchanged text is ignored. Rules are applied one at a time.
//! - **Local rule file** (Java's `dubbo.migration.file`): the parameter
//!   [`MIGRATION_FILE_KEY`] of the consumer URL, else of the registry URL, names a YAML file
//!   whose rule applies while the config centre has none; the config centre's rule, once
//!   published, replaces it (and deleting that rule goes back to the defaults, as Java goes back
//!   to its init rule). Java applies the file only after `dubbo.application.migration.delay`
//!   (60 s); here it applies from the start (`docs/compatibility.md`). The file is read within
//!   the bounds of every rule ([`registry_core::rule_yaml`]); a file that cannot be read or
//!   parsed fails [`MigrationReference::open`] with a clear error, even while the config centre has
//!   a rule.
//! - **Steps** (`MigrationInvoker.migrateTo*`): `APPLICATION_FIRST` subscribes both levels and
//!   prefers the application level while the comparator agrees, recomputed on every change of
//!   either directory; `FORCE_APPLICATION` subscribes the application level and, when an
//!   interface-level directory exists, waits `delay` seconds, then switches (destroying the
//!   interface level) when `force` is set or the comparator agrees — otherwise the old state
//!   stays (and an application level created by a failed switch away from `FORCE_INTERFACE`
//!   is destroyed again); `FORCE_INTERFACE` is the mirror image.
//! - **Comparator** (`DefaultMigrationAddressComparator`): the new level with no address → no;
//!   the old level with none → yes; else `new / old >= threshold` (a threshold unset or
//!   negative compares with 0: any address wins).
//! - A `registry-type=service` registry (no interface-level registry given) is always
//!   `FORCE_APPLICATION`, as Java's `ServiceDiscoveryMigrationInvoker`.
//! - Governance rules (routers, configurators) of the config centre apply to both directories
//!   ([`invoker::directory::RuleWatcher`]).

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use invoker::directory::{DirectoryOptions, RegistryDirectory, RuleWatcher};
use invoker::rpc::{InvokerFactory, RpcError};
use registry_core::{Registry, SharedConfigCenter, Url};
use tokio::sync::Notify;
use tokio_util::sync::{CancellationToken, DropGuard};

use super::directory::{Choice, MigrationDirectory};
use super::rule::{Effective, MigrationRule, MigrationStep, MIGRATION_GROUP, MIGRATION_SUFFIX};
use crate::registry::ServiceDiscoveryRegistry;

/// The parameter (consumer URL, else registry URL) naming a local migration rule file (Java's
/// `dubbo.migration.file`; module docs).
pub const MIGRATION_FILE_KEY: &str = "migration.file";

/// What a reference is made of.
#[derive(Debug, Clone)]
pub struct ReferenceConfig {
    /// The consumer URL (`interface`, `group`, `version`, `application`, `migration.*`, ...).
    pub consumer: Url,
    /// Refers provider URLs (the protocols).
    pub factory: Arc<dyn InvokerFactory>,
    /// Options of both directories.
    pub options: DirectoryOptions,
    /// The interface-level registry (`None`: application level only).
    pub interface_registry: Option<Arc<dyn Registry>>,
    /// The application-level registry (`None`: interface level only).
    pub app_registry: Option<ServiceDiscoveryRegistry>,
    /// The config centre: migration rule and governance rules.
    pub config_center: Option<SharedConfigCenter>,
    /// How long opening waits for the rules of the config centre.
    pub rule_wait: Duration,
}

struct Sub {
    dir: Arc<RegistryDirectory>,
    _rules: Option<RuleWatcher>,
}

impl Sub {
    fn destroy(self) {
        self.dir.destroy();
    }
}

struct Held {
    step: Option<MigrationStep>,
    threshold: f32,
    rule: MigrationRule,
    raw: Option<String>,
    interface: Option<Sub>,
    app: Option<Sub>,
}

struct Inner {
    cfg: ReferenceConfig,
    dir: Arc<MigrationDirectory>,
    held: tokio::sync::Mutex<Held>,
    /// Wakes the preference task when directories are created or destroyed.
    dirs_changed: Arc<Notify>,
}

/// A reference migrating between discovery levels (module docs). Dropping it stops following
/// the rules; [`MigrationReference::destroy`] also destroys the directories.
pub struct MigrationReference {
    inner: Arc<Inner>,
    _stop: DropGuard,
}

impl std::fmt::Debug for MigrationReference {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MigrationReference")
            .field("consumer", &self.inner.cfg.consumer.to_string())
            .field("step", &self.inner.dir.step())
            .finish()
    }
}

/// Java's comparator: may `new` replace `old`?
pub fn should_migrate(new: usize, old: usize, threshold: f32) -> bool {
    if new == 0 {
        return false;
    }
    if old == 0 {
        return true;
    }
    let t = if threshold >= 0.0 { threshold } else { 0.0 };
    (new as f32 / old as f32) >= t
}

impl MigrationReference {
    /// Opens the reference: reads the migration rule (at most `rule_wait`), subscribes the
    /// levels its step needs (each waits up to the directory's `ready_timeout`), then follows
    /// the rule in the background.
    ///
    /// Errors: no registry at all, or a registry refused the subscription (`check=true`).
    /// Must be called within a Tokio runtime.
    pub async fn open(cfg: ReferenceConfig) -> Result<MigrationReference, RpcError> {
        if cfg.interface_registry.is_none() && cfg.app_registry.is_none() {
            return Err(RpcError::new(
                invoker::rpc::RpcErrorCode::Unknown,
                "a reference needs an interface-level or an application-level registry",
            ));
        }
        let registry_url = cfg
            .interface_registry
            .as_ref()
            .map(|r| r.url().clone())
            .or_else(|| cfg.app_registry.as_ref().map(|r| r.url().clone()))
            .unwrap_or_else(|| cfg.consumer.clone());
        let dir = Arc::new(MigrationDirectory::new(
            cfg.consumer.clone(),
            registry_url.clone(),
            Choice {
                step: MigrationStep::ApplicationFirst,
                proportion: 100,
                threshold: -1.0,
                prefer_app: false,
                interface: None,
                app: None,
            },
        ));
        let stop = CancellationToken::new();
        let inner = Arc::new(Inner {
            cfg,
            dir,
            held: tokio::sync::Mutex::new(Held {
                step: None,
                threshold: -1.0,
                rule: MigrationRule::default(),
                raw: None,
                interface: None,
                app: None,
            }),
            dirs_changed: Arc::new(Notify::new()),
        });
        // The rule: the config centre's current value (a watch, so no change is lost).
        let mut watch = None;
        let mut initial: Option<String> = None;
        if let (Some(cc), Some(key)) = (&inner.cfg.config_center, rule_key(&inner.cfg.consumer)) {
            match tokio::time::timeout(inner.cfg.rule_wait, cc.watch(&key, MIGRATION_GROUP)).await {
                Ok(Ok(mut w)) => {
                    initial = w.next().await.flatten().map(|v| v.to_string());
                    watch = Some(w);
                }
                Ok(Err(e)) => {
                    tracing::warn!(key, error = %e, "migration rule not readable; using the defaults")
                }
                Err(_) => {
                    tracing::warn!(key, "migration rule not read in time; using the defaults")
                }
            }
        }
        // The local file is read (and a bad one refused) whether or not it is needed now.
        let local = local_rule(&inner.cfg.consumer, &registry_url)?;
        let first = match (initial.as_deref().filter(|t| !t.trim().is_empty()), local) {
            (None, Some(rule)) => rule,
            _ => parse_or_default(initial.as_deref()),
        };
        Inner::apply(&inner, first, initial).await?;
        if let Some(w) = watch {
            tokio::spawn(follow_rule(Arc::downgrade(&inner), w, stop.clone()));
        }
        tokio::spawn(follow_preference(Arc::downgrade(&inner), stop.clone()));
        Ok(MigrationReference {
            inner,
            _stop: stop.drop_guard(),
        })
    }

    /// The directory to build the cluster on (`invoker::cluster::join`).
    pub fn directory(&self) -> Arc<MigrationDirectory> {
        self.inner.dir.clone()
    }

    /// The rule in effect.
    pub async fn rule(&self) -> MigrationRule {
        self.inner.held.lock().await.rule.clone()
    }

    /// Applies `rule` now (as if the config centre had published it); true when the step it
    /// asks for is in effect afterwards.
    pub async fn apply_rule(&self, rule: MigrationRule) -> Result<bool, RpcError> {
        Inner::apply(&self.inner, rule, None).await
    }

    /// Destroys both directories.
    pub async fn destroy(&self) {
        let mut h = self.inner.held.lock().await;
        self.inner.dir.choice.store(Arc::new(Choice {
            interface: None,
            app: None,
            ..(**self.inner.dir.choice.load()).clone()
        }));
        if let Some(s) = h.interface.take() {
            s.destroy();
        }
        if let Some(s) = h.app.take() {
            s.destroy();
        }
    }
}

/// `<application>.migration` of the consumer; `None` without an application.
pub fn rule_key(consumer: &Url) -> Option<String> {
    consumer
        .param("application")
        .filter(|a| !a.is_empty())
        .map(|a| format!("{a}{MIGRATION_SUFFIX}"))
}

/// The rule of the local file named by [`MIGRATION_FILE_KEY`] on `consumer`, else on
/// `registry`; `None` when neither names one.
///
/// Errors: the file cannot be read, is larger than a rule may be, or is not a valid rule.
pub fn local_rule(consumer: &Url, registry: &Url) -> Result<Option<MigrationRule>, RpcError> {
    use std::io::Read as _;
    let Some(path) = [consumer, registry]
        .into_iter()
        .find_map(|u| u.param(MIGRATION_FILE_KEY).filter(|p| !p.trim().is_empty()))
    else {
        return Ok(None);
    };
    let fail = |reason: String| {
        RpcError::new(
            invoker::rpc::RpcErrorCode::Unknown,
            format!("migration rule file {path:?}: {reason}"),
        )
    };
    let limit = registry_core::rule_yaml::YamlLimits::default().max_bytes;
    let file = std::fs::File::open(path).map_err(|e| fail(e.to_string()))?;
    let mut bytes = Vec::new();
    file.take(limit as u64 + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| fail(e.to_string()))?;
    if bytes.len() > limit {
        return Err(fail(format!("larger than the limit of {limit} bytes")));
    }
    let text = String::from_utf8(bytes).map_err(|e| fail(e.to_string()))?;
    let rule = MigrationRule::parse(&text).map_err(|e| fail(e.to_string()))?;
    tracing::info!(path, step = ?rule.values.step, "migration rule from the local file, until the config centre has one");
    Ok(Some(rule))
}

fn parse_or_default(raw: Option<&str>) -> MigrationRule {
    match raw {
        None => MigrationRule::default(),
        Some(text) => match MigrationRule::parse(text) {
            Ok(r) => r,
            Err(e) => {
                tracing::warn!(error = %e, "unparsable migration rule; using the defaults");
                MigrationRule::default()
            }
        },
    }
}

impl Inner {
    fn service_only(&self) -> bool {
        self.cfg.interface_registry.is_none()
    }

    fn app_only_missing(&self) -> bool {
        self.cfg.app_registry.is_none()
    }

    async fn effective(&self, rule: &MigrationRule) -> Effective {
        let mut apps = BTreeSet::new();
        if !rule.applications.is_empty() {
            if let (Some(r), Some(iface)) = (
                &self.cfg.app_registry,
                self.cfg.consumer.service_interface(),
            ) {
                apps = r.mapped_apps(iface).await.unwrap_or_default();
            }
        }
        let mut e = rule.effective(&self.cfg.consumer, &apps);
        if self.service_only() {
            e.step = MigrationStep::ForceApplication;
            e.threshold = 1.0;
        } else if self.app_only_missing() {
            e.step = MigrationStep::ForceInterface;
        }
        e
    }

    async fn subscribe(&self, level_app: bool) -> Result<Sub, RpcError> {
        let registry: Option<Arc<dyn Registry>> = if level_app {
            self.cfg
                .app_registry
                .as_ref()
                .map(|r| Arc::new(r.clone()) as Arc<dyn Registry>)
        } else {
            self.cfg.interface_registry.clone()
        };
        // `effective` never asks for a level whose registry is missing.
        let registry = registry.ok_or_else(|| {
            RpcError::new(
                invoker::rpc::RpcErrorCode::Unknown,
                "no registry for the discovery level the migration step needs",
            )
        })?;
        let mut consumer = self.cfg.consumer.clone();
        if level_app {
            consumer = consumer.with_param("category", "providers");
        }
        let dir = RegistryDirectory::subscribe(
            registry,
            consumer,
            self.cfg.factory.clone(),
            self.cfg.options.clone(),
        )
        .await?;
        let rules = match &self.cfg.config_center {
            Some(cc) => Some(RuleWatcher::start(cc.clone(), &dir, self.cfg.rule_wait).await),
            None => None,
        };
        tracing::info!(
            consumer = %self.cfg.consumer.display_service_key().unwrap_or_default(),
            level = if level_app { "application" } else { "interface" },
            invokers = dir.invoker_count(),
            "subscribed"
        );
        Ok(Sub { dir, _rules: rules })
    }

    fn publish(&self, h: &Held, step: MigrationStep, proportion: i32, threshold: f32) {
        let interface = h.interface.as_ref().map(|s| s.dir.clone());
        let app = h.app.as_ref().map(|s| s.dir.clone());
        let prefer_app = match (&app, &interface) {
            (Some(a), Some(i)) => should_migrate(a.invoker_count(), i.invoker_count(), threshold),
            (Some(_), None) => true,
            _ => false,
        };
        self.dir.choice.store(Arc::new(Choice {
            step,
            proportion,
            threshold,
            prefer_app,
            interface,
            app,
        }));
        self.dirs_changed.notify_one();
    }

    /// `MigrationRuleHandler.doMigrate`.
    async fn apply(
        me: &Arc<Inner>,
        rule: MigrationRule,
        raw: Option<String>,
    ) -> Result<bool, RpcError> {
        let e = me.effective(&rule).await;
        let mut h = me.held.lock().await;
        if h.step == Some(e.step) && h.threshold == e.threshold {
            // Same step: keep the directories, take the rule's other values.
            h.rule = rule;
            h.raw = raw;
            me.publish(&h, e.step, e.proportion, e.threshold);
            return Ok(true);
        }
        let from = h.step;
        let ok = match e.step {
            MigrationStep::ApplicationFirst => {
                let (i, a) = tokio::join!(
                    async {
                        match h.interface.is_none() {
                            true => Some(me.subscribe(false).await),
                            false => None,
                        }
                    },
                    async {
                        match h.app.is_none() {
                            true => Some(me.subscribe(true).await),
                            false => None,
                        }
                    }
                );
                if let Some(i) = i {
                    h.interface = Some(i?);
                }
                if let Some(a) = a {
                    h.app = Some(a?);
                }
                true
            }
            MigrationStep::ForceApplication => me.force(&mut h, true, &e).await?,
            MigrationStep::ForceInterface => me.force(&mut h, false, &e).await?,
        };
        if ok {
            h.step = Some(e.step);
            h.threshold = e.threshold;
            h.rule = rule;
            h.raw = raw;
            me.publish(&h, e.step, e.proportion, e.threshold);
            tracing::info!(
                consumer = %me.cfg.consumer.display_service_key().unwrap_or_default(),
                from = from.map(MigrationStep::as_str).unwrap_or("-"),
                to = %e.step,
                "migrated"
            );
        } else {
            let (step, proportion) = (h.step.unwrap_or(e.step), me.dir.choice.load().proportion);
            me.publish(&h, step, proportion, h.threshold);
            tracing::warn!(
                consumer = %me.cfg.consumer.display_service_key().unwrap_or_default(),
                to = %e.step,
                threshold = e.threshold,
                "migration refused: the new level has too few addresses; the previous step stays"
            );
        }
        Ok(ok)
    }

    /// `migrateToForceApplicationInvoker` (`to_app`) / `migrateToForceInterfaceInvoker`.
    async fn force(&self, h: &mut Held, to_app: bool, e: &Effective) -> Result<bool, RpcError> {
        let target_missing = if to_app {
            h.app.is_none()
        } else {
            h.interface.is_none()
        };
        if target_missing {
            let s = self.subscribe(to_app).await?;
            if to_app {
                h.app = Some(s);
            } else {
                h.interface = Some(s);
            }
        }
        let other_exists = if to_app {
            h.interface.is_some()
        } else {
            h.app.is_some()
        };
        if !other_exists {
            return Ok(true);
        }
        if e.delay > 0 {
            tokio::time::sleep(Duration::from_secs(e.delay as u64)).await;
        }
        let (new, old) = if to_app {
            (&h.app, &h.interface)
        } else {
            (&h.interface, &h.app)
        };
        let count = |s: &Option<Sub>| s.as_ref().map_or(0, |s| s.dir.invoker_count());
        let agree = e.force || should_migrate(count(new), count(old), e.threshold);
        if agree {
            // Callers move first, then the old level goes.
            let old = if to_app {
                h.interface.take()
            } else {
                h.app.take()
            };
            self.publish(
                h,
                if to_app {
                    MigrationStep::ForceApplication
                } else {
                    MigrationStep::ForceInterface
                },
                e.proportion,
                e.threshold,
            );
            if let Some(o) = old {
                o.destroy();
            }
            return Ok(true);
        }
        // Refused: undo a level created only for this attempt when the previous step did not
        // use it.
        let undo = match (to_app, h.step) {
            (true, Some(MigrationStep::ForceInterface)) => h.app.take(),
            (false, Some(MigrationStep::ForceApplication)) => h.interface.take(),
            _ => None,
        };
        if let Some(u) = undo {
            let step = h.step.unwrap_or(MigrationStep::ApplicationFirst);
            self.publish(h, step, e.proportion, h.threshold);
            u.destroy();
        }
        Ok(false)
    }
}

async fn follow_rule(
    inner: std::sync::Weak<Inner>,
    mut w: registry_core::ConfigWatch,
    stop: CancellationToken,
) {
    loop {
        let v = tokio::select! {
            _ = stop.cancelled() => return,
            v = w.next() => v,
        };
        let Some(v) = v else { return };
        let Some(me) = inner.upgrade() else { return };
        let raw = v.map(|t| t.to_string());
        if me.held.lock().await.raw == raw {
            continue;
        }
        let rule = match raw.as_deref() {
            None => MigrationRule::default(),
            Some(t) if t.trim().is_empty() => MigrationRule::default(),
            Some(t) => match MigrationRule::parse(t) {
                Ok(r) => r,
                Err(e) => {
                    tracing::warn!(error = %e, "unparsable migration rule; the previous rule stays");
                    continue;
                }
            },
        };
        if let Err(e) = Inner::apply(&me, rule, raw).await {
            tracing::warn!(error = %e, "migration failed; the previous step stays");
        }
    }
}

/// `APPLICATION_FIRST`: recomputes the preferred level whenever a directory changes.
async fn follow_preference(inner: std::sync::Weak<Inner>, stop: CancellationToken) {
    loop {
        let Some(me) = inner.upgrade() else { return };
        let c = me.dir.choice.load_full();
        let mut rx: Vec<tokio::sync::watch::Receiver<u64>> = c
            .interface
            .iter()
            .chain(c.app.iter())
            .map(|d| d.watch_changes())
            .collect();
        let threshold = c.threshold;
        if c.step == MigrationStep::ApplicationFirst {
            let prefer_app = match (&c.app, &c.interface) {
                (Some(a), Some(i)) => {
                    should_migrate(a.invoker_count(), i.invoker_count(), threshold)
                }
                (Some(_), None) => true,
                _ => false,
            };
            if prefer_app != c.prefer_app {
                // Only the preference moves; a concurrent migration publishes its own state.
                me.dir.choice.rcu(|cur| {
                    let mut n = (**cur).clone();
                    if cur.step == MigrationStep::ApplicationFirst {
                        n.prefer_app = prefer_app;
                    }
                    n
                });
                tracing::debug!(prefer_app, "application-first preference changed");
            }
        }
        let dirs_changed = me.dirs_changed.clone();
        drop(me);
        let any_dir = async {
            let futs: Vec<_> = rx.iter_mut().map(|r| Box::pin(r.changed())).collect();
            if futs.is_empty() {
                std::future::pending::<()>().await;
            } else {
                let _ = futures::future::select_all(futs).await;
            }
        };
        tokio::select! {
            _ = stop.cancelled() => return,
            _ = any_dir => {}
            _ = dirs_changed.notified() => {}
        }
    }
}
