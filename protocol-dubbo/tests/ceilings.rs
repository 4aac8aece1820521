//! What a provider URL may set for the consumer, and what a misbehaving provider can cost it,
//! against scripted fake providers (they send or withhold what no real provider would):
//! a `payload` above the consumer's maximum, heartbeat and reconnect periods of a millisecond,
//! a provider that stops reading, thousands of providers referred at once, and response bodies
//! built to expand when decoded.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use hessian2::Encoder;
use invoker::rpc::{Invocation, Invoker, RpcErrorCode};
use protocol_dubbo::header::{Header, FLAG_EVENT, HEADER_LEN};
use protocol_dubbo::{DubboInvokerFactory, DubboOptions};
use registry_core::Url;
use serde_json::json;
use tests::eventually;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpSocket, TcpStream};

/// What a fake provider answers to a call with request id `id`.
type Answer = Arc<dyn Fn(i64) -> Vec<u8> + Send + Sync>;

/// Counters of a fake provider.
#[derive(Debug, Default)]
struct Seen {
    accepted: AtomicUsize,
    heartbeats: AtomicUsize,
}

fn response(id: i64, body: &[u8]) -> Vec<u8> {
    let h = Header {
        flag: 0x02,
        status: 20,
        id,
        body_len: u32::try_from(body.len()).unwrap(),
    };
    let mut v = h.to_bytes().to_vec();
    v.extend_from_slice(body);
    v
}

fn heartbeat_reply(id: i64) -> Vec<u8> {
    let h = Header {
        flag: FLAG_EVENT | 0x02,
        status: 20,
        id,
        body_len: 1,
    };
    let mut v = h.to_bytes().to_vec();
    v.push(b'N');
    v
}

async fn read_frame(s: &mut TcpStream) -> Option<Header> {
    let mut h = [0u8; HEADER_LEN];
    s.read_exact(&mut h).await.ok()?;
    let header = Header::parse(&h).ok()?;
    let mut body = vec![0u8; header.body_len as usize];
    s.read_exact(&mut body).await.ok()?;
    Some(header)
}

/// A fake provider: answers heartbeats (counting them) and calls with `answer`; returns its
/// port and counters.
async fn fake(answer: Answer) -> (u16, Arc<Seen>) {
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = l.local_addr().unwrap().port();
    let seen = Arc::new(Seen::default());
    let s2 = seen.clone();
    tokio::spawn(async move {
        while let Ok((mut s, _)) = l.accept().await {
            s2.accepted.fetch_add(1, Ordering::SeqCst);
            let (answer, seen) = (answer.clone(), s2.clone());
            tokio::spawn(async move {
                while let Some(h) = read_frame(&mut s).await {
                    let out = if h.is_event() {
                        seen.heartbeats.fetch_add(1, Ordering::SeqCst);
                        heartbeat_reply(h.id)
                    } else {
                        answer(h.id)
                    };
                    if s.write_all(&out).await.is_err() {
                        return;
                    }
                }
            });
        }
    });
    (port, seen)
}

fn url(port: u16, params: &str) -> Url {
    Url::parse(&format!(
        "dubbo://127.0.0.1:{port}/com.x.S?interface=com.x.S&{params}"
    ))
    .unwrap()
}

fn call() -> Invocation {
    Invocation::new("m").with_arguments(vec!["java.lang.String".into()], vec![json!("x")])
}

