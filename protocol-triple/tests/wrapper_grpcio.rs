//! Wrapper mode against the hand-made wrapper peer (grpcio + dubbo-ssl-python Hessian2).
//! What this proves: our TripleRequestWrapper bytes (Java field order, `hessian4`,
//! `Class.getName()` argTypes, one Hessian stream per argument), the response wrapper and
//! `tri-exception-code` handling. What it cannot prove: Java's own Hessian (hessian-lite)
//! fidelity, overload resolution, Java's status choices (see tests/README.md).

#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers panic on bad fixtures

use tests::triple_peers as common;

use std::sync::Arc;

use invoker::rpc::{Invocation, Invoker, RpcErrorCode};
use protocol_triple::{Code, PayloadMode, TripleError, TripleInvoker, TripleInvokerFactory};
use registry_core::Url;
use serde_json::{json, Value};

const IFACE: &str = "org.apache.dubbo.tritest.DemoService";

fn invoker(f: &TripleInvokerFactory, addr: &str) -> Arc<TripleInvoker> {
    let url = Url::parse(&format!(
        "tri://{addr}/{IFACE}?interface={IFACE}&side=provider"
    ))
    .unwrap();
    f.refer_triple(&url).unwrap()
}

fn call(method: &str, types: &[&str], args: Vec<Value>) -> Invocation {
    Invocation::new(method).with_arguments(types.iter().map(|t| t.to_string()).collect(), args)
}

#[tokio::test]
async fn wrapper_calls_results_and_bytes() {
    let Some(peer) = common::grpc_peer("wrapper_calls_results_and_bytes", 0).await else {
        return;
    };
    let f = TripleInvokerFactory::new(PayloadMode::Wrapper);
    let inv = invoker(&f, &peer.addr());
    let v = inv
        .call(&call(
            "sayHello",
            &["java.lang.String"],
            vec![json!("rust")],
        ))
        .await
        .unwrap();
    assert_eq!(v, json!("Hello rust"));
    // The exact request bytes Java 3.3 writes for sayHello("rust")
    // (`TripleCustomerProtocolWapper`).
    let v = inv
        .call(&call("rawRequest", &["String"], vec![json!("rust")]))
        .await
        .unwrap();
    let want = format!(
        "0a08{}120504{}1a10{}",
        hex(b"hessian4"),
        hex(b"rust"),
        hex(b"java.lang.String")
    );
    assert_eq!(v, json!(want));
    // argTypes in Class.getName() form, declared or inferred, in argument order.
    let v = inv
        .call(&call(
            "describe",
            &["int", "String", "java.util.List", "long[]"],
            vec![json!(1), json!("a"), json!([1, 2]), json!([3])],
        ))
        .await
        .unwrap();
    assert_eq!(
        v,
        json!("hessian4|int,java.lang.String,java.util.List,[J|4")
    );
    let v = inv
        .call(&call(
            "describe",
            &[],
            vec![
                json!("s"),
                json!(5),
                json!(1.5),
                json!(true),
                json!([1]),
                json!({"a": 1}),
            ],
        ))
        .await
        .unwrap();
    assert_eq!(
        v,
        json!("hessian4|java.lang.String,long,double,boolean,java.util.List,java.util.Map|6")
    );
    // A typed object back (class + fields), and void.
    let v = inv
        .call(&call("getUser", &["java.lang.String"], vec![json!("bob")]))
        .await
        .unwrap();
    assert_eq!(v["class"], "org.apache.dubbo.tritest.User");
    assert_eq!(v["name"], "bob");
    assert_eq!(v["age"], 42);
    let v = inv.call(&call("nothing", &[], vec![])).await.unwrap();
    assert_eq!(v, Value::Null);
    // A typed object argument survives a round trip through the peer's Hessian codec.
    let user = json!({"class": "org.apache.dubbo.tritest.User", "name": "eve", "age": 7});
    let v = inv
        .call(&call(
            "echo",
            &["org.apache.dubbo.tritest.User"],
            vec![user.clone()],
        ))
        .await
        .unwrap();
    assert_eq!(v["name"], "eve");
    assert_eq!(v["age"], 7);
}

#[tokio::test]
async fn business_exceptions_and_other_exception_codes() {
    let Some(peer) = common::grpc_peer("business_exceptions", 0).await else {
        return;
    };
    let f = TripleInvokerFactory::new(PayloadMode::Wrapper);
    let inv = invoker(&f, &peer.addr());
    let e = inv
        .call(&call("boom", &["java.lang.String"], vec![json!("x")]))
        .await
        .unwrap_err();
    assert_eq!(
        e,
        TripleError::Biz {
            class: "java.lang.IllegalStateException".into(),
            message: "boom: x".into()
        }
    );
    let r = inv
        .invoke(&call("boom", &["java.lang.String"], vec![json!("y")]))
        .await
        .unwrap_err();
    assert!(r.is_biz() && !r.is_retryable());
    assert_eq!(
        r.exception_class.as_deref(),
        Some("java.lang.IllegalStateException")
    );
    // tri-exception-code other than 3: an RPC failure with the status, not a biz error.
    let r = inv
        .invoke(&call("denied", &["java.lang.String"], vec![json!("z")]))
        .await
        .unwrap_err();
    assert_eq!(r.code, RpcErrorCode::Forbidden, "{r}");
    assert!(r.message.contains("no access for you"), "{r}");
    let e = inv.call(&call("missing", &[], vec![])).await.unwrap_err();
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

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}
