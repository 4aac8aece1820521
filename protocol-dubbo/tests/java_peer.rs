//! Calls against the Java Dubbo2 provider peer: every request decoded and every answer
//! encoded by real Java Hessian (Caucho 4.0.38).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use tests::dubbo2_peers as common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{call, eventually, say_hello, JavaPeer};
use invoker::rpc::{CallMode, Invocation, Invoker, RpcErrorCode};
use protocol_dubbo::DubboInvokerFactory;
use serde_json::{json, Value};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn values_pojos_dates_and_attachments_round_trip() {
    let Some(peer) = JavaPeer::start("values_round_trip", &[]).await else {
        return;
    };
    let f = DubboInvokerFactory::new();
    let inv = f
        .refer_dubbo(&peer.url("timeout=5000&group=&token=secret"))
        .unwrap();

    let r = inv.invoke(&say_hello("rust")).await.unwrap();
    assert_eq!(r.value, json!("Hello rust"));
    assert_eq!(
        r.attachments.get("dubbo").map(String::as_str),
        Some("2.0.2")
    );

    let r = inv
        .invoke(&call("add", &["int", "int"], vec![json!(1), json!(2)]))
        .await
        .unwrap();
    assert_eq!(r.value, json!(3));
    // Inferred types: integers are longs.
    let r = inv
        .invoke(&call(
            "addLong",
            &[],
            vec![json!(4_000_000_000i64), json!(1)],
        ))
        .await
        .unwrap();
    assert_eq!(r.value, json!(4_000_000_001i64));

    let r = inv
        .invoke(&call("getUser", &["java.lang.String"], vec![json!("bob")]))
        .await
        .unwrap();
    assert_eq!(r.value["class"], json!("org.apache.dubbo.demo.User"));
    assert_eq!(r.value["name"], json!("bob"));
    assert_eq!(r.value["age"], json!(42));
    assert_eq!(r.value["tags"], json!(["a", "b"]));
    assert_eq!(r.value["created"], json!(1_700_000_000_000i64));

    // A JSON object with "class" goes out as a typed object Java binds to the POJO.
    let user =
        json!({"class": "org.apache.dubbo.demo.User", "name": "eve", "age": 7, "tags": ["x"]});
    let r = inv
        .invoke(&call(
            "echoUser",
            &["org.apache.dubbo.demo.User"],
            vec![user],
        ))
        .await
        .unwrap();
    assert_eq!(r.value["name"], json!("eve"));
    assert_eq!(r.value["age"], json!(7));
    assert_eq!(r.value["class"], json!("org.apache.dubbo.demo.User"));

    // The same Java object referenced three times appears three times.
    let r = inv
        .invoke(&call("users", &["int"], vec![json!(3)]))
        .await
        .unwrap();
    let list = r.value.as_array().unwrap();
    assert_eq!(list.len(), 3);
    for u in list {
        assert_eq!(u["friend"]["name"], json!("shared"));
    }

    // What Java saw of our arguments.
    let r = inv
        .invoke(&call(
            "describe",
            &[
                "java.lang.String",
                "int",
                "long",
                "double",
                "boolean",
                "java.util.List",
                "java.util.Map",
            ],
            vec![
                json!("s"),
                json!(1),
                json!(2),
                json!(1.5),
                json!(true),
                json!([1, 2]),
                json!({"k": "v"}),
            ],
        ))
        .await
        .unwrap();
    assert_eq!(
        r.value,
        json!([
            "java.lang.String:s",
            "java.lang.Integer:1",
            "java.lang.Long:2",
            "java.lang.Double:1.5",
            "java.lang.Boolean:true",
            "java.util.ArrayList:[1, 2]",
            "java.util.HashMap:{k=v}"
        ])
    );

    let r = inv.invoke(&call("now", &[], vec![])).await.unwrap();
    assert_eq!(r.value, json!(1_700_000_000_000i64));
    let r = inv.invoke(&call("nothing", &[], vec![])).await.unwrap();
    assert_eq!(r.value, Value::Null);

    let r = inv
        .invoke(&call("attachments", &[], vec![]).with_attachment("trace", "t1"))
        .await
        .unwrap();
    let a = &r.value;
    assert_eq!(a["path"], json!(common::SERVICE));
    assert_eq!(a["interface"], json!(common::SERVICE));
    assert_eq!(a["version"], json!("1.0.0"));
    assert_eq!(a["timeout"], json!("5000"));
    assert_eq!(a["token"], json!("secret"));
    assert_eq!(a["group"], json!(""));
    assert_eq!(a["trace"], json!("t1"));

    let r = inv.echo(json!({"k": [1, "two"]})).await.unwrap();
    assert_eq!(r.value, json!({"k": [1, "two"]}));
    inv.destroy();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn java_exceptions_are_biz_errors_with_class_and_message() {
    let Some(peer) = JavaPeer::start("java_exceptions", &[]).await else {
        return;
    };
    let f = DubboInvokerFactory::new();
    let inv = f.refer_dubbo(&peer.url("timeout=5000")).unwrap();
    let e = inv
        .invoke(&call("fail", &["java.lang.String"], vec![json!("boom")]))
        .await
        .unwrap_err();
    assert_eq!(e.code, RpcErrorCode::Biz);
    assert_eq!(
        e.exception_class.as_deref(),
        Some("java.lang.IllegalStateException")
    );
    assert_eq!(e.message, "boom");
    let e = inv
        .invoke(&call(
            "failWithCause",
            &["java.lang.String"],
            vec![json!("inner")],
        ))
        .await
        .unwrap_err();
    assert_eq!(
        e.exception_class.as_deref(),
        Some("java.lang.RuntimeException")
    );
    assert_eq!(e.message, "outer");
    // The connection is fine afterwards.
    let r = inv.invoke(&say_hello("x")).await.unwrap();
    assert_eq!(r.value, json!("Hello x"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn version_and_group_must_match() {
    let Some(peer) = JavaPeer::start("version_group", &["--group", "blue"]).await else {
        return;
    };
    let f = DubboInvokerFactory::new();
    let ok = f.refer_dubbo(&peer.url("group=blue&timeout=5000")).unwrap();
    let r = ok.invoke(&say_hello("g")).await.unwrap();
    assert_eq!(r.value, json!("Hello g"));
    let mut keep = Vec::new();
    for extra in [
        "group=green&timeout=5000",
        "group=blue&version=9.9.9&timeout=5000",
    ] {
        let bad = f.refer_dubbo(&peer.url(extra)).unwrap();
        keep.push(bad.clone());
        let e = bad.invoke(&say_hello("g")).await.unwrap_err();
        assert_eq!(e.code, RpcErrorCode::Network, "{e}");
        assert!(
            e.message.contains("status 70") && e.message.contains("Not found exported service"),
            "{e}"
        );
    }
    // Three invokers of one address share one connection.
    assert_eq!(f.pool().ref_count(&peer.addr()), 3);
    let r = ok.invoke(&call("accepted", &[], vec![])).await.unwrap();
    assert_eq!(r.value, json!(1));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn timeouts_do_not_break_the_connection() {
    let Some(peer) = JavaPeer::start("timeouts", &[]).await else {
        return;
    };
    let f = DubboInvokerFactory::new();
    let inv = f
        .refer_dubbo(&peer.url("timeout=5000&sleep.timeout=150"))
        .unwrap();
    // Warm up (JVM, connection).
    inv.invoke(&say_hello("w")).await.unwrap();
    let start = Instant::now();
    let e = inv
        .invoke(&call("sleep", &["long"], vec![json!(1000)]))
        .await
        .unwrap_err();
    let took = start.elapsed();
    assert_eq!(e.code, RpcErrorCode::Timeout, "{e}");
    assert!(
        took < Duration::from_millis(900),
        "method-level timeout 150 ms, took {took:?}"
    );
    // The invocation's timeout attachment wins over the URL.
    let e = inv
        .invoke(&call("hang", &[], vec![]).with_attachment("timeout", "100"))
        .await
        .unwrap_err();
    assert!(e.is_timeout());
    // The late answer of the first call is dropped; the connection keeps working.
    let r = inv.invoke(&say_hello("after")).await.unwrap();
    assert_eq!(r.value, json!("Hello after"));
    assert_eq!(inv.pending_calls(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sixty_four_concurrent_calls_share_one_connection() {
    let Some(peer) = JavaPeer::start("concurrent", &[]).await else {
        return;
    };
    let f = DubboInvokerFactory::new();
    let inv = f.refer_dubbo(&peer.url("timeout=10000")).unwrap();
    let mut tasks = Vec::new();
    for i in 0..64 {
        let inv = inv.clone();
        tasks.push(tokio::spawn(async move {
            let r = inv
                .invoke(&call("sleep", &["long"], vec![json!(50 + (i % 7))]))
                .await
                .unwrap();
            assert_eq!(r.value, json!(50 + (i % 7)));
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    let r = inv.invoke(&call("accepted", &[], vec![])).await.unwrap();
    assert_eq!(r.value, json!(1));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn big_strings_and_the_payload_limit() {
    let Some(peer) = JavaPeer::start("payload", &[]).await else {
        return;
    };
    let f = DubboInvokerFactory::new();
    let inv = f.refer_dubbo(&peer.url("timeout=20000")).unwrap();
    let big: String = "é😀x".repeat(350_000);
    let r = inv
        .invoke(&call("echo", &["java.lang.String"], vec![json!(big)]))
        .await
        .unwrap();
    assert_eq!(r.value.as_str().map(str::len), Some(big.len()));
    assert_eq!(r.value, json!(big));
    let r = inv
        .invoke(&call("bigString", &["int"], vec![json!(1_000_000)]))
        .await
        .unwrap();
    assert_eq!(r.value.as_str().map(str::len), Some(1_000_000));

    // payload=4096: a bigger request fails before sending, a bigger response is skipped.
    let small = DubboInvokerFactory::new()
        .refer_dubbo(&peer.url("timeout=20000&payload=4096"))
        .unwrap();
    let e = small
        .invoke(&call(
            "echo",
            &["java.lang.String"],
            vec![json!("y".repeat(5000))],
        ))
        .await
        .unwrap_err();
    assert!(
        e.message.contains("exceeds the payload limit of 4096"),
        "{e}"
    );
    let e = small
        .invoke(&call("bigString", &["int"], vec![json!(100_000)]))
        .await
        .unwrap_err();
    assert!(
        e.message.contains("response of") && e.message.contains("payload limit"),
        "{e}"
    );
    let r = small.invoke(&say_hello("s")).await.unwrap();
    assert_eq!(r.value, json!("Hello s"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oneway_calls_do_not_wait() {
    let Some(peer) = JavaPeer::start("oneway", &[]).await else {
        return;
    };
    let f = DubboInvokerFactory::new();
    let inv = f
        .refer_dubbo(&peer.url("timeout=5000&hang.return=false"))
        .unwrap();
    let start = Instant::now();
    let r = inv.invoke(&call("hang", &[], vec![])).await.unwrap();
    assert_eq!(r.value, Value::Null);
    let r = inv
        .invoke(&say_hello("1").with_mode(CallMode::Oneway))
        .await
        .unwrap();
    assert_eq!(r.value, Value::Null);
    let r = inv
        .invoke(&say_hello("2").with_attachment("return", "false"))
        .await
        .unwrap();
    assert_eq!(r.value, Value::Null);
    assert!(start.elapsed() < Duration::from_secs(3));
    let inv2 = inv.clone();
    eventually(
        "three one-way requests reach Java",
        Duration::from_secs(10),
        || {
            let inv = inv2.clone();
            async move {
                let r = inv.invoke(&call("oneways", &[], vec![])).await.ok()?;
                (r.value == json!(3)).then_some(())
            }
        },
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn readonly_event_and_dropped_connection_make_it_unavailable_then_reconnect() {
    let Some(peer) = JavaPeer::start("reconnect", &[]).await else {
        return;
    };
    let f = DubboInvokerFactory::new();
    let inv = f.refer_dubbo(&peer.url("timeout=5000")).unwrap();
    inv.invoke(&say_hello("a")).await.unwrap();
    assert!(inv.is_available());

    inv.invoke(&call("readonly", &[], vec![])).await.unwrap();
    let i = inv.clone();
    eventually("readonly event seen", Duration::from_secs(5), || {
        let ok = !i.is_available();
        async move { ok.then_some(()) }
    })
    .await;
    inv.invoke(&call("writable", &[], vec![])).await.unwrap();
    let i = inv.clone();
    eventually("writable again", Duration::from_secs(5), || {
        let ok = i.is_available();
        async move { ok.then_some(()) }
    })
    .await;

    inv.invoke(&call("dropConnections", &[], vec![]))
        .await
        .unwrap();
    let i = inv.clone();
    eventually("connection loss seen", Duration::from_secs(5), || {
        let ok = !i.is_connected();
        async move { ok.then_some(()) }
    })
    .await;
    let i = inv.clone();
    eventually("background reconnect", Duration::from_secs(10), || {
        let ok = i.is_connected() && i.is_available();
        async move { ok.then_some(()) }
    })
    .await;
    let r = inv.invoke(&call("accepted", &[], vec![])).await.unwrap();
    assert_eq!(r.value, json!(2));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn heartbeats_keep_an_idle_connection() {
    // The peer closes connections idle for 800 ms; heartbeats every 150 ms keep ours (a
    // consumer option allows heartbeats that short; by default URLs may not go below 1 s).
    let Some(peer) = JavaPeer::start("heartbeat", &["--idle-ms", "800"]).await else {
        return;
    };
    let f = DubboInvokerFactory::with_options(protocol_dubbo::config::DubboOptions {
        min_heartbeat: Duration::from_millis(50),
        ..Default::default()
    });
    let inv = f
        .refer_dubbo(&peer.url("timeout=5000&heartbeat=150"))
        .unwrap();
    inv.invoke(&say_hello("a")).await.unwrap();
    // Idleness is the input here: no call for 2 s (2.5 x the peer's idle limit).
    tokio::time::sleep(Duration::from_millis(2000)).await;
    assert!(inv.is_connected());
    // 13 heartbeats are due in 2 s; a loaded machine delays timers, so ask for the fewest
    // that can keep an 800 ms idle limit away for 2 s (one every < 800 ms: at least 2). The
    // proof that they kept the connection is `accepted` below.
    let r = inv.invoke(&call("heartbeats", &[], vec![])).await.unwrap();
    assert!(
        r.value.as_i64().unwrap() >= 2,
        "heartbeats seen by Java: {}",
        r.value
    );
    let r = inv.invoke(&call("accepted", &[], vec![])).await.unwrap();
    assert_eq!(r.value, json!(1), "the idle connection was never closed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restarted_provider_is_reconnected() {
    let Some(peer) = JavaPeer::start("restart", &[]).await else {
        return;
    };
    let port = peer.port;
    let f = DubboInvokerFactory::new();
    let inv: Arc<protocol_dubbo::DubboInvoker> = f.refer_dubbo(&peer.url("timeout=3000")).unwrap();
    inv.invoke(&say_hello("a")).await.unwrap();
    peer.kill().await;
    let e = inv.invoke(&say_hello("b")).await.unwrap_err();
    assert!(e.is_network(), "{e}");
    let i = inv.clone();
    eventually("unavailable while down", Duration::from_secs(5), || {
        let ok = !i.is_available();
        async move { ok.then_some(()) }
    })
    .await;
    let Some(_peer2) = JavaPeer::start_on("restart", port, &[]).await else {
        return;
    };
    let i = inv.clone();
    eventually(
        "reconnected to the restarted provider",
        Duration::from_secs(15),
        || {
            let i = i.clone();
            async move {
                let r = i.invoke(&say_hello("c")).await.ok()?;
                (r.value == json!("Hello c")).then_some(())
            }
        },
    )
    .await;
    assert!(inv.is_available());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dedicated_connections_and_shared_ones() {
    let Some(peer) = JavaPeer::start("connections", &[]).await else {
        return;
    };
    let f = DubboInvokerFactory::new();
    // connections=2: two connections of its own, used in turn; nothing in the shared pool.
    let own = f
        .refer_dubbo(&peer.url("timeout=5000&connections=2"))
        .unwrap();
    for i in 0..4 {
        let r = own
            .invoke(&call("sayHello", &["java.lang.String"], vec![json!(i)]))
            .await
            .unwrap();
        assert_eq!(r.value, json!(format!("Hello {i}")));
    }
    assert_eq!(f.pool().ref_count(&peer.addr()), 0);
    let r = own.invoke(&call("accepted", &[], vec![])).await.unwrap();
    assert_eq!(r.value, json!(2));
    // shareconnections=1 (default): two invokers, one more connection; destroying the last
    // one closes it.
    let a = f.refer_dubbo(&peer.url("timeout=5000")).unwrap();
    let b = f
        .refer_dubbo(&peer.url("timeout=5000&application=other"))
        .unwrap();
    a.invoke(&call("whoami", &[], vec![])).await.unwrap();
    b.invoke(&call("whoami", &[], vec![])).await.unwrap();
    assert_eq!(f.pool().ref_count(&peer.addr()), 2);
    let r = own.invoke(&call("accepted", &[], vec![])).await.unwrap();
    assert_eq!(r.value, json!(3));
    a.destroy();
    assert!(f.pool().is_connected(&peer.addr()));
    b.destroy();
    assert_eq!(f.pool().ref_count(&peer.addr()), 0);
    assert!(!f.pool().is_connected(&peer.addr()));
    assert!(!a.is_available());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn generic_invoke_reaches_java_as_string_and_object_arrays() {
    let Some(peer) = JavaPeer::start("generic", &[]).await else {
        return;
    };
    let f = DubboInvokerFactory::new();
    let inv = f.refer_dubbo(&peer.url("timeout=5000")).unwrap();
    let g = Invocation::new("$invoke")
        .with_arguments(
            vec![
                "java.lang.String".into(),
                "[Ljava.lang.String;".into(),
                "[Ljava.lang.Object;".into(),
            ],
            vec![
                json!("sayHello"),
                json!(["java.lang.String"]),
                json!(["generic"]),
            ],
        )
        .with_attachment("generic", "true");
    let r = inv.invoke(&g).await.unwrap();
    assert_eq!(r.value, json!("Hello generic"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connection_opened_ahead_is_taken_over_by_the_first_invoker() {
    let Some(peer) = JavaPeer::start("preconnect", &[]).await else {
        return;
    };
    let f = DubboInvokerFactory::new();
    let addr = peer.addr();
    let endpoint = registry_core::Url::parse(&format!("dubbo://{addr}")).unwrap();
    // A dedicated connection asks the provider how many connections it accepted.
    let own = f
        .refer_dubbo(&peer.url("timeout=5000&connections=1"))
        .unwrap();
    let accepted = || {
        let own = own.clone();
        async move {
            let r = own.invoke(&call("accepted", &[], vec![])).await.unwrap();
            r.value.as_i64().unwrap()
        }
    };
    assert_eq!(accepted().await, 1);

    // Opened ahead, then a provider with the default settings: one connection for both.
    let connected = |what: &'static str| {
        let (p, a) = (f.pool().clone(), addr.clone());
        eventually(what, Duration::from_secs(10), move || {
            let ok = p.is_connected(&a);
            async move { ok.then_some(()) }
        })
    };
    let ahead = f.preconnect_dubbo(&endpoint).expect("dubbo preconnect");
    connected("connected ahead").await;
    let inv = f.refer_dubbo(&peer.url("timeout=5000")).unwrap();
    assert_eq!(f.pool().ref_count(&addr), 2);
    let r = inv.invoke(&say_hello("ahead")).await.unwrap();
    assert_eq!(r.value, json!("Hello ahead"));
    assert_eq!(
        accepted().await,
        2,
        "the invoker used the connection opened ahead"
    );
    drop(ahead);
    assert_eq!(f.pool().ref_count(&addr), 1);
    assert!(f.pool().is_connected(&addr));
    inv.invoke(&say_hello("still")).await.unwrap();
    inv.destroy();
    assert_eq!(f.pool().ref_count(&addr), 0);

    // A provider asking for other connection settings gets a connection of its own settings.
    let ahead = f.preconnect_dubbo(&endpoint).unwrap();
    connected("connected ahead again").await;
    assert_eq!(accepted().await, 3);
    let inv = f
        .refer_dubbo(&peer.url("timeout=5000&heartbeat=30000"))
        .unwrap();
    let r = inv.invoke(&say_hello("other")).await.unwrap();
    assert_eq!(r.value, json!("Hello other"));
    assert_eq!(
        accepted().await,
        4,
        "a connection with the provider's settings"
    );
    drop(ahead);
    assert_eq!(f.pool().ref_count(&addr), 1);
    inv.invoke(&say_hello("after")).await.unwrap();
    inv.destroy();

    // Opened ahead and never used: closed when let go.
    let ahead = f.preconnect_dubbo(&endpoint).unwrap();
    assert_eq!(f.pool().ref_count(&addr), 1);
    drop(ahead);
    assert_eq!(f.pool().ref_count(&addr), 0);
    assert!(!f.pool().is_connected(&addr));
    // Nothing is opened ahead for a lazy or dedicated-connection endpoint.
    assert!(f
        .preconnect_dubbo(&endpoint.with_param("lazy", "true"))
        .is_none());
    assert!(f
        .preconnect_dubbo(&endpoint.with_param("connections", "2"))
        .is_none());
}
