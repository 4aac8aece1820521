//! The Nacos backend against a scripted fake server (no real server needed): garbage JSON,
//! HTTP 5xx, dropped connections and auth trouble keep the last good provider list, are
//! retried, and recover; tokens are renewed on 403 and before their TTL ends.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers outside #[test] functions

use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};
use std::sync::Arc;
use std::time::Duration;

use registry_core::{Registry, RegistryBackend, Url};
use registry_nacos::{NacosBackend, NacosRegistry};
use tests::contract::{consumer_url, Watch};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

const T: Duration = Duration::from_secs(15);
const GOOD: u8 = 0;
const GARBAGE: u8 = 1;
const FIVE_HUNDRED: u8 = 2;
const DROP: u8 = 3;
const TWO_HOSTS: u8 = 4;

/// A tiny scripted Nacos: `instance/list` answers according to `mode`; with `auth`, requests
/// need `Authorization: Bearer tok<valid>` and `auth/login` hands out `tok<valid>`.
struct Fake {
    addr: String,
    mode: AtomicU8,
    lists: AtomicU64,
    logins: AtomicU64,
    valid: AtomicU64,
    auth: bool,
    ttl_secs: u64,
    registers: AtomicU64,
    beats: AtomicU64,
    last_beat: std::sync::Mutex<String>,
}

fn host(port: u16) -> String {
    format!(
        r#"{{"ip":"127.0.0.1","port":{port},"enabled":true,"healthy":true,"metadata":{{"protocol":"dubbo","path":"S","interface":"S","side":"provider"}}}}"#
    )
}

impl Fake {
    async fn start(auth: bool, ttl_secs: u64) -> Arc<Fake> {
        let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let fake = Arc::new(Fake {
            addr: l.local_addr().unwrap().to_string(),
            mode: AtomicU8::new(GOOD),
            lists: AtomicU64::new(0),
            logins: AtomicU64::new(0),
            valid: AtomicU64::new(1),
            auth,
            ttl_secs,
            registers: AtomicU64::new(0),
            beats: AtomicU64::new(0),
            last_beat: std::sync::Mutex::new(String::new()),
        });
        let f = fake.clone();
        tokio::spawn(async move {
            while let Ok((mut sock, _)) = l.accept().await {
                let f = f.clone();
                tokio::spawn(async move {
                    let mut buf = Vec::new();
                    let mut chunk = [0u8; 4096];
                    while !buf.windows(4).any(|w| w == b"\r\n\r\n") {
                        match sock.read(&mut chunk).await {
                            Ok(0) | Err(_) => return,
                            Ok(n) => buf.extend_from_slice(&chunk[..n]),
                        }
                    }
                    // Read the body too (Content-Length), for form-encoded beats.
                    let head_end = buf.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4;
                    let head = String::from_utf8_lossy(&buf[..head_end]).to_ascii_lowercase();
                    let len: usize = head
                        .lines()
                        .find_map(|l| l.strip_prefix("content-length:"))
                        .and_then(|v| v.trim().parse().ok())
                        .unwrap_or(0);
                    while buf.len() < head_end + len {
                        match sock.read(&mut chunk).await {
                            Ok(0) | Err(_) => return,
                            Ok(n) => buf.extend_from_slice(&chunk[..n]),
                        }
                    }
                    let req = String::from_utf8_lossy(&buf).to_string();
                    let (status, body) = f.answer(&req);
                    if status == 0 {
                        return; // drop the connection
                    }
                    let resp = format!(
                        "HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                        body.len()
                    );
                    let _ = sock.write_all(resp.as_bytes()).await;
                });
            }
        });
        fake
    }

    fn answer(&self, req: &str) -> (u16, String) {
        let line = req.lines().next().unwrap_or("");
        if line.starts_with("POST /nacos/v1/ns/instance?") {
            self.registers.fetch_add(1, Ordering::SeqCst);
            return (200, "ok".into());
        }
        if line.starts_with("PUT /nacos/v1/ns/instance/beat") {
            self.beats.fetch_add(1, Ordering::SeqCst);
            *self.last_beat.lock().unwrap() = req.to_owned();
            return (200, r#"{"code":20404,"clientBeatInterval":100}"#.into());
        }
        if line.contains("/nacos/v3/auth/") {
            // A 2.x server: no v3 API.
            return (404, "no such api".into());
        }
        if line.contains("/nacos/v1/auth/users/login") || line.contains("/nacos/v1/auth/login") {
            self.logins.fetch_add(1, Ordering::SeqCst);
            let t = self.valid.load(Ordering::SeqCst);
            return (
                200,
                format!(r#"{{"accessToken":"tok{t}","tokenTtl":{}}}"#, self.ttl_secs),
            );
        }
        if self.auth {
            let want = format!(
                "authorization: bearer tok{}",
                self.valid.load(Ordering::SeqCst)
            );
            if !req.to_ascii_lowercase().lines().any(|l| l.trim() == want) {
                return (403, r#"{"status":403,"message":"unknown user!"}"#.into());
            }
        }
        if line.contains("/nacos/v1/ns/instance/list") {
            self.lists.fetch_add(1, Ordering::SeqCst);
            return match self.mode.load(Ordering::SeqCst) {
                GOOD => (200, format!(r#"{{"name":"x","hosts":[{}]}}"#, host(20001))),
                TWO_HOSTS => (
                    200,
                    format!(
                        r#"{{"name":"x","hosts":[{},{}]}}"#,
                        host(20001),
                        host(20002)
                    ),
                ),
                GARBAGE => (200, "<html>definitely not json".into()),
                FIVE_HUNDRED => (500, "caused: internal error".into()),
                _ => (0, String::new()),
            };
        }
        (200, "ok".into())
    }

    fn lists(&self) -> u64 {
        self.lists.load(Ordering::SeqCst)
    }

    async fn wait_lists(&self, more: u64) {
        let target = self.lists() + more;
        tests::eventually("more polls", T, || async {
            (self.lists() >= target).then_some(())
        })
        .await;
    }
}

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
