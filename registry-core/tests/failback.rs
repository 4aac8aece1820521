//! Failback behaviour (Dubbo's `FailbackRegistry`) with a scripted backend and paused time.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers outside #[test] functions

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use parking_lot::Mutex;
use registry_core::{Error, FailbackRegistry, Publisher, Registry, RegistryBackend, Result, Url};
use tokio::sync::watch;

/// A backend whose operations fail while the matching flag is set.
#[derive(Debug)]
struct Fake {
    url: Url,
    state: Arc<FakeState>,
}

#[derive(Debug, Default)]
struct FakeState {
    fail_register: AtomicBool,
    fail_unregister: AtomicBool,
    fail_subscribe: AtomicBool,
    register_calls: AtomicU32,
    subscribe_calls: AtomicU32,
    registered: Mutex<Vec<Url>>,
    publishers: Mutex<Vec<Publisher>>,
    session: Mutex<Option<watch::Sender<u64>>>,
    destroyed: AtomicBool,
}

fn down() -> Error {
    Error::Unavailable("scripted failure".into())
}

#[async_trait]
impl RegistryBackend for Fake {
    fn url(&self) -> &Url {
        &self.url
    }
    fn is_available(&self) -> bool {
        true
    }
    async fn do_register(&self, url: &Url) -> Result<()> {
        self.state.register_calls.fetch_add(1, Ordering::SeqCst);
        if self.state.fail_register.load(Ordering::SeqCst) {
            return Err(down());
        }
        let mut r = self.state.registered.lock();
        r.retain(|u| u != url);
        r.push(url.clone());
        Ok(())
    }
    async fn do_unregister(&self, url: &Url) -> Result<()> {
        if self.state.fail_unregister.load(Ordering::SeqCst) {
            return Err(down());
        }
        self.state.registered.lock().retain(|u| u != url);
        Ok(())
    }
    async fn do_subscribe(&self, p: Publisher) -> Result<()> {
        self.state.subscribe_calls.fetch_add(1, Ordering::SeqCst);
        if self.state.fail_subscribe.load(Ordering::SeqCst) {
            return Err(down());
        }
        let group = p.consumer().param_or("group", "");
        let u = Url::parse("dubbo://10.0.0.1:20880/com.foo.Bar")
            .unwrap()
            .with_param("group", group);
        let list: Arc<[Url]> = vec![u].into();
        p.publish("providers", list);
        self.state.publishers.lock().push(p);
        Ok(())
    }
    async fn do_lookup(&self, _consumer: &Url) -> Result<Vec<Url>> {
        Err(down())
    }
    fn session_generation(&self) -> Option<watch::Receiver<u64>> {
        self.state
            .session
            .lock()
            .as_ref()
            .map(watch::Sender::subscribe)
    }
    async fn do_destroy(&self) {
        self.state.destroyed.store(true, Ordering::SeqCst);
        self.state.publishers.lock().clear();
    }
}

fn fake(registry_url: &str) -> (FailbackRegistry<Fake>, Arc<FakeState>) {
    let state = Arc::new(FakeState::default());
    let f = Fake {
        url: Url::parse(registry_url).unwrap(),
        state: state.clone(),
    };
    (FailbackRegistry::new(f), state)
}

fn provider(port: u16) -> Url {
    Url::parse(&format!(
        "dubbo://10.0.0.1:{port}/com.foo.Bar?interface=com.foo.Bar"
    ))
    .unwrap()
}

fn consumer(extra: &str) -> Url {
    Url::parse(&format!(
        "consumer://10.0.0.9/com.foo.Bar?interface=com.foo.Bar{extra}"
    ))
    .unwrap()
}

/// Lets spawned tasks run after the clock moved.
async fn settle() {
    for _ in 0..20 {
        tokio::task::yield_now().await;
    }
}

async fn advance(d: Duration) {
    settle().await; // let new tasks start their timers before the clock moves
    tokio::time::advance(d).await;
    settle().await;
}

#[tokio::test(start_paused = true)]
async fn failed_register_is_retried_within_a_second() {
    let (r, st) = fake("zookeeper://127.0.0.1:2181?check=false");
    st.fail_register.store(true, Ordering::SeqCst);
    r.register(&provider(20880)).await.unwrap();
    assert_eq!(r.pending_retries(), 1);
    st.fail_register.store(false, Ordering::SeqCst);
    advance(Duration::from_millis(1001)).await;
    assert_eq!(
        st.registered.lock().len(),
        1,
        "first retry must come within 1 s"
    );
    assert_eq!(r.pending_retries(), 0, "a successful retry ends the task");
}

#[tokio::test(start_paused = true)]
async fn check_on_both_urls_and_port_decides_the_error() {
    let (r, st) = fake("zookeeper://127.0.0.1:2181");
    st.fail_register.store(true, Ordering::SeqCst);
    assert!(
        r.register(&provider(20880)).await.is_err(),
        "check=true on both and port != 0"
    );
    assert_eq!(r.pending_retries(), 0);
    assert!(r.registered().is_empty());
    let port0 = Url::parse("consumer://10.0.0.9/com.foo.Bar?category=consumers").unwrap();
    r.register(&port0).await.unwrap();
    let no_check = provider(20881).with_param("check", "false");
    r.register(&no_check).await.unwrap();
    assert_eq!(r.pending_retries(), 2);
}

