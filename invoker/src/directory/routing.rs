//! Per-call routing of a directory snapshot (routers.md R1.1: Java routes on every call).
//!
//! A [`Routing`] holds the [`Chain`] for the current providers and their [`Target`]s (in
//! the order of the snapshot's shared set). [`Routing::select`] answers exactly what the
//! chain answers for the call, but remembers the answer per (method, request tag, force)
//! when the chain cannot depend on anything else (no `arguments[i]`/`attachments[k]` in a
//! when-part, no random multi-destination pick), so `select` in steady state is a read
//! lock, two hash lookups and an `Arc` clone: no allocation. Argument-dependent and
//! random rules are routed on every call.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use parking_lot::RwLock;
use registry_core::Url;
use rustc_hash::FxHashMap;

use crate::invoker_set::InvokerSet;
use crate::router::chain::Chain;
use crate::router::sample::RouteCall;
use crate::router::tag::{request_tag, FORCE_TAG_KEY, TAG_KEY};
use crate::router::target::Target;
use crate::rpc::Invocation;

/// At most this many remembered answers per snapshot (request tags come from callers).
const MEMO_CAP: usize = 4096;

type TagMemo = FxHashMap<Box<str>, [Option<Arc<InvokerSet>>; 2]>;

/// The routing state of one snapshot.
#[derive(Debug)]
pub(crate) struct Routing {
    chain: Arc<Chain>,
    targets: Arc<[Target]>,
    consumer: Url,
    /// The consumer's own `dubbo.tag` / `dubbo.force.tag` (for the trivial chain).
    consumer_tag: bool,
    consumer_force: bool,
    memo: RwLock<FxHashMap<Box<str>, TagMemo>>,
    memo_len: AtomicUsize,
}

impl Routing {
    /// Routing over `targets` (aligned with the base set) with `chain`.
    pub fn new(chain: Arc<Chain>, targets: Arc<[Target]>, consumer: Url) -> Routing {
        Routing {
            consumer_tag: consumer.param(TAG_KEY).is_some_and(|t| !t.is_empty()),
            consumer_force: consumer
                .param(FORCE_TAG_KEY)
                .is_some_and(|v| v.eq_ignore_ascii_case("true")),
            chain,
            targets,
            consumer,
            memo: RwLock::new(FxHashMap::default()),
            memo_len: AtomicUsize::new(0),
        }
    }

    /// The same targets with another chain (a rule change: the providers did not change).
    pub fn with_chain(&self, chain: Arc<Chain>) -> Routing {
        Routing::new(chain, self.targets.clone(), self.consumer.clone())
    }

    /// The targets.
    pub fn targets(&self) -> &Arc<[Target]> {
        &self.targets
    }

    /// The providers this call may go to, out of `base`.
    pub fn select(&self, base: &Arc<InvokerSet>, inv: &Invocation) -> Arc<InvokerSet> {
        if self.chain.is_trivial() {
            // No rule and no static tag: only a forced request tag changes the answer.
            if inv.attachments.is_empty() && !(self.consumer_tag && self.consumer_force) {
                return base.clone();
            }
            let (tag, force) = request_tag(&self.consumer, &RouteCall::of(inv));
            if tag.is_some() && force && !base.is_empty() && self.chain.has_tag_stage() {
                return Arc::new(InvokerSet::default());
            }
            return base.clone();
        }
        let call = RouteCall::of(inv);
        if self.chain.is_per_call() {
            return self.compute(base, &call);
        }
        let (tag, force) = request_tag(&self.consumer, &call);
        let method = if self.chain.reads_method() {
            inv.real_method()
        } else {
            ""
        };
        let tag = tag.unwrap_or("");
        if let Some(s) = self
            .memo
            .read()
            .get(method)
            .and_then(|t| t.get(tag))
            .and_then(|a| a[usize::from(force)].clone())
        {
            return s;
        }
        let s = self.compute(base, &call);
        if self.memo_len.load(Ordering::Relaxed) < MEMO_CAP {
            let mut memo = self.memo.write();
            let slot = &mut memo
                .entry(Box::from(method))
                .or_default()
                .entry(Box::from(tag))
                .or_default()[usize::from(force)];
            if slot.is_none() {
                *slot = Some(s.clone());
                self.memo_len.fetch_add(1, Ordering::Relaxed);
            }
        }
        s
    }

    fn compute(&self, base: &Arc<InvokerSet>, call: &RouteCall<'_>) -> Arc<InvokerSet> {
        let n = self.targets.len();
        let mut idx: Vec<u32> = (0..u32::try_from(n).unwrap_or(u32::MAX)).collect();
        self.chain
            .route(&self.targets, &mut idx, &self.consumer, call, &mut |sum| {
                fastrand::i64(0..sum.max(1))
            });
        if idx.len() == n {
            return base.clone();
        }
        let list = idx
            .iter()
            .filter_map(|&i| self.targets.get(i as usize).and_then(|t| t.invoker.clone()))
            .collect();
        Arc::new(InvokerSet::new_reusing(list, base))
    }
}
