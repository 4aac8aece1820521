//! Mock (§9): decision, MockInvoker forms, mock:// providers, parse_mock_value.

#[path = "cluster_support/mod.rs"]
mod support;

use std::sync::Arc;

use invoker::cluster::{self, ClusterOptions};
use invoker::directory::static_directory::StaticDirectory;
use invoker::mock::{
    empty_value, is_config_empty, normalize_mock, parse_mock_value, JavaType, MockDecision,
    MockRegistry,
};
use invoker::rpc::{Invocation, RpcErrorCode, RpcResponse, SharedInvoker};
use serde_json::{json, Value};
use support::*;

fn joined(params: &str, invokers: &[Arc<Scripted>], registry: Arc<MockRegistry>) -> SharedInvoker {
    cluster::join_with(
        directory(consumer(params), invokers),
        ClusterOptions {
            mock_registry: Some(registry),
            ..ClusterOptions::default()
        },
    )
}

fn call(m: &str) -> Invocation {
    Invocation::new(m.to_owned())
}

#[test]
fn decision_method_level_beats_service_level() {
    let u = consumer("mock=force:return z&getSomething.mock=fail:return x");
    assert_eq!(
        MockDecision::for_method(&u, "getSomething"),
        MockDecision::Fail
    );
    assert_eq!(MockDecision::for_method(&u, "other"), MockDecision::Force);
    for v in ["false", "0", "null", "N/A", "FALSE", ""] {
        let u = consumer(&format!("mock={v}"));
        assert_eq!(
            MockDecision::for_method(&u, "m"),
            MockDecision::NoMock,
            "{v:?}"
        );
    }
    assert!(is_config_empty(None));
    assert!(!is_config_empty(Some("true")));
}

#[tokio::test]
async fn force_mock_never_calls_providers() {
    let p = Scripted::new(0, ok("real"));
    let c = joined(
        "mock=force:return 42",
        std::slice::from_ref(&p),
        Arc::new(MockRegistry::new()),
    );
    let r = c
        .invoke(&call("getInt").with_return_type("int"))
        .await
        .unwrap();
    assert_eq!(r.value, json!(42));
    assert_eq!(p.calls(), 0);
}

#[tokio::test]
async fn fail_mock_only_on_non_biz_errors() {
    let reg = Arc::new(MockRegistry::new());
    let p = Scripted::new(0, timeout());
    let c = joined(
        "mock=fail:return fallback",
        std::slice::from_ref(&p),
        reg.clone(),
    );
    assert_eq!(c.invoke(&call("m")).await.unwrap().value, json!("fallback"));
    assert_eq!(p.calls(), 3, "the real cluster (failover) ran first");

    let p = Scripted::new(0, biz());
    let c = joined(
        "mock=fail:return fallback",
        std::slice::from_ref(&p),
        reg.clone(),
    );
    assert!(
        c.invoke(&call("m")).await.unwrap_err().is_biz(),
        "biz errors propagate"
    );

    let p = Scripted::new(0, ok("real"));
    let c = joined("mock=return fallback", std::slice::from_ref(&p), reg);
    assert_eq!(c.invoke(&call("m")).await.unwrap().value, json!("real"));
}

#[tokio::test]
async fn throw_forms() {
    let reg = Arc::new(MockRegistry::new());
    let p = Scripted::new(0, timeout());
    let c = joined("mock=force:throw", std::slice::from_ref(&p), reg.clone());
    let e = c.invoke(&call("m")).await.unwrap_err();
    assert!(!e.is_biz());
    assert!(e
        .message
        .contains("mocked exception for service degradation."));

    let c = joined(
        "mock=force:throw java.lang.IllegalStateException",
        std::slice::from_ref(&p),
        reg.clone(),
    );
    let e = c.invoke(&call("m")).await.unwrap_err();
    assert!(e.is_biz());
    assert_eq!(
        e.exception_class.as_deref(),
        Some("java.lang.IllegalStateException")
    );

    let c = joined(
        "mock=force:throw com.foo.NoSuchEx",
        std::slice::from_ref(&p),
        reg.clone(),
    );
    let e = c.invoke(&call("m")).await.unwrap_err();
    assert!(!e.is_biz());
    assert!(e.message.contains("IllegalStateException"));

    reg.register_exception("com.foo.NoSuchEx");
    let e = c.invoke(&call("m")).await.unwrap_err();
    assert_eq!(e.exception_class.as_deref(), Some("com.foo.NoSuchEx"));
}

