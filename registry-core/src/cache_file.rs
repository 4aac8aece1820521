//! The local registry cache file (Dubbo's `AbstractRegistry` properties file): the last notified
//! URLs of every subscription, kept on disk so a consumer can start while the registry is down.
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
//! - **Writing**: a save creates a temporary file next to the target with `O_EXCL` under an
//!   unpredictable name (`.<file>.<random>.tmp`, mode 0600: the file lists every provider the
//!   consumer knows), writes and syncs it, renames it over the target (readers and other
//!   processes only ever see a complete file) and syncs the directory, so the rename survives
//!   a crash. The target keeps mode 0600.
//! - **Between processes** (registry param `file-lock`, default true, as Dubbo's
//!   `<file>.lock`): a save holds an advisory lock (`flock`) on `<file>.lock` (created 0600),
//!   re-reads the file under it and writes the other processes' entries as they are now with
//!   this process's own entries over them, so consumers sharing one file do not erase each
//!   other's services. A lock held elsewhere for more than [`LOCK_WAIT`] (5 s) fails the save
//!   (the next save tries again). With `file-lock=false` no lock file is used and the last
//!   writer wins with its own view (entries read at start-up are kept).
//! - **How often**: [`crate::failback`] saves at most once per `file-save-interval` (ms,
//!   default 1000) while the registry churns, always writing the latest state.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::fs::{File, OpenOptions};
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

use parking_lot::Mutex;

use crate::error::{Error, Result};
use crate::url::Url;

/// The comment Dubbo writes on the first line.
pub const COMMENT: &str = "Dubbo Registry Cache";

/// How long a save waits for another process's lock before it fails.
pub const LOCK_WAIT: Duration = Duration::from_secs(5);

/// The cache file of one registry.
#[derive(Debug)]
pub struct CacheFile {
    path: PathBuf,
    lock: bool,
    inner: Mutex<Entries>,
    saves: std::sync::atomic::AtomicU64,
}

