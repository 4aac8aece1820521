//! Bad input from a scripted fake HTTP/2 server (bad-input tests only): RST_STREAM, GOAWAY,
//! a garbage preface, a non-gRPC content type, truncated and mis-flagged messages, a missing
//! status, silence. Each must give a clear error within the call timeout and no panic.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers panic on bad fixtures

use std::io::Write;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::{HeaderMap, HeaderValue, Response};
use invoker::rpc::{Invocation, Invoker};
use protocol_triple::{Code, PayloadMode, TripleError, TripleInvokerFactory};
use registry_core::Url;
use serde_json::json;
use tokio::io::AsyncWriteExt;
use tokio::net::TcpListener;

fn wrapper_reply(data: &[u8]) -> Vec<u8> {
    // TripleResponseWrapper{serializeType: "hessian4", data, type: "java.lang.String"}
    let mut w = vec![0x0a, 8];
    w.extend_from_slice(b"hessian4");
    w.push(0x12);
    w.push(data.len() as u8);
    w.extend_from_slice(data);
    w.push(0x1a);
    w.push(16);
    w.extend_from_slice(b"java.lang.String");
    w
}

/// A `TripleResponseWrapper` around `data` of any length.
fn wrapper_reply_long(data: &[u8]) -> Vec<u8> {
    let mut w = vec![0x0a, 8];
    w.extend_from_slice(b"hessian4");
    w.push(0x12);
    let mut n = data.len();
    while n >= 0x80 {
        w.push((n as u8) | 0x80);
        n >>= 7;
    }
    w.push(n as u8);
    w.extend_from_slice(data);
    w
}

/// A Hessian2 result whose JSON form copies a 32 KiB class name into each of 32,768
/// one-byte instances (1 GiB as JSON, from 64 KiB).
fn expanding_result() -> Vec<u8> {
    let name = format!("com.example.{}", "A".repeat(32 * 1024));
    let mut e = hessian2::Encoder::new();
    e.write_raw(b"W");
    e.write_object_begin(&name, []);
    e.write_raw(&vec![0x60; 32 * 1024]);
    e.write_raw(b"Z");
    e.into_bytes()
}

fn framed(flag: u8, m: &[u8]) -> Bytes {
    let mut v = vec![flag];
    v.extend_from_slice(&(m.len() as u32).to_be_bytes());
    v.extend_from_slice(m);
    Bytes::from(v)
}

fn ok_trailers() -> HeaderMap {
    let mut t = HeaderMap::new();
    t.insert("grpc-status", HeaderValue::from_static("0"));
    t
}

fn grpc_response() -> http::response::Builder {
    Response::builder()
        .status(200)
        .header("content-type", "application/grpc")
}

