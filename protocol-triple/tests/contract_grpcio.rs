//! Header and compression contract details against the grpcio peer (Java's
//! `RequestMetadata.toHeaders`): attachment key case (`tri-header-convert`), binary attachments
//! (`-bin`, base64), response attachments from headers and trailers, request compression
//! (`grpc-encoding: gzip` + the per-message compressed flag) and compressed responses.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers panic on bad fixtures

use tests::triple_peers as common;

use std::collections::BTreeMap;
use std::sync::Arc;

use invoker::rpc::{Invocation, Invoker};
use protocol_triple::compression::Encoding;
use protocol_triple::{
    Code, IdlService, PayloadMode, ProtoSchema, TripleError, TripleInvoker, TripleInvokerFactory,
};
use registry_core::Url;
use serde_json::{json, Value};

fn factory() -> TripleInvokerFactory {
    let schema = ProtoSchema::load(&[common::proto_dir().join("test.proto")]).unwrap();
    TripleInvokerFactory::new(PayloadMode::Idl(IdlService::new(
        Arc::new(schema),
        "tritest.Greeter",
    )))
}

fn invoker(f: &TripleInvokerFactory, addr: &str) -> Arc<TripleInvoker> {
    let url = Url::parse(&format!(
        "tri://{addr}/tritest.Greeter?interface=tritest.Greeter&timeout=10000"
    ))
    .unwrap();
    f.refer_triple(&url).unwrap()
}

fn call(method: &str, arg: Value) -> Invocation {
    Invocation::new(method).with_arguments(vec![], vec![arg])
}

#[tokio::test]
async fn attachment_case_map_and_binary_attachments_reach_the_peer() {
    let Some(peer) = common::grpc_peer(
        "attachment_case_map_and_binary_attachments_reach_the_peer",
        0,
    )
    .await
    else {
        return;
    };
    let f = factory();
    let inv = invoker(&f, &peer.addr());
    let call = call("Headers", json!({}))
        .with_attachment("Trace-Id", "t1")
        .with_attachment("plain", "p")
        .with_attachment("Blob-bin", "hello")
        .with_attachment("Application", "never sent")
        .with_attachment("path", "never sent");
    let v = inv.call(&call).await.unwrap();
    let h = v["headers"].as_object().unwrap();
    assert_eq!(h["trace-id"], "t1");
    assert_eq!(h["plain"], "p");
    // grpcio base64-decoded the unpadded value of the `-bin` header (the peer prints hex).
    assert_eq!(h["blob-bin"], hex(b"hello"));
    assert!(!h.contains_key("application") && !h.contains_key("path"));
    let map: BTreeMap<String, String> =
        serde_json::from_str(h["tri-header-convert"].as_str().unwrap()).unwrap();
    assert_eq!(
        map,
        BTreeMap::from([
            ("blob".to_owned(), "Blob".to_owned()),
            ("trace-id".to_owned(), "Trace-Id".to_owned()),
        ])
    );
    // Lower-case keys only: no map.
    let v = inv
        .call(&Invocation::new("Headers").with_attachment("k", "v"))
        .await
        .unwrap();
    assert!(v["headers"].get("tri-header-convert").is_none(), "{v}");
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

#[tokio::test]
async fn response_headers_and_trailers_become_result_attachments() {
    let Some(peer) =
        common::grpc_peer("response_headers_and_trailers_become_result_attachments", 0).await
    else {
        return;
    };
    let f = factory();
    let inv = invoker(&f, &peer.addr());
    let r = inv.invoke(&call("Headers", json!({}))).await.unwrap();
    let a = &r.attachments;
    assert_eq!(
        a.get("x-from-headers").map(String::as_str),
        Some("h"),
        "{a:?}"
    );
    assert_eq!(
        a.get("x-from-trailers").map(String::as_str),
        Some("t"),
        "{a:?}"
    );
    // The provider's tri-header-convert map restores the key's case; `-bin` is decoded.
    assert_eq!(
        a.get("X-Case").map(String::as_str),
        Some("restored"),
        "{a:?}"
    );
    assert_eq!(a.get("blob").map(String::as_str), Some("hello"), "{a:?}");
    for reserved in [
        "content-type",
        "grpc-status",
        "grpc-message",
        "grpc-accept-encoding",
        "grpc-encoding",
        "tri-header-convert",
        "x-case",
        "blob-bin",
    ] {
        assert!(!a.contains_key(reserved), "{reserved} in {a:?}");
    }
    // A reply without provider attachments has none.
    let r = inv
        .invoke(&call("SayHello", json!({"name": "x"})))
        .await
        .unwrap();
    assert!(r.attachments.is_empty(), "{:?}", r.attachments);
}

#[tokio::test]
async fn gzip_requests_are_decompressed_by_the_peer_and_refused_when_it_disables_gzip() {
    let test = "gzip_requests_are_decompressed_by_the_peer_and_refused_when_it_disables_gzip";
    let Some(peer) = common::grpc_peer(test, 0).await else {
        return;
    };
    let f = factory().with_request_compression(Encoding::Gzip);
    let inv = invoker(&f, &peer.addr());
    // A compressible message: the peer must decompress it to echo it back.
    let text = "compress me ".repeat(500);
    let v = inv
        .call(&call(
            "Echo",
            json!({"fString": text, "rInt64": ["1", "2", "3"]}),
        ))
        .await
        .unwrap();
    assert_eq!(v["fString"], json!(text));
    assert_eq!(v["rInt64"], json!(["1", "2", "3"]));
    // Small messages are compressed too (Java compresses every message).
    let v = inv
        .call(&call("SayHello", json!({"name": "small"})))
        .await
        .unwrap();
    assert_eq!(v, json!({"message": "Hello small"}));
    // Compressed both ways: the peer answers "gzip..." names compressed.
    let name = format!("gzip-{}", "z".repeat(2000));
    let v = inv
        .call(&call("SayHello", json!({"name": name})))
        .await
        .unwrap();
    assert_eq!(v["message"], json!(format!("Hello {name}")));

    // A peer with gzip disabled rejects our compressed requests, which proves `grpc-encoding:
    // gzip` was on the wire with compressed messages; plain requests still work there.
    let Some(strict) = common::grpc_peer_with(test, 0, &["no-gzip"]).await else {
        return;
    };
    let inv = invoker(&f, &strict.addr());
    let e = inv
        .call(&call("SayHello", json!({"name": "x"})))
        .await
        .unwrap_err();
    match &e {
        TripleError::Status { code, message } => {
            assert_eq!(*code, Code::Unimplemented, "{e}");
            assert!(message.contains("gzip"), "{e}");
        }
        other => panic!("expected UNIMPLEMENTED, got {other}"),
    }
    let plain = factory();
    let inv = invoker(&plain, &strict.addr());
    let v = inv
        .call(&call("SayHello", json!({"name": "plain"})))
        .await
        .unwrap();
    assert_eq!(v, json!({"message": "Hello plain"}));
}