#[tokio::test(start_paused = true)]
async fn retries_back_off_exponentially() {
    let (r, st) = fake("zookeeper://127.0.0.1:2181?check=false");
    st.fail_register.store(true, Ordering::SeqCst);
    r.register(&provider(20880)).await.unwrap();
    assert_eq!(st.register_calls.load(Ordering::SeqCst), 1);
    for _ in 0..100 {
        advance(Duration::from_millis(100)).await;
    }
    // Delays are jittered in [0.5, 1] of 1 s, 2 s, 4 s, 8 s: within 10 s that is 3 or 4 retries.
    let retries = st.register_calls.load(Ordering::SeqCst) - 1;
    assert!((3..=4).contains(&retries), "{retries} retries in 10 s");
    // The cap: after a long outage the delay stays at most 30 s.
    for _ in 0..20 {
        advance(Duration::from_secs(30)).await;
    }
    let before = st.register_calls.load(Ordering::SeqCst);
    advance(Duration::from_secs(30)).await;
    assert!(
        st.register_calls.load(Ordering::SeqCst) > before,
        "capped at 30 s"
    );
}

#[tokio::test(start_paused = true)]
async fn retry_times_limits_the_attempts() {
    let (r, st) = fake("zookeeper://127.0.0.1:2181?check=false&retry.times=2&retry.period=100");
    st.fail_register.store(true, Ordering::SeqCst);
    r.register(&provider(20880)).await.unwrap();
    for _ in 0..50 {
        advance(Duration::from_millis(100)).await;
    }
    assert_eq!(
        st.register_calls.load(Ordering::SeqCst),
        3,
        "initial call + 2 retries"
    );
    assert_eq!(r.pending_retries(), 0);
}

#[tokio::test(start_paused = true)]
async fn unregister_cancels_a_pending_register() {
    let (r, st) = fake("zookeeper://127.0.0.1:2181?check=false");
    st.fail_register.store(true, Ordering::SeqCst);
    let p = provider(20880);
    r.register(&p).await.unwrap();
    assert_eq!(r.pending_retries(), 1);
    r.unregister(&p).await.unwrap();
    assert_eq!(r.pending_retries(), 0);
    st.fail_register.store(false, Ordering::SeqCst);
    advance(Duration::from_secs(5)).await;
    assert!(
        st.registered.lock().is_empty(),
        "the cancelled register must not run"
    );
    assert_eq!(st.register_calls.load(Ordering::SeqCst), 1);
}

#[tokio::test(start_paused = true)]
async fn failed_unregister_is_retried() {
    let (r, st) = fake("zookeeper://127.0.0.1:2181?check=false");
    let p = provider(20880);
    r.register(&p).await.unwrap();
    st.fail_unregister.store(true, Ordering::SeqCst);
    r.unregister(&p).await.unwrap();
    assert_eq!(st.registered.lock().len(), 1);
    st.fail_unregister.store(false, Ordering::SeqCst);
    advance(Duration::from_millis(1001)).await;
    assert!(st.registered.lock().is_empty());
}

#[tokio::test(start_paused = true)]
async fn subscribe_check_and_background_retry() {
    let (r, st) = fake("zookeeper://127.0.0.1:2181");
    st.fail_subscribe.store(true, Ordering::SeqCst);
    assert!(
        r.subscribe(&consumer("")).await.is_err(),
        "check defaults to true on both"
    );
    let mut sub = r.subscribe(&consumer("&check=false")).await.unwrap();
    assert!(sub.try_next().is_none());
    st.fail_subscribe.store(false, Ordering::SeqCst);
    advance(Duration::from_millis(1001)).await;
    let n = sub.try_next().expect("notified after the retry");
    assert_eq!(&*n.category, "providers");
    assert_eq!(r.pending_retries(), 0);
}

#[tokio::test(start_paused = true)]
async fn dropped_subscription_ends_its_retry() {
    let (r, st) = fake("zookeeper://127.0.0.1:2181?check=false");
    st.fail_subscribe.store(true, Ordering::SeqCst);
    let sub = r.subscribe(&consumer("")).await.unwrap();
    drop(sub);
    advance(Duration::from_secs(3)).await;
    assert_eq!(
        st.subscribe_calls.load(Ordering::SeqCst),
        1,
        "no retry for a dropped subscription"
    );
    assert_eq!(r.pending_retries(), 0);
}