/// An h2 server whose behaviour is chosen by the method name in the path.
async fn fake_h2_server() -> String {
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = l.local_addr().unwrap().to_string();
    tokio::spawn(async move {
        loop {
            let Ok((sock, _)) = l.accept().await else {
                return;
            };
            tokio::spawn(async move {
                let Ok(mut conn) = h2::server::handshake(sock).await else {
                    return;
                };
                while let Some(Ok((req, mut respond))) = conn.accept().await {
                    let case = req.uri().path().rsplit('/').next().unwrap_or("").to_owned();
                    if case == "goaway" {
                        conn.abrupt_shutdown(h2::Reason::PROTOCOL_ERROR);
                        continue;
                    }
                    tokio::spawn(async move {
                        let hello = wrapper_reply(&[0x05, b'h', b'e', b'l', b'l', b'o']);
                        match case.as_str() {
                            "ok" => {
                                let mut s = respond
                                    .send_response(grpc_response().body(()).unwrap(), false)
                                    .unwrap();
                                s.send_data(framed(0, &hello), false).unwrap();
                                s.send_trailers(ok_trailers()).unwrap();
                            }
                            "reset" => respond.send_reset(h2::Reason::INTERNAL_ERROR),
                            "expanding" => {
                                let mut s = respond
                                    .send_response(grpc_response().body(()).unwrap(), false)
                                    .unwrap();
                                let w = wrapper_reply_long(&expanding_result());
                                s.send_data(framed(0, &w), false).unwrap();
                                s.send_trailers(ok_trailers()).unwrap();
                            }
                            "html" => {
                                let r = Response::builder()
                                    .status(200)
                                    .header("content-type", "text/html")
                                    .body(())
                                    .unwrap();
                                let mut s = respond.send_response(r, false).unwrap();
                                s.send_data(Bytes::from_static(b"<html>nope</html>"), true)
                                    .unwrap();
                            }
                            "http503" => {
                                let r = Response::builder().status(503).body(()).unwrap();
                                respond.send_response(r, true).unwrap();
                            }
                            "truncated" => {
                                let mut s = respond
                                    .send_response(grpc_response().body(()).unwrap(), false)
                                    .unwrap();
                                let f = framed(0, &hello);
                                s.send_data(f.slice(..f.len() - 3), false).unwrap();
                                s.send_trailers(ok_trailers()).unwrap();
                            }
                            "flag_without_encoding" => {
                                let mut s = respond
                                    .send_response(grpc_response().body(()).unwrap(), false)
                                    .unwrap();
                                s.send_data(framed(1, &hello), false).unwrap();
                                s.send_trailers(ok_trailers()).unwrap();
                            }
                            "header_gzip_flag_0" => {
                                let r = grpc_response()
                                    .header("grpc-encoding", "gzip")
                                    .body(())
                                    .unwrap();
                                let mut s = respond.send_response(r, false).unwrap();
                                s.send_data(framed(0, &hello), false).unwrap();
                                s.send_trailers(ok_trailers()).unwrap();
                            }
                            "gzip" => {
                                let mut z = flate2::write::GzEncoder::new(
                                    Vec::new(),
                                    flate2::Compression::default(),
                                );
                                z.write_all(&hello).unwrap();
                                let r = grpc_response()
                                    .header("grpc-encoding", "gzip")
                                    .body(())
                                    .unwrap();
                                let mut s = respond.send_response(r, false).unwrap();
                                s.send_data(framed(1, &z.finish().unwrap()), false).unwrap();
                                s.send_trailers(ok_trailers()).unwrap();
                            }
                            "bad_flag" => {
                                let mut s = respond
                                    .send_response(grpc_response().body(()).unwrap(), false)
                                    .unwrap();
                                s.send_data(framed(9, &hello), false).unwrap();
                                s.send_trailers(ok_trailers()).unwrap();
                            }
                            "no_status" => {
                                let mut s = respond
                                    .send_response(grpc_response().body(()).unwrap(), false)
                                    .unwrap();
                                s.send_data(framed(0, &hello), true).unwrap();
                            }
                            "two_messages" => {
                                let mut s = respond
                                    .send_response(grpc_response().body(()).unwrap(), false)
                                    .unwrap();
                                s.send_data(framed(0, &hello), false).unwrap();
                                s.send_data(framed(0, &hello), false).unwrap();
                                s.send_trailers(ok_trailers()).unwrap();
                            }
                            "huge_prefix" => {
                                let mut s = respond
                                    .send_response(grpc_response().body(()).unwrap(), false)
                                    .unwrap();
                                s.send_data(
                                    Bytes::from_static(&[0, 0x7f, 0xff, 0xff, 0xff]),
                                    false,
                                )
                                .unwrap();
                                // never sends the rest
                                tokio::time::sleep(Duration::from_secs(30)).await;
                                drop(s);
                            }
                            "silent" => {
                                tokio::time::sleep(Duration::from_secs(30)).await;
                                drop(respond);
                            }
                            _ => respond.send_reset(h2::Reason::REFUSED_STREAM),
                        }
                    });
                }
            });
        }
    });
    addr
}

fn invoker(
    f: &TripleInvokerFactory,
    addr: &str,
    q: &str,
) -> std::sync::Arc<protocol_triple::TripleInvoker> {
    f.refer_triple(
        &Url::parse(&format!(
            "tri://{addr}/x.Svc?interface=x.Svc&timeout=800{q}"
        ))
        .unwrap(),
    )
    .unwrap()
}

fn call(m: &str) -> Invocation {
    Invocation::new(m).with_arguments(vec!["java.lang.String".into()], vec![json!("a")])
}

