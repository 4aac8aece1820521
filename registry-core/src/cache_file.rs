//! The local registry cache file (§3.4): the last notified URLs of every subscription, kept on
//! disk so a consumer can start while the registry is down.
//!
//! - **Where**: registry param `file`, else
//!   `${HOME}/.dubbo/dubbo-registry-<application>-<registry address with ':'→'-'>.cache`.
//!   Disabled by `file-cache=false`. Without a `file` param and without an `application` param
//!   there is no cache (Dubbo would write `...-null-...`; a library should not litter `$HOME`).
//! - **Format**: a Java `Properties` file as `Properties.store` writes it (comment line
//!   `#Dubbo Registry Cache`, `key=value`, `:` `=` `#` `!` and leading spaces backslash-escaped,
//!   everything outside printable ASCII as `\uXXXX`, supplementary characters as surrogate
//!   pairs). Key = the subscribe URL's service key, value = the full strings of every notified
//!   URL of all categories (including `empty://`), joined by single spaces.
//! - **Reading** uses the `java-properties` crate. Its writer emits Windows-1252 bytes and
//!   `\u` escapes with fewer than four digits, which Java cannot read, so the (small) writer
//!   here follows `Properties.store` instead; and because its reader rejects surrogate-pair
//!   escapes, they are joined before the text is handed to it.
//! - **Concurrency**: a save writes a temporary file next to the target and renames it over
//!   the target, so readers and other processes only ever see a complete file (the last writer
//!   wins). This replaces Dubbo's `<file>.lock` file lock; no lock file is created.
//!   Entries read at start-up that this process never updates (other services, other
//!   processes' entries) are kept.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::Mutex;

use crate::error::{Error, Result};
use crate::url::Url;

/// The comment Dubbo writes on the first line.
pub const COMMENT: &str = "Dubbo Registry Cache";

/// The cache file of one registry.
#[derive(Debug)]
pub struct CacheFile {
    path: PathBuf,
    entries: Mutex<BTreeMap<String, String>>,
}

/// The cache file path for a registry URL, or `None` when the cache is disabled
/// (`file-cache=false`, or neither `file` nor `application` is set, or no home directory).
pub fn path_for(registry: &Url) -> Option<PathBuf> {
    if !registry.param_bool("file-cache", true) {
        return None;
    }
    if let Some(f) = registry.param("file").filter(|f| !f.is_empty()) {
        return Some(PathBuf::from(f));
    }
    let app = registry.param("application").filter(|a| !a.is_empty())?;
    let home = std::env::var_os("HOME").filter(|h| !h.is_empty())?;
    let address = registry.address().unwrap_or_default().replace(':', "-");
    Some(
        Path::new(&home)
            .join(".dubbo")
            .join(format!("dubbo-registry-{app}-{address}.cache")),
    )
}

impl CacheFile {
    /// The cache of `registry` (see [`path_for`]), loaded from disk if the file exists. A file
    /// that cannot be read is logged and treated as empty.
    pub fn for_registry(registry: &Url) -> Option<CacheFile> {
        path_for(registry).map(CacheFile::open)
    }

    /// The cache at `path`, loaded if the file exists.
    pub fn open(path: impl Into<PathBuf>) -> CacheFile {
        let path = path.into();
        let entries = match std::fs::read(&path) {
            Ok(bytes) => match parse_properties(&bytes) {
                Ok(m) => m,
                Err(e) => {
                    tracing::warn!(path = %path.display(), error = %e, "ignoring unreadable registry cache file");
                    BTreeMap::new()
                }
            },
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => BTreeMap::new(),
            Err(e) => {
                tracing::warn!(path = %path.display(), error = %e, "cannot read registry cache file");
                BTreeMap::new()
            }
        };
        CacheFile {
            path,
            entries: Mutex::new(entries),
        }
    }

    /// The file path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The cached URLs for a subscribe URL (`getCacheUrls`): the entry of its service key,
    /// split on whitespace, each parsed with [`Url::parse`] (unparsable items are skipped).
    pub fn urls_for(&self, consumer: &Url) -> Vec<Url> {
        let Some(key) = consumer.service_key() else {
            return Vec::new();
        };
        if !key.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_') {
            return Vec::new();
        }
        let entries = self.entries.lock();
        let Some(value) = entries.get(&key) else {
            return Vec::new();
        };
        value
            .split(|c: char| c.is_whitespace())
            .filter(|s| !s.is_empty())
            .filter_map(|s| match Url::parse(s) {
                Ok(u) => Some(u),
                Err(e) => {
                    tracing::warn!(error = %e, "skipping a malformed URL in the registry cache");
                    None
                }
            })
            .collect()
    }

    /// Replaces the entry of `consumer`'s service key with `urls` (in memory; see
    /// [`CacheFile::save`]). Returns true when the entry changed.
    pub fn update(&self, consumer: &Url, urls: &[Url]) -> bool {
        let Some(key) = consumer.service_key() else {
            return false;
        };
        let mut value = String::new();
        for u in urls {
            if !value.is_empty() {
                value.push(' ');
            }
            value.push_str(&u.to_full_string());
        }
        let mut entries = self.entries.lock();
        if entries.get(&key) == Some(&value) {
            return false;
        }
        entries.insert(key, value);
        true
    }

    /// The raw entries (service key → space-joined URLs).
    pub fn entries(&self) -> BTreeMap<String, String> {
        self.entries.lock().clone()
    }

    /// Writes the file atomically: a temporary file in the same directory, then a rename over
    /// the target. Creates the parent directory. Blocking: call it off the async path.
    pub fn save(&self) -> Result<()> {
        let text = to_properties(&self.entries.lock());
        let dir = self
            .path
            .parent()
            .filter(|d| !d.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        std::fs::create_dir_all(dir)?;
        static SEQ: AtomicU64 = AtomicU64::new(0);
        let name = self
            .path
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or("registry.cache");
        let tmp = dir.join(format!(
            ".{name}.{}.{}.tmp",
            std::process::id(),
            SEQ.fetch_add(1, Ordering::Relaxed)
        ));
        let write = || -> std::io::Result<()> {
            let mut f = std::fs::File::create(&tmp)?;
            f.write_all(text.as_bytes())?;
            f.sync_all()?;
            std::fs::rename(&tmp, &self.path)
        };
        write().map_err(|e| {
            let _ = std::fs::remove_file(&tmp);
            Error::Io(format!(
                "saving registry cache {}: {e}",
                self.path.display()
            ))
        })
    }
}

