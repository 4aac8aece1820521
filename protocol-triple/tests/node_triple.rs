//! Routing headers against `@apachedubbo/dubbo-node`, which matches `tri-service-version`
//! and `tri-service-group` exactly (absent = ""), and answers anything else with a bare 404.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers panic on bad fixtures

use tests::triple_peers as common;

use std::sync::Arc;

use invoker::rpc::Invocation;
use protocol_triple::{
    Code, IdlService, PayloadMode, ProtoSchema, TripleError, TripleInvokerFactory,
};
use registry_core::Url;
use serde_json::json;

#[tokio::test]
async fn version_and_group_headers_route_exactly() {
    let Some(peer) = common::node_peer("version_and_group_headers_route_exactly").await else {
        return;
    };
    let schema = Arc::new(ProtoSchema::load(&[common::proto_dir().join("test.proto")]).unwrap());
    let f = TripleInvokerFactory::new(PayloadMode::Idl(IdlService::new(schema, "tritest.Greeter")));
    let hello = Invocation::new("sayHello").with_arguments(vec![], vec![json!({"name": "n"})]);
    for (query, want) in [
        ("", Some("default")),
        ("&version=1.0.0&group=g1", Some("1.0.0/g1")),
        ("&version=2.0.0", Some("2.0.0/")),
        ("&version=1.0.0", None),
        ("&group=g1", None),
        ("&version=1.0.0&group=nope", None),
    ] {
        let url = Url::parse(&format!(
            "tri://{}/tritest.Greeter?interface=tritest.Greeter{query}",
            peer.addr()
        ))
        .unwrap();
        let inv = f.refer_triple(&url).unwrap();
        let r = inv.call(&hello).await;
        match want {
            Some(tag) => assert_eq!(
                r.unwrap(),
                json!({"message": format!("Hello n from {tag}")})
            ),
            None => {
                let e = r.unwrap_err();
                assert!(
                    matches!(&e, TripleError::Status { code: Code::Unimplemented, message } if message.contains("404")),
                    "{query}: {e}"
                );
            }
        }
    }
    // A DubboError from the handler comes back as its gRPC status and message.
    let url = Url::parse(&format!("tri://{}/tritest.Greeter", peer.addr())).unwrap();
    let inv = f.refer_triple(&url).unwrap();
    let e = inv
        .call(&Invocation::new("SayHello").with_arguments(vec![], vec![json!({"name": "fail"})]))
        .await
        .unwrap_err();
    assert_eq!(
        e,
        TripleError::Status {
            code: Code::InvalidArgument,
            message: "bad name from default".into()
        }
    );
}
