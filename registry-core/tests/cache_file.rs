//! The registry cache file (Dubbo's `AbstractRegistry` properties file): Java `Properties` round
//! trips and atomic replacement.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers outside #[test] functions

use std::collections::BTreeMap;

use registry_core::cache_file::{self, parse_properties, to_properties, CacheFile};
use registry_core::Url;

#[test]
fn default_path_follows_dubbo() {
    let u = Url::parse("zookeeper://127.0.0.1:2181?application=demo-app").unwrap();
    let p = cache_file::path_for(&u).unwrap();
    let home = std::env::var("HOME").unwrap();
    assert_eq!(
        p,
        std::path::Path::new(&home).join(".dubbo/dubbo-registry-demo-app-127.0.0.1-2181.cache")
    );
    let off = Url::parse("zookeeper://127.0.0.1:2181?application=a&file-cache=false").unwrap();
    assert!(cache_file::path_for(&off).is_none());
    let no_app = Url::parse("zookeeper://127.0.0.1:2181").unwrap();
    assert!(cache_file::path_for(&no_app).is_none());
    let explicit = Url::parse("zookeeper://127.0.0.1:2181?file=/tmp/x.cache").unwrap();
    assert_eq!(
        cache_file::path_for(&explicit).unwrap(),
        std::path::Path::new("/tmp/x.cache")
    );
}

#[test]
fn properties_round_trip_awkward_characters() {
    let mut m = BTreeMap::new();
    m.insert(
        "grp:x=y/a.B:1.0".to_owned(),
        "v#1!2 with spaces\tand\\back".to_owned(),
    );
    m.insert(
        " leading space key".to_owned(),
        "  leading spaces value".to_owned(),
    );
    m.insert("中文/服务:1".to_owned(), "ünïcödé € 😀 \u{1}".to_owned());
    m.insert("empty".to_owned(), String::new());
    let text = to_properties(&m);
    assert!(
        text.is_ascii(),
        "Properties.store writes ASCII only: {text}"
    );
    assert_eq!(parse_properties(text.as_bytes()).unwrap(), m);
}

#[test]
fn reads_what_java_writes() {
    // As written by java.util.Properties.store (date comment, CRLF-free, \uXXXX escapes).
    let java = b"#Dubbo Registry Cache\n#Sun Nov 29 23:00:00 UTC 2026\n\
        g/com.foo.Bar\\:1.0=empty\\://10.0.0.9/com.foo.Bar?category\\=routers&v\\=\\u4E2D \
        dubbo\\://10.0.0.1\\:20880/com.foo.Bar?x\\=\\uD83D\\uDE00\n";
    let m = parse_properties(java).unwrap();
    let v = &m["g/com.foo.Bar:1.0"];
    assert_eq!(
        v,
        "empty://10.0.0.9/com.foo.Bar?category=routers&v=中 dubbo://10.0.0.1:20880/com.foo.Bar?x=😀"
    );
}

#[test]
fn urls_round_trip_through_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sub/dir/registry.cache");
    let consumer =
        Url::parse("consumer://10.0.0.9/com.foo.Bar?interface=com.foo.Bar&group=g&version=1.0")
            .unwrap();
    let urls: Vec<Url> = [
        "dubbo://10.0.0.1:20880/com.foo.Bar?a=x:y=z#1!2&b=中文&c=~*&group=g&version=1.0",
        "empty://10.0.0.9/com.foo.Bar?category=routers&group=g&version=1.0",
    ]
    .iter()
    .map(|s| Url::parse(s).unwrap())
    .collect();
    let c = CacheFile::open(&path);
    assert!(c.update(&consumer, &urls));
    assert!(!c.update(&consumer, &urls), "unchanged entry");
    c.save().unwrap();
    let back = CacheFile::open(&path).urls_for(&consumer);
    assert_eq!(back.len(), 2);
    for (a, b) in back.iter().zip(&urls) {
        assert_eq!(a.to_full_string(), b.to_full_string());
    }
    // No temporary files are left behind (the lock file, as Dubbo's, stays).
    let mut names: Vec<String> = std::fs::read_dir(path.parent().unwrap())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    assert_eq!(names, ["registry.cache", "registry.cache.lock"]);
}

/// The file lists every provider a consumer knows: it is private (0600) however the umask is
/// set, and so is the lock file.
#[cfg(unix)]
#[test]
fn the_file_is_private() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("private.cache");
    let consumer = Url::parse("consumer://10.0.0.9/S?interface=S").unwrap();
    let c = CacheFile::open(&path);
    c.update(
        &consumer,
        &[Url::parse("dubbo://10.0.0.1:20880/S").unwrap()],
    );
    c.save().unwrap();
    for p in [path.clone(), dir.path().join("private.cache.lock")] {
        let mode = std::fs::metadata(&p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600, "{}: {mode:o}", p.display());
    }
}

