//! What `watch` has printed, kept so that one change among 10k providers costs one render.
//!
//! Each provider's printable form (its `toString()`, JSON-quoted for `--json`) is rendered once,
//! when its [`Url`] object first appears, and kept with that object. Registries hand out the same
//! `Url` object for a provider that did not change (the ZooKeeper child set and the Nacos
//! converter reuse them), so a notification is matched to the previous one by object identity
//! ([`Url::ptr_id`]; the entry holds a clone, so the address cannot be reused while cached) and
//! only new objects are rendered. The stored text is the only copy of it; `--json` output goes
//! out in 64 KiB pieces from one reused buffer (no copy of the whole list is built).
//!
//! The human form prints what changed by text, as before: a provider whose `Url` object was
//! replaced by an equal-looking one is neither removed nor added (a multiset of texts decides).

use std::io::{self, Write};
use std::sync::Arc;

use registry_core::{Notification, Url};
use rustc_hash::FxHashMap;

/// Output is written in pieces of about this size (a pipe holds 64 KiB).
pub const CHUNK: usize = 64 * 1024;

/// The printable form of one URL.
fn render(url: &Url, json: bool) -> Arc<str> {
    let text = url.to_string();
    if json {
        // serde_json's escaping, exactly what serializing the string would give.
        match serde_json::to_string(&text) {
            Ok(q) => Arc::from(q),
            Err(_) => Arc::from(format!("\"{}\"", text.escape_default())),
        }
    } else {
        // Registry data never reaches the terminal raw.
        Arc::from(crate::safe_text::escape(&text))
    }
}

#[derive(Debug)]
struct Entry {
    /// Keeps the object alive so its address identifies it while cached.
    _url: Url,
    text: Arc<str>,
}

/// One category's printed state.
#[derive(Debug, Default)]
struct CategoryView {
    by_ptr: FxHashMap<usize, Entry>,
    /// Human form only: how many entries show each text.
    texts: FxHashMap<Arc<str>, u32>,
}

/// What one notification changed, in the human form (texts sorted).
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Diff {
    /// Distinct texts now listed.
    pub count: usize,
    /// Texts no longer listed.
    pub removed: Vec<Arc<str>>,
    /// Texts listed now and not before.
    pub added: Vec<Arc<str>>,
}

/// The cached printable state of every category of one `watch`.
#[derive(Debug)]
pub struct View {
    json: bool,
    /// `"level"` of every NDJSON line (`interface` / `application`), when levels are shown.
    level: Option<&'static str>,
    categories: Vec<(Arc<str>, CategoryView)>,
    /// The `--json` output chunk, reused between notifications.
    buf: Vec<u8>,
}

impl View {
    /// A view for the NDJSON (`json`) or the human form.
    pub fn new(json: bool) -> View {
        View {
            json,
            level: None,
            categories: Vec::new(),
            buf: Vec::new(),
        }
    }

    /// A view whose NDJSON lines also say `"level": level`.
    pub fn with_level(json: bool, level: &'static str) -> View {
        View {
            level: Some(level),
            ..View::new(json)
        }
    }

    fn category(&mut self, name: &Arc<str>) -> &mut CategoryView {
        let i = match self.categories.iter().position(|(c, _)| c == name) {
            Some(i) => i,
            None => {
                self.categories
                    .push((name.clone(), CategoryView::default()));
                self.categories.len() - 1
            }
        };
        &mut self.categories[i].1
    }

    /// Moves the entries of `urls` from the previous state into a fresh map (rendering only
    /// objects not seen before) and calls `each` with every URL's text in list order. Returns
    /// the texts of the new entries and of the entries gone.
    fn advance(
        &mut self,
        category: &Arc<str>,
        urls: &[Url],
        mut each: impl FnMut(&str),
    ) -> (Vec<Arc<str>>, Vec<Arc<str>>) {
        let json = self.json;
        let view = self.category(category);
        let mut old = std::mem::take(&mut view.by_ptr);
        let mut fresh = Vec::new();
        view.by_ptr.reserve(urls.len());
        for u in urls {
            let id = u.ptr_id();
            let text = match old.remove(&id) {
                Some(e) => {
                    let t = e.text.clone();
                    view.by_ptr.insert(id, e);
                    t
                }
                None => match view.by_ptr.get(&id) {
                    // The same object twice in one list.
                    Some(e) => e.text.clone(),
                    None => {
                        let text = render(u, json);
                        fresh.push(text.clone());
                        view.by_ptr.insert(
                            id,
                            Entry {
                                _url: u.clone(),
                                text: text.clone(),
                            },
                        );
                        text
                    }
                },
            };
            each(&text);
        }
        let gone = old.into_values().map(|e| e.text).collect();
        (fresh, gone)
    }

