//! The immutable snapshot a [`super::RegistryDirectory`] publishes after each change.
//!
//! `list` loads it through an `ArcSwap` (no lock) and returns one of its prebuilt
//! [`InvokerSet`]s (an `Arc` clone): the shared list (3.x), the 2.6 per-method lists
//! (`methodInvokerMap`), or the `mock://` providers.

use std::sync::Arc;

use registry_core::url::comma_split;
use registry_core::Url;
use rustc_hash::{FxHashMap, FxHashSet};
use serde_json::Value;

use super::options::{GroupJoiner, MethodCacheMode};
use super::routing::Routing;
use super::table::Entry;
use crate::invoker_set::InvokerSet;
use crate::router::chain::{Chain, ChainMode, RuleSet};
use crate::router::fields::TargetFields;
use crate::router::target::Target;
use crate::router::{route_all, Router};
use crate::rpc::{Invocation, SharedInvoker};

/// Where the directory stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Phase {
    /// No providers notification yet.
    Waiting,
    /// Providers known.
    Ready,
    /// The registry said `empty://`.
    Forbidden,
    /// Destroyed.
    Destroyed,
}

/// Dubbo 2.6's `methodInvokerMap`.
#[derive(Debug, Default)]
pub(crate) struct MethodMap {
    by_method: FxHashMap<Box<str>, Arc<InvokerSet>>,
    /// `"<method>.<arg>"` keys split at the first dot: method → argument → list.
    routed: FxHashMap<Box<str>, FxHashMap<Box<str>, Arc<InvokerSet>>>,
    star: Option<Arc<InvokerSet>>,
}

impl MethodMap {
    /// The 2.6 `doList` lookup order: `method.arg` (first argument a string), `method`, `*`,
    /// any entry, else empty.
    pub(super) fn lookup(
        &self,
        invocation: &Invocation,
        empty: &Arc<InvokerSet>,
    ) -> Arc<InvokerSet> {
        let method = invocation.real_method();
        if !self.routed.is_empty() {
            if let Some(Value::String(arg)) = invocation.real_arguments().first() {
                if let Some(s) = self.routed.get(method).and_then(|m| m.get(arg.as_str())) {
                    return s.clone();
                }
            }
        }
        if let Some(s) = self.by_method.get(method) {
            return s.clone();
        }
        if let Some(s) = &self.star {
            return s.clone();
        }
        self.by_method
            .values()
            .next()
            .cloned()
            .unwrap_or_else(|| empty.clone())
    }
}

/// One published state.
#[derive(Debug)]
pub(crate) struct Snapshot {
    pub phase: Phase,
    pub all: Arc<InvokerSet>,
    pub mock: Arc<InvokerSet>,
    pub methods: Option<MethodMap>,
    pub empty: Arc<InvokerSet>,
    /// The router chain for per-call routing of `all` (3.x/2.7 shared cache, single group).
    pub routing: Option<Arc<Routing>>,
}

impl Snapshot {
    /// A snapshot with no invokers.
    pub(super) fn empty(phase: Phase) -> Snapshot {
        let empty = Arc::new(InvokerSet::default());
        Snapshot {
            phase,
            all: empty.clone(),
            mock: empty.clone(),
            methods: None,
            empty,
            routing: None,
        }
    }

    /// The set for an invocation (mock attachment already handled by the caller).
    pub(super) fn select(&self, invocation: &Invocation) -> Arc<InvokerSet> {
        match (&self.methods, &self.routing) {
            (Some(m), _) => m.lookup(invocation, &self.empty),
            (None, Some(r)) => r.select(&self.all, invocation),
            (None, None) => self.all.clone(),
        }
    }

    /// The same providers with another routing (a rule change). `None` for a snapshot
    /// without per-call routing (2.6 per-method cache, multi-group, not ready).
    pub(super) fn with_routing(&self, routing: Arc<Routing>) -> Option<Snapshot> {
        if self.methods.is_some() || self.routing.is_none() {
            return None;
        }
        Some(Snapshot {
            phase: self.phase,
            all: self.all.clone(),
            mock: self.mock.clone(),
            methods: None,
            empty: self.empty.clone(),
            routing: Some(routing),
        })
    }
}

