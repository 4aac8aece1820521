//! Fuzzes ZooKeeper child conversion (`toUrlsWithEmpty`): any child name must convert to
//! `Some`/`None` without a panic, for providers and the other categories, and a [`ChildSet`] fed
//! arbitrary create/delete/re-list sequences must stay consistent with converting its children
//! afresh.
//!
//! Input: lines; the first byte of each line picks the operation (`+` insert, `-` remove,
//! `=` re-list with the rest of the input, anything else: convert only).
#![no_main]

use libfuzzer_sys::fuzz_target;
use registry_core::Url;
use registry_zk::children::{convert_child, ChildSet, PathKind};
use registry_zk::paths::{direct_child, strip_variable_keys};

fuzz_target!(|data: &[u8]| {
    let s = String::from_utf8_lossy(data);
    let Ok(consumer) = Url::parse("consumer://10.0.0.9/com.foo.Bar?interface=com.foo.Bar&version=1.0&group=g&category=providers,routers")
    else {
        return;
    };
    let mut providers = ChildSet::new("/dubbo/com.foo.Bar/providers", consumer.clone());
    let mut routers = ChildSet::new("/dubbo/com.foo.Bar/routers", consumer.clone());
    let mut lines = s.split('\n');
    while let Some(line) = lines.next() {
        let (op, raw) = match line.char_indices().nth(1) {
            Some((i, _)) => (line.as_bytes()[0], &line[i..]),
            None => (b' ', line),
        };
        let _ = strip_variable_keys(raw);
        let _ = direct_child("/dubbo/com.foo.Bar/providers", raw);
        match op {
            b'+' => {
                providers.insert(raw);
                routers.insert(raw);
            }
            b'-' => {
                providers.remove(raw);
                routers.remove(raw);
            }
            b'=' => {
                let rest: Vec<String> = lines.by_ref().map(str::to_owned).collect();
                providers.replace_all(rest.clone());
                routers.replace_all(rest);
            }
            _ => {
                let _ = convert_child(PathKind::Providers, &consumer, raw);
                let _ = convert_child(PathKind::Other, &consumer, raw);
            }
        }
    }
    for set in [&mut providers, &mut routers] {
        let list = set.list();
        assert!(list.len() <= set.len());
        assert!(list
            .iter()
            .all(|u| u.protocol().is_some_and(|p| !p.is_empty())));
    }
});