    /// Writes the NDJSON line of `n` (`{"category":..,"urls":[..]}` and a newline, exactly as
    /// serde_json prints it; with a level, `{"category":..,"level":..,"urls":[..]}`) to `out` in chunks of about [`CHUNK`] bytes, so no buffer of the
    /// whole list is kept.
    pub fn write_json(&mut self, n: &Notification, out: &mut impl Write) -> io::Result<()> {
        let mut buf = std::mem::take(&mut self.buf);
        buf.clear();
        buf.extend_from_slice(b"{\"category\":");
        match serde_json::to_string(&*n.category) {
            Ok(c) => buf.extend_from_slice(c.as_bytes()),
            Err(_) => buf.extend_from_slice(b"\"\""),
        }
        if let Some(l) = self.level {
            buf.extend_from_slice(b",\"level\":\"");
            buf.extend_from_slice(l.as_bytes());
            buf.push(b'"');
        }
        buf.extend_from_slice(b",\"urls\":[");
        let mut first = true;
        let mut failed: Option<io::Error> = None;
        self.advance(&n.category, &n.urls, |t| {
            if !first {
                buf.push(b',');
            }
            first = false;
            buf.extend_from_slice(t.as_bytes());
            if buf.len() >= CHUNK && failed.is_none() {
                if let Err(e) = out.write_all(&buf) {
                    failed = Some(e);
                }
                buf.clear();
            }
        });
        buf.extend_from_slice(b"]}\n");
        let r = match failed {
            Some(e) => Err(e),
            None => out.write_all(&buf),
        };
        self.buf = buf;
        r
    }

