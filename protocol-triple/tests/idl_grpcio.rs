//! IDL mode against the grpcio peer (strict gRPC): every proto3 field type in proto3 JSON,
//! status mapping, deadlines, sizes, compression, concurrency on one connection, reconnect.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers panic on bad fixtures

use tests::triple_peers as common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use invoker::rpc::{Invocation, Invoker, RpcErrorCode};
use protocol_triple::{
    Code, IdlService, PayloadMode, ProtoSchema, TripleClient, TripleError, TripleInvoker,
    TripleInvokerFactory,
};
use registry_core::Url;
use serde_json::{json, Value};

fn schema() -> Arc<ProtoSchema> {
    Arc::new(ProtoSchema::load(&[common::proto_dir().join("test.proto")]).unwrap())
}

fn factory(service: &str) -> TripleInvokerFactory {
    TripleInvokerFactory::new(PayloadMode::Idl(IdlService::new(schema(), service)))
}

fn invoker(f: &TripleInvokerFactory, addr: &str, query: &str) -> Arc<TripleInvoker> {
    let url = Url::parse(&format!(
        "tri://{addr}/tritest.Greeter?interface=tritest.Greeter{query}"
    ))
    .unwrap();
    f.refer_triple(&url).unwrap()
}

fn call(method: &str, arg: Value) -> Invocation {
    Invocation::new(method).with_arguments(vec![], vec![arg])
}

#[tokio::test]
async fn say_hello_and_service_lookup_rules() {
    let Some(peer) = common::grpc_peer("say_hello_and_service_lookup_rules", 0).await else {
        return;
    };
    // The proto full name and the java_package name both reach the proto path.
    for service in ["tritest.Greeter", "org.apache.dubbo.tritest.Greeter"] {
        let f = factory(service);
        let inv = invoker(&f, &peer.addr(), "");
        // Exact rpc name, and the Java-style lower-case first letter.
        for m in ["SayHello", "sayHello"] {
            let v = inv.call(&call(m, json!({"name": "rust"}))).await.unwrap();
            assert_eq!(v, json!({"message": "Hello rust"}), "{service} {m}");
        }
    }
    // Omitted argument = the empty message.
    let f = factory("tritest.Greeter");
    let inv = invoker(&f, &peer.addr(), "");
    let v = inv.call(&Invocation::new("SayHello")).await.unwrap();
    assert_eq!(v, json!({"message": "Hello "}));
    // A service the schema does not define is called as named (with the messages of the only
    // rpc named Ping), never on Other.Ping: the peer has no such service.
    let f = factory("no.Such");
    let inv = invoker(&f, &peer.addr(), "");
    let e = inv
        .call(&call("Ping", json!({"name": "x"})))
        .await
        .unwrap_err();
    assert!(
        matches!(
            &e,
            TripleError::Status {
                code: Code::Unimplemented,
                ..
            }
        ),
        "{e}"
    );
    assert_eq!(
        invoker::rpc::RpcError::from(e).code,
        invoker::rpc::RpcErrorCode::MethodNotFound
    );
    // Same rpc name under another package: still never the schema's Greeter.
    let f = factory("other.pkg.Greeter");
    let inv = invoker(&f, &peer.addr(), "");
    let e = inv
        .call(&call("SayHello", json!({"name": "x"})))
        .await
        .unwrap_err();
    assert!(
        matches!(
            &e,
            TripleError::Status {
                code: Code::Unimplemented,
                ..
            }
        ),
        "{e}"
    );
    // An unknown rpc is a clear argument error.
    let e = inv.call(&call("Nope", json!({}))).await.unwrap_err();
    assert!(matches!(e, TripleError::InvalidArgument(_)), "{e}");
}

