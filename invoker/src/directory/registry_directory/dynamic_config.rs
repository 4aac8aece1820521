//! The directory's dynamic configurators (routers.md R6.1): override rules from the config
//! centre, next to the registry's `configurators` category.
//!
//! Java 3.3 applies, to every provider URL and to the directory URL, the registry
//! configurators, then `<application>.configurators` (ConsumerConfigurationListener), then
//! `<interface:version:group>.configurators` (ReferenceConfigurationListener); later ones win.
//! Each list is sorted by host, then `priority`.
//!
//! A rule update is parsed with [`crate::directory::config_parser`]; a refused update keeps
//! the previous list (Java logs and returns), a rule that yields no URL keeps it too
//! (`toConfigurators` gives `Optional.empty()`), and only a deleted key clears it.
//!
//! Re-applying is incremental: only the providers that a configurator of the old or the new
//! list may touch ([`Configurator::may_affect`]) are merged again, so a rule about one
//! provider costs O(n) cheap host comparisons plus one merge.

use registry_core::matching::is_empty_url;

use super::super::condition_match::ConditionMatch;
use super::super::config_parser::{parse_configurators, ParsedConfigurator};
use super::{RegistryDirectory, State};
use crate::directory::configurator::Configurator;
use crate::router::RouterError;
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// Which config-centre override rule a value is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ConfiguratorScope {
    /// `<consumer application>.configurators` (applied after the registry's configurators).
    Application,
    /// `<interface:version:group>.configurators` (applied last).
    Service,
}

impl ConfiguratorScope {
    /// The config-centre key (group `dubbo`) of this scope for `consumer`; `None` for the
    /// application scope of a consumer without `application`.
    pub fn config_key(self, consumer: &registry_core::Url) -> Option<String> {
        match self {
            ConfiguratorScope::Application => consumer
                .param("application")
                .filter(|a| !a.is_empty())
                .map(|a| format!("{a}.configurators")),
            ConfiguratorScope::Service => {
                Some(format!("{}.configurators", consumer.colon_separated_key()))
            }
        }
    }
}

/// The three configurator lists and the configurators touched by the last change.
#[derive(Debug, Default)]
pub(super) struct DynamicConfigurators {
    registry: Vec<Configurator>,
    app: Vec<Configurator>,
    service: Vec<Configurator>,
    /// Every configurator of the previous and the new effective list since the last
    /// re-merge: the providers they may affect are the only ones to merge again.
    touched: Vec<Configurator>,
}

impl DynamicConfigurators {
    /// The configurators the last changes may have touched (cleared).
    pub(super) fn take_touched(&mut self) -> Vec<Configurator> {
        std::mem::take(&mut self.touched)
    }
}

impl State {
    /// Replaces the registry-category configurators.
    pub(super) fn set_registry_configurators(&mut self, list: Vec<Configurator>) {
        self.dynamic.registry = list;
        self.rebuild_configurators();
    }

    fn set_scope(&mut self, scope: ConfiguratorScope, list: Vec<Configurator>) {
        match scope {
            ConfiguratorScope::Application => self.dynamic.app = list,
            ConfiguratorScope::Service => self.dynamic.service = list,
        }
        self.rebuild_configurators();
    }

    fn rebuild_configurators(&mut self) {
        let d = &mut self.dynamic;
        let new: Vec<Configurator> = d
            .registry
            .iter()
            .chain(&d.app)
            .chain(&d.service)
            .cloned()
            .collect();
        let old = std::mem::replace(&mut self.configurators, new);
        d.touched.extend(old);
        d.touched.extend(self.configurators.iter().cloned());
    }
}

/// `Configurator.toConfigurators` on a parsed rule: `None` when it yields no URL (keep the
/// previous list); `empty://` clears; URLs without a meaningful parameter are skipped; the
/// listener's removed keys are dropped; sorted by host, then priority.
pub(crate) fn rule_configurators(parsed: &[ParsedConfigurator]) -> Option<Vec<Configurator>> {
    const REMOVED: [&str; 5] = ["accesslog.fixed.path", "router", "rule", "runtime", "type"];
    if parsed.is_empty() {
        return None;
    }
    let mut out: Vec<Configurator> = Vec::with_capacity(parsed.len());
    for p in parsed {
        if is_empty_url(&p.url) {
            out.clear();
            break;
        }
        if !p.url.params().any(|(k, _)| k != "anyhost") {
            continue;
        }
        let url = if REMOVED.iter().any(|k| p.url.has_param(k)) {
            p.url.without_params(&REMOVED)
        } else {
            p.url.clone()
        };
        let cond: Option<Arc<ConditionMatch>> = p.match_condition.clone();
        match Configurator::from_url(&url) {
            Some(c) => out.push(c.with_match(cond)),
            None => tracing::warn!(url = %url, "ignoring configurator with an unknown protocol"),
        }
    }
    out.sort_by(Configurator::apply_order);
    Some(out)
}

