//! What provider URLs and callers can make a Triple consumer hold: connects started at once
//! when thousands of providers are referred, the `payload` a URL may set, and the per-invoker
//! cache of request paths keyed by method names that callers choose.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers panic on bad fixtures

use std::time::{Duration, Instant};

use invoker::rpc::{Invocation, Invoker};
use protocol_triple::{
    ConnectionOptions, PayloadMode, TripleInvokerFactory, TripleLimits, DEFAULT_PAYLOAD,
};
use registry_core::Url;

fn url(port: u16, q: &str) -> Url {
    Url::parse(&format!(
        "tri://127.0.0.1:{port}/x.Svc?interface=x.Svc&timeout=200{q}"
    ))
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn background_connects_are_limited() {
    // 100 providers whose connects hang: at most the limit (16) are in progress at once.
    let stalled = tests::stalled::stalled_listeners(100);
    let f = TripleInvokerFactory::with_options(
        PayloadMode::Wrapper,
        ConnectionOptions {
            connect_timeout: Duration::from_secs(5),
            ..ConnectionOptions::default()
        },
    );
    let invokers: Vec<_> = stalled
        .ports
        .iter()
        .map(|p| f.refer_triple(&url(*p, "")).unwrap())
        .collect();
    let mut most = 0;
    let start = Instant::now();
    while start.elapsed() < Duration::from_millis(1500) {
        most = most.max(tests::stalled::syn_sent_to(&stalled.ports));
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(most > 0, "no connect was seen hanging");
    assert!(
        most <= ConnectionOptions::default().max_concurrent_connects,
        "{most} connects at once"
    );
    assert_eq!(f.idle_connect_permits(), 0);
    drop(invokers);
}

#[tokio::test]
async fn a_url_cannot_raise_the_payload_past_the_consumer_maximum() {
    let port = tests::stalled::stalled_listeners(1).ports[0];
    let f = TripleInvokerFactory::new(PayloadMode::Wrapper);
    let inv = f.refer_triple(&url(port, "&payload=4294967296")).unwrap();
    assert_eq!(inv.payload_limit(), DEFAULT_PAYLOAD);
    let inv = f.refer_triple(&url(port, "&payload=1024")).unwrap();
    assert_eq!(inv.payload_limit(), 1024);
    let f = TripleInvokerFactory::new(PayloadMode::Wrapper).with_limits(TripleLimits {
        max_payload: usize::MAX,
        ..TripleLimits::default()
    });
    // The gRPC length prefix is a u32: no more, whatever the consumer allows.
    let inv = f
        .refer_triple(&url(port, "&payload=9223372036854775807"))
        .unwrap();
    assert_eq!(inv.payload_limit(), u32::MAX as usize);
}

#[tokio::test]
async fn method_names_from_callers_do_not_grow_the_cache_without_bound() {
    // Nothing listens: every call fails at once, after its method entry was made.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let f = TripleInvokerFactory::new(PayloadMode::Wrapper);
    let inv = f.refer_triple(&url(port, "")).unwrap();
    for i in 0..3000 {
        let _ = inv.invoke(&Invocation::new(format!("m{i}").as_str())).await;
    }
    assert_eq!(
        inv.cached_methods(),
        TripleLimits::default().max_cached_methods
    );
}