/// Renders entries the way `java.util.Properties.store` does (ASCII only).
pub fn to_properties(entries: &BTreeMap<String, String>) -> String {
    let mut out = String::with_capacity(
        64 + entries
            .iter()
            .map(|(k, v)| k.len() + v.len() + 2)
            .sum::<usize>(),
    );
    out.push('#');
    out.push_str(COMMENT);
    out.push('\n');
    for (k, v) in entries {
        escape_into(&mut out, k, true);
        out.push('=');
        escape_into(&mut out, v, false);
        out.push('\n');
    }
    out
}

/// `Properties.saveConvert(s, escapeSpace, escUnicode=true)`.
fn escape_into(out: &mut String, s: &str, escape_all_spaces: bool) {
    for (i, c) in s.chars().enumerate() {
        match c {
            ' ' if i == 0 || escape_all_spaces => out.push_str("\\ "),
            '\\' => out.push_str("\\\\"),
            '\t' => out.push_str("\\t"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\x0c' => out.push_str("\\f"),
            '=' | ':' | '#' | '!' => {
                out.push('\\');
                out.push(c);
            }
            ' '..='~' => out.push(c),
            _ => {
                let mut units = [0u16; 2];
                for u in c.encode_utf16(&mut units) {
                    let _ = write!(out, "\\u{u:04X}");
                }
            }
        }
    }
}

/// Parses a properties file (Latin-1 bytes with `\uXXXX` escapes, as Java writes it).
pub fn parse_properties(bytes: &[u8]) -> Result<BTreeMap<String, String>> {
    let latin1: String = bytes.iter().map(|&b| char::from(b)).collect();
    let text = join_surrogate_escapes(&latin1);
    let mut map = BTreeMap::new();
    java_properties::PropertiesIter::new_with_encoding(text.as_bytes(), encoding_rs::UTF_8)
        .read_into(|k, v| {
            map.insert(k, v);
        })
        .map_err(|e| Error::Io(format!("malformed properties: {e}")))?;
    Ok(map)
}

/// Replaces `\uD8xx\uDCxx` escape pairs by the character they encode (raw UTF-8), leaving every
/// other escape untouched.
fn join_surrogate_escapes(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(i) = rest.find('\\') {
        out.push_str(&rest[..i]);
        let tail = &rest[i..];
        let hex = |t: &str, at: usize| {
            t.get(at..at + 6)
                .filter(|e| e.starts_with("\\u"))
                .and_then(|e| u16::from_str_radix(&e[2..], 16).ok())
        };
        match (hex(tail, 0), hex(tail, 6)) {
            (Some(hi), Some(lo))
                if (0xD800..0xDC00).contains(&hi) && (0xDC00..0xE000).contains(&lo) =>
            {
                out.extend(char::decode_utf16([hi, lo]).filter_map(|r| r.ok()));
                rest = &tail[12..];
            }
            _ => {
                // Copy the backslash and the escaped character verbatim.
                let n = tail[1..].chars().next().map_or(0, char::len_utf8);
                out.push_str(&tail[..1 + n]);
                rest = &tail[1 + n..];
            }
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_like_java() {
        let mut m = BTreeMap::new();
        m.insert("g/a.B:1".to_owned(), " x=y:z#!é中😀\\".to_owned());
        let t = to_properties(&m);
        assert_eq!(
            t,
            "#Dubbo Registry Cache\ng/a.B\\:1=\\ x\\=y\\:z\\#\\!\\u00E9\\u4E2D\\uD83D\\uDE00\\\\\n"
        );
        assert_eq!(parse_properties(t.as_bytes()).unwrap(), m);
    }

    #[test]
    fn surrogates_only_joined_when_paired() {
        assert_eq!(join_surrogate_escapes("a\\uD83D\\uDE00b"), "a😀b");
        assert_eq!(
            join_surrogate_escapes("\\\\uD83D\\uDE00"),
            "\\\\uD83D\\uDE00"
        );
        assert_eq!(join_surrogate_escapes("\\u0041\\"), "\\u0041\\");
    }
}
