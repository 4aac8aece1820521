//! Bad input from the network, from scripted fake providers (the only fakes allowed: they
//! send what no real provider would): wrong magic, truncated bodies, absurd lengths, a
//! response for an unknown request id, undecodable bodies, a peer that never answers. Each
//! gives a clear error within the call's timeout, never a hang or a panic.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use invoker::rpc::{Invocation, Invoker, RpcErrorCode};
use protocol_dubbo::header::Header;
use protocol_dubbo::DubboInvokerFactory;
use registry_core::Url;
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// What the fake provider does with the request id it read.
type Script = fn(i64) -> Vec<u8>;

fn response(id: i64, status: u8, body: &[u8]) -> Vec<u8> {
    let h = Header {
        flag: 0x02,
        status,
        id,
        body_len: body.len() as u32,
    };
    let mut v = h.to_bytes().to_vec();
    v.extend_from_slice(body);
    v
}

async fn read_request(s: &mut TcpStream) -> Option<i64> {
    let mut h = [0u8; 16];
    s.read_exact(&mut h).await.ok()?;
    let header = Header::parse(&h).ok()?;
    let mut body = vec![0u8; header.body_len as usize];
    s.read_exact(&mut body).await.ok()?;
    Some(header.id)
}

/// A fake provider answering every request with `script`; returns its port.
async fn fake(script: Script, close_after: bool) -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = l.local_addr().unwrap().port();
    tokio::spawn(async move {
        while let Ok((mut s, _)) = l.accept().await {
            tokio::spawn(async move {
                while let Some(id) = read_request(&mut s).await {
                    let out = script(id);
                    if s.write_all(&out).await.is_err() {
                        return;
                    }
                    if close_after {
                        return;
                    }
                }
                // Hold the connection open until the client goes.
                let mut sink = [0u8; 64];
                while let Ok(n) = s.read(&mut sink).await {
                    if n == 0 {
                        break;
                    }
                }
            });
        }
    });
    port
}

async fn call(
    port: u16,
    timeout_ms: u64,
) -> (Result<serde_json::Value, invoker::rpc::RpcError>, Duration) {
    let url = Url::parse(&format!(
        "dubbo://127.0.0.1:{port}/com.x.S?interface=com.x.S&timeout={timeout_ms}&reconnect=false"
    ))
    .unwrap();
    let inv = DubboInvokerFactory::new().refer_dubbo(&url).unwrap();
    let start = Instant::now();
    let r = inv
        .invoke(
            &Invocation::new("m").with_arguments(vec!["java.lang.String".into()], vec![json!("x")]),
        )
        .await
        .map(|r| r.value);
    (r, start.elapsed())
}

#[tokio::test]
async fn a_good_answer_after_a_stray_one() {
    // A response for an unknown id is logged and dropped; the real one completes the call.
    let port = fake(
        |id| {
            let mut v = response(id + 1_000_000, 20, b"\x91\x05stray");
            v.extend(response(id, 20, b"\x91\x02ok"));
            v
        },
        false,
    )
    .await;
    let (r, _) = call(port, 2000).await;
    assert_eq!(r.unwrap(), json!("ok"));
}

#[tokio::test]
async fn wrong_magic_is_a_clear_network_error() {
    let port = fake(|_| b"HTTP/1.1 400 Bad Request\r\n\r\n".to_vec(), false).await;
    let (r, took) = call(port, 5000).await;
    let e = r.unwrap_err();
    assert_eq!(e.code, RpcErrorCode::Network);
    assert!(e.message.contains("invalid magic 0x4854"), "{e}");
    assert!(took < Duration::from_secs(4), "{took:?}");
}

#[tokio::test]
async fn truncated_body_then_close() {
    let port = fake(
        |id| {
            let mut v = response(id, 20, &[0x91; 100]);
            v.truncate(16 + 10);
            v
        },
        true,
    )
    .await;
    let (r, took) = call(port, 5000).await;
    let e = r.unwrap_err();
    assert_eq!(e.code, RpcErrorCode::Network);
    assert!(
        e.message.contains("connection to") && e.message.contains("lost"),
        "{e}"
    );
    assert!(took < Duration::from_secs(4));
}

#[tokio::test]
async fn absurd_length_fails_at_once() {
    let port = fake(
        |id| {
            let mut v = response(id, 20, b"");
            v[12..16].copy_from_slice(&0x7fff_fff0u32.to_be_bytes());
            v
        },
        false,
    )
    .await;
    let (r, took) = call(port, 5000).await;
    let e = r.unwrap_err();
    assert!(e.message.contains("exceeds the payload limit"), "{e}");
    assert!(took < Duration::from_secs(4));
}

#[tokio::test]
async fn negative_length_is_corrupt() {
    let port = fake(
        |id| {
            let mut v = response(id, 20, b"");
            v[12..16].copy_from_slice(&(-5i32).to_be_bytes());
            v
        },
        false,
    )
    .await;
    let (r, _) = call(port, 5000).await;
    let e = r.unwrap_err();
    assert!(e.message.contains("invalid body length -5"), "{e}");
}

#[tokio::test]
async fn undecodable_bodies_are_serialization_errors() {
    for script in [
        (|id| response(id, 20, b"\xff\xfe\xfd")) as Script,
        |id| response(id, 20, b"\x91"),
        |id| response(id, 20, b"\x91\x30\xff"),
        |id| response(id, 20, b"\x9f"),
    ] {
        let port = fake(script, false).await;
        let (r, took) = call(port, 5000).await;
        let e = r.unwrap_err();
        assert!(
            matches!(e.code, RpcErrorCode::Serialization | RpcErrorCode::Network),
            "{e}"
        );
        assert!(took < Duration::from_secs(4));
    }
}

#[tokio::test]
async fn non_ok_status_carries_the_message() {
    let port = fake(|id| response(id, 80, b"\x0bno such svc"), false).await;
    let (r, _) = call(port, 5000).await;
    let e = r.unwrap_err();
    assert_eq!(e.code, RpcErrorCode::Network);
    assert!(
        e.message.contains("status 80 (SERVER_ERROR): no such svc"),
        "{e}"
    );
    let port = fake(|id| response(id, 31, b"\x04late"), false).await;
    let (r, _) = call(port, 5000).await;
    assert_eq!(r.unwrap_err().code, RpcErrorCode::Timeout);
}

#[tokio::test]
async fn a_peer_that_never_answers_times_out() {
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = l.local_addr().unwrap().port();
    tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((s, _)) = l.accept().await {
            held.push(s);
        }
    });
    let (r, took) = call(port, 300).await;
    let e = r.unwrap_err();
    assert_eq!(e.code, RpcErrorCode::Timeout);
    assert!(
        took >= Duration::from_millis(290) && took < Duration::from_secs(2),
        "{took:?}"
    );
}

#[tokio::test]
async fn refused_connection_is_a_network_error() {
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = l.local_addr().unwrap().port();
    drop(l);
    let (r, _) = call(port, 1000).await;
    let e = r.unwrap_err();
    assert_eq!(e.code, RpcErrorCode::Network);
    assert!(e.message.contains("cannot connect"), "{e}");
}