impl RegistryDirectory {
    /// Sets (`Some(raw rule)`) or clears (`None`: the key was deleted) the config-centre
    /// override rule of `scope`, then re-applies the configurators to the directory URL and
    /// to the providers they may affect. Returns the number of configurators now in `scope`.
    ///
    /// A refused rule (bad YAML, no `configs`, an item without parameters, ...) logs a
    /// warning naming the key and keeps the previous rules; so does a rule with no URL.
    ///
    /// Errors: the rule was refused (the reason), or the directory is destroyed.
    pub fn set_dynamic_configurators(
        &self,
        scope: ConfiguratorScope,
        raw: Option<&str>,
    ) -> Result<usize, RouterError> {
        if self.destroyed.load(Ordering::Acquire) {
            return Err(RouterError::Destroyed);
        }
        let key = scope.config_key(&self.consumer).unwrap_or_default();
        let list = match raw {
            None => Vec::new(),
            Some(text) => match parse_configurators(text).map(|p| rule_configurators(&p)) {
                Ok(Some(list)) => list,
                Ok(None) => {
                    tracing::warn!(key = %key, "override rule has no configurator; keeping the previous rules");
                    return Ok(self.dynamic_configurators(scope).len());
                }
                Err(e) => {
                    tracing::warn!(key = %key, error = %e, "refused override rule; keeping the previous rules");
                    return Err(e);
                }
            },
        };
        let count = list.len();
        let mut st = self.state.lock();
        st.set_scope(scope, list);
        self.refresh(&mut st, &[], true, false);
        Ok(count)
    }

    /// A token cancelled when the directory is destroyed: tasks serving the directory (the
    /// rule watcher) end with it.
    pub(crate) fn stop_token(&self) -> tokio_util::sync::CancellationToken {
        self.cancel.child_token()
    }

