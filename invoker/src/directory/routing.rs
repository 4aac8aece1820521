//! Per-call routing of a directory snapshot (routers.md R1.1: Java routes on every call).
//!
//! A [`Routing`] holds the [`CompiledChain`] for the current providers and their [`Target`]s
//! (in the order of the snapshot's shared set). [`Routing::select`] answers exactly what the
//! chain answers for the call. When the chain cannot depend on anything but the method name
//! and the request tag (no `arguments[i]`/`attachments[k]` in a when-part, no random
//! multi-destination pick), the answers are computed when the routing is built (a rule
//! change or a new provider list) for every method the consumer or the providers declare
//! (one row for all methods when no rule reads the method) and every tag a rule or a
//! provider names, with and without force: `select` is then a lookup in that table and an
//! `Arc` clone (no lock, no allocation). Other keys (a method or tag nobody declares) are
//! routed on their first call and remembered; argument-dependent and random rules are
//! routed on every call.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

use parking_lot::RwLock;
use registry_core::url::comma_split;
use registry_core::Url;
use rustc_hash::FxHashMap;

use crate::invoker_set::InvokerSet;
use crate::keys::{FORCE_TAG_KEY, TAG_KEY};
use crate::router::chain::Chain;
use crate::router::compiled::CompiledChain;
use crate::router::fields::TargetFields;
use crate::router::sample::RouteCall;
use crate::router::target::Target;
use crate::rpc::Invocation;

/// At most this many remembered answers per snapshot (request tags come from callers).
const MEMO_CAP: usize = 4096;

/// Precomputation budget: providers visited (targets × table cells) per build.
const TABLE_BUDGET: usize = 1_000_000;
/// At most this many method rows and tag names in the table.
const MAX_METHODS: usize = 128;
const MAX_TAGS: usize = 64;

type TagMemo = FxHashMap<Box<str>, [Option<Arc<InvokerSet>>; 2]>;

/// Names looked up by a short linear scan, or a hash map when there are many.
#[derive(Debug, Default)]
struct NameIndex {
    names: Vec<Box<str>>,
    map: Option<FxHashMap<Box<str>, usize>>,
}

impl NameIndex {
    const LINEAR: usize = 8;

    fn new(names: Vec<Box<str>>) -> NameIndex {
        let map = (names.len() > Self::LINEAR).then(|| {
            names
                .iter()
                .enumerate()
                .map(|(i, n)| (n.clone(), i))
                .collect()
        });
        NameIndex { names, map }
    }

    #[inline]
    fn find(&self, name: &str) -> Option<usize> {
        match &self.map {
            Some(m) => m.get(name).copied(),
            None => self.names.iter().position(|n| &**n == name),
        }
    }
}

/// The answers computed when the routing was built, by (method row, tag column).
#[derive(Debug, Default)]
struct RouteTable {
    /// `None`: the chain does not read the method, one row answers every method.
    methods: Option<NameIndex>,
    tags: NameIndex,
    /// Row-major; column 0 is "no request tag", then two per tag (not forced, forced).
    /// `None`: not precomputed (over the budget).
    cells: Vec<Option<Cell>>,
}

/// One precomputed answer.
#[derive(Debug, Clone)]
enum Cell {
    /// Every provider: the base set itself.
    All,
    /// Some providers (shared by the keys with the same answer).
    Some(Arc<LazySet>),
}

/// The positions of a routed answer in the base set; its [`InvokerSet`] is made on the
/// first call that gets it (building the sets of every key up front would cost a rule
/// change O(keys × n) reference-count updates), then read without a lock.
#[derive(Debug)]
struct LazySet {
    picks: Box<[usize]>,
    set: OnceLock<Arc<InvokerSet>>,
}

impl Cell {
    #[inline]
    fn set(&self, base: &Arc<InvokerSet>) -> Arc<InvokerSet> {
        match self {
            Cell::All => base.clone(),
            Cell::Some(l) => l
                .set
                .get_or_init(|| Arc::new(base.subset(&l.picks)))
                .clone(),
        }
    }
}

impl RouteTable {
    fn cols(&self) -> usize {
        1 + 2 * self.tags.names.len()
    }

    #[inline]
    fn get(&self, method: &str, tag: Option<&str>, force: bool) -> Option<&Cell> {
        let row = match &self.methods {
            None => 0,
            Some(m) => m.find(method)?,
        };
        let col = match tag {
            None => 0,
            Some(t) => 1 + 2 * self.tags.find(t)? + usize::from(force),
        };
        self.cells.get(row * self.cols() + col)?.as_ref()
    }