#[tokio::test]
async fn every_proto3_type_round_trips_in_canonical_json() {
    let Some(peer) = common::grpc_peer("every_proto3_type_round_trips", 0).await else {
        return;
    };
    let f = factory("tritest.Greeter");
    let inv = invoker(&f, &peer.addr(), "");
    // Input in the "other" accepted forms: proto field names, numbers as strings, enum number.
    let input = json!({
        "f_double": 1.5, "fFloat": "2.5", "fInt32": -7, "fInt64": "-9007199254740993",
        "fUint32": 4000000000u32, "fUint64": "18446744073709551615", "fSint32": -3,
        "fSint64": "-4", "fFixed32": 5, "fFixed64": "6", "fSfixed32": -8, "fSfixed64": "-9",
        "fBool": true, "fString": "héllo \u{1F600}", "fBytes": "AAEC/w==", "fEnum": 2,
        "fInner": {"label": "in", "weight": 3},
        "rInt64": [1, "2"], "rString": ["a", "b"], "rInner": [{"label": "x"}],
        "mStrInt": {"k": 1}, "mLongInner": {"10": {"weight": 1}},
        "cNumber": 0, "oInt32": 0, "oString": "",
        "tTime": "2024-01-02T03:04:05.600Z", "tDuration": "1.500s",
        "wString": "w", "wInt64": "64", "sStruct": {"a": [1, "two", null, true]},
        "rEnum": ["RED", 2]
    });
    let v = inv.call(&call("Echo", input)).await.unwrap();
    let want = json!({
        "fDouble": 1.5, "fFloat": 2.5, "fInt32": -7, "fInt64": "-9007199254740993",
        "fUint32": 4000000000u32, "fUint64": "18446744073709551615", "fSint32": -3,
        "fSint64": "-4", "fFixed32": 5, "fFixed64": "6", "fSfixed32": -8, "fSfixed64": "-9",
        "fBool": true, "fString": "héllo \u{1F600}", "fBytes": "AAEC/w==", "fEnum": "GREEN",
        "fInner": {"label": "in", "weight": 3},
        "rInt64": ["1", "2"], "rString": ["a", "b"], "rInner": [{"label": "x"}],
        "mStrInt": {"k": 1}, "mLongInner": {"10": {"weight": 1}},
        "cNumber": 0, "oInt32": 0, "oString": "",
        "tTime": "2024-01-02T03:04:05.600Z", "tDuration": "1.500s",
        "wString": "w", "wInt64": "64", "sStruct": {"a": [1.0, "two", null, true]},
        "rEnum": ["RED", "GREEN"]
    });
    assert_eq!(v, want);
    // Defaults of implicit-presence fields are not printed.
    let v = inv
        .call(&call("Echo", json!({"fInt32": 0, "fString": ""})))
        .await
        .unwrap();
    assert_eq!(v, json!({}));
    // Unknown fields and wrong types are refused before anything is sent.
    for bad in [
        json!({"nope": 1}),
        json!({"fInt32": "x"}),
        json!({"fBool": 3}),
        json!([1]),
    ] {
        let e = inv.call(&call("Echo", bad.clone())).await.unwrap_err();
        assert!(matches!(e, TripleError::InvalidArgument(_)), "{bad}: {e}");
    }
    let two = Invocation::new("Echo").with_arguments(vec![], vec![json!({}), json!({})]);
    assert!(matches!(
        inv.call(&two).await,
        Err(TripleError::InvalidArgument(_))
    ));
}

#[tokio::test]
async fn statuses_map_to_errors_with_decoded_messages() {
    let Some(peer) = common::grpc_peer("statuses_map_to_errors", 0).await else {
        return;
    };
    let f = factory("tritest.Greeter");
    let inv = invoker(&f, &peer.addr(), "");
    let e = inv
        .call(&call(
            "Fail",
            json!({"code": 3, "message": "bad 100% café"}),
        ))
        .await
        .unwrap_err();
    assert_eq!(
        e,
        TripleError::Status {
            code: Code::InvalidArgument,
            message: "bad 100% café".to_owned()
        }
    );
    let r = inv
        .invoke(&call("Fail", json!({"code": 14, "message": "later"})))
        .await
        .unwrap_err();
    assert_eq!(r.code, RpcErrorCode::Network);
    assert!(
        r.message.contains("UNAVAILABLE") && r.message.contains("later"),
        "{r}"
    );
    let r = inv
        .invoke(&call("Fail", json!({"code": 7, "message": "no"})))
        .await
        .unwrap_err();
    assert_eq!(r.code, RpcErrorCode::Forbidden);
    // An rpc the server does not have: grpcio answers UNIMPLEMENTED (trailers-only).
    let other = TripleInvokerFactory::new(PayloadMode::Wrapper);
    let w = invoker(&other, &peer.addr(), "");
    let e = w.call(&Invocation::new("nope")).await.unwrap_err();
    assert!(
        matches!(
            e,
            TripleError::Status {
                code: Code::Unimplemented,
                ..
            }
        ),
        "{e}"
    );
}