    /// The config-centre configurators of `scope`, in application order.
    pub fn dynamic_configurators(&self, scope: ConfiguratorScope) -> Vec<Configurator> {
        let st = self.state.lock();
        match scope {
            ConfiguratorScope::Application => st.dynamic.app.clone(),
            ConfiguratorScope::Service => st.dynamic.service.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use registry_core::Url;

    use super::ConfiguratorScope::{Application, Service};
    use crate::directory::{Directory, DirectoryOptions, RegistryDirectory};
    use crate::rpc::Invocation;
    use crate::testutil::RecordingFactory;

    const S: &str = "com.foo.DemoService";

    fn u(s: &str) -> Url {
        Url::parse(s).unwrap()
    }

    fn setup() -> (Arc<RegistryDirectory>, Arc<RecordingFactory>) {
        let f = Arc::new(RecordingFactory::default());
        let c = u(&format!(
            "consumer://10.9.9.9/{S}?interface={S}&side=consumer&application=app"
        ));
        let d = RegistryDirectory::new(
            c,
            u("zookeeper://127.0.0.1:2181"),
            f.clone(),
            DirectoryOptions::default(),
        );
        let providers: Vec<Url> = (1..=3)
            .map(|i| {
                u(&format!(
                    "dubbo://10.0.0.{i}:20880/{S}?interface={S}&side=provider&application=prov&timeout=100"
                ))
            })
            .collect();
        d.notify(&providers);
        (d, f)
    }

    fn hosts(d: &RegistryDirectory) -> Vec<String> {
        d.list(&Invocation::new("sayHello"))
            .unwrap()
            .invokers()
            .iter()
            .map(|i| i.url().address().unwrap())
            .collect()
    }

    fn timeouts(d: &RegistryDirectory) -> Vec<String> {
        d.invoker_urls()
            .iter()
            .map(|u| u.param("timeout").unwrap_or("-").to_owned())
            .collect()
    }

    const DISABLE_2: &str = "configVersion: v2.7\nscope: service\nkey: com.foo.DemoService\nconfigs:\n- side: consumer\n  addresses: [0.0.0.0]\n  providerAddresses: ['10.0.0.2:20880']\n  parameters:\n    disabled: true\n";

    #[test]
    fn disable_then_delete_restores() {
        let (d, f) = setup();
        assert_eq!(hosts(&d).len(), 3);
        let referred = f.referred();
        assert_eq!(d.set_dynamic_configurators(Service, Some(DISABLE_2)), Ok(1));
        assert_eq!(hosts(&d), ["10.0.0.1:20880", "10.0.0.3:20880"]);
        // Only the affected provider was merged again (no new invoker for the others).
        assert_eq!(f.referred(), referred);
        d.set_dynamic_configurators(Service, None).unwrap();
        assert_eq!(hosts(&d).len(), 3);
        assert_eq!(
            f.referred(),
            referred + 1,
            "only 10.0.0.2 is referred again"
        );
    }

    #[test]
    fn invalid_update_keeps_previous_until_deleted() {
        let (d, _) = setup();
        d.set_dynamic_configurators(Service, Some(DISABLE_2))
            .unwrap();
        for bad in [
            "configs: [",
            "configVersion: v2.7\nkey: S\n",
            "key: S\nconfigs:\n- addresses: [0.0.0.0]\n",
        ] {
            let e = d.set_dynamic_configurators(Service, Some(bad)).unwrap_err();
            assert!(e.is_bad_rule(), "{e}");
            assert_eq!(hosts(&d).len(), 2, "{bad:?} must change nothing");
        }
        // A rule with no configurator (empty `configs`) keeps the previous rules too.
        d.set_dynamic_configurators(Service, Some("key: S\nconfigs: []\n"))
            .unwrap();
        assert_eq!(hosts(&d).len(), 2);
        d.set_dynamic_configurators(Service, None).unwrap();
        assert_eq!(hosts(&d).len(), 3);
    }

    #[test]
    fn precedence_registry_then_app_then_service() {
        let (d, _) = setup();
        let rule = |scope: &str, key: &str, t: u32| {
            format!("configVersion: v2.7\nscope: {scope}\nkey: {key}\nconfigs:\n- side: consumer\n  parameters:\n    timeout: {t}\n")
        };
        let dir_timeout =
            |d: &RegistryDirectory| d.consumer_url().param("timeout").map(str::to_owned);
        d.notify(&[u(&format!(
            "override://0.0.0.0/{S}?category=configurators&timeout=3"
        ))]);
        assert_eq!(timeouts(&d), ["3", "3", "3"]);
        assert_eq!(dir_timeout(&d).as_deref(), Some("3"));
        // Application scope (`application=app`): the directory URL. Provider URLs carry the
        // provider's application (3.x ServiceAddressURL), so it does not reach them.
        d.set_dynamic_configurators(Application, Some(&rule("application", "app", 1)))
            .unwrap();
        assert_eq!(dir_timeout(&d).as_deref(), Some("1"));
        assert_eq!(timeouts(&d), ["3", "3", "3"]);
        d.set_dynamic_configurators(Service, Some(&rule("service", S, 2)))
            .unwrap();
        assert_eq!(timeouts(&d), ["2", "2", "2"]);
        assert_eq!(dir_timeout(&d).as_deref(), Some("2"));
        // A registry change does not beat the config-centre rules.
        d.notify(&[u(&format!(
            "override://0.0.0.0/{S}?category=configurators&timeout=4"
        ))]);
        assert_eq!(timeouts(&d), ["2", "2", "2"]);
        assert_eq!(dir_timeout(&d).as_deref(), Some("2"));
        d.set_dynamic_configurators(Service, None).unwrap();
        assert_eq!(timeouts(&d), ["4", "4", "4"]);
        assert_eq!(dir_timeout(&d).as_deref(), Some("1"));
        d.set_dynamic_configurators(Application, None).unwrap();
        assert_eq!(dir_timeout(&d).as_deref(), Some("4"));
        // An application rule for another application changes nothing.
        d.set_dynamic_configurators(Application, Some(&rule("application", "other", 9)))
            .unwrap();
        assert_eq!(dir_timeout(&d).as_deref(), Some("4"));
        assert_eq!(timeouts(&d), ["4", "4", "4"]);
    }

    #[test]
    fn provider_side_weight_and_v3_match() {
        let (d, _) = setup();
        let weight = "configVersion: v3.0\nscope: service\nkey: com.foo.DemoService\nconfigs:\n- side: provider\n  addresses: ['10.0.0.3:20880']\n  parameters:\n    weight: 7\n";
        d.set_dynamic_configurators(Service, Some(weight)).unwrap();
        let w: Vec<Option<String>> = d
            .invoker_urls()
            .iter()
            .map(|u| u.param("weight").map(str::to_owned))
            .collect();
        // The merged URL is the consumer side (side=consumer), so a provider-side rule does
        // not apply to it, exactly as in Java 3.x where the consumer's side wins.
        assert!(w.iter().all(Option::is_none), "{w:?}");
        let matched = "configVersion: v3.0\nscope: service\nkey: com.foo.DemoService\nconfigs:\n- side: consumer\n  match:\n    providerAddress: {exact: '10.0.0.3:20880'}\n  parameters:\n    weight: 7\n";
        d.set_dynamic_configurators(Service, Some(matched)).unwrap();
        let w: Vec<Option<String>> = d
            .invoker_urls()
            .iter()
            .map(|u| u.param("weight").map(str::to_owned))
            .collect();
        assert_eq!(w, [None, None, Some("7".to_owned())]);
    }
}
