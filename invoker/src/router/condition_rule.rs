//! [`ConditionRule`]: a compiled YAML condition rule (v3.0 list or v3.1 multi-destination),
//! as `ListenableStateRouter` applies it (routers.md R3.3).

use registry_core::Url;

use crate::router::bits::Bits;
use crate::router::condition::multi_dest::MultiDestRouter;
use crate::router::condition::{ConditionRouter, Dialect};
use crate::router::fields::TargetFields;
use crate::router::rule_doc::{
    condition_doc, config_version_of, load_rule, ConditionBody, ConditionDoc,
};
use crate::router::sample::RouteCall;
use crate::router::target::Target;
use crate::router::RouterError;
use registry_core::rule_yaml::Yaml;

#[derive(Debug, Clone, PartialEq, Eq)]
enum Compiled {
    V30(Vec<ConditionRouter>),
    V31(Vec<MultiDestRouter>),
}

/// A condition rule ready to route.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConditionRule {
    doc: ConditionDoc,
    compiled: Compiled,
}

impl ConditionRule {
    /// Parses and compiles a YAML condition rule.
    ///
    /// Errors: malformed YAML or fields, a version above v3.1
    /// ([`RouterError::UnsupportedVersion`]), no conditions ([`RouterError::Empty`]), a
    /// condition that does not parse. Any error means the rule must not be applied (the
    /// previous one stays).
    pub fn parse(raw: &str, dialect: Dialect) -> Result<ConditionRule, RouterError> {
        Self::from_yaml(&load_rule(raw)?, dialect)
    }

    /// [`ConditionRule::parse`] of a document already read with [`load_rule`].
    ///
    /// Errors: as [`ConditionRule::parse`].
    pub fn from_yaml(map: &Yaml, dialect: Dialect) -> Result<ConditionRule, RouterError> {
        let doc = match condition_doc(map)? {
            Some(d) => d,
            None => {
                let v = config_version_of(map).unwrap_or_default();
                return Err(RouterError::UnsupportedVersion(v));
            }
        };
        Self::compile(doc, dialect)
    }

    /// Compiles a parsed document.
    ///
    /// Errors: as [`ConditionRule::parse`].
    pub fn compile(doc: ConditionDoc, dialect: Dialect) -> Result<ConditionRule, RouterError> {
        if !doc.common.valid {
            return Err(RouterError::Empty(
                "a condition rule needs conditions".into(),
            ));
        }
        let (force, enabled) = (doc.common.force, doc.common.enabled);
        let compiled = match &doc.body {
            ConditionBody::V30(conds) => Compiled::V30(
                conds
                    .iter()
                    .map(|c| ConditionRouter::new(c, force, enabled, dialect))
                    .collect::<Result<_, _>>()?,
            ),
            ConditionBody::V31(specs) => Compiled::V31(
                specs
                    .iter()
                    .map(|s| {
                        MultiDestRouter::new(s.from.as_deref(), &s.to, force, enabled, dialect)
                    })
                    .collect::<Result<_, _>>()?,
            ),
        };
        Ok(ConditionRule { doc, compiled })
    }

    /// The document.
    pub fn doc(&self) -> &ConditionDoc {
        &self.doc
    }

    /// True when some when-part reads call arguments or attachments.
    pub fn reads_call_details(&self) -> bool {
        match &self.compiled {
            Compiled::V30(rs) => rs.iter().any(ConditionRouter::reads_call_details),
            Compiled::V31(rs) => rs.iter().any(MultiDestRouter::reads_call_details),
        }
    }

    /// True when some when-part reads the method name.
    pub fn reads_method(&self) -> bool {
        match &self.compiled {
            Compiled::V30(rs) => rs
                .iter()
                .any(|r| r.parsed().when.values().any(|m| m.reads_method())),
            Compiled::V31(_) => true,
        }
    }

    /// True when routing may pick at random.
    pub fn is_random(&self) -> bool {
        matches!(&self.compiled, Compiled::V31(rs) if rs.iter().any(MultiDestRouter::is_random))
    }

    /// Applies the conditions in order, each on the previous output; an empty intermediate
    /// result stays empty.
    pub fn route(
        &self,
        targets: &[Target],
        input: &mut Vec<u32>,
        consumer: &Url,
        call: &RouteCall<'_>,
        pick: &mut dyn FnMut(i64) -> i64,
    ) {
        match &self.compiled {
            Compiled::V30(rs) => {
                for r in rs {
                    r.route(targets, input, consumer, call);
                    if input.is_empty() {
                        return;
                    }
                }
            }
            Compiled::V31(rs) => {
                for r in rs {
                    r.route(targets, input, consumer, call, pick);
                    if input.is_empty() {
                        return;
                    }
                }
            }
        }
    }

    /// The then-part masks of every condition of the rule over `targets` (for
    /// [`ConditionRule::route_masked`]).
    pub(crate) fn masks(
        &self,
        targets: &[Target],
        fields: &TargetFields,
        consumer: &Url,
    ) -> RuleMasks {
        RuleMasks(match &self.compiled {
            Compiled::V30(rs) => rs
                .iter()
                .map(|r| vec![r.then_mask(targets, fields, consumer)])
                .collect(),
            Compiled::V31(rs) => rs
                .iter()
                .map(|r| r.dest_masks(targets, fields, consumer))
                .collect(),
        })
    }

    /// [`ConditionRule::route`] over the targets `masks` was computed for (same answers; the
    /// then-parts are bit tests).
    pub(crate) fn route_masked(
        &self,
        masks: &RuleMasks,
        input: &mut Vec<u32>,
        consumer: &Url,
        call: &RouteCall<'_>,
        pick: &mut dyn FnMut(i64) -> i64,
    ) {
        let bit = |r: usize, d: usize, i: u32| {
            masks
                .0
                .get(r)
                .and_then(|m| m.get(d))
                .and_then(Option::as_ref)
                .is_some_and(|b| b.get(i))
        };
        match &self.compiled {
            Compiled::V30(rs) => {
                for (ri, r) in rs.iter().enumerate() {
                    r.route_by(input, consumer, call, |_, i| bit(ri, 0, i));
                    if input.is_empty() {
                        return;
                    }
                }
            }
            Compiled::V31(rs) => {
                for (ri, r) in rs.iter().enumerate() {
                    r.route_by(input, consumer, call, pick, |d, _, i| bit(ri, d, i));
                    if input.is_empty() {
                        return;
                    }
                }
            }
        }
    }
}

/// Per condition of a rule, per destination (one for v3.0), the providers its then-part
/// matches; `None` where the mask is never read.
#[derive(Debug, Clone, Default)]
pub(crate) struct RuleMasks(Vec<Vec<Option<Bits>>>);