#[derive(Debug, Default)]
struct Entries {
    all: BTreeMap<String, String>,
    /// Keys this process updated: the ones it writes over the other processes'.
    own: BTreeSet<String>,
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
        let lock = registry.param_bool("file-lock", true);
        path_for(registry).map(|p| CacheFile::open(p).with_lock(lock))
    }

    /// Whether a save locks `<file>.lock` and merges the other processes' entries (default
    /// true; module docs).
    pub fn with_lock(mut self, lock: bool) -> CacheFile {
        self.lock = lock;
        self
    }

    /// The cache at `path`, loaded if the file exists.
    pub fn open(path: impl Into<PathBuf>) -> CacheFile {
        let path = path.into();
        let all = read_entries(&path);
        CacheFile {
            path,
            lock: true,
            inner: Mutex::new(Entries {
                all,
                own: BTreeSet::new(),
            }),
            saves: std::sync::atomic::AtomicU64::new(0),
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
        let inner = self.inner.lock();
        let Some(value) = inner.all.get(&key) else {
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
        let mut inner = self.inner.lock();
        inner.own.insert(key.clone());
        if inner.all.get(&key) == Some(&value) {
            return false;
        }
        inner.all.insert(key, value);
        true
    }

    /// The raw entries (service key → space-joined URLs).
    pub fn entries(&self) -> BTreeMap<String, String> {
        self.inner.lock().all.clone()
    }

    /// Writes the file atomically and privately (module docs): under the lock when enabled
    /// (merging the other processes' entries), a new `O_EXCL` temporary file of mode 0600,
    /// synced, renamed over the target, then the directory synced. Creates the parent
    /// directory. Blocking: call it off the async path.
    ///
    /// Errors: [`Error::Io`] when the directory, the lock, the temporary file or the rename
    /// fails (the lock held elsewhere for more than [`LOCK_WAIT`] included).
    pub fn save(&self) -> Result<()> {
        let dir = self
            .path
            .parent()
            .filter(|d| !d.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        let fail = |what: &str, e: std::io::Error| {
            Error::Io(format!(
                "saving registry cache {}: {what}: {e}",
                self.path.display()
            ))
        };
        std::fs::create_dir_all(dir).map_err(|e| fail("directory", e))?;
        let _lock = if self.lock {
            Some(lock_file(&self.path).map_err(|e| fail("lock", e))?)
        } else {
            None
        };
        let text = {
            let mut inner = self.inner.lock();
            if self.lock {
                // The other processes' entries as they are now; ours over them.
                let mut merged = read_entries(&self.path);
                for k in &inner.own {
                    if let Some(v) = inner.all.get(k) {
                        merged.insert(k.clone(), v.clone());
                    }
                }
                inner.all = merged;
            }
            to_properties(&inner.all)
        };
        let (tmp, mut file) =
            create_private_temp(dir, &self.path).map_err(|e| fail("temporary file", e))?;
        let written = file
            .write_all(text.as_bytes())
            .and_then(|()| file.sync_all())
            .and_then(|()| std::fs::rename(&tmp, &self.path));
        drop(file);
        if let Err(e) = written {
            let _ = std::fs::remove_file(&tmp);
            return Err(fail("write", e));
        }
        sync_dir(dir).map_err(|e| fail("directory sync", e))?;
        self.saves
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Ok(())
    }

    /// Files written so far by this handle.
    pub fn saves(&self) -> u64 {
        self.saves.load(std::sync::atomic::Ordering::Relaxed)
    }
}

/// The entries of the file at `path` (empty when missing or unreadable, with a warning).
fn read_entries(path: &Path) -> BTreeMap<String, String> {
    match std::fs::read(path) {
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
    }
}

/// Opens `options` with mode 0600 for a new file (unix).
fn private(options: &mut OpenOptions) -> &mut OpenOptions {
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt as _;
        options.mode(0o600);
    }
    options
}

/// A new file `.<name>.<random>.tmp` in `dir`, created exclusively (`O_CREAT|O_EXCL`, never
/// following a planted link), mode 0600; another random name when one exists.
fn create_private_temp(dir: &Path, target: &Path) -> std::io::Result<(PathBuf, File)> {
    let name = target
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or("registry.cache");
    let mut last = None;
    for _ in 0..8 {
        let tmp = dir.join(format!(
            ".{name}.{:016x}{:016x}.tmp",
            fastrand::u64(..),
            fastrand::u64(..)
        ));
        match private(OpenOptions::new().write(true).create_new(true)).open(&tmp) {
            Ok(f) => return Ok((tmp, f)),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => last = Some(e),
            Err(e) => return Err(e),
        }
    }
    Err(last.unwrap_or_else(|| std::io::Error::other("no free temporary name")))
}

/// Holds the advisory lock of `<file>.lock` (created 0600), waiting at most [`LOCK_WAIT`].
fn lock_file(target: &Path) -> std::io::Result<File> {
    let mut name = target.as_os_str().to_owned();
    name.push(".lock");
    let file = private(OpenOptions::new().append(true).create(true)).open(PathBuf::from(name))?;
    let deadline = std::time::Instant::now() + LOCK_WAIT;
    loop {
        match file.try_lock() {
            Ok(()) => return Ok(file),
            Err(std::fs::TryLockError::WouldBlock) if std::time::Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(10));
            }
            Err(std::fs::TryLockError::WouldBlock) => {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::WouldBlock,
                    "locked by another process",
                ))
            }
            Err(std::fs::TryLockError::Error(e)) => return Err(e),
        }
    }
}

/// Syncs a directory, so a rename in it is durable (unix; a no-op elsewhere).
fn sync_dir(dir: &Path) -> std::io::Result<()> {
    #[cfg(unix)]
    {
        File::open(dir)?.sync_all()
    }
    #[cfg(not(unix))]
    {
        let _ = dir;
        Ok(())
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