    /// What `n` changed against the previous notification of its category (an `empty://`
    /// marker lists nothing).
    pub fn diff(&mut self, n: &Notification) -> Diff {
        let urls: &[Url] = if n.is_empty_marker() { &[] } else { &n.urls };
        let (fresh, gone) = self.advance(&n.category, urls, |_| {});
        let view = self.category(&n.category);
        let mut d = Diff::default();
        // Additions first: a text both added and gone (object replaced) is then unchanged.
        for t in fresh {
            let c = view.texts.entry(t.clone()).or_insert(0);
            *c += 1;
            if *c == 1 {
                d.added.push(t);
            }
        }
        for t in gone {
            if let Some(c) = view.texts.get_mut(&t) {
                *c -= 1;
                if *c == 0 {
                    view.texts.remove(&t);
                    d.removed.push(t);
                }
            }
        }
        d.count = view.texts.len();
        d.added.sort_unstable();
        d.removed.sort_unstable();
        d
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use registry_core::notify::with_empty_marker;

    fn note(cat: &str, urls: &[Url]) -> Notification {
        Notification {
            category: Arc::from(cat),
            urls: urls.iter().cloned().collect(),
        }
    }

    fn u(s: &str) -> Url {
        Url::parse(s).unwrap()
    }

    /// What the unoptimised `watch --json` printed: `json!` of the rendered strings.
    fn reference_line(n: &Notification) -> String {
        let urls: Vec<String> = n.urls.iter().map(ToString::to_string).collect();
        format!(
            "{}\n",
            serde_json::json!({"category": &*n.category, "urls": urls})
        )
    }

    #[test]
    fn json_line_is_what_serde_json_prints() {
        let mut v = View::new(true);
        let a = u("dubbo://10.0.0.1:1/S?k=a\"b\\c&x=\u{1}\u{e9}&timestamp=1");
        let b = u("dubbo://10.0.0.2:1/S?version=1");
        for n in [
            note("providers", &[a.clone(), b.clone()]),
            note("providers", std::slice::from_ref(&b)),
            note("providers", &[b.clone(), a.clone(), u("tri://h:2/S")]),
            note("routers", &[u("empty://1.1.1.1/S?category=routers")]),
        ] {
            let mut out = Vec::new();
            v.write_json(&n, &mut out).unwrap();
            assert_eq!(String::from_utf8(out).unwrap(), reference_line(&n));
        }
    }

    #[test]
    fn long_lists_are_written_in_pieces_with_the_same_bytes() {
        let urls: Vec<Url> = (0..6000)
            .map(|i| {
                u(&format!(
                    "dubbo://10.0.{}.{}:1/S?methods=a,b,c&i={i}",
                    i / 256,
                    i % 256
                ))
            })
            .collect();
        let n = note("providers", &urls);
        let reference = reference_line(&n);
        assert!(reference.len() > 2 * CHUNK);
        /// Records the size of every write.
        struct Pieces(Vec<u8>, Vec<usize>);
        impl Write for Pieces {
            fn write(&mut self, b: &[u8]) -> io::Result<usize> {
                self.0.extend_from_slice(b);
                self.1.push(b.len());
                Ok(b.len())
            }
            fn flush(&mut self) -> io::Result<()> {
                Ok(())
            }
        }
        let mut v = View::new(true);
        let mut p = Pieces(Vec::new(), Vec::new());
        v.write_json(&n, &mut p).unwrap();
        assert_eq!(String::from_utf8(p.0).unwrap(), reference);
        assert!(
            p.1.len() >= 3 && p.1.iter().all(|&l| l < CHUNK + 200),
            "{:?}",
            p.1
        );
    }

    #[test]
    fn unchanged_objects_are_not_rendered_again() {
        let mut v = View::new(false);
        let a = u("dubbo://10.0.0.1:1/S");
        let b = u("dubbo://10.0.0.2:1/S");
        let d = v.diff(&note("providers", &[a.clone(), b.clone()]));
        assert_eq!(d.count, 2);
        assert_eq!(d.added.len(), 2);
        let text_a = v.categories[0].1.by_ptr[&a.ptr_id()].text.clone();
        let c = u("dubbo://10.0.0.3:1/S");
        let d = v.diff(&note("providers", &[a.clone(), c.clone()]));
        assert_eq!(
            d,
            Diff {
                count: 2,
                removed: vec![Arc::from("dubbo://10.0.0.2:1/S")],
                added: vec![Arc::from("dubbo://10.0.0.3:1/S")],
            }
        );
        let again = v.categories[0].1.by_ptr[&a.ptr_id()].text.clone();
        assert!(Arc::ptr_eq(&text_a, &again), "kept text, not re-rendered");
    }

    #[test]
    fn replaced_object_with_same_text_is_no_change() {
        let mut v = View::new(false);
        let a = u("dubbo://10.0.0.1:1/S?x=1");
        v.diff(&note("providers", &[a]));
        let a2 = u("dubbo://10.0.0.1:1/S?x=1");
        let d = v.diff(&note("providers", &[a2]));
        assert_eq!(d.count, 1);
        assert!(d.added.is_empty() && d.removed.is_empty(), "{d:?}");
        // Two objects with one text count once (as a set of texts did).
        let d = v.diff(&note(
            "providers",
            &[u("dubbo://10.0.0.1:1/S?x=1"), u("dubbo://10.0.0.1:1/S?x=1")],
        ));
        assert_eq!(d.count, 1);
        assert!(d.added.is_empty() && d.removed.is_empty(), "{d:?}");
    }

    #[test]
    fn empty_marker_lists_nothing() {
        let mut v = View::new(false);
        let c = u("consumer://1.1.1.1/S");
        v.diff(&note("providers", &[u("dubbo://10.0.0.1:1/S")]));
        let empty = with_empty_marker(&c, "providers", Vec::new(), false).unwrap();
        let d = v.diff(&note("providers", &empty));
        assert_eq!(d.count, 0);
        assert_eq!(d.removed, vec![Arc::<str>::from("dubbo://10.0.0.1:1/S")]);
        assert!(d.added.is_empty());
    }
}