#[tokio::test]
async fn deadline_is_sent_and_enforced() {
    let Some(peer) = common::grpc_peer("deadline_is_sent_and_enforced", 0).await else {
        return;
    };
    let f = factory("tritest.Greeter");
    let inv = invoker(&f, &peer.addr(), "&timeout=5000&Slow.timeout=300");
    let start = Instant::now();
    let e = inv
        .call(&call("Slow", json!({"millis": 3000})))
        .await
        .unwrap_err();
    let took = start.elapsed();
    assert!(e.is_timeout(), "{e}");
    assert!(took < Duration::from_millis(2000), "took {took:?}");
    // The server saw a deadline close to the URL's timeout.
    let v = inv.call(&call("Headers", json!({}))).await.unwrap();
    let left: i64 = v["headers"]["x-remaining-ms"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!((3000..=5000).contains(&left), "remaining {left}");
    // The connection is still good after the cancelled stream.
    let v = inv
        .call(&call("Slow", json!({"millis": 10})))
        .await
        .unwrap();
    assert_eq!(v, json!({"message": "slept 10"}));
}

#[tokio::test]
async fn headers_follow_the_java_rules() {
    let Some(peer) = common::grpc_peer("headers_follow_the_java_rules", 0).await else {
        return;
    };
    let f = factory("tritest.Greeter");
    let bare = invoker(&f, &peer.addr(), "");
    let inv = Invocation::new("Headers")
        .with_attachment("Trace-ID", "abc")
        .with_attachment("group", "never")
        .with_attachment("interface", "never");
    let v = bare.call(&inv).await.unwrap();
    let h = v["headers"].as_object().unwrap();
    assert_eq!(h["trace-id"], "abc");
    assert_eq!(h["timeout"], "3000");
    assert!(!h.contains_key("group") && !h.contains_key("interface"));
    assert!(!h.contains_key("tri-service-version") && !h.contains_key("tri-service-group"));
    let full = invoker(&f, &peer.addr(), "&version=1.0.0&group=g1&application=me");
    let v = full.call(&Invocation::new("Headers")).await.unwrap();
    let h = v["headers"].as_object().unwrap();
    assert_eq!(h["tri-service-version"], "1.0.0");
    assert_eq!(h["tri-service-group"], "g1");
    assert_eq!(h["tri-consumer-appname"], "me");
}

#[tokio::test]
async fn four_megabyte_messages_and_limits() {
    let Some(peer) = common::grpc_peer("four_megabyte_messages_and_limits", 0).await else {
        return;
    };
    let f = factory("tritest.Greeter");
    let inv = invoker(&f, &peer.addr(), "&timeout=20000");
    use base64::Engine as _;
    let payload = base64::engine::general_purpose::STANDARD.encode(vec![7u8; 4 << 20]);
    let v = inv
        .call(&call("Big", json!({"size": 4 << 20, "payload": payload})))
        .await
        .unwrap();
    assert_eq!(v["received"], 4 << 20);
    let got = base64::engine::general_purpose::STANDARD
        .decode(v["payload"].as_str().unwrap())
        .unwrap();
    assert_eq!(got.len(), 4 << 20);
    // Limits: a 1 KiB payload cap refuses the request before sending, and the response
    // as soon as its prefix announces more.
    let small = invoker(&f, &peer.addr(), "&payload=1024");
    let e = small
        .call(&call(
            "Big",
            json!({"payload": base64::engine::general_purpose::STANDARD.encode([0u8; 2000])}),
        ))
        .await
        .unwrap_err();
    assert!(
        matches!(
            e,
            TripleError::TooLarge {
                direction: "request",
                ..
            }
        ),
        "{e}"
    );
    let e = small
        .call(&call("Big", json!({"size": 5000})))
        .await
        .unwrap_err();
    assert!(
        matches!(e, TripleError::TooLarge { direction: "response", size, .. } if size > 5000),
        "{e}"
    );
}

#[tokio::test]
async fn compressed_responses_are_decoded_by_their_flag() {
    let Some(peer) = common::grpc_peer("compressed_responses", 0).await else {
        return;
    };
    let f = factory("tritest.Greeter");
    let inv = invoker(&f, &peer.addr(), "");
    let name = format!("gzip-{}", "z".repeat(4000));
    let v = inv
        .call(&call("SayHello", json!({"name": name})))
        .await
        .unwrap();
    assert_eq!(v["message"], format!("Hello {name}"));
}

#[tokio::test]
async fn sixty_four_concurrent_calls_share_one_connection() {
    let Some(peer) = common::grpc_peer("sixty_four_concurrent_calls", 0).await else {
        return;
    };
    let f = factory("tritest.Greeter");
    let a = invoker(&f, &peer.addr(), "&timeout=10000");
    let b = invoker(&f, &peer.addr(), "&timeout=10000&version=2");
    assert!(Arc::ptr_eq(a.connection(), b.connection()));
    let start = Instant::now();
    let calls = (0..64).map(|i| {
        let inv = if i % 2 == 0 { a.clone() } else { b.clone() };
        async move { inv.call(&call("Slow", json!({"millis": 500}))).await }
    });
    let results = futures::future::join_all(calls).await;
    assert!(results.iter().all(|r| r.is_ok()), "{results:?}");
    // Serially this would take 32 s; concurrently it takes a little over one call.
    assert!(
        start.elapsed() < Duration::from_secs(8),
        "{:?}",
        start.elapsed()
    );
}

/// 64 callers re-issuing as fast as they can, so the connection coalesces writes (batches of
/// up to 8 held requests), and winding down to one caller, so held requests must be released
/// by calls ending and by the hold timer. A lost wake-up would leave a call waiting for its
/// 5 s deadline; every call must instead succeed well inside it. Then a quick call behind 60
/// slow ones, released only by the hold timer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn coalesced_writes_under_load_lose_no_call() {
    let Some(peer) = common::grpc_peer("coalesced_writes_under_load", 0).await else {
        return;
    };
    let f = factory("tritest.Greeter");
    let inv = invoker(&f, &peer.addr(), "&timeout=5000");
    let workers = (0..64usize).map(|w| {
        let inv = inv.clone();
        tokio::spawn(async move {
            let mut slowest = Duration::ZERO;
            // Worker w makes w + 1 calls, so the number in flight falls from 64 to 1.
            for i in 0..=w {
                let started = Instant::now();
                let c = if i % 16 == 15 {
                    call("Slow", json!({"millis": 20}))
                } else {
                    call("SayHello", json!({"name": format!("w{w}c{i}")}))
                };
                let v = inv.call(&c).await.unwrap();
                assert!(v["message"].is_string(), "{v}");
                slowest = slowest.max(started.elapsed());
            }
            slowest
        })
    });
    let mut slowest = Duration::ZERO;
    for w in workers {
        slowest = slowest.max(w.await.unwrap());
    }
    assert!(
        slowest < Duration::from_secs(3),
        "a call waited {slowest:?}"
    );

    // 60 slow calls fill the window, so a quick call's request is held (batch 7); no response
    // will come for 3 s to release it, so only the hold timer can, within about a millisecond.
    let slow: Vec<_> = (0..60)
        .map(|_| {
            let inv = inv.clone();
            tokio::spawn(async move { inv.call(&call("Slow", json!({"millis": 3000}))).await })
        })
        .collect();
    let deadline = Instant::now() + Duration::from_secs(2);
    while inv.connection().in_flight() < 60 {
        assert!(Instant::now() < deadline, "the slow calls did not start");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let started = Instant::now();
    let v = inv
        .call(&call("SayHello", json!({"name": "quick"})))
        .await
        .unwrap();
    let quick = started.elapsed();
    assert_eq!(v["message"], "Hello quick");
    // A normal call takes a few ms. With the timer disabled the request waited 0.18-0.67 s for
    // some other frame to release it, or for the slow answers (3 s).
    assert!(
        quick < Duration::from_millis(150),
        "the held request waited {quick:?}"
    );
    for s in slow {
        s.await.unwrap().unwrap();
    }
}

#[tokio::test]
async fn provider_loss_turns_unavailable_and_reconnects() {
    let port = common::free_port();
    let Some(mut peer) = common::grpc_peer("provider_loss_reconnects", port).await else {
        return;
    };
    let f = factory("tritest.Greeter");
    let inv = invoker(&f, &peer.addr(), "");
    inv.call(&call("SayHello", json!({"name": "a"})))
        .await
        .unwrap();
    assert!(inv.is_available());
    peer.kill().await;
    tests::eventually("invoker unavailable", Duration::from_secs(10), || {
        let inv = inv.clone();
        async move { (!inv.is_available()).then_some(()) }
    })
    .await;
    let e = inv
        .call(&call("SayHello", json!({"name": "b"})))
        .await
        .unwrap_err();
    assert!(e.is_retryable(), "{e}");
    let _peer2 = common::grpc_peer("provider_loss_reconnects", port)
        .await
        .unwrap();
    tests::eventually("reconnected", Duration::from_secs(20), || {
        let inv = inv.clone();
        async move { inv.call(&call("SayHello", json!({"name": "c"}))).await.ok() }
    })
    .await;
    assert!(inv.is_available());
}

#[derive(Clone, PartialEq, prost::Message)]
struct HelloRequest {
    #[prost(string, tag = "1")]
    name: String,
}

#[derive(Clone, PartialEq, prost::Message)]
struct HelloReply {
    #[prost(string, tag = "1")]
    message: String,
}

#[tokio::test]
async fn typed_prost_messages() {
    let Some(peer) = common::grpc_peer("typed_prost_messages", 0).await else {
        return;
    };
    let url = Url::parse(&format!("tri://{}", peer.addr())).unwrap();
    let client = TripleClient::new(&url).unwrap();
    let reply: HelloReply = client
        .unary(
            "/tritest.Greeter/SayHello",
            &HelloRequest {
                name: "typed".into(),
            },
            Duration::from_secs(3),
        )
        .await
        .unwrap();
    assert_eq!(reply.message, "Hello typed");
}
