//! Mock (`MockClusterInvoker`, `MockInvoker`): decision, MockInvoker forms, mock:// providers,
//! parse_mock_value.

use std::sync::Arc;

use invoker::cluster::{self, ClusterOptions};
use invoker::directory::StaticDirectory;
use invoker::mock::{
    empty_value, is_config_empty, normalize_mock, parse_mock_value, IntWidth, JavaType,
    MockDecision, MockRegistry,
};
use invoker::rpc::{Invocation, RpcErrorCode, RpcResponse, SharedInvoker};
use invoker::testutil::*;
use serde_json::{json, Value};

fn joined(
    params: &str,
    invokers: &[Arc<ScriptedInvoker>],
    registry: Arc<MockRegistry>,
) -> SharedInvoker {
    cluster::join_with(
        scripted_directory(consumer(params), invokers),
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
    let p = ScriptedInvoker::new(0, ok("real"));
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
    let p = ScriptedInvoker::new(0, timeout());
    let c = joined(
        "mock=fail:return fallback",
        std::slice::from_ref(&p),
        reg.clone(),
    );
    assert_eq!(c.invoke(&call("m")).await.unwrap().value, json!("fallback"));
    assert_eq!(p.calls(), 3, "the real cluster (failover) ran first");

    let p = ScriptedInvoker::new(0, biz());
    let c = joined(
        "mock=fail:return fallback",
        std::slice::from_ref(&p),
        reg.clone(),
    );
    assert!(
        c.invoke(&call("m")).await.unwrap_err().is_biz(),
        "biz errors propagate"
    );

    let p = ScriptedInvoker::new(0, ok("real"));
    let c = joined("mock=return fallback", std::slice::from_ref(&p), reg);
    assert_eq!(c.invoke(&call("m")).await.unwrap().value, json!("real"));
}

#[tokio::test]
async fn throw_forms() {
    let reg = Arc::new(MockRegistry::new());
    let p = ScriptedInvoker::new(0, timeout());
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
    let p = ScriptedInvoker::new(0, network());
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
    let real = ScriptedInvoker::new(0, timeout());
    let mock_provider = ScriptedInvoker::with_url(
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
    let p = ScriptedInvoker::new(0, timeout());
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
    // Dubbo 3.3's default JSON reader (fastjson2) takes single quotes but refuses an unquoted
    // field name (checked against the oracle; see differential/).
    assert_eq!(p("{\"a\":1, 'b':\"x\"}", None), json!({"a": 1, "b": "x"}));
    assert_eq!(
        p("[1,2]", Some("java.util.List<java.lang.Long>")),
        json!([1, 2])
    );
    assert_eq!(p("[\"1\",\"2\"]", Some("int[]")), json!([1, 2]));
    assert_eq!(p("[1,1,2]", Some("java.util.Set")), json!([1, 2]));
    assert_eq!(p("true", Some("boolean")), json!(true));
    assert_eq!(p("x", Some("char")), json!("x"));
    assert!(parse_mock_value("abc", Some(&JavaType::Integer(IntWidth::Int))).is_err());
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
    assert_eq!(empty_value(Some(&JavaType::Float(false))), json!(0.0));
}

#[test]
fn java_type_names() {
    assert_eq!(JavaType::parse("String"), JavaType::Str);
    assert_eq!(
        JavaType::parse("java.lang.Integer"),
        JavaType::Integer(IntWidth::Int)
    );
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
    assert_eq!(
        JavaType::parse("CompletableFuture<java.util.List<User>>"),
        JavaType::List(Some(Box::new(JavaType::Pojo("User".into()))))
    );
}

/// `getEmptyObject` for types that are neither collections nor POJOs is `null`; a raw future
/// has no usable return type (`ReflectUtils.getReturnTypes` gives null), so `empty` is null.
#[test]
fn empty_of_types_that_are_neither_collections_nor_pojos_is_null() {
    let empty = |t: &str| parse_mock_value("empty", Some(&JavaType::parse(t))).unwrap();
    for t in [
        "void",
        "java.lang.Void",
        "java.lang.Number",
        "java.math.BigDecimal",
        "java.lang.CharSequence",
        "java.lang.Runnable",
        "java.util.Queue",
        "java.util.SortedMap",
        "java.util.concurrent.CompletionStage<java.lang.String>",
        "java.util.concurrent.CompletableFuture",
        "java.util.concurrent.Future",
        "java.util.concurrent.CompletableFuture<?>",
        "CompletableFuture<? extends User>",
    ] {
        assert_eq!(empty(t), Value::Null, "empty for {t}");
    }
    // ...while ArrayList's supertypes (even marker interfaces) give an empty list,
    for t in [
        "java.lang.Object",
        "java.io.Serializable",
        "java.lang.Cloneable",
        "java.util.RandomAccess",
        "java.util.Collection<User>",
        "java.lang.Iterable",
    ] {
        assert_eq!(empty(t), json!([]), "empty for {t}");
    }
    // and the value types their zero.
    assert_eq!(empty("java.lang.Integer"), json!(0));
    assert_eq!(empty("boolean"), json!(false));
    assert_eq!(empty("java.lang.String"), json!(""));
    assert_eq!(empty("CompletableFuture<java.lang.Long>"), json!(0));
    // A raw future converts nothing: the text stays text.
    assert_eq!(
        parse_mock_value("123", Some(&JavaType::parse("java.util.concurrent.Future"))).unwrap(),
        json!(123)
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

/// `sayHello.mock=force:...` mocks only sayHello: every other method goes to the providers,
/// whatever they answer (no service-level `mock`, so no mock at all for them).
#[tokio::test]
async fn method_level_mock_decides_for_that_method_only() {
    let reg = Arc::new(MockRegistry::new());
    let good = ScriptedInvoker::new(0, ok("real"));
    let c = joined(
        "sayHello.mock=force:return mocked",
        std::slice::from_ref(&good),
        reg.clone(),
    );
    assert_eq!(
        c.invoke(&call("sayHello")).await.unwrap().value,
        json!("mocked")
    );
    assert_eq!(good.calls(), 0, "force: the providers are not called");
    assert_eq!(c.invoke(&call("getX")).await.unwrap().value, json!("real"));
    assert_eq!(good.calls(), 1);

    // A failing provider: the unmocked method sees the real error, never a mock.
    let bad = ScriptedInvoker::new(0, timeout());
    let c = joined(
        "sayHello.mock=fail:return fallback&retries=0",
        std::slice::from_ref(&bad),
        reg.clone(),
    );
    assert_eq!(
        c.invoke(&call("sayHello")).await.unwrap().value,
        json!("fallback")
    );
    let e = c.invoke(&call("getX")).await.unwrap_err();
    assert_eq!(e.code, RpcErrorCode::Timeout, "{e}");
    assert_eq!(bad.calls(), 2, "both methods reached the provider once");

    // `force:` on one method, `fail:` on another, nothing on a third.
    let c = joined(
        "a.mock=force:return A&b.mock=fail:return B&retries=0",
        std::slice::from_ref(&bad),
        reg.clone(),
    );
    let before = bad.calls();
    assert_eq!(c.invoke(&call("a")).await.unwrap().value, json!("A"));
    assert_eq!(bad.calls(), before, "force never calls");
    assert_eq!(c.invoke(&call("b")).await.unwrap().value, json!("B"));
    assert_eq!(bad.calls(), before + 1, "fail calls first");
    assert!(c.invoke(&call("c")).await.unwrap_err().is_timeout());
    assert_eq!(bad.calls(), before + 2);

    // `mock=false` / absent: no mock, the error stays.
    for params in [
        "mock=false&retries=0",
        "retries=0",
        "sayHello.mock=false&mock=force:x",
    ] {
        let c = joined(params, std::slice::from_ref(&bad), reg.clone());
        assert!(
            c.invoke(&call("sayHello")).await.unwrap_err().is_timeout(),
            "{params}"
        );
    }
}

/// An impl mock for a method returning a `CompletableFuture` answers through a future: the
/// call completes when (and with what) that future completes, values typed by the future's
/// value type.
#[tokio::test]
async fn async_impl_mock_answers_when_its_future_completes() {
    use futures::future::BoxFuture;
    use futures::FutureExt;
    use tokio::sync::oneshot;

    let reg = Arc::new(MockRegistry::new());
    let (tx, rx) = oneshot::channel::<String>();
    let rx = Arc::new(parking_lot::Mutex::new(Some(rx)));
    reg.register_async_impl(
        "demo.ServiceMock",
        Arc::new(
            move |i: &Invocation| -> BoxFuture<'static, invoker::rpc::RpcResult> {
                let method = i.method().to_owned();
                let rx = rx.lock().take();
                async move {
                    match rx {
                        Some(rx) => match rx.await {
                            Ok(v) => Ok(RpcResponse::new(json!(format!("{method}: {v}")))),
                            Err(_) => Err(invoker::rpc::RpcError::new(
                                RpcErrorCode::Unknown,
                                "mock future dropped",
                            )),
                        },
                        None => Err(invoker::rpc::RpcError::biz(
                            "java.lang.IllegalStateException",
                            "completed exceptionally",
                        )),
                    }
                }
                .boxed()
            },
        ),
    );
    let p = ScriptedInvoker::new(0, network());
    let c = joined("mock=force", std::slice::from_ref(&p), reg.clone());
    let inv = call("sayHelloAsync")
        .with_return_type("java.util.concurrent.CompletableFuture<java.lang.String>");
    let c2 = c.clone();
    let task = tokio::spawn(async move { c2.invoke(&inv).await });
    // Not answered until the future completes.
    tokio::task::yield_now().await;
    assert!(!task.is_finished());
    tx.send("later".into()).unwrap();
    let r = tokio::time::timeout(std::time::Duration::from_secs(5), task)
        .await
        .expect("the mock answered")
        .unwrap()
        .unwrap();
    assert_eq!(r.value, json!("sayHelloAsync: later"));
    assert_eq!(p.calls(), 0);
    // A future that completes exceptionally: the call fails with that (biz) error.
    let e = c.invoke(&call("sayHelloAsync")).await.unwrap_err();
    assert!(e.is_biz(), "{e}");
    // The synchronous entry point says it cannot wait.
    let m = invoker::mock::MockInvoker::new(consumer("mock=true"), "demo.Service", reg);
    assert!(m
        .answer(&call("x"))
        .unwrap_err()
        .message
        .contains("asynchronously"));
}

/// A mock string is read (decoded, normalized, its value parsed) once per value and return
/// type, not per call; what depends on the mock registry is still decided per call.
#[tokio::test]
async fn mock_values_are_read_once_not_per_call() {
    use invoker::mock::MockClusterInvoker;
    use invoker::rpc::Invoker;
    let p = ScriptedInvoker::new(0, ok("real"));
    let dir = scripted_directory(
        consumer("mock=force:return [1,2,3]&other.mock=force:throw com.foo.LaterEx"),
        std::slice::from_ref(&p),
    );
    let m = MockClusterInvoker::new(dir, p.clone(), Arc::new(MockRegistry::new()));
    for _ in 0..100 {
        let r = m.invoke(&call("m")).await.unwrap();
        assert_eq!(r.value, json!([1, 2, 3]));
    }
    assert_eq!(m.mock_values().parsed(), 1, "read once for 100 calls");
    let typed = call("m").with_return_type("java.util.List");
    for _ in 0..10 {
        m.invoke(&typed).await.unwrap();
    }
    assert_eq!(
        m.mock_values().parsed(),
        2,
        "another return type: read once more"
    );
    assert_eq!(p.calls(), 0);
    // `throw`: the class is looked up per call, so a later registration counts.
    let e = m.invoke(&call("other")).await.unwrap_err();
    assert!(!e.is_biz(), "{e}");
    let reg = Arc::new(MockRegistry::new());
    let dir = scripted_directory(
        consumer("mock=force:throw com.foo.LaterEx"),
        std::slice::from_ref(&p),
    );
    let m = MockClusterInvoker::new(dir, p.clone(), reg.clone());
    assert!(!m.invoke(&call("m")).await.unwrap_err().is_biz());
    reg.register_exception("com.foo.LaterEx");
    let e = m.invoke(&call("m")).await.unwrap_err();
    assert_eq!(e.exception_class.as_deref(), Some("com.foo.LaterEx"));
    assert_eq!(m.mock_values().parsed(), 1);
}

/// Cases found by the differential tests against Dubbo 3.3.6's `MockInvoker.parseMockValue`
/// (with fastjson2, Dubbo's default JSON reader).
#[test]
fn parse_mock_value_matches_dubbo_on_generated_inputs() {
    let t = |name: &str| JavaType::parse(name);
    // Numbers narrow like Number.intValue() and friends, on the exact value.
    assert_eq!(
        parse_mock_value("2147483648", Some(&t("int"))).unwrap(),
        json!(-2147483648)
    );
    assert_eq!(
        parse_mock_value("99999999999", Some(&t("byte"))).unwrap(),
        json!(-1)
    );
    assert_eq!(
        parse_mock_value("99999999999999999999", Some(&t("long"))).unwrap(),
        json!(7766279631452241919i64)
    );
    // Number → boolean is intValue() != 0.
    assert_eq!(
        parse_mock_value("4294967296", Some(&t("boolean"))).unwrap(),
        json!(false)
    );
    assert_eq!(
        parse_mock_value("99999999999", Some(&t("java.lang.Boolean"))).unwrap(),
        json!(true)
    );
    // Leading zeros are a number to the JSON reader.
    assert_eq!(parse_mock_value("007", None).unwrap(), json!(7));
    // A string is parsed by Integer.parseInt (range-checked, no spaces) or Float.parseFloat.
    assert!(parse_mock_value("\"2147483648\"", Some(&t("int"))).is_err());
    assert!(parse_mock_value("' 1'", Some(&t("int"))).is_err());
    assert_eq!(
        parse_mock_value("-2147483649", Some(&t("float"))).unwrap(),
        json!(-2147483648.0)
    );
    // Unquoted field names are refused; single quotes are not.
    assert!(parse_mock_value("{a:1}", None).is_err());
    assert!(parse_mock_value("[{a:1}]", None).is_err());
    assert_eq!(
        parse_mock_value("{'a':'b'}", None).unwrap(),
        json!({"a": "b"})
    );
    // Array elements must fit the array's type.
    assert!(parse_mock_value("[1,2]", Some(&t("java.lang.String[]"))).is_err());
    assert!(parse_mock_value("[true]", Some(&t("int[]"))).is_err());
    // A JSON map is no number (Java makes 0 of it: divergence mock-map-to-scalar-is-error).
    assert!(parse_mock_value("{\"a\":1}", Some(&t("java.lang.Long"))).is_err());
}
