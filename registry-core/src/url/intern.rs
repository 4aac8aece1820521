//! Interning of strings and of whole parameter tables, so that 100k provider URLs of one service
//! share their keys and their common parameters.
//!
//! Both pools hold weak entries only: a string or table lives as long as some URL holds it, and
//! dead entries are swept when a shard has doubled since its last sweep.

use std::hash::{Hash, Hasher};
use std::sync::{Arc, LazyLock, Weak};

use parking_lot::Mutex;
use rustc_hash::{FxHashMap, FxHasher};

use super::scratch::with_scratch;

/// A shared, immutable string.
pub(crate) type Atom = Arc<str>;

const SHARDS: usize = 16;

/// A sharded pool of weakly held values, keyed by a caller-computed hash.
struct WeakPool<T: ?Sized> {
    shards: Vec<Mutex<Shard<T>>>,
}

struct Shard<T: ?Sized> {
    map: FxHashMap<u64, Vec<Weak<T>>>,
    len: usize,
    sweep_at: usize,
}

impl<T: ?Sized> WeakPool<T> {
    fn new() -> Self {
        let shards = (0..SHARDS)
            .map(|_| {
                Mutex::new(Shard {
                    map: FxHashMap::default(),
                    len: 0,
                    sweep_at: 64,
                })
            })
            .collect();
        WeakPool { shards }
    }

    /// The live value with hash `h` for which `eq` holds.
    fn get(&self, h: u64, eq: impl Fn(&T) -> bool) -> Option<Arc<T>> {
        let s = self.shards[(h as usize) % SHARDS].lock();
        s.map
            .get(&h)?
            .iter()
            .filter_map(Weak::upgrade)
            .find(|v| eq(v))
    }

    /// The live value with hash `h` for which `eq` holds, else the one `make` builds (outside
    /// the lock, so `make` may use other pools).
    fn get_or_insert(
        &self,
        h: u64,
        eq: impl Fn(&T) -> bool,
        make: impl FnOnce() -> Arc<T>,
    ) -> Arc<T> {
        let shard = &self.shards[(h as usize) % SHARDS];
        let find = |s: &Shard<T>| {
            s.map
                .get(&h)?
                .iter()
                .filter_map(Weak::upgrade)
                .find(|v| eq(v))
        };
        if let Some(v) = self.get(h, &eq) {
            return v;
        }
        let made = make();
        let mut s = shard.lock();
        if let Some(v) = find(&s) {
            return v;
        }
        s.map.entry(h).or_default().push(Arc::downgrade(&made));
        s.len += 1;
        if s.len >= s.sweep_at {
            s.map.retain(|_, b| {
                b.retain(|w| w.strong_count() > 0);
                !b.is_empty()
            });
            s.len = s.map.values().map(Vec::len).sum();
            s.sweep_at = (s.len * 2).max(64);
        }
        made
    }
}

fn fx_hash<T: Hash + ?Sized>(v: &T) -> u64 {
    let mut h = FxHasher::default();
    v.hash(&mut h);
    h.finish()
}

static STRINGS: LazyLock<WeakPool<str>> = LazyLock::new(WeakPool::new);

/// Well-known strings, handed out without touching the pools.
static COMMON: LazyLock<FxHashMap<&'static str, Atom>> = LazyLock::new(|| {
    [
        "",
        "dubbo",
        "tri",
        "consumer",
        "provider",
        "providers",
        "consumers",
        "routers",
        "configurators",
        "empty",
        "override",
        "absent",
        "route",
        "true",
        "false",
        "0",
        "1",
        "timestamp",
        "pid",
        "ipv6",
        "interface",
        "version",
        "group",
        "category",
        "side",
        "application",
        "methods",
        "anyhost",
        "dynamic",
        "enabled",
        "weight",
        "0.0.0.0",
        "zookeeper",
        "nacos",
        "memory",
        "mock",
        "check",
    ]
    .into_iter()
    .map(|s| (s, Atom::from(s)))
    .collect()
});

/// Longest string in [`COMMON`].
const COMMON_MAX_LEN: usize = 13;

/// Returns the shared atom for `s`, creating it if no live URL holds one.
pub(crate) fn intern(s: &str) -> Atom {
    if s.len() <= COMMON_MAX_LEN {
        if let Some(a) = COMMON.get(s) {
            return a.clone();
        }
    }
    STRINGS.get_or_insert(fx_hash(s), |a| a == s, || Atom::from(s))
}

/// Keys whose positions every table records, for O(1) lookups on the matching hot path
/// ([`ParamTable::known`] index = position in this list).
pub(crate) const KNOWN_KEYS: [&str; 6] = [
    "category",
    "classifier",
    "enabled",
    "group",
    "interface",
    "version",
];

/// A sorted (by key), de-duplicated list of parameters shared between URLs.
#[derive(Debug)]
pub(crate) struct ParamTable {
    pub(crate) entries: Box<[(Atom, Atom)]>,
    /// Index into `entries` of each of [`KNOWN_KEYS`], `u32::MAX` when absent.
    known: [u32; KNOWN_KEYS.len()],
    /// The entries as a query, `k=v&k=v...` (see [`render`]), kept only when that text
    /// determines the entries (see [`is_textual`]): a query written in that form is then matched
    /// against the table with one comparison.
    text: Option<Box<str>>,
}

impl ParamTable {
    fn new(entries: Box<[(Atom, Atom)]>, text: Option<Box<str>>) -> Self {
        let mut known = [u32::MAX; KNOWN_KEYS.len()];
        for (slot, key) in known.iter_mut().zip(KNOWN_KEYS) {
            if let Ok(i) = entries.binary_search_by(|(k, _)| (**k).cmp(key)) {
                *slot = u32::try_from(i).unwrap_or(u32::MAX);
            }
        }
        ParamTable {
            entries,
            known,
            text,
        }
    }

