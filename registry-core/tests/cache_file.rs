//! The registry cache file (§3.4): Java `Properties` round trips and atomic replacement.
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
    // No temporary files are left behind.
    let names: Vec<_> = std::fs::read_dir(path.parent().unwrap()).unwrap().collect();
    assert_eq!(names.len(), 1);
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
