//! A provider that hangs (a grpcio peer stopped with SIGSTOP: its connection stays open and
//! silent) is found by HTTP/2 PINGs: the first call that times out on it makes the connection
//! PING, the PING goes unanswered for the keepalive timeout, the invoker turns unavailable and
//! the cluster sends every call to the other provider. Once the peer runs again it is
//! reconnected (a reconnect is only ready after its first PING is answered, so it does not
//! come back while the peer still hangs).

#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers panic on bad fixtures

use tests::triple_peers as common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use invoker::cluster;
use invoker::directory::Directory;
use invoker::directory::StaticDirectory;
use invoker::rpc::{Invocation, Invoker, SharedInvoker};
use protocol_triple::{ConnectionOptions, PayloadMode, TripleInvoker, TripleInvokerFactory};
use registry_core::Url;
use serde_json::json;

const IFACE: &str = "org.apache.dubbo.tritest.DemoService";
/// The keepalive timeout the test sets.
const KEEPALIVE_TIMEOUT: Duration = Duration::from_secs(1);
/// The call timeout on the providers' URLs.
const CALL_TIMEOUT_MS: u64 = 400;

fn invoker(f: &TripleInvokerFactory, addr: &str) -> Arc<TripleInvoker> {
    let url = Url::parse(&format!(
        "tri://{addr}/{IFACE}?interface={IFACE}&side=provider&timeout={CALL_TIMEOUT_MS}"
    ))
    .unwrap();
    f.refer_triple(&url).unwrap()
}

fn hello(who: &str) -> Invocation {
    Invocation::new("sayHello").with_arguments(vec!["java.lang.String".into()], vec![json!(who)])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hung_provider_is_found_by_pings_and_routed_around() {
    let test = "a_hung_provider_is_found_by_pings_and_routed_around";
    let Some(a) = common::grpc_peer(test, 0).await else {
        return;
    };
    let Some(b) = common::grpc_peer(test, 0).await else {
        return;
    };
    let f = TripleInvokerFactory::with_options(
        PayloadMode::Wrapper,
        ConnectionOptions {
            keepalive_interval: Duration::from_millis(500),
            keepalive_timeout: KEEPALIVE_TIMEOUT,
            connect_timeout: Duration::from_secs(1),
            backoff_max: Duration::from_millis(500),
            ..ConnectionOptions::default()
        },
    );
    let (ia, ib) = (invoker(&f, &a.addr()), invoker(&f, &b.addr()));
    for i in [&ia, &ib] {
        assert_eq!(i.call(&hello("x")).await.unwrap(), json!("Hello x"));
    }
    let consumer = Url::parse(&format!(
        "consumer://127.0.0.1/{IFACE}?interface={IFACE}&loadbalance=roundrobin&retries=2"
    ))
    .unwrap();
    let invokers: Vec<SharedInvoker> = vec![ia.clone(), ib.clone()];
    let dir = Arc::new(StaticDirectory::new(consumer, invokers));
    let service = cluster::join(dir as Arc<dyn Directory>);

    a.signal("STOP");
    // Calls through the cluster: those that pick `a` time out there and fail over to `b`;
    // the first timeout PINGs `a`, which does not answer.
    let mut first_timeout: Option<Instant> = None;
    let start = Instant::now();
    while ia.is_available() {
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "the hung provider stayed available"
        );
        let t = Instant::now();
        let r = service.invoke(&hello("y")).await.unwrap();
        assert_eq!(r.value, json!("Hello y"));
        if t.elapsed() >= Duration::from_millis(CALL_TIMEOUT_MS) {
            first_timeout.get_or_insert(t);
        }
    }
    let found = first_timeout.map_or(Duration::ZERO, |t| t.elapsed());
    eprintln!("unavailable {found:?} after the first call that went to the hung provider");
    // Within the call timeout plus the keepalive timeout (and scheduling slack).
    assert!(
        found < Duration::from_millis(CALL_TIMEOUT_MS) + KEEPALIVE_TIMEOUT + Duration::from_secs(2),
        "{found:?}"
    );
    assert!(ib.is_available());

    // Every call now goes to `b` at once: no call waits out a timeout on `a`, and `a` stays
    // unavailable while it hangs (its reconnects are not answered).
    for i in 0..20 {
        let t = Instant::now();
        let r = service.invoke(&hello(&format!("z{i}"))).await.unwrap();
        assert_eq!(r.value, json!(format!("Hello z{i}")));
        assert!(
            t.elapsed() < Duration::from_millis(CALL_TIMEOUT_MS),
            "call {i} took {:?}",
            t.elapsed()
        );
    }
    assert!(!ia.is_available());

    // Resumed: reconnected and answering again.
    a.signal("CONT");
    tests::eventually(
        "the resumed provider is back",
        Duration::from_secs(20),
        || {
            let ia = ia.clone();
            async move {
                match ia.call(&hello("w")).await {
                    Ok(v) if ia.is_available() => Some(v),
                    _ => None,
                }
            }
        },
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_in_flight_on_a_hung_provider_ends_with_the_keepalive() {
    // A long call timeout (10 s): while the call waits, nothing is read for the keepalive
    // interval, the PING goes unanswered, and the connection is given up: the call fails as
    // a network error (retryable) after about interval + timeout, not after 10 s.
    let test = "a_call_in_flight_on_a_hung_provider_ends_with_the_keepalive";
    let Some(a) = common::grpc_peer(test, 0).await else {
        return;
    };
    let f = TripleInvokerFactory::with_options(
        PayloadMode::Wrapper,
        ConnectionOptions {
            keepalive_interval: Duration::from_millis(500),
            keepalive_timeout: KEEPALIVE_TIMEOUT,
            ..ConnectionOptions::default()
        },
    );
    let url = Url::parse(&format!(
        "tri://{}/{IFACE}?interface={IFACE}&side=provider&timeout=10000",
        a.addr()
    ))
    .unwrap();
    let inv = f.refer_triple(&url).unwrap();
    assert_eq!(inv.call(&hello("x")).await.unwrap(), json!("Hello x"));
    a.signal("STOP");
    let t = Instant::now();
    let e = inv.invoke(&hello("y")).await.unwrap_err();
    let took = t.elapsed();
    eprintln!("the call ended after {took:?}: {e}");
    assert!(e.is_retryable(), "{e}");
    assert!(took < Duration::from_secs(5), "{took:?}");
    assert!(!inv.is_available());
    a.signal("CONT");
}