/// A response body (flag 1, a value) of nine 1 MiB binaries: 9 MiB, over Dubbo's default
/// payload limit, harmless to decode.
fn nine_mib_body() -> Vec<u8> {
    let mut e = Encoder::new();
    e.write_int(1);
    e.write_list_begin(9, None);
    let chunk = vec![7u8; 1 << 20];
    for _ in 0..9 {
        e.write_binary(&chunk);
    }
    e.into_bytes()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_url_cannot_raise_the_payload_past_the_consumer_maximum() {
    let body = Arc::new(nine_mib_body());
    let b = body.clone();
    let (port, _) = fake(Arc::new(move |id| response(id, &b))).await;
    let u = url(port, "timeout=10000&payload=2147483647");

    let inv = DubboInvokerFactory::new().refer_dubbo(&u).unwrap();
    let e = match inv.invoke(&call()).await {
        Ok(r) => panic!("a {}-byte result was accepted", r.value.to_string().len()),
        Err(e) => e,
    };
    assert!(
        e.message.contains("exceeds the payload limit of 8388608"),
        "{e}"
    );

    // A consumer that allows more gets it.
    let inv = DubboInvokerFactory::with_options(DubboOptions {
        max_payload: 16 << 20,
        ..DubboOptions::default()
    })
    .refer_dubbo(&u)
    .unwrap();
    let r = inv.invoke(&call()).await.unwrap();
    assert_eq!(r.value.as_array().map(Vec::len), Some(9));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_millisecond_heartbeat_does_not_flood_the_provider() {
    let (port, seen) = fake(Arc::new(|id| response(id, b"\x91\x02ok"))).await;
    let inv = DubboInvokerFactory::new()
        .refer_dubbo(&url(port, "timeout=5000&heartbeat=1&heartbeat.timeout=3"))
        .unwrap();
    assert_eq!(inv.invoke(&call()).await.unwrap().value, json!("ok"));
    // Idleness is the input: 2.5 s without calls. A 1 ms heartbeat would be hundreds of
    // heartbeats; the floor (1 s, Java's least heartbeat tick) allows two or three.
    tokio::time::sleep(Duration::from_millis(2500)).await;
    let beats = seen.heartbeats.load(Ordering::SeqCst);
    assert!(beats <= 4, "{beats} heartbeats in 2.5 s");
    assert_eq!(
        seen.accepted.load(Ordering::SeqCst),
        1,
        "the connection was never closed as idle"
    );
    assert!(inv.is_connected());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_millisecond_reconnect_does_not_storm_a_flapping_provider() {
    // A provider that accepts and closes at once, every time.
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = l.local_addr().unwrap().port();
    let accepted = Arc::new(AtomicUsize::new(0));
    let a = accepted.clone();
    tokio::spawn(async move {
        while let Ok((s, _)) = l.accept().await {
            a.fetch_add(1, Ordering::SeqCst);
            drop(s);
        }
    });
    let inv = DubboInvokerFactory::new()
        .refer_dubbo(&url(port, "timeout=1000&reconnect=1"))
        .unwrap();
    let i = inv.clone();
    eventually("first connect", Duration::from_secs(10), || {
        let n = accepted.load(Ordering::SeqCst);
        let _ = &i;
        async move { (n > 0).then_some(()) }
    })
    .await;
    let start = accepted.load(Ordering::SeqCst);
    tokio::time::sleep(Duration::from_secs(2)).await;
    let n = accepted.load(Ordering::SeqCst) - start;
    // A 1 ms period would reconnect about a thousand times a second.
    assert!(n <= 60, "{n} reconnects in 2 s");
    drop(inv);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_provider_that_stops_reading_is_given_up() {
    // Accepts, never reads: its receive buffer (made small) and our send buffer fill up.
    let socket = TcpSocket::new_v4().unwrap();
    socket.set_recv_buffer_size(4096).unwrap();
    socket.bind("127.0.0.1:0".parse().unwrap()).unwrap();
    let l = socket.listen(16).unwrap();
    let port = l.local_addr().unwrap().port();
    tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((s, _)) = l.accept().await {
            held.push(s);
        }
    });
    let max_queued = 4usize << 20;
    let f = DubboInvokerFactory::with_options(DubboOptions {
        write_stall_timeout: Duration::from_millis(500),
        max_queued_bytes: max_queued,
        ..DubboOptions::default()
    });
    let inv = f
        .refer_dubbo(&url(port, "timeout=300&reconnect=false"))
        .unwrap();
    let big = json!("x".repeat(2 << 20));
    let start = Instant::now();
    let mut most_queued = 0;
    while inv.is_available() {
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "the stuck connection was never given up"
        );
        let calls = (0..4).map(|_| {
            let inv = inv.clone();
            let big = big.clone();
            async move {
                let t = Instant::now();
                let r = inv
                    .invoke(
                        &Invocation::new("m")
                            .with_arguments(vec!["java.lang.String".into()], vec![big]),
                    )
                    .await;
                (r, t.elapsed())
            }
        });
        for (r, took) in futures::future::join_all(calls).await {
            let e = r.unwrap_err();
            assert!(
                matches!(e.code, RpcErrorCode::Timeout | RpcErrorCode::Network),
                "{e}"
            );
            assert!(took < Duration::from_millis(1500), "a call took {took:?}");
        }
        most_queued = most_queued.max(inv.queued_write_bytes());
    }
    eprintln!(
        "given up after {:?}, at most {most_queued} bytes queued",
        start.elapsed()
    );
    assert!(
        most_queued <= max_queued + (3 << 20),
        "{most_queued} bytes queued"
    );
    assert!(!inv.is_connected());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn background_connects_are_limited() {
    // 100 providers whose connects hang: at most the limit (16) are in progress at once.
    let stalled = tests::stalled::stalled_listeners(100);
    let f = DubboInvokerFactory::new();
    let invokers: Vec<_> = stalled
        .ports
        .iter()
        .map(|p| {
            f.refer_dubbo(&url(*p, "timeout=1000&connect.timeout=5000"))
                .unwrap()
        })
        .collect();
    let mut most = 0;
    let start = Instant::now();
    while start.elapsed() < Duration::from_millis(1500) {
        most = most.max(tests::stalled::syn_sent_to(&stalled.ports));
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(most > 0, "no connect was seen hanging");
    assert!(
        most <= DubboOptions::default().max_concurrent_connects,
        "{most} connects at once"
    );
    drop(invokers);
}

/// A body whose JSON form copies a long class name into every one of many instances.
fn expanding_body() -> Vec<u8> {
    let name = format!("com.example.{}", "A".repeat(32 * 1024));
    let mut e = Encoder::new();
    e.write_int(1);
    e.write_raw(b"W");
    e.write_object_begin(&name, []);
    e.write_raw(&vec![0x60; 32 * 1024]);
    e.write_raw(b"Z");
    e.into_bytes()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_expanding_body_is_a_clear_serialization_error() {
    let body = Arc::new(expanding_body());
    let b = body.clone();
    let (port, _) = fake(Arc::new(move |id| response(id, &b))).await;
    let u = url(port, "timeout=10000");
    let inv = DubboInvokerFactory::new().refer_dubbo(&u).unwrap();
    let e = inv.invoke(&call()).await.unwrap_err();
    assert_eq!(e.code, RpcErrorCode::Serialization, "{e}");
    assert!(e.message.contains("memory budget"), "{e}");
    // The connection is fine: the next answer is read.
    assert!(inv.is_connected());

    // A smaller expansion (about 18 MB as JSON) passes with the default budget and is refused
    // with a smaller one.
    let small = {
        let name = format!("com.example.{}", "A".repeat(100));
        let mut e = Encoder::new();
        e.write_int(1);
        e.write_raw(b"W");
        e.write_object_begin(&name, []);
        e.write_raw(&vec![0x60; 20 * 1024 - 1]);
        e.write_raw(b"Z");
        e.into_bytes()
    };
    let b = Arc::new(small);
    let (port, _) = fake(Arc::new(move |id| response(id, &b))).await;
    let tight = DubboInvokerFactory::with_options(DubboOptions {
        hessian: hessian2::Limits {
            min_memory: 8 << 20,
            ..hessian2::Limits::DEFAULT
        },
        ..DubboOptions::default()
    });
    let e = tight
        .refer_dubbo(&url(port, "timeout=10000"))
        .unwrap()
        .invoke(&call())
        .await
        .unwrap_err();
    assert!(e.message.contains("memory budget"), "{e}");
    let r = DubboInvokerFactory::new()
        .refer_dubbo(&url(port, "timeout=10000"))
        .unwrap()
        .invoke(&call())
        .await
        .unwrap();
    assert_eq!(r.value.as_array().map(Vec::len), Some(20 * 1024));
}
