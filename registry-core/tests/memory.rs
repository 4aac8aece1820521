//! `memory://` specifics beyond the shared contract (tests/src/contract.rs): empty
//! protection, `category=*`, isolation, named stores, handle lifetime, invalid input.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers outside #[test] functions

use registry_core::memory::MemoryRegistry;
use registry_core::{Notification, Registry, Subscription, Url};

fn u(s: &str) -> Url {
    Url::parse(s).unwrap()
}

async fn next(s: &mut Subscription) -> Notification {
    tokio::time::timeout(std::time::Duration::from_secs(5), s.next())
        .await
        .unwrap()
        .unwrap()
}

#[tokio::test]
async fn empty_protection_holds_back_empty_providers() {
    let r = MemoryRegistry::from_url(&u("memory://?enable-empty-protection=true"));
    let p = u("dubbo://10.0.0.1:20880/S?interface=S");
    let c = u("consumer://10.0.0.9/S?interface=S&category=providers,routers");
    let mut s = r.subscribe(&c).await.unwrap();
    let n = next(&mut s).await;
    assert_eq!(
        &*n.category, "routers",
        "no initial empty providers under protection"
    );
    assert!(n.is_empty_marker());
    r.register(&p).await.unwrap();
    assert_eq!(next(&mut s).await.urls.len(), 1);
    r.unregister(&p).await.unwrap();
    assert!(s.try_next().is_none(), "the last good list stays");
}

#[tokio::test]
async fn category_star_covers_all_four_categories() {
    let r = MemoryRegistry::new();
    let c = u("consumer://10.0.0.9/S?interface=S&category=*");
    let mut s = r.subscribe(&c).await.unwrap();
    let mut cats = Vec::new();
    for _ in 0..4 {
        let n = next(&mut s).await;
        assert!(n.is_empty_marker());
        assert_eq!(n.urls[0].param("category"), Some(&*n.category));
        cats.push(n.category.to_string());
    }
    cats.sort();
    assert_eq!(cats, ["configurators", "consumers", "providers", "routers"]);
}

#[tokio::test]
async fn isolated_and_named_stores() {
    let a = MemoryRegistry::new();
    let b = MemoryRegistry::new();
    let p = u("dubbo://10.0.0.1:20880/S?interface=S");
    let c = u("consumer://10.0.0.9/S?interface=S");
    a.register(&p).await.unwrap();
    assert_eq!(a.lookup(&c).await.unwrap().len(), 1);
    assert!(
        b.lookup(&c).await.unwrap().is_empty(),
        "new() stores are isolated"
    );

    let name = format!("named-{}", std::process::id());
    let x = MemoryRegistry::connect(&u(&format!("memory://{name}")))
        .await
        .unwrap();
    let y = MemoryRegistry::named(&name);
    x.register(&p).await.unwrap();
    assert_eq!(
        y.lookup(&c).await.unwrap().len(),
        1,
        "same name, same store"
    );
    assert!(MemoryRegistry::connect(&u("zookeeper://h:2181"))
        .await
        .is_err());
}

#[tokio::test]
async fn dropping_a_handle_removes_its_dynamic_registrations() {
    let a = MemoryRegistry::new();
    let b = a.handle();
    let c = u("consumer://10.0.0.9/S?interface=S");
    b.register(&u("dubbo://10.0.0.1:20880/S?interface=S"))
        .await
        .unwrap();
    b.register(&u("dubbo://10.0.0.2:20880/S?interface=S&dynamic=false"))
        .await
        .unwrap();
    let mut s = a.subscribe(&c).await.unwrap();
    assert_eq!(next(&mut s).await.urls.len(), 2);
    drop(b);
    let n = next(&mut s).await;
    assert_eq!(n.urls.len(), 1);
    assert_eq!(n.urls[0].host(), Some("10.0.0.2"));
    drop(s);
    assert_eq!(
        a.backend().watcher_count(),
        0,
        "dropped subscriptions are pruned"
    );
}

#[tokio::test]
async fn urls_without_interface_are_rejected() {
    let r = MemoryRegistry::from_url(&u("memory://?check=false"));
    assert!(r.register(&u("dubbo://10.0.0.1:20880")).await.is_err());
    assert!(r
        .subscribe(&u("consumer://10.0.0.9?check=false"))
        .await
        .is_err());
}

#[tokio::test]
async fn interface_star_sees_later_services_and_lookup_skips_empty() {
    let r = MemoryRegistry::new();
    let c = u("consumer://10.0.0.9/*?interface=*&group=*&version=*");
    let mut s = r.subscribe(&c).await.unwrap();
    assert!(next(&mut s).await.is_empty_marker());
    r.register(&u("dubbo://10.0.0.1:1/A?interface=A&group=g"))
        .await
        .unwrap();
    r.register(&u("dubbo://10.0.0.1:2/B?interface=B&version=2"))
        .await
        .unwrap();
    let mut last = next(&mut s).await;
    while let Some(n) = s.try_next() {
        last = n;
    }
    assert_eq!(last.urls.len(), 2);
    assert_eq!(r.lookup(&c).await.unwrap().len(), 2);
    assert!(r
        .lookup(&u("consumer://10.0.0.9/C?interface=C"))
        .await
        .unwrap()
        .is_empty());
}