    /// Routes every key of the table through `chain` (within the budget).
    fn build(
        chain: &CompiledChain,
        targets: &[Target],
        fields: &TargetFields,
        base: &Arc<InvokerSet>,
        consumer_tag: Option<&str>,
    ) -> RouteTable {
        let n = targets.len();
        let methods = chain
            .chain()
            .reads_method()
            .then(|| NameIndex::new(declared_methods(chain.consumer(), targets, fields)));
        let tags = NameIndex::new(tag_names(chain, targets, consumer_tag));
        let mut table = RouteTable {
            methods,
            tags,
            cells: Vec::new(),
        };
        let rows = table.methods.as_ref().map_or(1, |m| m.names.len());
        let cols = table.cols();
        table.cells = vec![None; rows * cols];
        if n == 0 || base.len() != n {
            return table;
        }
        let budget = (TABLE_BUDGET / n).max(4);
        let mut done = 0usize;
        let mut idx: Vec<u32> = Vec::with_capacity(n);
        let mut distinct: FxHashMap<Box<[u32]>, Arc<LazySet>> = FxHashMap::default();
        let full: Vec<u32> = (0..u32::try_from(n).unwrap_or(u32::MAX)).collect();
        'rows: for row in 0..rows {
            let method = table
                .methods
                .as_ref()
                .and_then(|m| m.names.get(row))
                .map_or("", |m| &**m);
            let call = RouteCall {
                method: Some(method),
                arguments: Some(&[]),
                attachments: None,
            };
            for col in 0..cols {
                // A consumer with its own tag never routes without one.
                if col == 0 && consumer_tag.is_some() {
                    continue;
                }
                if done >= budget {
                    break 'rows;
                }
                done += 1;
                let (tag, force) = match col {
                    0 => (None, false),
                    c => (
                        table.tags.names.get((c - 1) / 2).map(|t| &**t),
                        (c - 1) % 2 == 1,
                    ),
                };
                idx.clear();
                idx.extend_from_slice(&full);
                // Not per call: no random pick happens.
                chain.route_tagged(&mut idx, &call, tag, force, &mut |sum| sum);
                let set = if idx.len() == n {
                    Cell::All
                } else if let Some(s) = distinct.get(idx.as_slice()) {
                    Cell::Some(s.clone())
                } else {
                    let s = Arc::new(LazySet {
                        picks: idx.iter().map(|&i| i as usize).collect(),
                        set: OnceLock::new(),
                    });
                    distinct.insert(Box::from(idx.as_slice()), s.clone());
                    Cell::Some(s)
                };
                if let Some(cell) = table.cells.get_mut(row * cols + col) {
                    *cell = Some(set);
                }
            }
        }
        table
    }
}

/// The methods a call may name: the consumer's `methods`, then the providers' (each
/// distinct list once).
fn declared_methods(consumer: &Url, targets: &[Target], fields: &TargetFields) -> Vec<Box<str>> {
    let mut out: Vec<Box<str>> = Vec::new();
    let add = |list: &str, out: &mut Vec<Box<str>>| {
        for m in comma_split(list) {
            let m = m.trim();
            if !m.is_empty() && out.len() < MAX_METHODS && !out.iter().any(|x| &**x == m) {
                out.push(Box::from(m));
            }
        }
    };
    if let Some(list) = consumer.param("methods") {
        add(list, &mut out);
    }
    let col = fields.column("methods", targets);
    for list in col.values.iter().flatten() {
        add(list, &mut out);
    }
    out
}

/// The request tags worth precomputing: the consumer's, the tag rule's names, the providers'
/// static tags.
fn tag_names(
    chain: &CompiledChain,
    targets: &[Target],
    consumer_tag: Option<&str>,
) -> Vec<Box<str>> {
    let mut out: Vec<Box<str>> = Vec::new();
    let mut add = |t: &str| {
        if !t.is_empty() && out.len() < MAX_TAGS && !out.iter().any(|x| &**x == t) {
            out.push(Box::from(t));
        }
    };
    if let Some(t) = consumer_tag {
        add(t);
    }
    if !chain.chain().has_tag_stage() {
        return out;
    }
    if let Some(r) = chain.chain().resolved_tags() {
        for n in &r.names {
            add(n);
        }
    }
    let mut last: Option<&str> = None;
    for t in targets {
        if let Some(tag) = t.tag.as_deref() {
            if last != Some(tag) {
                last = Some(tag);
                add(tag);
            }
        }
    }
    out
}

/// The routing state of one snapshot.
#[derive(Debug)]
pub(crate) struct Routing {
    chain: Arc<CompiledChain>,
    targets: Arc<[Target]>,
    fields: Arc<TargetFields>,
    consumer: Url,
    /// The consumer's own `dubbo.tag` (non-empty) and `dubbo.force.tag`.
    consumer_tag: Option<Box<str>>,
    consumer_force: bool,
    table: RouteTable,
    memo: RwLock<FxHashMap<Box<str>, TagMemo>>,
    memo_len: AtomicUsize,
    /// False for [`Routing::without_targets`].
    has_targets: bool,
}