#[tokio::test]
async fn impl_mock_by_interface_name_and_by_class() {
    let reg = Arc::new(MockRegistry::new());
    reg.register_impl(
        "demo.ServiceMock",
        Arc::new(|i: &Invocation| Ok(RpcResponse::new(json!(format!("mocked {}", i.method()))))),
    );
    let p = Scripted::new(0, network());
    for m in [
        "true",
        "default",
        "force",
        "fail",
        "demo.ServiceMock",
        "force:demo.ServiceMock",
    ] {
        let c = joined(&format!("mock={m}"), std::slice::from_ref(&p), reg.clone());
        assert_eq!(
            c.invoke(&call("hi")).await.unwrap().value,
            json!("mocked hi"),
            "{m}"
        );
    }
    let c = joined("mock=com.missing.Mock", std::slice::from_ref(&p), reg);
    let e = c.invoke(&call("hi")).await.unwrap_err();
    assert!(
        e.message
            .contains("Failed to create mock implementation class"),
        "{e}"
    );
}

#[tokio::test]
async fn mock_protocol_provider_defines_the_mock() {
    let real = Scripted::new(0, timeout());
    let mock_provider = Scripted::with_url(
        "mock://localhost/demo.Service?getX.mock=return provider-mock",
        ok("never"),
    );
    let invokers: Vec<SharedInvoker> = vec![real.clone(), mock_provider.clone()];
    let dir = Arc::new(StaticDirectory::new(
        consumer("mock=fail:return consumer-mock"),
        invokers,
    ));
    let c = cluster::join(dir);
    assert_eq!(
        c.invoke(&call("getX")).await.unwrap().value,
        json!("provider-mock")
    );
    assert_eq!(
        mock_provider.calls(),
        0,
        "the mock provider's URL is used, not its transport"
    );
    // A method the mock provider does not configure: its URL has no mock for it.
    let e = c.invoke(&call("getY")).await.unwrap_err();
    assert!(e.message.contains("mock can not be null"), "{e}");
}

#[tokio::test]
async fn mock_errors_keep_the_cause() {
    let p = Scripted::new(0, timeout());
    let c = joined("mock=fail:return {bad", &[p], Arc::new(MockRegistry::new()));
    let e = c
        .invoke(&call("m").with_return_type("java.util.Map"))
        .await
        .unwrap_err();
    assert_eq!(e.code, RpcErrorCode::Unknown);
    assert!(
        e.message
            .starts_with("mock error : mock return invoke error"),
        "{e}"
    );
    assert!(e.message.contains("invoke error is"), "{e}");
}

#[test]
fn normalize_mock_rules() {
    let n = |s: &str| normalize_mock(Some(s)).unwrap();
    assert_eq!(normalize_mock(None), None);
    assert_eq!(n("  return  "), "return null");
    assert_eq!(n("RETURN"), "return null");
    for d in ["true", "TRUE", "default", "fail", "force", "Force"] {
        assert_eq!(n(d), "default");
    }
    assert_eq!(n("force:"), "");
    assert_eq!(n("fail:return x"), "return x");
    assert_eq!(n("force:throw com.foo.MyEx"), "throw com.foo.MyEx");
    assert_eq!(n("return `x`"), "return \"x\"");
    assert_eq!(n("com.foo.Mock`"), "com.foo.Mock`");
}

