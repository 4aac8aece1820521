//! The router chain (routers.md R1): Dubbo 3.3's fixed order mock → tag → service →
//! provider-app → app, or 2.7's priority order with registry `condition://` rules.
//!
//! [`RuleSet`] holds the rules the directory was given (by key); [`Chain::build`] picks
//! the ones that apply to the current provider list (the provider application is that of
//! the first provider) and resolves tag addresses. [`Chain::route`] filters provider
//! indices for one call, exactly as Java does on every call.

use std::sync::Arc;

use registry_core::Url;
use rustc_hash::FxHashMap;

use crate::router::condition::Dialect;
use crate::router::condition_rule::ConditionRule;
use crate::router::rule_doc::{is_script_rule, load_rule};
use crate::router::sample::RouteCall;
use crate::router::tag::{self, ResolvedTags, TagRule};
use crate::router::target::Target;
use crate::router::url_rule::UrlCondition;
use crate::router::{RouterError, RuleKey};

/// The rules a directory holds, by config-centre key.
#[derive(Debug, Clone, Default)]
pub struct RuleSet {
    /// `<service key>.condition-router`.
    pub service: Option<Arc<ConditionRule>>,
    /// `<app>.condition-router` by application (consumer or provider).
    pub app: FxHashMap<String, Arc<ConditionRule>>,
    /// `<provider app>.tag-router` by application.
    pub tag: FxHashMap<String, Arc<TagRule>>,
    /// Registry `condition://` URLs (applied in the 2.6/2.7 modes only).
    pub url_rules: Vec<Arc<UrlCondition>>,
}

/// A config-centre rule read and compiled by [`RuleSet::parse`], ready for
/// [`RuleSet::install`].
#[derive(Debug, Clone)]
pub enum ParsedRule {
    /// A condition rule (service or application key).
    Condition(Arc<ConditionRule>),
    /// A tag rule.
    Tag(Arc<TagRule>),
}

impl RuleSet {
    /// Reads and compiles the rule text of `key` (bounded: [`load_rule`]). Pure: call it
    /// before taking any lock, off the async workers.
    ///
    /// Errors: why the rule was refused (over a limit, malformed, unsupported version, no
    /// conditions or tags, a condition or regex that does not parse, a script rule).
    pub fn parse(key: &RuleKey, text: &str, dialect: Dialect) -> Result<ParsedRule, RouterError> {
        let map = load_rule(text)?;
        if is_script_rule(&map) {
            return Err(RouterError::Script);
        }
        Ok(match key {
            RuleKey::ServiceCondition | RuleKey::AppCondition(_) => {
                ParsedRule::Condition(Arc::new(ConditionRule::from_yaml(&map, dialect)?))
            }
            RuleKey::AppTag(_) => ParsedRule::Tag(Arc::new(TagRule::from_yaml(&map)?)),
        })
    }

    /// Sets (`Some`) or removes (`None`) the rule of `key`; returns whether the set changed.
    /// A rule of the other kind than `key` calls for changes nothing.
    pub fn install(&mut self, key: &RuleKey, rule: Option<ParsedRule>) -> bool {
        match (key, rule) {
            (RuleKey::ServiceCondition, None) => self.service.take().is_some(),
            (RuleKey::AppCondition(app), None) => self.app.remove(app).is_some(),
            (RuleKey::AppTag(app), None) => self.tag.remove(app).is_some(),
            (RuleKey::ServiceCondition, Some(ParsedRule::Condition(r))) => {
                self.service = Some(r);
                true
            }
            (RuleKey::AppCondition(app), Some(ParsedRule::Condition(r))) => {
                self.app.insert(app.clone(), r);
                true
            }
            (RuleKey::AppTag(app), Some(ParsedRule::Tag(r))) => {
                self.tag.insert(app.clone(), r);
                true
            }
            (_, Some(_)) => false,
        }
    }

    /// Sets (`Some`) or removes (`None`) the rule of `key` ([`RuleSet::parse`] then
    /// [`RuleSet::install`]). A refused rule leaves the set unchanged (Java's stale-rule
    /// behaviour: the previous rule stays until the key is deleted). Returns whether the set
    /// changed.
    ///
    /// Errors: as [`RuleSet::parse`].
    pub fn apply(
        &mut self,
        key: &RuleKey,
        raw: Option<&str>,
        dialect: Dialect,
    ) -> Result<bool, RouterError> {
        let parsed = match raw {
            Some(text) => Some(Self::parse(key, text, dialect)?),
            None => None,
        };
        Ok(self.install(key, parsed))
    }

    /// True when no rule is set.
    pub fn is_empty(&self) -> bool {
        self.service.is_none()
            && self.app.is_empty()
            && self.tag.is_empty()
            && self.url_rules.is_empty()
    }
}

/// One router of a chain.
#[derive(Debug, Clone)]
pub(crate) enum Stage {
    Tag,
    Condition(Arc<ConditionRule>),
    Url(Arc<UrlCondition>),
}

