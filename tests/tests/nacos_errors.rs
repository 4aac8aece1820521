//! The Nacos backend against a scripted fake server (`tests::fake_nacos_http`; no real server
//! needed): garbage JSON,
//! HTTP 5xx, dropped connections and auth trouble keep the last good provider list, are
//! retried, and recover; tokens are renewed on 403 and before their TTL ends.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers outside #[test] functions

use std::sync::atomic::Ordering;
use std::time::Duration;

use registry_core::{Registry, RegistryBackend, Url};
use registry_nacos::{NacosBackend, NacosRegistry};
use tests::contract::{consumer_url, Watch};
use tests::fake_nacos_http::{Fake, DROP, FIVE_HUNDRED, GARBAGE, GOOD, TWO_HOSTS};

const T: Duration = Duration::from_secs(15);
fn consumer() -> Url {
    consumer_url("S", "providers", "")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn broken_replies_keep_the_last_good_list_and_recover() {
    let fake = Fake::start(false, 0).await;
    let url = Url::parse(&format!(
        "nacos://{}?nacos.transport=http&nacos.poll-interval=50&file-cache=false&nacos.request-timeout=1000",
        fake.addr
    ))
    .unwrap();
    let r = NacosRegistry::new(&url).unwrap();
    let mut sub = r.subscribe(&consumer()).await.unwrap();
    let first = sub.next().await.unwrap();
    assert_eq!(&*first.category, "providers");
    assert_eq!(first.urls.len(), 1);
    for mode in [GARBAGE, FIVE_HUNDRED, DROP] {
        fake.mode.store(mode, Ordering::SeqCst);
        fake.wait_lists(2).await;
        // Nothing was published: the last good list stands (no empty://, no blank list).
        assert!(sub.try_next().is_none(), "mode {mode} published something");
    }
    fake.mode.store(TWO_HOSTS, Ordering::SeqCst);
    let n = tokio::time::timeout(T, sub.next()).await.unwrap().unwrap();
    assert_eq!(n.urls.len(), 2, "recovered with the new list");
    fake.mode.store(GOOD, Ordering::SeqCst);
    let n = tokio::time::timeout(T, sub.next()).await.unwrap().unwrap();
    assert_eq!(n.urls.len(), 1);
    assert!(Url::ptr_eq(&n.urls[0], &first.urls[0]) || n.urls[0] == first.urls[0]);
    r.destroy().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn backoff_slows_polling_of_a_failing_server() {
    let fake = Fake::start(false, 0).await;
    let url = Url::parse(&format!(
        "nacos://{}?nacos.transport=http&nacos.poll-interval=50&file-cache=false",
        fake.addr
    ))
    .unwrap();
    let r = NacosRegistry::new(&url).unwrap();
    let mut w = Watch::new(r.subscribe(&consumer()).await.unwrap());
    w.until("first list", T, |w| w.addresses("providers").len() == 1)
        .await;
    fake.mode.store(FIVE_HUNDRED, Ordering::SeqCst);
    fake.wait_lists(1).await;
    let start = fake.lists();
    tokio::time::sleep(Duration::from_secs(2)).await;
    let failing = fake.lists() - start;
    // Healthy polling would be ~40 requests in 2 s; backoff doubles from 50 ms.
    assert!(failing <= 10, "{failing} polls in 2 s while failing");
    assert_eq!(w.addresses("providers").len(), 1);
    r.destroy().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tokens_are_renewed_on_403_and_before_the_ttl_ends() {
    // TTL 2 s: the client refreshes after 90 % of it; then the server revokes the token.
    let fake = Fake::start(true, 2).await;
    let url = Url::parse(&format!(
        "nacos://{}?nacos.transport=http&username=nacos&password=s3cr3t-pw&nacos.poll-interval=100&file-cache=false",
        fake.addr
    ))
    .unwrap();
    let r = NacosRegistry::new(&url).unwrap();
    assert!(!format!("{r:?}").contains("s3cr3t-pw"));
    assert!(!r.url().to_string().contains("s3cr3t-pw"));
    let mut w = Watch::new(r.subscribe(&consumer()).await.unwrap());
    w.until("list with auth", T, |w| w.addresses("providers").len() == 1)
        .await;
    let logins = fake.logins.load(Ordering::SeqCst);
    assert!(logins >= 1);
    tests::eventually("a refresh login before the TTL ends", T, || async {
        (fake.logins.load(Ordering::SeqCst) > logins).then_some(())
    })
    .await;
    // Revoke: the current token is refused with 403 and the client logs in again.
    fake.valid.fetch_add(1, Ordering::SeqCst);
    let logins = fake.logins.load(Ordering::SeqCst);
    fake.mode.store(TWO_HOSTS, Ordering::SeqCst);
    w.until("list after re-login", T, |w| {
        w.addresses("providers").len() == 2
    })
    .await;
    assert!(fake.logins.load(Ordering::SeqCst) > logins);
    r.destroy().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn errors_name_the_problem_without_secrets() {
    // Nothing listens on port 9: connection refused, retryable, no password in the message.
    let url = Url::parse(
        "nacos://user:pw-9x7@127.0.0.1:9?check=true&nacos.transport=http&nacos.request-timeout=500",
    )
    .unwrap();
    let b = NacosBackend::new(&url).unwrap();
    let e = b.do_lookup(&consumer()).await.unwrap_err();
    assert!(e.is_retryable(), "{e}");
    assert!(!e.to_string().contains("pw-9x7"), "{e}");
    assert!(!format!("{b:?}").contains("pw-9x7"));
    assert!(!b.is_available());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unknown_instance_beat_registers_again_at_the_server_interval() {
    let fake = Fake::start(false, 0).await;
    let url = Url::parse(&format!(
        "nacos://{}?nacos.transport=http&file-cache=false",
        fake.addr
    ))
    .unwrap();
    let b = NacosBackend::new(&url).unwrap();
    let p =
        Url::parse("dubbo://10.0.0.7:20880/S?interface=S&side=provider&application=app").unwrap();
    b.do_register(&p).await.unwrap();
    assert_eq!(fake.registers.load(Ordering::SeqCst), 1);
    // First beat after the 5 s default; it says "unknown, beat every 100 ms": we register again
    // and then beat fast.
    tests::eventually("re-registrations after 20404 beats", T, || async {
        (fake.registers.load(Ordering::SeqCst) >= 3 && fake.beats.load(Ordering::SeqCst) >= 3)
            .then_some(())
    })
    .await;
    let beat = fake.last_beat.lock().unwrap().clone();
    let body = beat.split("\r\n\r\n").nth(1).unwrap_or("");
    let form: std::collections::HashMap<String, String> = body
        .split('&')
        .filter_map(|kv| kv.split_once('='))
        .map(|(k, v)| {
            let v = v.replace('+', " ");
            (k.to_owned(), percent_decode(&v))
        })
        .collect();
    let info: serde_json::Value = serde_json::from_str(&form["beat"]).unwrap();
    assert_eq!(info["ip"], "10.0.0.7");
    assert_eq!(info["port"], 20880);
    assert_eq!(info["serviceName"], "DEFAULT_GROUP@@providers:S::");
    assert_eq!(info["metadata"]["application"], "app");
    assert_eq!(info["metadata"]["protocol"], "dubbo");
    drop(b);
}

fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' && i + 2 < bytes.len() {
            if let Ok(b) = u8::from_str_radix(&s[i + 1..i + 3], 16) {
                out.push(b);
                i += 3;
                continue;
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}
