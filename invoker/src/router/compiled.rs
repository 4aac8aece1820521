//! [`CompiledChain`]: a [`Chain`] prepared for one provider list and consumer.
//!
//! What a rule's then-part (or a tag's address list) says about a provider does not depend
//! on the call, so it is computed once per provider when the chain is compiled (a bit set
//! per condition, destination and tag group). Routing a call then runs the chain exactly
//! as [`Chain::route`] does, with bit tests in place of URL matching: the answers are the
//! same, the cost per provider is a few nanoseconds.

use std::sync::Arc;

use registry_core::Url;

use crate::router::bits::Bits;
use crate::router::chain::{Chain, Stage};
use crate::router::condition_rule::RuleMasks;
use crate::router::fields::TargetFields;
use crate::router::sample::RouteCall;
use crate::router::tag::{self, TagMasks};
use crate::router::target::Target;

#[derive(Debug)]
enum StageMasks {
    Tag,
    Rule(RuleMasks),
    Url(Option<Bits>),
}

/// A chain with its per-provider masks over one target list.
#[derive(Debug)]
pub struct CompiledChain {
    chain: Arc<Chain>,
    consumer: Url,
    tag: TagMasks,
    stages: Vec<StageMasks>,
    len: usize,
}

impl CompiledChain {
    /// Compiles `chain` for `targets` (the list [`CompiledChain::route`] indexes) and the
    /// consumer URL (the when-parts' sample and the then-parts' `$` references).
    pub fn new(chain: Arc<Chain>, targets: &[Target], consumer: &Url) -> CompiledChain {
        CompiledChain::with_fields(chain, targets, &TargetFields::new(), consumer)
    }

    /// [`CompiledChain::new`] reading the providers through `fields` (kept with the
    /// provider list, so a rule change does not read the URLs again).
    pub fn with_fields(
        chain: Arc<Chain>,
        targets: &[Target],
        fields: &TargetFields,
        consumer: &Url,
    ) -> CompiledChain {
        let tag = if chain.stages().iter().any(|s| matches!(s, Stage::Tag)) {
            TagMasks::new(chain.resolved_tags(), targets, fields)
        } else {
            TagMasks::default()
        };
        let stages = chain
            .stages()
            .iter()
            .map(|s| match s {
                Stage::Tag => StageMasks::Tag,
                Stage::Condition(r) => StageMasks::Rule(r.masks(targets, fields, consumer)),
                Stage::Url(u) => StageMasks::Url(u.router.then_mask(targets, fields, consumer)),
            })
            .collect();
        CompiledChain {
            chain,
            consumer: consumer.clone(),
            tag,
            stages,
            len: targets.len(),
        }
    }

    /// The chain.
    pub fn chain(&self) -> &Arc<Chain> {
        &self.chain
    }

    /// The consumer URL it was compiled for.
    pub fn consumer(&self) -> &Url {
        &self.consumer
    }

    /// Number of targets it was compiled for.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True when compiled for no target.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// [`Chain::route`] over the compiled targets: `input` holds indices into them.
    pub fn route(
        &self,
        input: &mut Vec<u32>,
        call: &RouteCall<'_>,
        pick: &mut dyn FnMut(i64) -> i64,
    ) {
        let (t, force) = tag::request_tag(&self.consumer, call);
        self.route_tagged(input, call, t, force, pick);
    }

    /// [`CompiledChain::route`] with the request tag and force flag given (what
    /// [`tag::request_tag`] answers for the call).
    pub fn route_tagged(
        &self,
        input: &mut Vec<u32>,
        call: &RouteCall<'_>,
        request_tag: Option<&str>,
        force: bool,
        pick: &mut dyn FnMut(i64) -> i64,
    ) {
        let dialect = self.chain.dialect();
        for (s, m) in self.chain.stages().iter().zip(&self.stages) {
            if input.is_empty() {
                return;
            }
            match (s, m) {
                (Stage::Tag, StageMasks::Tag) => tag::route_in(
                    &self.tag,
                    self.chain.resolved_tags(),
                    input,
                    request_tag,
                    force,
                    dialect,
                ),
                (Stage::Condition(r), StageMasks::Rule(masks)) => {
                    r.route_masked(masks, input, &self.consumer, call, pick)
                }
                (Stage::Url(u), StageMasks::Url(mask)) => {
                    u.router.route_by(input, &self.consumer, call, |_, i| {
                        mask.as_ref().is_some_and(|b| b.get(i))
                    })
                }
                // Built from the same stages: never mismatched.
                _ => {}
            }
        }
    }
}
