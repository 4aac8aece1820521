//! Fuzzes the Nacos v1 `instance/list` JSON model and its conversion to provider URLs
//! (`InstanceCache::apply`), plus service-name parsing. Any body must give `Ok`/`Err`, never
//! a panic; a rejected body leaves the cache's list as it was; applying the same body twice
//! reports no change the second time.
//!
//! Input: up to three bodies separated by a NUL byte, applied in order to one cache (so the
//! incremental paths run: unchanged hosts, removed hosts, changed metadata).
#![no_main]

use libfuzzer_sys::fuzz_target;
use registry_nacos::convert::InstanceCache;
use registry_nacos::NacosServiceName;

fuzz_target!(|data: &[u8]| {
    let s = String::from_utf8_lossy(data);
    let mut cache = InstanceCache::new();
    for body in s.split('\0').take(3) {
        let before = cache.urls().cloned();
        match cache.apply("providers:com.foo.Bar:1.0:g", body) {
            Ok(_) => {
                // The same reply again is never a change.
                assert_eq!(
                    cache.apply("providers:com.foo.Bar:1.0:g", body).ok(),
                    Some(false)
                );
            }
            Err(_) => assert_eq!(
                cache.urls().cloned(),
                before,
                "a bad reply changed the list"
            ),
        }
        if let Ok(n) = NacosServiceName::parse(body) {
            let _ = n.value();
            let _ = n.is_concrete();
            let _ = n.to_nacos_form();
        }
    }
});