#[tokio::test(start_paused = true)]
async fn new_session_re_registers_everything() {
    let state = Arc::new(FakeState::default());
    let (tx, _) = watch::channel(0u64);
    *state.session.lock() = Some(tx.clone());
    let r = FailbackRegistry::new(Fake {
        url: Url::parse("zookeeper://127.0.0.1:2181").unwrap(),
        state: state.clone(),
    });
    r.register(&provider(20880)).await.unwrap();
    r.register(&provider(20881)).await.unwrap();
    state.registered.lock().clear(); // the session's ephemeral nodes are gone
    tx.send_replace(1);
    settle().await;
    advance(Duration::from_millis(10)).await;
    assert_eq!(state.registered.lock().len(), 2);
}

#[tokio::test(start_paused = true)]
async fn destroy_unregisters_dynamic_urls_and_ends_streams() {
    let (r, st) = fake("zookeeper://127.0.0.1:2181");
    r.register(&provider(20880)).await.unwrap();
    r.register(&provider(20881).with_param("dynamic", "false"))
        .await
        .unwrap();
    let mut sub = r.subscribe(&consumer("")).await.unwrap();
    assert!(sub.next().await.is_some());
    r.destroy().await;
    let left = st.registered.lock().clone();
    assert_eq!(left.len(), 1);
    assert_eq!(left[0].port(), 20881, "dynamic=false stays registered");
    assert!(sub.next().await.is_none(), "the stream ends");
    assert!(st.destroyed.load(Ordering::SeqCst));
    assert!(matches!(
        r.register(&provider(1)).await,
        Err(Error::Destroyed)
    ));
    assert!(!r.is_available());
}

#[tokio::test(start_paused = true)]
async fn accepts_filters_protocols() {
    let (r, st) = fake("zookeeper://127.0.0.1:2181?accepts=dubbo,-rest");
    r.register(&provider(20880)).await.unwrap();
    r.register(&provider(20881).with_protocol("rest"))
        .await
        .unwrap();
    r.register(&provider(20882).with_protocol("tri"))
        .await
        .unwrap();
    let ports: Vec<i32> = st.registered.lock().iter().map(Url::port).collect();
    assert_eq!(ports, vec![20880]);
}

#[tokio::test(start_paused = true)]
async fn cache_file_feeds_a_failed_subscribe_and_is_saved_debounced() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("registry.cache");
    let reg_url = format!("zookeeper://127.0.0.1:2181?file={}", file.display());

    // A first registry notifies and saves.
    let (r, _st) = fake(&reg_url);
    let sub = r.subscribe(&consumer("&group=g")).await.unwrap();
    advance(Duration::from_millis(400)).await;
    assert!(!file.exists(), "saves are debounced by 500 ms");
    for _ in 0..100 {
        advance(Duration::from_millis(100)).await;
        if file.exists() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(text.starts_with("#Dubbo Registry Cache"), "{text}");
    assert!(
        text.contains("g/com.foo.Bar=dubbo\\://10.0.0.1\\:20880/com.foo.Bar"),
        "{text}"
    );
    drop(sub);
    drop(r);

    // A second registry cannot reach the server: the cache is notified first, without error
    // even though check=true.
    let (r2, st2) = fake(&reg_url);
    st2.fail_subscribe.store(true, Ordering::SeqCst);
    let mut sub2 = r2.subscribe(&consumer("&group=g")).await.unwrap();
    let n = sub2.try_next().expect("cached URLs are notified");
    assert_eq!(n.urls[0].address().as_deref(), Some("10.0.0.1:20880"));
    assert_eq!(r2.pending_retries(), 1);
    // lookup falls back on the cache too.
    let found = r2.lookup(&consumer("&group=g")).await.unwrap();
    assert_eq!(found.len(), 1);
}

/// While the registry churns, the cache file is written at most once per
/// `file-save-interval`, and the last state is always the one on disk.
#[tokio::test(start_paused = true)]
async fn cache_saves_are_rate_limited_and_end_with_the_last_state() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("churn.cache");
    let reg_url = format!(
        "zookeeper://127.0.0.1:2181?file={}&file-save-interval=1000",
        file.display()
    );
    let (r, st) = fake(&reg_url);
    let _sub = r.subscribe(&consumer("&group=g")).await.unwrap();
    // 500 lists over 5 s of churn (a new provider port every 10 ms).
    for i in 0..500u16 {
        let u = provider(30000 + i).with_param("group", "g");
        for p in st.publishers.lock().iter() {
            p.publish("providers", vec![u.clone()].into());
        }
        advance(Duration::from_millis(10)).await;
        tokio::task::yield_now().await;
    }
    // Let the last save happen (interval + debounce), waiting for the blocking writes.
    for _ in 0..100 {
        advance(Duration::from_millis(100)).await;
        tokio::time::sleep(Duration::from_millis(1)).await;
        let text = std::fs::read_to_string(&file).unwrap_or_default();
        if text.contains("10.0.0.1\\:30499") {
            break;
        }
    }
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(text.contains("10.0.0.1\\:30499"), "the last state: {text}");
    // One per second at most (the 500 ms debounce alone would allow ten).
    let saves = r.cache_file().unwrap().saves();
    assert!(
        (1..=7).contains(&saves),
        "{saves} saves for 5 s of churn at one per second"
    );
}