impl Routing {
    /// The routing of a list that needs none (no rule, no static tag; `chain` is trivial):
    /// no targets are built. A rule change must rebuild the snapshot
    /// ([`Routing::has_targets`]).
    pub(super) fn without_targets(chain: Arc<Chain>, consumer: Url) -> Routing {
        let base = Arc::new(InvokerSet::default());
        let mut r = Routing::new(
            chain,
            Arc::from(Vec::new()),
            Arc::new(TargetFields::new()),
            consumer,
            &base,
        );
        r.has_targets = false;
        r
    }

    /// False when built without targets (the list cannot be re-routed with a new chain).
    pub(super) fn has_targets(&self) -> bool {
        self.has_targets
    }

    /// Routing over `targets` (aligned with the base set `base`, read through `fields`)
    /// with `chain`.
    pub(super) fn new(
        chain: Arc<Chain>,
        targets: Arc<[Target]>,
        fields: Arc<TargetFields>,
        consumer: Url,
        base: &Arc<InvokerSet>,
    ) -> Routing {
        let consumer_tag = consumer
            .param(TAG_KEY)
            .filter(|t| !t.is_empty())
            .map(Box::from);
        let consumer_force = consumer
            .param(FORCE_TAG_KEY)
            .is_some_and(|v| v.eq_ignore_ascii_case("true"));
        let trivial = chain.is_trivial();
        let per_call = chain.is_per_call();
        let chain = Arc::new(CompiledChain::with_fields(
            chain, &targets, &fields, &consumer,
        ));
        let table = if trivial || per_call {
            RouteTable::default()
        } else {
            RouteTable::build(&chain, &targets, &fields, base, consumer_tag.as_deref())
        };
        Routing {
            consumer_tag,
            consumer_force,
            chain,
            targets,
            fields,
            consumer,
            table,
            memo: RwLock::new(FxHashMap::default()),
            memo_len: AtomicUsize::new(0),
            has_targets: true,
        }
    }

    /// The same targets with another chain (a rule change: the providers did not change).
    pub(super) fn with_chain(&self, chain: Arc<Chain>, base: &Arc<InvokerSet>) -> Routing {
        Routing::new(
            chain,
            self.targets.clone(),
            self.fields.clone(),
            self.consumer.clone(),
            base,
        )
    }

    /// The targets.
    pub(super) fn targets(&self) -> &Arc<[Target]> {
        &self.targets
    }

    /// What the routers read of the targets.
    pub(super) fn fields(&self) -> &TargetFields {
        &self.fields
    }

    /// The request tag and force flag of a call (`tag::request_tag` with the consumer's
    /// values read once).
    #[inline]
    fn request_tag<'a>(&'a self, inv: &'a Invocation) -> (Option<&'a str>, bool) {
        let att = &inv.attachments;
        if att.is_empty() {
            return (self.consumer_tag.as_deref(), self.consumer_force);
        }
        let tag = att
            .get(TAG_KEY)
            .map(String::as_str)
            .filter(|t| !t.is_empty())
            .or(self.consumer_tag.as_deref());
        let force = match att.get(FORCE_TAG_KEY).filter(|v| !v.is_empty()) {
            Some(v) => v.eq_ignore_ascii_case("true"),
            None => self.consumer_force,
        };
        (tag, force)
    }

    /// The providers this call may go to, out of `base`.
    pub(super) fn select(&self, base: &Arc<InvokerSet>, inv: &Invocation) -> Arc<InvokerSet> {
        let chain = self.chain.chain();
        if chain.is_trivial() {
            // No rule and no static tag: only a forced request tag changes the answer.
            if inv.attachments.is_empty() && !(self.consumer_tag.is_some() && self.consumer_force) {
                return base.clone();
            }
            let (tag, force) = self.request_tag(inv);
            if tag.is_some() && force && !base.is_empty() && chain.has_tag_stage() {
                return Arc::new(InvokerSet::default());
            }
            return base.clone();
        }
        if chain.is_per_call() {
            return self.compute(base, &RouteCall::of(inv));
        }
        let (tag, force) = self.request_tag(inv);
        let method = if chain.reads_method() {
            inv.real_method()
        } else {
            ""
        };
        if let Some(c) = self.table.get(method, tag, force) {
            return c.set(base);
        }
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
        let s = self.compute(base, &RouteCall::of(inv));
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
            .route(&mut idx, call, &mut |sum| fastrand::i64(0..sum.max(1)));
        if idx.len() == n {
            return base.clone();
        }
        if base.len() == n {
            let picks: Vec<usize> = idx.iter().map(|&i| i as usize).collect();
            return Arc::new(base.subset(&picks));
        }
        let list = idx
            .iter()
            .filter_map(|&i| self.targets.get(i as usize).and_then(|t| t.invoker.clone()))
            .collect();
        Arc::new(InvokerSet::new_reusing(list, base))
    }
}
