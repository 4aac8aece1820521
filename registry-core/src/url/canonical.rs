//! The fast path of `Url::parse` for a query in the form registries store (`toFullString`):
//! `k=v` items joined by `&`, no `default.` keys, each volatile key at most once.
//!
//! First the query is compared with the texts of the tables the last parses on this thread
//! produced (providers of one service arrive together and share one): if it is such a text with
//! the volatile items inserted, no scan, hash or lock is needed. Otherwise the query is scanned
//! once: the volatile items are cut out, and the remaining text, which is exactly the rendering
//! of the stable parameters, is looked up among the interned tables by one hash and one
//! comparison. No per-item vector, no sorting, no per-key hashing. Anything else (keys out of
//! order, `;`, items without `=`, ...) returns `None` and takes the general path, which gives
//! the same result.

use std::cell::RefCell;
use std::sync::{Arc, Weak};

use super::intern::{intern_table_text, ParamTable};
use super::local::{volatile_index, VOLATILE_KEYS};
use super::parse::scan_query;
use super::scratch::with_scratch;
use super::{Url, UrlParts};

/// Volatile values in [`VOLATILE_KEYS`] order.
type Volatile<'q> = [Option<&'q str>; VOLATILE_KEYS.len()];

/// How many recently used tables each thread compares a query with before scanning it.
const RECENT: usize = 4;

/// The tables of the last canonical parses on this thread (weak: they are not kept alive).
struct Recent {
    tables: [Weak<ParamTable>; RECENT],
    /// The slot the next new table goes to (the oldest).
    next: usize,
}

thread_local! {
    static RECENT_TABLES: RefCell<Recent> = const {
        RefCell::new(Recent {
            tables: [const { Weak::new() }; RECENT],
            next: 0,
        })
    };
}

/// Parses the query `q` of a URL whose other parts are `parts`, if `q` is canonical.
pub(super) fn parse_canonical(parts: UrlParts<'_>, q: &str) -> Option<Url> {
    let known = RECENT_TABLES
        .try_with(|r| {
            let r = r.try_borrow().ok()?;
            // Newest first.
            (1..=RECENT).find_map(|age| {
                let table = r.tables[(r.next + RECENT - age) % RECENT].upgrade()?;
                let volatile = match_text(q, table.text()?)?;
                Some((table, volatile))
            })
        })
        .ok()
        .flatten();
    if let Some((table, volatile)) = known {
        return Some(Url::assemble(parts, table, volatile));
    }
    let (table, volatile) = scan(q)?;
    let _ = RECENT_TABLES.try_with(|r| {
        if let Ok(mut r) = r.try_borrow_mut() {
            let slot = r.next;
            r.tables[slot] = Arc::downgrade(&table);
            r.next = (slot + 1) % RECENT;
        }
    });
    Some(Url::assemble(parts, table, volatile))
}

/// The volatile values of `q` if `q` is `text` (a table's rendering) with at most one item per
/// volatile key inserted at item boundaries.
fn match_text<'q>(q: &'q str, text: &str) -> Option<Volatile<'q>> {
    let (qb, tb) = (q.as_bytes(), text.as_bytes());
    let mut volatile: Volatile<'q> = [None; VOLATILE_KEYS.len()];
    let (mut i, mut t) = (0usize, 0usize);
    // Each round starts at an item start in both strings; each mismatch must be a volatile item
    // of `q`, so there are at most four rounds.
    loop {
        let n = common_prefix(qb.get(i..)?, tb.get(t..)?);
        (i, t) = (i + n, t + n);
        if t == tb.len() && i == qb.len() {
            return Some(volatile);
        }
        // Where the differing item of `q` starts.
        let s = if t == tb.len() && i > 0 && qb.get(i) == Some(&b'&') {
            // All of `text` matched and `q` goes on with another item.
            i + 1
        } else {
            let s = qb[..i]
                .iter()
                .rposition(|&c| c == b'&')
                .map_or(0, |p| p + 1);
            // The item's start in `text`: everything since `s` matched.
            t = t.checked_sub(i - s)?;
            s
        };
        let (slot, key_len) = volatile_item(q.get(s..)?)?;
        let value = s + key_len + 1;
        let end = qb[value..]
            .iter()
            .position(|&c| c == b'&' || c == b';')
            .map_or(qb.len(), |p| value + p);
        if qb.get(end) == Some(&b';') || volatile[slot].is_some() {
            return None;
        }
        volatile[slot] = Some(&q[value..end]);
        i = (end + 1).min(qb.len());
    }
}

