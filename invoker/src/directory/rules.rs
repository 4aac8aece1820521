//! [`RuleWatcher`]: follows a reference's governance rules in a config centre and feeds its
//! [`RegistryDirectory`] (Dubbo's router and configurator listeners, routers.md R3.1/R4.1/R6.1).
//!
//! ```text
//! ConfigCenter (zk | nacos | memory), group `dubbo`
//!   <consumer app>.condition-router      -> set_router_rule(AppCondition(app))
//!   <interface:version:group>.condition-router -> set_router_rule(ServiceCondition)
//!   <provider app>.tag-router            -> set_router_rule(AppTag(provider app))
//!   <provider app>.condition-router      -> set_router_rule(AppCondition(provider app))
//!   <interface:version:group>.configurators -> set_dynamic_configurators(Service)
//!   <consumer app>.configurators         -> set_dynamic_configurators(Application)
//! ```
//!
//! One task per key applies every value in order (`None` = the key was deleted, which clears
//! that rule). A value is read and compiled on a blocking thread (`spawn_blocking`), never on
//! an async worker, one value at a time in the process (a rule's cost is bounded:
//! [`registry_core::rule_yaml`], so is the memory of the one in progress). A refused value
//! keeps the previous rule; the directory logs one warning naming the key, and the same text
//! delivered again (a re-read after a reconnect) is not read again. Provider applications come from the directory
//! ([`RegistryDirectory::watch_provider_applications`]): their keys are followed while the
//! application is in the provider list and their rules are cleared when it leaves.
//!
//! Everything stops when the [`RuleWatcher`] is dropped, when the directory is destroyed or
//! dropped, or when the config centre's watch ends.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;

use registry_core::backoff::Backoff;
use registry_core::{ConfigWatch, SharedConfigCenter, Url};
use tokio::sync::oneshot;
use tokio_util::sync::{CancellationToken, DropGuard};

use super::{ConfiguratorScope, Directory, RegistryDirectory};
use crate::router::{RuleKey, CONDITION_SUFFIX, RULE_GROUP, TAG_SUFFIX};

/// What a config-centre key feeds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum RuleTarget {
    /// A routing rule.
    Router(RuleKey),
    /// An override rule.
    Configurators(ConfiguratorScope),
}

/// The keys (group `dubbo`) a consumer follows, before provider applications are known:
/// its application's condition rule and configurators (when it has an application) and its
/// service's condition rule and configurators.
pub(crate) fn consumer_rule_keys(consumer: &Url) -> Vec<(String, RuleTarget)> {
    let mut keys = Vec::with_capacity(4);
    let app = consumer.param("application").filter(|a| !a.is_empty());
    if let Some(app) = app {
        keys.push((
            format!("{app}{CONDITION_SUFFIX}"),
            RuleTarget::Router(RuleKey::AppCondition(app.to_owned())),
        ));
    }
    keys.push((
        RuleKey::ServiceCondition.config_key(consumer),
        RuleTarget::Router(RuleKey::ServiceCondition),
    ));
    for scope in [ConfiguratorScope::Service, ConfiguratorScope::Application] {
        if let Some(k) = scope.config_key(consumer) {
            keys.push((k, RuleTarget::Configurators(scope)));
        }
    }
    keys
}

/// The keys of a provider application: its tag rule, and its condition rule unless it is the
/// consumer's own application (then the consumer's key already covers it).
pub(crate) fn provider_app_rule_keys(
    app: &str,
    consumer_app: Option<&str>,
) -> Vec<(String, RuleTarget)> {
    let mut keys = vec![(
        format!("{app}{TAG_SUFFIX}"),
        RuleTarget::Router(RuleKey::AppTag(app.to_owned())),
    )];
    if consumer_app != Some(app) {
        keys.push((
            format!("{app}{CONDITION_SUFFIX}"),
            RuleTarget::Router(RuleKey::AppCondition(app.to_owned())),
        ));
    }
    keys
}

/// Follows the rules of one directory; stops when dropped.
#[derive(Debug)]
pub struct RuleWatcher {
    seen: Arc<AtomicU64>,
    _stop: DropGuard,
}

