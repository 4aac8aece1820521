//! v3.1 multi-destination conditions (`MultiDestConditionRouter`, routers.md R3.3).

use registry_core::Url;

use super::parse::{parse_side, Side};
use super::{match_side, side_mask, Dialect};
use crate::keys::DEFAULT_WEIGHT;
use crate::router::bits::Bits;
use crate::router::fields::TargetFields;
use crate::router::sample::RouteCall;
use crate::router::target::Target;
use crate::router::RouterError;

/// One `to` entry: the providers matching `cond` (empty = every provider), with a weight.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Destination {
    /// The then-part; empty matches every provider.
    pub cond: Side,
    /// The subset weight (≤ 0 or absent = 100).
    pub weight: i64,
}

/// One `from`/`to` condition of a v3.1 rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct MultiDestRouter {
    when: Side,
    to: Vec<Destination>,
    force: bool,
    enabled: bool,
    dialect: Dialect,
}

impl MultiDestRouter {
    /// Builds the router of one condition: `from_match` (blank or `true` = every call) and
    /// the `to` entries as `(match, weight)`.
    ///
    /// Errors: a match that does not parse.
    pub(crate) fn new(
        from_match: Option<&str>,
        to: &[(Option<String>, i64)],
        force: bool,
        enabled: bool,
        dialect: Dialect,
    ) -> Result<Self, RouterError> {
        let side = |text: &str| -> Result<Side, RouterError> {
            parse_side(text, dialect).map_err(|reason| RouterError::Condition {
                condition: text.to_owned(),
                reason,
            })
        };
        let when = match from_match.map(str::trim) {
            None | Some("") | Some("true") => Side::new(),
            Some(w) => side(w)?,
        };
        let mut dests = Vec::with_capacity(to.len());
        for (m, w) in to {
            let cond = match m.as_deref().map(str::trim) {
                None | Some("") | Some("false") => Side::new(),
                Some(t) => side(t)?,
            };
            let weight = if *w <= 0 {
                i64::from(DEFAULT_WEIGHT)
            } else {
                *w
            };
            dests.push(Destination { cond, weight });
        }
        Ok(MultiDestRouter {
            when,
            to: dests,
            force,
            enabled,
            dialect,
        })
    }

    /// True when the `from` part reads call arguments or attachments.
    pub(crate) fn reads_call_details(&self) -> bool {
        self.when.values().any(|m| m.reads_call_details())
    }

    /// True when routing may pick at random (several destinations).
    pub(crate) fn is_random(&self) -> bool {
        self.to.len() > 1
    }

    /// Filters `input`. `pick(sum)` returns a number in `[0, sum)` (Java
    /// `ThreadLocalRandom.nextLong(sum)`); it is called only when several destinations
    /// are non-empty.
    pub(crate) fn route(
        &self,
        targets: &[Target],
        input: &mut Vec<u32>,
        consumer: &Url,
        call: &RouteCall<'_>,
        pick: &mut dyn FnMut(i64) -> i64,
    ) {
        self.route_by(input, consumer, call, pick, |_, cond, i| {
            match_side(
                cond,
                &targets[i as usize].sample,
                Some(consumer),
                None,
                false,
                self.dialect,
            )
        });
    }

    /// [`MultiDestRouter::route`] with the destination test given: `dest_ok(d, cond, i)`
    /// must be what matching `cond` (the non-empty condition of destination `d`) against
    /// provider `i` gives.
    pub(crate) fn route_by(
        &self,
        input: &mut Vec<u32>,
        consumer: &Url,
        call: &RouteCall<'_>,
        pick: &mut dyn FnMut(i64) -> i64,
        dest_ok: impl Fn(usize, &Side, u32) -> bool,
    ) {
        if !self.enabled || input.is_empty() {
            return;
        }
        if !self.when.is_empty()
            && !match_side(&self.when, consumer, None, Some(call), true, self.dialect)
        {
            return;
        }
        if self.to.is_empty() {
            input.clear();
            return;
        }
        let mut candidates: Vec<(i64, Vec<u32>)> = Vec::new();
        for (di, d) in self.to.iter().enumerate() {
            let subset: Vec<u32> = if d.cond.is_empty() {
                input.clone()
            } else {
                input
                    .iter()
                    .copied()
                    .filter(|&i| dest_ok(di, &d.cond, i))
                    .collect()
            };
            if !subset.is_empty() {
                candidates.push((d.weight, subset));
            }
        }
        match candidates.len() {
            0 => {
                if self.force {
                    input.clear();
                }
            }
            1 => *input = candidates.swap_remove(0).1,
            _ => {
                let sum: i64 = candidates.iter().map(|(w, _)| *w).sum();
                let mut r = pick(sum);
                for (w, subset) in candidates {
                    r -= w;
                    if r <= 0 {
                        *input = subset;
                        return;
                    }
                }
                input.clear();
            }
        }
    }

    /// Per destination, the providers of `targets` matching its condition (`None` for an
    /// empty condition, which matches every provider, and for a disabled rule).
    pub(crate) fn dest_masks(
        &self,
        targets: &[Target],
        fields: &TargetFields,
        consumer: &Url,
    ) -> Vec<Option<Bits>> {
        self.to
            .iter()
            .map(|d| {
                (self.enabled && !d.cond.is_empty())
                    .then(|| side_mask(&d.cond, targets, fields, consumer, self.dialect))
            })
            .collect()
    }
}