/// Slot and key length of an item starting with `<volatile key>=`.
fn volatile_item(item: &str) -> Option<(usize, usize)> {
    VOLATILE_KEYS.iter().enumerate().find_map(|(slot, key)| {
        let rest = item.strip_prefix(key)?;
        rest.starts_with('=').then_some((slot, key.len()))
    })
}

/// Length of the common prefix of `a` and `b`, comparing 8 bytes at a time.
fn common_prefix(a: &[u8], b: &[u8]) -> usize {
    let n = a.len().min(b.len());
    let word = |s: &[u8], i: usize| {
        s.get(i..i + 8)
            .and_then(|w| <[u8; 8]>::try_from(w).ok())
            .map_or(0, u64::from_le_bytes)
    };
    let mut i = 0;
    while i + 8 <= n {
        let x = word(a, i) ^ word(b, i);
        if x != 0 {
            return i + (x.trailing_zeros() / 8) as usize;
        }
        i += 8;
    }
    while i < n && a[i] == b[i] {
        i += 1;
    }
    i
}

/// The scanning path: the shared table and volatile values of a canonical `q`.
fn scan(q: &str) -> Option<(Arc<ParamTable>, Volatile<'_>)> {
    let mut volatile: Volatile<'_> = [None; VOLATILE_KEYS.len()];
    let table = with_scratch(|stable| {
        let b = q.as_bytes();
        let mut canonical = true;
        // Where the next item must start, and the start of the stable text not yet copied.
        let (mut next, mut run) = (0usize, 0usize);
        let mut prev = "";
        scan_query(q, |start, eq, end| {
            let Some(eq) = eq.filter(|_| start == next && b.get(end).is_none_or(|&c| c == b'&'))
            else {
                // A skipped `=`, an empty item, a `;` or an item without `=`.
                canonical = false;
                return false;
            };
            next = end + 1;
            let key = &q[start..eq];
            if let Some(i) = volatile_index(key) {
                let slot = &mut volatile[i];
                canonical &= slot.is_none();
                *slot = Some(&q[eq + 1..end]);
                stable.push_str(&q[run..start]);
                run = next;
            } else {
                // Stable keys strictly increasing (so no duplicates), none `default.X`.
                canonical &= key > prev && !key.starts_with("default.");
                prev = key;
            }
            canonical
        });
        if !canonical || next != q.len() + 1 {
            return None;
        }
        stable.push_str(q.get(run..).unwrap_or(""));
        if stable.ends_with('&') {
            // The separator before a trailing volatile item (values never contain `&`).
            stable.pop();
        }
        intern_table_text(stable)
    })?;
    Some((table, volatile))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(u: &Url) -> Vec<(&str, &str)> {
        u.params().collect()
    }

    #[test]
    fn canonical_queries_match_the_general_path() {
        for q in [
            "a=1&b=2",
            "a=1&pid=2&z=3",
            "pid=2&a=1",
            "a=1&timestamp=5",
            "ipv6=::1&pid=2&timestamp=5",
            "a=x=y&b=&c=1",
        ] {
            // The first parse may scan; the second matches the remembered table.
            let fast = parse_canonical(UrlParts::default(), q).unwrap();
            let again = parse_canonical(UrlParts::default(), q).unwrap();
            assert_eq!(params(&fast), params(&again), "{q}");
            let mut items = Vec::new();
            scan_query(q, |s, e, end| {
                items.push(e.map_or((&q[s..end], ""), |e| (&q[s..e], &q[e + 1..end])));
                true
            });
            let slow = Url::from_parsed(UrlParts::default(), items).unwrap();
            assert_eq!(params(&fast), params(&slow), "{q}");
        }
    }

    #[test]
    fn other_queries_take_the_general_path() {
        for q in [
            "a=1;b=2",
            "a=1&&b=2",
            "a=1&",
            "=a=1",
            "a&b=1",
            "default.a=1",
            "pid=1&pid=2",
            "b=1&a=2&a=3",
            "c=1&a=2",
            "",
        ] {
            assert!(parse_canonical(UrlParts::default(), q).is_none(), "{q}");
        }
    }

    #[test]
    fn text_match_cuts_out_volatile_items_only() {
        let text = "a=1&p=2&pidx=3";
        fn ok(q: &str) -> Option<Volatile<'_>> {
            match_text(q, "a=1&p=2&pidx=3")
        }
        assert_eq!(ok(text), Some([None, None, None]));
        assert_eq!(ok("pid=9&a=1&p=2&pidx=3"), Some([None, Some("9"), None]));
        assert_eq!(
            ok("a=1&p=2&pid=9&pidx=3&timestamp=7"),
            Some([None, Some("9"), Some("7")])
        );
        assert_eq!(
            ok("a=1&ipv6=::1&p=2&pidx=3&pid="),
            Some([Some("::1"), Some(""), None])
        );
        for q in [
            "a=1&p=2",
            "a=1&p=2&pidx=3&x=1",
            "a=1&p=2&pidx=34",
            "a=1&p=2&pid=1&pid=2&pidx=3",
            "a=1&p=2&pidx=3&pid=1;b=2",
            "a=1;p=2&pidx=3",
            "a=1&&p=2&pidx=3",
            "a=1&p=2&pidx=3&",
            "a=1&pid&p=2&pidx=3",
            "a=1&p=2&pidx=3&pid",
            "",
        ] {
            assert_eq!(ok(q), None, "{q}");
        }
        assert_eq!(match_text("pid=1", ""), Some([None, Some("1"), None]));
        assert_eq!(match_text("", ""), Some([None, None, None]));
        assert_eq!(match_text("a=1", ""), None);
    }

    /// The slow path's result for `q`.
    fn general(q: &str) -> Vec<(String, String)> {
        let mut items = Vec::new();
        scan_query(q, |s, e, end| {
            items.push(e.map_or((&q[s..end], ""), |e| (&q[s..e], &q[e + 1..end])));
            true
        });
        let u = Url::from_parsed(UrlParts::default(), items).unwrap();
        owned(&u)
    }

    fn owned(u: &Url) -> Vec<(String, String)> {
        u.params()
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect()
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(2000))]

        /// Whatever the fast path accepts, it parses like the general path, both when it scans
        /// and when it matches the remembered table (also one remembered from another query).
        #[test]
        fn fast_path_agrees_with_general_path(
            items in proptest::collection::vec(
                (
                    "(a|b|p|pid|pidx|ipv6|timestamp|default\\.a|t|=a|)",
                    proptest::option::of("[a=;&1]{0,3}"),
                    "[&;]|&&",
                ),
                0..7,
            ),
            other in "[ab]=[12](&pid=[12])?",
            drop in 0usize..7,
        ) {
            let mut q = String::new();
            for (i, (k, v, sep)) in items.iter().enumerate() {
                if i > 0 {
                    q.push_str(sep);
                }
                q.push_str(k);
                if let Some(v) = v {
                    q.push('=');
                    q.push_str(v);
                }
            }
            // The same items sorted by key, last value of a key kept, joined by `&`: mostly
            // canonical, so the fast path takes it.
            let sorted: std::collections::BTreeMap<_, _> =
                items.iter().map(|(k, v, _)| (k, v)).collect();
            let render = |skip: usize| {
                sorted
                    .iter()
                    .enumerate()
                    .filter(|(i, _)| *i != skip)
                    .map(|(_, (k, v))| v.as_ref().map_or(k.to_string(), |v| format!("{k}={v}")))
                    .collect::<Vec<_>>()
                    .join("&")
            };
            let canonical = render(usize::MAX);
            // Remembering the table of a query with one item less makes the text match see an
            // extra item.
            let near = render(drop);
            for q in [&q, &canonical] {
                let expected = general(q);
                for warm in [q, &other, &near] {
                    let _ = parse_canonical(UrlParts::default(), warm);
                    if let Some(u) = parse_canonical(UrlParts::default(), q) {
                        proptest::prop_assert_eq!(owned(&u), expected.clone(), "{}", q);
                    }
                }
            }
        }
    }
}