impl RuleWatcher {
    /// Starts following the rules of `dir` in `cc`, and waits (at most `initial_wait`) until
    /// the current value of every key known now was applied, so that the first calls already
    /// see the rules, as a Java reference does. Keys that could not be read in time keep
    /// being retried in the background.
    ///
    /// Must be called within a Tokio runtime.
    pub async fn start(
        cc: SharedConfigCenter,
        dir: &Arc<RegistryDirectory>,
        initial_wait: Duration,
    ) -> RuleWatcher {
        let stop = CancellationToken::new();
        let seen = Arc::new(AtomicU64::new(0));
        let dir_stop = dir.stop_token();
        let consumer = dir.consumer_url();
        let consumer_app = consumer
            .param("application")
            .filter(|a| !a.is_empty())
            .map(str::to_owned);
        let weak = Arc::downgrade(dir);
        let mut firsts = Vec::new();
        for (key, target) in consumer_rule_keys(&consumer) {
            let (tx, rx) = oneshot::channel();
            firsts.push(rx);
            let task = KeyTask {
                cc: cc.clone(),
                key,
                target,
                dir: weak.clone(),
                stop: stop.clone(),
                dir_stop: dir_stop.clone(),
                seen: seen.clone(),
            };
            tokio::spawn(task.run(Some(tx)));
        }
        let apps_rx = dir.watch_provider_applications();
        let mut running = HashMap::new();
        let initial: Vec<String> = apps_rx.borrow().clone();
        for app in initial {
            let token = stop.child_token();
            for (key, target) in provider_app_rule_keys(&app, consumer_app.as_deref()) {
                let (tx, rx) = oneshot::channel();
                firsts.push(rx);
                let task = KeyTask {
                    cc: cc.clone(),
                    key,
                    target,
                    dir: weak.clone(),
                    stop: token.clone(),
                    dir_stop: dir_stop.clone(),
                    seen: seen.clone(),
                };
                tokio::spawn(task.run(Some(tx)));
            }
            running.insert(app, token);
        }
        let apps = ProviderApps {
            cc,
            dir: weak,
            stop: stop.clone(),
            dir_stop,
            consumer_app,
            running,
            seen: seen.clone(),
        };
        tokio::spawn(apps.run(apps_rx));
        let all = futures::future::join_all(firsts);
        if tokio::time::timeout(initial_wait, all).await.is_err() {
            tracing::warn!(
                consumer = %consumer,
                ?initial_wait,
                "not every governance rule could be read in time; retrying in the background"
            );
        }
        RuleWatcher {
            seen,
            _stop: stop.drop_guard(),
        }
    }

    /// Number of values taken from the config centre and handed to the directory so far
    /// (applied or refused), over every key: lets callers wait until an update was handled.
    pub fn values_seen(&self) -> u64 {
        self.seen.load(Ordering::Acquire)
    }
}

/// What applying one value did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Applied {
    Done,
    /// Refused (the directory logged why); the previous rule stays.
    Refused,
    /// The directory is gone.
    Gone,
}

/// Applies one value to the directory (which logs a refusal).
fn apply(dir: &RegistryDirectory, key: &str, target: &RuleTarget, value: Option<&str>) -> Applied {
    let r = match target {
        RuleTarget::Router(k) => dir.set_router_rule(k.clone(), value).map(|_| ()),
        RuleTarget::Configurators(scope) => {
            dir.set_dynamic_configurators(*scope, value).map(|_| ())
        }
    };
    match r {
        Ok(()) => {
            tracing::debug!(key, deleted = value.is_none(), "governance rule applied");
            Applied::Done
        }
        Err(crate::router::RouterError::Destroyed) => Applied::Gone,
        Err(_) => Applied::Refused,
    }
}

/// One rule value read at a time in the process: what a value may cost is bounded, and so is
/// the memory of all of them.
static PARSING: tokio::sync::Semaphore = tokio::sync::Semaphore::const_new(1);

/// [`apply`] on a blocking thread, one at a time in the process.
async fn apply_off_worker(
    dir: Arc<RegistryDirectory>,
    key: &str,
    target: &RuleTarget,
    value: Option<Arc<str>>,
) -> Applied {
    let Ok(_permit) = PARSING.acquire().await else {
        return Applied::Gone;
    };
    let (k, t) = (key.to_owned(), target.clone());
    match tokio::task::spawn_blocking(move || apply(&dir, &k, &t, value.as_deref())).await {
        Ok(applied) => applied,
        Err(e) => {
            tracing::error!(key, error = %e, "governance rule task failed; keeping the previous rule");
            Applied::Refused
        }
    }
}

struct KeyTask {
    cc: SharedConfigCenter,
    key: String,
    target: RuleTarget,
    dir: Weak<RegistryDirectory>,
    stop: CancellationToken,
    dir_stop: CancellationToken,
    seen: Arc<AtomicU64>,
}

