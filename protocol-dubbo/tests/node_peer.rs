//! Calls against the Node Dubbo2 provider (sofa-rpc-node + dubbo-remoting + hessian.js).
//!
//! Where it differs from Java (see tests/peers/README.md): replies use flag 1 without attachments,
//! a thrown error or an unknown method/version is status 80 + message (not a Java exception
//! body), the group is ignored, and typed objects come back untyped.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use tests::dubbo2_peers as common;

use common::{call, say_hello, NodePeer};
use invoker::rpc::{Invoker, RpcErrorCode};
use protocol_dubbo::DubboInvokerFactory;
use serde_json::{json, Value};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn node_provider_calls_and_its_differences() {
    let Some(peer) = NodePeer::start("node_provider").await else {
        return;
    };
    let f = DubboInvokerFactory::new();
    let inv = f.refer_dubbo(&peer.url("timeout=5000")).unwrap();
    let r = inv.invoke(&say_hello("rust")).await.unwrap();
    assert_eq!(r.value, json!("Hello rust"));
    assert!(
        r.attachments.is_empty(),
        "Node replies without attachments (flag 1)"
    );
    let r = inv
        .invoke(&call("add", &["int", "int"], vec![json!(2), json!(3)]))
        .await
        .unwrap();
    assert_eq!(r.value, json!(5));
    let r = inv.invoke(&call("nothing", &[], vec![])).await.unwrap();
    assert_eq!(r.value, Value::Null);
    let r = inv
        .invoke(&call(
            "echo",
            &["java.util.Map"],
            vec![json!({"k": [1, "x", true]})],
        ))
        .await
        .unwrap();
    assert_eq!(r.value, json!({"k": [1, "x", true]}));
    // A thrown error is status 80 with the message, not a biz exception.
    let e = inv.invoke(&call("boom", &[], vec![])).await.unwrap_err();
    assert_eq!(e.code, RpcErrorCode::Network);
    assert!(
        e.message.contains("status 80") && e.message.contains("boom"),
        "{e}"
    );
    // Unknown version: status 80 "not found service".
    let other = f
        .refer_dubbo(&peer.url("version=9.9.9&timeout=5000"))
        .unwrap();
    let e = other.invoke(&say_hello("x")).await.unwrap_err();
    assert!(e.message.contains("status 80"), "{e}");
    // The heartbeat is answered: $echo-free liveness through the connection state.
    assert!(inv.is_available());
}