/// Inputs of a snapshot build besides the entries.
pub(crate) struct BuildCtx<'a> {
    /// The directory URL (consumer with configurators applied).
    pub consumer: &'a Url,
    pub routers: &'a [Arc<dyn Router>],
    pub joiner: Option<&'a dyn GroupJoiner>,
    pub multi_group: bool,
    pub mode: MethodCacheMode,
    /// The previous shared set: load-balancing metadata of invokers still listed is reused.
    pub previous: Option<&'a InvokerSet>,
    /// The previous routing: targets of unchanged providers and what the routers read of
    /// them are reused (a one-provider change reads one provider's URL, not every one).
    pub previous_routing: Option<&'a Routing>,
    /// Expected number of invokers (capacity hint).
    pub capacity: usize,
    /// The rules of the per-call router chain (`None`: 2.6 per-method cache).
    pub rules: Option<ChainInputs<'a>>,
}

/// What the per-call chain is built from.
pub(crate) struct ChainInputs<'a> {
    pub rules: &'a RuleSet,
    pub mode: ChainMode,
    /// The consumer's `application`.
    pub consumer_app: &'a str,
    /// The consumer's `router` param excludes the tag router (`-tag`).
    pub exclude_tag: bool,
}

/// The router view of an invoker listed in the shared set.
pub(crate) fn target_of(e: &Entry, inv: &SharedInvoker, mode: ChainMode) -> Target {
    let url = inv.url();
    Target {
        invoker: Some(inv.clone()),
        sample: match mode {
            ChainMode::V3 => e.raw.clone(),
            ChainMode::V27 => url.clone(),
        },
        raw: e.raw.clone(),
        tag: url
            .param(crate::keys::TAG_KEY)
            .filter(|t| !t.is_empty())
            .map(Box::from),
    }
}

/// The routing of a shared set: targets aligned with `all`. Targets whose invoker and raw
/// URL are the very objects of a `previous` target are that target again, and the fields the
/// previous routing read are carried over for them.
pub(crate) fn routing_for<'e>(
    all: &Arc<InvokerSet>,
    entries: impl Iterator<Item = &'e Entry>,
    consumer: &Url,
    inputs: &ChainInputs<'_>,
    previous: Option<&Routing>,
) -> Routing {
    let entries: Vec<&'e Entry> = entries.collect();
    if inputs.rules.is_empty() && !entries.iter().any(|e| e.tagged) {
        // No rule and no static tag: nothing to route, no targets to build (a rule change
        // rebuilds the snapshot).
        let chain = Chain::build(
            inputs.rules,
            &[],
            inputs.consumer_app,
            inputs.mode,
            inputs.exclude_tag,
        );
        return Routing::without_targets(Arc::new(chain), consumer.clone());
    }
    let mut reuse = Reuse::new(previous.filter(|p| p.has_targets()).map(|p| &**p.targets()));
    let aligned = entries.len() == all.len()
        && entries
            .iter()
            .zip(all.invokers())
            .all(|(e, i)| e.invoker.as_ref().is_some_and(|x| Arc::ptr_eq(x, i)));
    let targets: Vec<Target> = if aligned {
        // No router reordered the list: the entries are the set, in order.
        entries
            .iter()
            .zip(all.invokers())
            .enumerate()
            .map(|(i, (e, inv))| {
                reuse
                    .find(i, inv, &e.raw)
                    .unwrap_or_else(|| target_of(e, inv, inputs.mode))
            })
            .collect()
    } else {
        let by_ptr: FxHashMap<usize, &'e Entry> = entries
            .iter()
            .filter_map(|e| {
                e.invoker
                    .as_ref()
                    .map(|i| (Arc::as_ptr(i) as *const () as usize, *e))
            })
            .collect();
        all.invokers()
            .iter()
            .enumerate()
            .map(
                |(i, inv)| match by_ptr.get(&(Arc::as_ptr(inv) as *const () as usize)) {
                    Some(e) => reuse
                        .find(i, inv, &e.raw)
                        .unwrap_or_else(|| target_of(e, inv, inputs.mode)),
                    None => {
                        reuse.old.push(None);
                        let mut t = Target::from_url(inv.url().clone());
                        t.invoker = Some(inv.clone());
                        t
                    }
                },
            )
            .collect()
    };
    let fields = match previous {
        Some(p) if reuse.old.iter().any(Option::is_some) => {
            TargetFields::derive(p.fields(), &reuse.old, &targets)
        }
        _ => TargetFields::new(),
    };
    let chain = Chain::build(
        inputs.rules,
        &targets,
        inputs.consumer_app,
        inputs.mode,
        inputs.exclude_tag,
    );
    Routing::new(
        Arc::new(chain),
        Arc::from(targets),
        Arc::new(fields),
        consumer.clone(),
        all,
    )
}