impl KeyTask {
    async fn watch(&self) -> Option<ConfigWatch> {
        let mut backoff =
            Backoff::exponential(Duration::from_millis(200), Duration::from_secs(5)).attempts();
        let mut warned = false;
        loop {
            match self.cc.watch(&self.key, RULE_GROUP).await {
                Ok(w) => return Some(w),
                Err(e) => {
                    if !warned {
                        tracing::warn!(key = %self.key, error = %e, "cannot watch governance rule; retrying");
                        warned = true;
                    }
                }
            }
            tokio::select! {
                _ = self.stop.cancelled() => return None,
                _ = self.dir_stop.cancelled() => return None,
                _ = tokio::time::sleep(backoff.next_delay()) => {}
            }
        }
    }

    async fn run(self, mut first: Option<oneshot::Sender<()>>) {
        let Some(mut w) = self.watch().await else {
            return;
        };
        // The last value refused, while it is the key's value.
        let mut refused: Option<Arc<str>> = None;
        loop {
            let next = tokio::select! {
                _ = self.stop.cancelled() => return,
                _ = self.dir_stop.cancelled() => return,
                v = w.next() => v,
            };
            // The config centre is gone: nothing more will come.
            let Some(value) = next else { return };
            let Some(dir) = self.dir.upgrade() else {
                return;
            };
            let applied = match &value {
                Some(text) if refused.as_ref() == Some(text) => {
                    tracing::debug!(key = %self.key, "the refused governance rule was delivered again; still refused");
                    Applied::Refused
                }
                _ => apply_off_worker(dir, &self.key, &self.target, value.clone()).await,
            };
            refused = match applied {
                Applied::Refused => value,
                _ => None,
            };
            self.seen.fetch_add(1, Ordering::AcqRel);
            if applied == Applied::Gone {
                return;
            }
            if let Some(tx) = first.take() {
                let _ = tx.send(());
            }
        }
    }
}

struct ProviderApps {
    cc: SharedConfigCenter,
    dir: Weak<RegistryDirectory>,
    stop: CancellationToken,
    dir_stop: CancellationToken,
    consumer_app: Option<String>,
    running: HashMap<String, CancellationToken>,
    seen: Arc<AtomicU64>,
}

impl ProviderApps {
    async fn run(mut self, mut rx: tokio::sync::watch::Receiver<Vec<String>>) {
        loop {
            tokio::select! {
                _ = self.stop.cancelled() => return,
                _ = self.dir_stop.cancelled() => return,
                r = rx.changed() => if r.is_err() { return },
            }
            let apps: Vec<String> = rx.borrow_and_update().clone();
            let gone: Vec<String> = self
                .running
                .keys()
                .filter(|a| !apps.contains(a))
                .cloned()
                .collect();
            for app in gone {
                if let Some(t) = self.running.remove(&app) {
                    t.cancel();
                }
                let Some(dir) = self.dir.upgrade() else {
                    return;
                };
                for (key, target) in provider_app_rule_keys(&app, self.consumer_app.as_deref()) {
                    apply(&dir, &key, &target, None);
                }
            }
            for app in apps {
                if self.running.contains_key(&app) {
                    continue;
                }
                let token = self.stop.child_token();
                for (key, target) in provider_app_rule_keys(&app, self.consumer_app.as_deref()) {
                    let task = KeyTask {
                        cc: self.cc.clone(),
                        key,
                        target,
                        dir: self.dir.clone(),
                        stop: token.clone(),
                        dir_stop: self.dir_stop.clone(),
                        seen: self.seen.clone(),
                    };
                    tokio::spawn(task.run(None));
                }
                self.running.insert(app, token);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_of_a_consumer() {
        let c = Url::parse(
            "consumer://1.2.3.4/com.foo.Svc?interface=com.foo.Svc&application=shop&version=1.0.0",
        )
        .unwrap();
        let keys: Vec<String> = consumer_rule_keys(&c).into_iter().map(|(k, _)| k).collect();
        assert_eq!(
            keys,
            [
                "shop.condition-router",
                "com.foo.Svc:1.0.0:.condition-router",
                "com.foo.Svc:1.0.0:.configurators",
                "shop.configurators"
            ]
        );
        let keys: Vec<String> = provider_app_rule_keys("shop", Some("shop"))
            .into_iter()
            .map(|(k, _)| k)
            .collect();
        assert_eq!(keys, ["shop.tag-router"]);
        let keys: Vec<String> = provider_app_rule_keys("prov", Some("shop"))
            .into_iter()
            .map(|(k, _)| k)
            .collect();
        assert_eq!(keys, ["prov.tag-router", "prov.condition-router"]);
        let anon = Url::parse("consumer://1.2.3.4/S?interface=S").unwrap();
        let keys: Vec<String> = consumer_rule_keys(&anon)
            .into_iter()
            .map(|(k, _)| k)
            .collect();
        assert_eq!(keys, ["S::.condition-router", "S::.configurators"]);
    }
}