    /// Interns the keys; `text` is `render(entries)`.
    fn build(entries: &[(&str, &str)], text: &str) -> Self {
        ParamTable::new(
            entries
                .iter()
                .map(|(k, v)| (intern(k), Atom::from(*v)))
                .collect(),
            is_textual(entries).then(|| text.into()),
        )
    }

    /// The rendering of the entries, when it determines them (see [`is_textual`]).
    pub(crate) fn text(&self) -> Option<&str> {
        self.text.as_deref()
    }

    /// The value of `KNOWN_KEYS[k]`.
    pub(crate) fn known(&self, k: usize) -> Option<&str> {
        self.known_atom(k).map(|a| &**a)
    }

    /// The shared value of `KNOWN_KEYS[k]`.
    pub(crate) fn known_atom(&self, k: usize) -> Option<&Atom> {
        let i = *self.known.get(k)? as usize;
        self.entries.get(i).map(|(_, v)| v)
    }
}

/// Appends `k=v` items joined by `&` (the form `toFullString` writes).
fn render(entries: &[(&str, &str)], out: &mut String) {
    for (i, (k, v)) in entries.iter().enumerate() {
        if i > 0 {
            out.push('&');
        }
        out.push_str(k);
        out.push('=');
        out.push_str(v);
    }
}

/// True when parsing `render(entries)` gives back exactly `entries`: keys are non-empty without
/// `=`, `&`, `;` and do not start with `default.` (parsing would add a copy); values have no `&`,
/// `;`. For such tables, equal text means equal entries.
fn is_textual(entries: &[(&str, &str)]) -> bool {
    entries.iter().all(|(k, v)| {
        !k.is_empty()
            && !k.contains(['=', '&', ';'])
            && !k.starts_with("default.")
            && !v.contains(['&', ';'])
    })
}

static TABLES: LazyLock<WeakPool<ParamTable>> = LazyLock::new(WeakPool::new);

static EMPTY_TABLE: LazyLock<Arc<ParamTable>> =
    LazyLock::new(|| Arc::new(ParamTable::new(Box::new([]), Some("".into()))));

/// Returns the shared table equal to `entries` (sorted by key, unique keys).
pub(crate) fn intern_table(entries: &[(&str, &str)]) -> Arc<ParamTable> {
    if entries.is_empty() {
        return EMPTY_TABLE.clone();
    }
    with_scratch(|text| {
        // Tables are keyed by the hash of their rendering, so that both this lookup and
        // [`intern_table_text`] find them.
        render(entries, text);
        let same = |t: &ParamTable| {
            t.entries.len() == entries.len()
                && t.entries
                    .iter()
                    .zip(entries)
                    .all(|((a, b), (c, d))| &**a == *c && &**b == *d)
        };
        TABLES.get_or_insert(fx_hash(text.as_str()), same, || {
            Arc::new(ParamTable::build(entries, text))
        })
    })
}

/// The shared table whose entries are the `k=v` items of `text` (items joined by `&`, each with
/// an `=`, keys without `&`, `;`, `=`, values without `&`, `;`), if `text` matches a live table
/// or its keys are strictly increasing (sorted, unique). `None` sends the caller to the
/// general path.
pub(crate) fn intern_table_text(text: &str) -> Option<Arc<ParamTable>> {
    if text.is_empty() {
        return Some(EMPTY_TABLE.clone());
    }
    let h = fx_hash(text);
    let same = |t: &ParamTable| t.text.as_deref() == Some(text);
    if let Some(t) = TABLES.get(h, same) {
        return Some(t);
    }
    let entries: Vec<(&str, &str)> = text
        .split('&')
        .map(|item| item.split_once('='))
        .collect::<Option<_>>()?;
    if !entries.windows(2).all(|w| w[0].0 < w[1].0) || !is_textual(&entries) {
        return None;
    }
    Some(TABLES.get_or_insert(h, same, || Arc::new(ParamTable::build(&entries, text))))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strings_are_shared() {
        let a = intern("com.example.SomeLongServiceName");
        let b = intern("com.example.SomeLongServiceName");
        assert!(Arc::ptr_eq(&a, &b));
        assert!(Arc::ptr_eq(&intern("dubbo"), &intern("dubbo")));
    }

    #[test]
    fn tables_are_shared() {
        let t1 = intern_table(&[("a", "1"), ("b", "2")]);
        let t2 = intern_table(&[("a", "1"), ("b", "2")]);
        let t3 = intern_table(&[("a", "1"), ("b", "3")]);
        assert!(Arc::ptr_eq(&t1, &t2));
        assert!(!Arc::ptr_eq(&t1, &t3));
        // The text lookup finds the same tables, and builds new ones from sorted text only.
        let t4 = intern_table_text("a=1&b=2").unwrap();
        assert!(Arc::ptr_eq(&t1, &t4));
        let t5 = intern_table_text("a=1&c=x=y").unwrap();
        assert!(Arc::ptr_eq(&t5, &intern_table(&[("a", "1"), ("c", "x=y")])));
        assert!(intern_table_text("b=1&a=2").is_none());
        assert!(intern_table_text("a=1&a=2").is_none());
        assert!(intern_table_text("a=1&b").is_none());
    }

    #[test]
    fn ambiguous_tables_are_not_matched_by_text() {
        // Both render as `a=b=c`; only the one the scanner would produce is textual.
        let odd = intern_table(&[("a=b", "c")]);
        assert!(odd.text.is_none());
        let t = intern_table_text("a=b=c").unwrap();
        assert!(!Arc::ptr_eq(&odd, &t));
        assert_eq!(&*t.entries[0].0, "a");
        assert_eq!(&*t.entries[0].1, "b=c");
    }
}