/// Someone who can write the directory plants links under the temporary names a save could
/// use (the old scheme was `.<file>.<pid>.<n>.tmp`): a save never writes through them.
#[cfg(unix)]
#[test]
fn a_save_never_follows_a_planted_link() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("target.cache");
    let victim = dir.path().join("victim.txt");
    std::fs::write(&victim, "keep me").unwrap();
    for n in 0..64 {
        std::os::unix::fs::symlink(
            &victim,
            dir.path()
                .join(format!(".target.cache.{}.{n}.tmp", std::process::id())),
        )
        .unwrap();
    }
    let consumer = Url::parse("consumer://10.0.0.9/S?interface=S").unwrap();
    let c = CacheFile::open(&path);
    for i in 0..64 {
        c.update(
            &consumer,
            &[Url::parse(&format!("dubbo://10.0.0.{i}:20880/S")).unwrap()],
        );
        c.save().unwrap();
    }
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep me");
    assert!(!std::fs::symlink_metadata(&path)
        .unwrap()
        .file_type()
        .is_symlink());
}

/// Two consumers (processes) sharing one file: with the lock (the default) each save keeps the
/// other's entries as they are on disk; without it the last writer wins with its own view.
#[test]
fn processes_sharing_a_file_keep_each_others_entries() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("shared.cache");
    let a = Url::parse("consumer://10.0.0.9/A?interface=A").unwrap();
    let b = Url::parse("consumer://10.0.0.9/B?interface=B").unwrap();
    let one = CacheFile::open(&path);
    let two = CacheFile::open(&path);
    one.update(&a, &[Url::parse("dubbo://10.0.0.1:20880/A").unwrap()]);
    one.save().unwrap();
    two.update(&b, &[Url::parse("dubbo://10.0.0.2:20880/B").unwrap()]);
    two.save().unwrap();
    one.update(&a, &[Url::parse("dubbo://10.0.0.3:20880/A").unwrap()]);
    one.save().unwrap();
    let back = CacheFile::open(&path);
    assert_eq!(
        back.urls_for(&a)[0].address().as_deref(),
        Some("10.0.0.3:20880")
    );
    assert_eq!(
        back.urls_for(&b)[0].address().as_deref(),
        Some("10.0.0.2:20880")
    );

    // file-lock=false: no lock file, the last writer's view.
    let solo = dir.path().join("solo.cache");
    let one = CacheFile::open(&solo).with_lock(false);
    let two = CacheFile::open(&solo).with_lock(false);
    one.update(&a, &[Url::parse("dubbo://10.0.0.1:20880/A").unwrap()]);
    one.save().unwrap();
    two.update(&b, &[Url::parse("dubbo://10.0.0.2:20880/B").unwrap()]);
    two.save().unwrap();
    assert!(CacheFile::open(&solo).urls_for(&a).is_empty());
    assert!(!dir.path().join("solo.cache.lock").exists());
}

/// A lock held by another process for longer than the wait fails the save, with a clear
/// error (the next save tries again).
#[test]
fn a_lock_held_elsewhere_fails_the_save_clearly() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("held.cache");
    let holder = std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(dir.path().join("held.cache.lock"))
        .unwrap();
    holder.lock().unwrap();
    let c = CacheFile::open(&path);
    c.update(
        &Url::parse("consumer://10.0.0.9/S?interface=S").unwrap(),
        &[Url::parse("dubbo://10.0.0.1:20880/S").unwrap()],
    );
    let e = c.save().unwrap_err();
    assert!(e.to_string().contains("locked by another process"), "{e}");
    assert!(e.is_retryable());
    holder.unlock().unwrap();
    c.save().unwrap();
    assert_eq!(c.saves(), 1);
}

#[test]
fn concurrent_writers_never_leave_a_torn_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("shared.cache");
    let consumer = Url::parse("consumer://10.0.0.9/S?interface=S").unwrap();
    std::thread::scope(|s| {
        for w in 0..4 {
            let path = path.clone();
            let consumer = consumer.clone();
            s.spawn(move || {
                let c = CacheFile::open(&path);
                for i in 0..50 {
                    let urls: Vec<Url> = (0..50)
                        .map(|j| Url::parse(&format!("dubbo://10.{w}.{i}.{j}:20880/S")).unwrap())
                        .collect();
                    c.update(&consumer, &urls);
                    c.save().unwrap();
                }
            });
        }
        s.spawn(|| {
            for _ in 0..200 {
                if let Ok(bytes) = std::fs::read(&path) {
                    let m = parse_properties(&bytes).unwrap();
                    let v = &m["S"];
                    assert_eq!(v.split(' ').count(), 50, "a complete entry");
                }
            }
        });
    });
}