#[test]
fn parse_mock_value_rules() {
    let p =
        |s: &str, t: Option<&str>| parse_mock_value(s, t.map(JavaType::parse).as_ref()).unwrap();
    assert_eq!(p("null", None), Value::Null);
    assert_eq!(p("true", None), json!(true));
    assert_eq!(p("TRUE", None), json!("TRUE"));
    assert_eq!(p("\"foo\"", None), json!("foo"));
    assert_eq!(p("'foo'", None), json!("foo"));
    assert_eq!(p("123", None), json!(123));
    assert_eq!(p("123", Some("java.lang.String")), json!("123"));
    assert_eq!(p("-1", None), json!("-1"));
    assert_eq!(p("-1", Some("int")), json!(-1));
    assert_eq!(p("1688", Some("int")), json!(1688));
    assert_eq!(p("{a:1, 'b':\"x\"}", None), json!({"a": 1, "b": "x"}));
    assert_eq!(
        p("[1,2]", Some("java.util.List<java.lang.Long>")),
        json!([1, 2])
    );
    assert_eq!(p("[\"1\",\"2\"]", Some("int[]")), json!([1, 2]));
    assert_eq!(p("[1,1,2]", Some("java.util.Set")), json!([1, 2]));
    assert_eq!(p("true", Some("boolean")), json!(true));
    assert_eq!(p("x", Some("char")), json!("x"));
    assert!(parse_mock_value("abc", Some(&JavaType::Integer)).is_err());
    assert!(parse_mock_value("{not json", None).is_err());
    // empty by return type
    assert_eq!(p("empty", Some("java.lang.String")), json!(""));
    assert_eq!(p("empty", Some("int")), json!(0));
    assert_eq!(p("empty", Some("java.lang.Boolean")), json!(false));
    assert_eq!(p("empty", Some("java.util.List<User>")), json!([]));
    assert_eq!(p("empty", Some("java.util.Map")), json!({}));
    assert_eq!(p("empty", Some("long[]")), json!([]));
    assert_eq!(p("empty", Some("com.foo.User")), json!({}));
    assert_eq!(p("empty", Some("java.lang.Object")), json!([]));
    assert_eq!(p("empty", Some("java.lang.CharSequence")), Value::Null);
    assert_eq!(p("empty", None), Value::Null);
    assert_eq!(empty_value(Some(&JavaType::Float)), json!(0.0));
}

#[test]
fn java_type_names() {
    assert_eq!(JavaType::parse("String"), JavaType::Str);
    assert_eq!(JavaType::parse("java.lang.Integer"), JavaType::Integer);
    assert_eq!(
        JavaType::parse("java.util.List<java.lang.String>"),
        JavaType::List(Some(Box::new(JavaType::Str)))
    );
    assert_eq!(
        JavaType::parse("java.util.HashMap<String, User>"),
        JavaType::Map
    );
    assert_eq!(JavaType::parse("User"), JavaType::Pojo("User".into()));
    assert_eq!(
        JavaType::parse("java.util.concurrent.CompletableFuture<java.lang.String>"),
        JavaType::Str
    );
}

mod props {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Any mock text and return type gives a value or an error, never a panic; a quoted
        /// text always yields its inside.
        #[test]
        fn parse_mock_value_total(mock in ".{0,40}", ty in proptest::sample::select(vec![
            "", "int", "java.lang.String", "boolean", "char", "double", "java.util.List<int>",
            "java.util.Set", "java.util.Map", "long[]", "com.foo.User", "java.lang.Object",
        ])) {
            let t = (!ty.is_empty()).then(|| JavaType::parse(ty));
            let _ = parse_mock_value(&mock, t.as_ref());
            let _ = normalize_mock(Some(&mock));
            if !mock.contains('"') && ty != "int" && ty != "double" && ty != "boolean" && ty != "char" {
                let quoted = format!("\"{mock}\"");
                prop_assert_eq!(parse_mock_value(&quoted, t.as_ref()).unwrap(), json!(mock));
            }
        }
    }
}