#[tokio::test]
async fn scripted_bad_servers_give_clear_errors_within_the_timeout() {
    let addr = fake_h2_server().await;
    let f = TripleInvokerFactory::new(PayloadMode::Wrapper);
    let inv = invoker(&f, &addr, "");
    assert_eq!(inv.call(&call("ok")).await.unwrap(), json!("hello"));
    // The per-message flag decides, not the header.
    assert_eq!(
        inv.call(&call("header_gzip_flag_0")).await.unwrap(),
        json!("hello")
    );
    assert_eq!(inv.call(&call("gzip")).await.unwrap(), json!("hello"));

    type Check = fn(&TripleError) -> bool;
    let cases: &[(&str, Check)] = &[
        (
            "reset",
            |e| matches!(e, TripleError::Http2 { reason, .. } if reason.contains("reset")),
        ),
        (
            "html",
            |e| matches!(e, TripleError::Status { message, .. } if message.contains("text/html")),
        ),
        ("http503", |e| {
            matches!(
                e,
                TripleError::Status {
                    code: Code::Unavailable,
                    ..
                }
            )
        }),
        (
            "truncated",
            |e| matches!(e, TripleError::Protocol { reason, .. } if reason.contains("ended inside")),
        ),
        (
            "flag_without_encoding",
            |e| matches!(e, TripleError::Protocol { reason, .. } if reason.contains("compressed flag")),
        ),
        (
            "bad_flag",
            |e| matches!(e, TripleError::Protocol { reason, .. } if reason.contains("flag")),
        ),
        (
            "no_status",
            |e| matches!(e, TripleError::Protocol { reason, .. } if reason.contains("grpc-status")),
        ),
        (
            "two_messages",
            |e| matches!(e, TripleError::Protocol { reason, .. } if reason.contains("more than one")),
        ),
        ("huge_prefix", |e| {
            matches!(
                e,
                TripleError::TooLarge {
                    direction: "response",
                    ..
                }
            )
        }),
        ("silent", |e| matches!(e, TripleError::Timeout(_))),
        (
            "expanding",
            |e| matches!(e, TripleError::Codec(m) if m.contains("memory budget")),
        ),
    ];
    for (case, check) in cases {
        let start = Instant::now();
        let e = inv.call(&call(case)).await.unwrap_err();
        assert!(check(&e), "{case}: unexpected {e:?}");
        assert!(
            start.elapsed() < Duration::from_millis(2500),
            "{case} took {:?}",
            start.elapsed()
        );
        assert!(!e.to_string().is_empty());
    }
    // The connection survived all of that.
    assert_eq!(inv.call(&call("ok")).await.unwrap(), json!("hello"));

    // GOAWAY: the call fails clearly, the invoker turns unavailable, then reconnects.
    let e = inv.call(&call("goaway")).await.unwrap_err();
    assert!(e.is_retryable(), "{e:?}");
    tests::eventually("reconnect after GOAWAY", Duration::from_secs(10), || {
        let inv = inv.clone();
        async move { inv.call(&call("ok")).await.ok() }
    })
    .await;
    assert!(inv.is_available());
}

#[tokio::test]
async fn garbage_preface_and_silent_peers() {
    // A server that answers the HTTP/2 preface with HTTP/1 garbage and closes.
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let garbage = l.local_addr().unwrap().to_string();
    tokio::spawn(async move {
        while let Ok((mut s, _)) = l.accept().await {
            let _ = s
                .write_all(b"HTTP/1.1 400 Bad Request\r\nConnection: close\r\n\r\n")
                .await;
            let _ = s.shutdown().await;
        }
    });
    // A server that accepts TCP and never says anything.
    let l2 = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let silent = l2.local_addr().unwrap().to_string();
    tokio::spawn(async move {
        let mut keep = Vec::new();
        while let Ok((s, _)) = l2.accept().await {
            keep.push(s);
        }
    });
    let f = TripleInvokerFactory::new(PayloadMode::Wrapper);
    for addr in [garbage, silent] {
        let inv = invoker(&f, &addr, "");
        let start = Instant::now();
        let e = inv.call(&call("ok")).await.unwrap_err();
        assert!(e.is_retryable(), "{addr}: {e:?}");
        assert!(
            start.elapsed() < Duration::from_millis(2500),
            "{addr}: {:?}",
            start.elapsed()
        );
        let r = inv.invoke(&call("ok")).await.unwrap_err();
        assert!(r.is_retryable() && !r.is_biz(), "{r}");
    }
    // Nothing listening: connect refused, the invoker is unavailable, calls fail fast.
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let inv = invoker(&f, &format!("127.0.0.1:{port}"), "");
    let e = inv.call(&call("ok")).await.unwrap_err();
    assert!(matches!(e, TripleError::Unavailable { .. }), "{e:?}");
    assert!(!inv.is_available());
}