/// Finds the previous target of an unchanged provider: first at the same position (a
/// change that kept the order), else through a pointer map of the previous invokers.
struct Reuse<'p> {
    prev: &'p [Target],
    by_ptr: Option<FxHashMap<usize, u32>>,
    /// For each new target, its position in `prev` when it was reused.
    old: Vec<Option<u32>>,
}

impl<'p> Reuse<'p> {
    fn new(prev: Option<&'p [Target]>) -> Reuse<'p> {
        let prev = prev.unwrap_or(&[]);
        Reuse {
            prev,
            by_ptr: None,
            old: Vec::with_capacity(prev.len()),
        }
    }

    fn find(&mut self, i: usize, inv: &SharedInvoker, raw: &Url) -> Option<Target> {
        let same = |t: &Target| {
            t.invoker.as_ref().is_some_and(|x| Arc::ptr_eq(x, inv)) && Url::ptr_eq(&t.raw, raw)
        };
        let hit = if self.prev.get(i).is_some_and(same) {
            Some(i)
        } else if self.prev.is_empty() {
            None
        } else {
            let prev = self.prev;
            let map = self.by_ptr.get_or_insert_with(|| {
                prev.iter()
                    .enumerate()
                    .filter_map(|(j, t)| {
                        let inv = t.invoker.as_ref()?;
                        Some((
                            Arc::as_ptr(inv) as *const () as usize,
                            u32::try_from(j).ok()?,
                        ))
                    })
                    .collect()
            });
            map.get(&(Arc::as_ptr(inv) as *const () as usize))
                .map(|&j| j as usize)
                .filter(|&j| same(&self.prev[j]))
        };
        self.old.push(hit.and_then(|j| u32::try_from(j).ok()));
        hit.map(|j| self.prev[j].clone())
    }
}

/// True when the consumer's `group` asks for several groups (`*` or a list).
pub fn is_multi_group(consumer: &Url) -> bool {
    consumer
        .group()
        .is_some_and(|g| g == "*" || g.contains(','))
}

/// Groups invokers by their URL's `group` (absent = `""`), in order of first appearance.
pub fn group_invokers(invokers: Vec<SharedInvoker>) -> Vec<(String, Vec<SharedInvoker>)> {
    let mut out: Vec<(String, Vec<SharedInvoker>)> = Vec::new();
    for inv in invokers {
        let g = inv.url().group().unwrap_or("");
        match out.iter_mut().find(|(k, _)| k == g) {
            Some((_, v)) => v.push(inv),
            None => out.push((g.to_owned(), vec![inv])),
        }
    }
    out
}

/// Multi-group: one joined invoker per group when there is more than one group (no
/// routing, as in Dubbo). Without a joiner the flat list is kept.
fn join_groups(
    invokers: Vec<SharedInvoker>,
    joiner: Option<&dyn GroupJoiner>,
) -> Vec<SharedInvoker> {
    let Some(joiner) = joiner else {
        return invokers;
    };
    let groups = group_invokers(invokers);
    if groups.len() == 1 {
        return groups.into_iter().flat_map(|(_, v)| v).collect();
    }
    groups
        .into_iter()
        .map(|(g, v)| joiner.join(&g, v))
        .collect()
}

/// Builds a ready snapshot from the table entries (in list order).
pub(crate) fn build<'e>(
    entries: impl Iterator<Item = &'e Entry>,
    dedup: bool,
    ctx: &BuildCtx<'_>,
) -> Snapshot {
    let mut seen: FxHashSet<usize> = FxHashSet::default();
    // Shared mode needs only the invokers; the 2.6 cache also reads the entries.
    let per_method = ctx.mode == MethodCacheMode::Dubbo26;
    let mut normal: Vec<&'e Entry> = Vec::new();
    let mut list: Vec<SharedInvoker> =
        Vec::with_capacity(if per_method { 0 } else { ctx.capacity });
    let mut mocks: Vec<SharedInvoker> = Vec::new();
    let keep_entries = ctx.rules.is_some() && !per_method && !ctx.multi_group;
    let mut listed: Vec<&'e Entry> = Vec::new();
    for e in entries {
        let Some(inv) = &e.invoker else { continue };
        if dedup && !seen.insert(Arc::as_ptr(inv) as *const () as usize) {
            continue;
        }
        if e.mock {
            mocks.push(inv.clone());
        } else if per_method {
            normal.push(e);
        } else {
            list.push(inv.clone());
            if keep_entries {
                listed.push(e);
            }
        }
    }
    let empty = Arc::new(InvokerSet::default());
    let mock = if mocks.is_empty() {
        empty.clone()
    } else {
        Arc::new(InvokerSet::new(mocks))
    };
    let make_set = |list: Vec<SharedInvoker>| match ctx.previous {
        Some(prev) if !prev.is_empty() => InvokerSet::new_reusing(list, prev),
        _ => InvokerSet::new(list),
    };
    let finish = |list: Vec<SharedInvoker>, method: Option<&str>| -> Vec<SharedInvoker> {
        if ctx.multi_group {
            join_groups(list, ctx.joiner)
        } else if ctx.routers.is_empty() {
            list
        } else {
            route_all(ctx.routers, list, ctx.consumer, method)
        }
    };
    match ctx.mode {
        MethodCacheMode::Shared => {
            let all = Arc::new(make_set(finish(list, None)));
            let routing = match &ctx.rules {
                Some(inputs) if !ctx.multi_group => Some(Arc::new(routing_for(
                    &all,
                    listed.iter().copied(),
                    ctx.consumer,
                    inputs,
                    ctx.previous_routing,
                ))),
                _ => None,
            };
            Snapshot {
                phase: Phase::Ready,
                all,
                mock,
                methods: None,
                empty,
                routing,
            }
        }
        MethodCacheMode::Dubbo26 => {
            // Sorted by url.toString() (InvokerComparator).
            let mut sorted = normal;
            sorted.sort_by(|a, b| a.sort_key.as_deref().cmp(&b.sort_key.as_deref()));
            let mut lists: Vec<(&str, Vec<SharedInvoker>)> = Vec::new();
            let mut all_list = Vec::with_capacity(sorted.len());
            for e in &sorted {
                let Some(inv) = &e.invoker else { continue };
                for m in e.merged.param_list("methods") {
                    if m.is_empty() || m == "*" {
                        continue;
                    }
                    match lists.iter_mut().find(|(k, _)| *k == m) {
                        Some((_, v)) => v.push(inv.clone()),
                        None => lists.push((m, vec![inv.clone()])),
                    }
                }
                all_list.push(inv.clone());
            }
            let star_list = finish(all_list, None);
            let mut map = MethodMap::default();
            let consumer_methods: Vec<&str> =
                comma_split(ctx.consumer.param("methods").unwrap_or(""))
                    .into_iter()
                    .filter(|m| !m.is_empty())
                    .collect();
            let mut routed_lists: Vec<(&str, Vec<SharedInvoker>)> = Vec::new();
            for m in &consumer_methods {
                let declared = lists
                    .iter()
                    .position(|(k, _)| k == m)
                    .map(|i| lists.swap_remove(i).1);
                let base = match declared {
                    Some(v) if !v.is_empty() => v,
                    _ => star_list.clone(),
                };
                routed_lists.push((m, finish(base, Some(m))));
            }
            for (m, v) in lists.into_iter().chain(routed_lists) {
                let set = Arc::new(make_set(v));
                match m.split_once('.') {
                    Some((method, arg)) => {
                        map.routed
                            .entry(Box::from(method))
                            .or_default()
                            .insert(Box::from(arg), set);
                    }
                    None => {
                        map.by_method.insert(Box::from(m), set);
                    }
                }
            }
            let star = Arc::new(make_set(star_list));
            map.star = Some(star.clone());
            Snapshot {
                phase: Phase::Ready,
                all: star,
                mock,
                methods: Some(map),
                empty,
                routing: None,
            }
        }
    }
}
