//! The condition router (`ConditionStateRouter`, routers.md R2): one `when => then` rule.
//!
//! [`parse`] turns the text into matchers, [`matcher`] reads sample values and
//! `pattern.rs` compares them; [`ConditionRouter::route`] applies the rule to a list of
//! providers. A rule whose when-part reads `arguments[i]` or `attachments[k]` depends on the
//! whole call ([`ConditionRouter::reads_call_details`]); otherwise only on the method name.

pub(crate) mod matcher;
pub(crate) mod multi_dest;
pub(crate) mod parse;
pub(crate) mod pattern;

use registry_core::Url;

use self::parse::{parse_condition, Parsed, Side};
use std::sync::Arc;

use self::matcher::MatcherKind;
use crate::router::bits::Bits;
use crate::router::fields::{Column, TargetFields};
use crate::router::sample::RouteCall;
use crate::router::target::Target;
use crate::router::RouterError;

/// Which Java generation's matching rules to follow (R2.3 vs R2.4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Dialect {
    /// 3.x: absent values fail `!=`, attachment matcher, ranges, the not-found sentinel.
    #[default]
    V3,
    /// 2.7/2.6: absent values pass `!=`, no attachments or ranges, missing argument = false.
    V27,
}

/// One condition rule with its `force` and `enabled` flags.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConditionRouter {
    parsed: Parsed,
    force: bool,
    enabled: bool,
    dialect: Dialect,
}

/// Does every matcher of `side` match `sample`? An empty side does not.
pub(crate) fn match_side(
    side: &Side,
    sample: &Url,
    param: Option<&Url>,
    call: Option<&RouteCall<'_>>,
    is_when: bool,
    dialect: Dialect,
) -> bool {
    let mut result = false;
    for m in side.values() {
        if m.is_match(sample, param, call, is_when, dialect) {
            result = true;
        } else {
            return false;
        }
    }
    result
}

/// The providers of `targets` on which every matcher of the then-part `side` matches (what
/// [`match_side`] answers for each of them, with `consumer` as the `$` reference URL). Each
/// key is read through `fields` (once per provider list) and matched once per distinct
/// value.
pub(crate) fn side_mask(
    side: &Side,
    targets: &[Target],
    fields: &TargetFields,
    consumer: &Url,
    dialect: Dialect,
) -> Bits {
    enum Test {
        Const(bool),
        Col(Arc<Column>, Vec<bool>),
    }
    let n = targets.len();
    if side.is_empty() {
        return Bits::from_fn(n, |_| false);
    }
    let mut tests = Vec::with_capacity(side.len());
    for m in side.values() {
        if m.kind == MatcherKind::Param {
            let col = fields.column(&m.key, targets);
            let ok = col
                .values
                .iter()
                .map(|v| m.is_match_value(v.as_deref(), Some(consumer), false, dialect))
                .collect();
            tests.push(Test::Col(col, ok));
        } else {
            // Attachments and arguments are not in a provider URL: the same for all.
            let v = m.then_value(consumer, dialect);
            let ok = m.is_match_value(v.as_deref(), Some(consumer), false, dialect);
            if !ok {
                return Bits::from_fn(n, |_| false);
            }
            tests.push(Test::Const(ok));
        }
    }
    Bits::from_fn(n, |i| {
        tests.iter().all(|t| match t {
            Test::Const(b) => *b,
            Test::Col(c, ok) => c
                .ids
                .get(i)
                .and_then(|&id| ok.get(id as usize))
                .copied()
                .unwrap_or(false),
        })
    })
}

impl ConditionRouter {
    /// Parses `rule` (only when `enabled`, as Java does).
    ///
    /// Errors: see [`parse_condition`].
    pub fn new(
        rule: &str,
        force: bool,
        enabled: bool,
        dialect: Dialect,
    ) -> Result<Self, RouterError> {
        // Java parses the rule only when enabled: a disabled rule is never refused.
        let parsed = if enabled {
            parse_condition(rule, dialect)?
        } else {
            Parsed {
                rewritten: rule.to_owned(),
                when: Side::new(),
                then: Some(Side::new()),
            }
        };
        Ok(ConditionRouter {
            parsed,
            force,
            enabled,
            dialect,
        })
    }

    /// The parsed rule.
    pub fn parsed(&self) -> &Parsed {
        &self.parsed
    }

    /// True when the when-part reads call arguments or attachments.
    pub fn reads_call_details(&self) -> bool {
        self.parsed.when.values().any(|m| m.reads_call_details())
    }

    /// `matchWhen`: an empty when-part matches every call.
    pub fn match_when(&self, consumer: &Url, call: &RouteCall<'_>) -> bool {
        self.parsed.when.is_empty()
            || match_side(
                &self.parsed.when,
                consumer,
                None,
                Some(call),
                true,
                self.dialect,
            )
    }

    /// Filters `input` (indices into `targets`, kept in order): disabled, empty input or a
    /// when-part that does not match → unchanged; blocklist → empty; otherwise the providers
    /// matching the then-part, or, when none does, empty with `force` and unchanged without.
    pub fn route(
        &self,
        targets: &[Target],
        input: &mut Vec<u32>,
        consumer: &Url,
        call: &RouteCall<'_>,
    ) {
        self.route_by(input, consumer, call, |then, i| {
            match_side(
                then,
                &targets[i as usize].sample,
                Some(consumer),
                None,
                false,
                self.dialect,
            )
        });
    }

    /// [`ConditionRouter::route`] with the then-part test given: `then_ok(then, i)` must be
    /// what matching `then` against provider `i` gives (a precomputed [`Bits`] in the
    /// directory).
    pub(crate) fn route_by(
        &self,
        input: &mut Vec<u32>,
        consumer: &Url,
        call: &RouteCall<'_>,
        then_ok: impl Fn(&Side, u32) -> bool,
    ) {
        if !self.enabled || input.is_empty() || !self.match_when(consumer, call) {
            return;
        }
        let Some(then) = &self.parsed.then else {
            input.clear();
            return;
        };
        let any = input.iter().any(|&i| then_ok(then, i));
        if !any {
            if self.force {
                input.clear();
            }
            return;
        }
        input.retain(|&i| then_ok(then, i));
    }

    /// The providers of `targets` matching the then-part (`None` when the rule is disabled
    /// or has no then-part: the mask is never read). `consumer` resolves `$` references.
    pub(crate) fn then_mask(
        &self,
        targets: &[Target],
        fields: &TargetFields,
        consumer: &Url,
    ) -> Option<Bits> {
        let then = self.parsed.then.as_ref().filter(|_| self.enabled)?;
        Some(side_mask(then, targets, fields, consumer, self.dialect))
    }
}