/// The routers that apply to one provider list, in order.
#[derive(Debug, Clone)]
pub struct Chain {
    dialect: Dialect,
    tag: Option<ResolvedTags>,
    stages: Vec<Stage>,
    call_details: bool,
    method: bool,
    random: bool,
    any_static_tag: bool,
}

/// Which chain a directory runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChainMode {
    /// 3.x: tag, service, provider-app, app; registry `condition://` URLs ignored.
    V3,
    /// 2.7: the same routers with 2.7 matching, plus registry `condition://` URLs sorted
    /// with them by priority (mock -100, tag 100, service 140, app 150).
    V27,
}

impl Chain {
    /// Picks the rules for `targets` (`consumer_app` is the consumer's `application`;
    /// the provider application is that of the first target) and resolves tag addresses.
    pub fn build(
        rules: &RuleSet,
        targets: &[Target],
        consumer_app: &str,
        mode: ChainMode,
        exclude_tag: bool,
    ) -> Chain {
        let dialect = match mode {
            ChainMode::V3 => Dialect::V3,
            ChainMode::V27 => Dialect::V27,
        };
        let provider_app = targets
            .first()
            .map(|t| crate::router::sample::provider_application(&t.raw))
            .unwrap_or("");
        let tag = if provider_app.is_empty() {
            None
        } else {
            rules.tag.get(provider_app).map(|r| r.resolve(targets))
        };
        let mut staged: Vec<(i32, Stage)> = Vec::new();
        if !exclude_tag {
            staged.push((100, Stage::Tag));
        }
        if let Some(s) = &rules.service {
            staged.push((140, Stage::Condition(s.clone())));
        }
        if !provider_app.is_empty() && provider_app != consumer_app && mode == ChainMode::V3 {
            if let Some(r) = rules.app.get(provider_app) {
                staged.push((145, Stage::Condition(r.clone())));
            }
        }
        if !consumer_app.is_empty() {
            if let Some(r) = rules.app.get(consumer_app) {
                staged.push((150, Stage::Condition(r.clone())));
            }
        }
        if mode == ChainMode::V27 {
            let mut urls = rules.url_rules.clone();
            urls.sort_by(|a, b| {
                a.priority
                    .cmp(&b.priority)
                    .then_with(|| a.full.cmp(&b.full))
            });
            for u in urls {
                staged.push((u.priority, Stage::Url(u)));
            }
            staged.sort_by_key(|(p, _)| *p);
        }
        let stages: Vec<Stage> = staged.into_iter().map(|(_, s)| s).collect();
        let mut call_details = false;
        let mut method = false;
        let mut random = false;
        for s in &stages {
            match s {
                Stage::Tag => {}
                Stage::Condition(r) => {
                    call_details |= r.reads_call_details();
                    method |= r.reads_method();
                    random |= r.is_random();
                }
                Stage::Url(u) => {
                    call_details |= u.router.reads_call_details();
                    method |= u.router.parsed().when.values().any(|m| m.reads_method());
                }
            }
        }
        Chain {
            dialect,
            tag,
            stages,
            call_details,
            method,
            random,
            any_static_tag: targets.iter().any(|t| t.tag.is_some()),
        }
    }

    /// True when the result may differ between calls with the same method and request tag
    /// (arguments or attachments read, or a random multi-destination pick).
    pub fn is_per_call(&self) -> bool {
        self.call_details || self.random
    }

    /// True when the result depends on the method name.
    pub fn reads_method(&self) -> bool {
        self.method
    }

    /// True when routing can only return the input unchanged, except for a forced request
    /// tag that no provider has (no rules, no static tags).
    pub fn is_trivial(&self) -> bool {
        self.tag.is_none()
            && !self.any_static_tag
            && self.stages.iter().all(|s| matches!(s, Stage::Tag))
    }

    /// True when the tag router is in the chain (not excluded by the consumer's `router`).
    pub fn has_tag_stage(&self) -> bool {
        self.stages.iter().any(|s| matches!(s, Stage::Tag))
    }

    /// The condition-matching dialect.
    pub(crate) fn dialect(&self) -> Dialect {
        self.dialect
    }

    /// The tag rule resolved for the providers, if any.
    pub(crate) fn resolved_tags(&self) -> Option<&ResolvedTags> {
        self.tag.as_ref()
    }

    /// The routers, in order.
    pub(crate) fn stages(&self) -> &[Stage] {
        &self.stages
    }

    /// Routes `input` (indices into `targets`, in order) for one call. `pick(sum)` draws
    /// the multi-destination random number in `[0, sum)`.
    pub fn route(
        &self,
        targets: &[Target],
        input: &mut Vec<u32>,
        consumer: &Url,
        call: &RouteCall<'_>,
        pick: &mut dyn FnMut(i64) -> i64,
    ) {
        for s in &self.stages {
            if input.is_empty() {
                return;
            }
            match s {
                Stage::Tag => {
                    let (t, force) = tag::request_tag(consumer, call);
                    tag::route(self.tag.as_ref(), targets, input, t, force, self.dialect);
                }
                Stage::Condition(r) => r.route(targets, input, consumer, call, pick),
                Stage::Url(u) => u.router.route(targets, input, consumer, call),
            }
        }
    }
}
