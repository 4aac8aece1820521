//! Dubbo 2.6's `methodInvokerMap` for generic calls: `$invoke(method, types, args)` is
//! looked up by its real method name and routed on its first real argument when that is a
//! string (or an enum, which a generic call carries as its name), exactly like the direct
//! call `method(args...)` (`RpcUtils.getMethodName` / `getArguments`).

#![allow(clippy::unwrap_used, clippy::expect_used)] // test fixtures panic on bad input

use std::sync::Arc;

use invoker::directory::{Directory, DirectoryOptions, DubboCompat, RegistryDirectory};
use invoker::rpc::Invocation;
use invoker::testutil::providers::NoopFactory;
use registry_core::Url;
use serde_json::{json, Value};

const S: &str = "com.foo.DemoService";

fn p(host_port: &str, params: &str) -> Url {
    Url::parse(&format!(
        "dubbo://{host_port}/{S}?interface={S}&side=provider&{params}"
    ))
    .unwrap()
}

fn hosts(d: &RegistryDirectory, inv: &Invocation) -> Vec<String> {
    d.list(inv)
        .unwrap()
        .invokers()
        .iter()
        .map(|i| i.url().address().unwrap_or_default())
        .collect()
}

fn generic(method: &str, types: &[&str], args: Vec<Value>) -> Invocation {
    Invocation::new("$invoke").with_arguments(
        vec![
            "java.lang.String".into(),
            "java.lang.String[]".into(),
            "java.lang.Object[]".into(),
        ],
        vec![json!(method), json!(types), Value::Array(args)],
    )
}

#[test]
fn generic_invoke_is_routed_like_the_direct_call() {
    let consumer = Url::parse(&format!(
        "consumer://10.9.9.9/{S}?interface={S}&side=consumer&application=app"
    ))
    .unwrap();
    let d = RegistryDirectory::new(
        consumer,
        Url::parse("zookeeper://127.0.0.1:2181").unwrap(),
        Arc::new(NoopFactory),
        DirectoryOptions::for_compat(DubboCompat::V26),
    );
    d.notify(&[
        p("127.0.0.1:9093", "methods=get,get.vip"),
        p("127.0.0.1:9091", "methods=get"),
        p("127.0.0.1:9092", "methods=get.vip,other"),
    ]);
    let vip = ["127.0.0.1:9092", "127.0.0.1:9093"];
    let plain = ["127.0.0.1:9091", "127.0.0.1:9093"];
    // The direct calls.
    let direct = |arg: Value| {
        Invocation::new("get").with_arguments(vec!["java.lang.String".into()], vec![arg])
    };
    assert_eq!(hosts(&d, &direct(json!("vip"))), vip);
    assert_eq!(hosts(&d, &direct(json!("x"))), plain);
    // The same calls through $invoke: routed on the first real argument.
    let g = generic("get", &["java.lang.String"], vec![json!("vip")]);
    assert_eq!(g.real_method(), "get");
    assert_eq!(hosts(&d, &g), vip);
    assert_eq!(
        hosts(&d, &generic("get", &["java.lang.String"], vec![json!("x")])),
        plain
    );
    // An enum argument travels as its name: routed the same way.
    assert_eq!(
        hosts(&d, &generic("get", &["com.foo.Level"], vec![json!("vip")])),
        vip
    );
    // A first argument that is neither a string nor an enum is not routed on.
    assert_eq!(hosts(&d, &generic("get", &["int"], vec![json!(7)])), plain);
    assert_eq!(hosts(&d, &generic("get", &[], vec![])), plain);
    // The method name routes too: `other` is declared by one provider only.
    assert_eq!(
        hosts(
            &d,
            &generic("other", &["java.lang.String"], vec![json!("vip")])
        ),
        ["127.0.0.1:9092"]
    );
    // `$invoke` itself is not a declared method: without a real method name it is the
    // `*` entry (every provider).
    assert_eq!(hosts(&d, &Invocation::new("$invoke")).len(), 3);
}
