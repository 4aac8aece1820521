//! Bad input over gRPC, against a scripted fake Nacos gRPC server (`tests::fake_nacos_grpc`:
//! HTTP/2 via `h2`, the real `Payload` protobuf): garbage JSON, mismatched reply types, a server that never finishes
//! setup, a stream reset in the middle of a push, a refused registration (metadata over 1024
//! characters), unknown server requests. Every case must give a clear error or warning and
//! keep the last good list. (Fakes are only for bad input; behaviour is tested on rnacos.)
//!
//! The same fake also stands in for what rnacos cannot do and Java Nacos servers (which cannot
//! be downloaded here) advertise in their `SetupAckRequest`: `supportPersistentInstanceByGrpc`
//! (2.3+, `PersistentInstanceRequest`) and `fuzzyWatch` (3.0+, `NamingFuzzyWatchRequest` and its
//! pushes). The rnacos side of both (v1 HTTP register, service-list scans) is tested in
//! `nacos_grpc_lifecycle.rs`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::atomic::Ordering;
use std::time::Duration;

use registry_core::{Registry, Url};
use registry_nacos::NacosRegistry;
use serde_json::json;
use tests::contract::{consumer_url, provider_url, Watch};
use tests::fake_nacos_grpc::{payload, push_request, Fake};

const T: Duration = Duration::from_secs(15);

fn consumer() -> Url {
    consumer_url("S", "providers", "")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pushes_are_acked_and_bad_ones_lose_nothing() {
    let fake = Fake::start().await;
    *fake.script.hosts.lock().unwrap() = vec![20001];
    let r = NacosRegistry::new(&fake.url("")).unwrap();
    let mut w = Watch::new(r.subscribe(&consumer()).await.unwrap());
    w.until("seeded from the subscribe reply", T, |w| {
        w.addresses("providers").len() == 1
    })
    .await;
    let setup = fake.script.setup.lock().unwrap().clone().unwrap();
    assert_eq!(setup["labels"]["source"], "sdk");
    assert_eq!(setup["labels"]["module"], "naming");
    // A push is a full snapshot, acked with its request id.
    fake.script.push(Some(push_request("77", &[20001, 20002])));
    w.until("the pushed list", T, |w| {
        w.addresses("providers").len() == 2
    })
    .await;
    tests::eventually("ack 77", T, || async {
        fake.script
            .acked("NotifySubscriberResponse", "77")
            .then_some(())
    })
    .await;
    // Detection, unknown requests and garbage: answered or ignored, the stream stays open.
    fake.script.push(Some(payload(
        "ClientDetectionRequest",
        br#"{"requestId":"78","module":"internal"}"#,
    )));
    fake.script
        .push(Some(payload("FooBarRequest", br#"{"requestId":"79"}"#)));
    fake.script
        .push(Some(payload("NotifySubscriberRequest", b"{not json")));
    fake.script.push(Some(payload(
        "NotifySubscriberRequest",
        br#"{"requestId":"80","serviceInfo":{"name":"providers:S::","hosts":[{"ip":1}]}}"#,
    )));
    tests::eventually("detection, unknown and bad pushes answered", T, || async {
        (fake.script.acked("ClientDetectionResponse", "78")
            && fake.script.acked("ErrorResponse", "79")
            && fake.script.acked("NotifySubscriberResponse", "80"))
        .then_some(())
    })
    .await;
    assert_eq!(
        w.addresses("providers").len(),
        2,
        "bad pushes keep the list"
    );
    // An empty push is delivered as empty:// (no SDK-style empty protection).
    fake.script.push(Some(push_request("81", &[])));
    w.until_no_providers("empty", T).await;
    assert_eq!(fake.script.connections.load(Ordering::SeqCst), 1);
    r.destroy().await;
}

/// A server that stops reading its stream while it keeps sending requests: the client's
/// replies back up, and the session gives up on the stream after the request timeout instead
/// of waiting forever, connects again, keeps the list and takes pushes on the new stream.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_stops_reading_its_stream_cannot_hold_the_session() {
    let fake = Fake::start().await;
    *fake.script.hosts.lock().unwrap() = vec![20001];
    let r = NacosRegistry::new(&fake.url("")).unwrap();
    let mut w = Watch::new(r.subscribe(&consumer()).await.unwrap());
    w.until("seeded from the subscribe reply", T, |w| {
        w.addresses("providers").len() == 1
    })
    .await;
    fake.script.deaf.store(true, Ordering::SeqCst);
    for i in 0..4000 {
        let body = format!(r#"{{"requestId":"d{i}","module":"internal"}}"#);
        fake.script
            .push(Some(payload("ClientDetectionRequest", body.as_bytes())));
    }
    let subscribes = fake.script.subscribes.load(Ordering::SeqCst);
    tests::eventually("a new connection that subscribes again", T, || async {
        (fake.script.connections.load(Ordering::SeqCst) >= 2
            && fake.script.subscribes.load(Ordering::SeqCst) > subscribes)
            .then_some(())
    })
    .await;
    fake.script.deaf.store(false, Ordering::SeqCst);
    assert_eq!(w.addresses("providers").len(), 1, "the list is kept");
    fake.script.push(Some(push_request("90", &[20001, 20002])));
    w.until("a push on the new stream", T, |w| {
        w.addresses("providers").len() == 2
    })
    .await;
    r.destroy().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_reset_mid_push_reconnects_and_resubscribes_keeping_the_list() {
    let fake = Fake::start().await;
    *fake.script.hosts.lock().unwrap() = vec![20001];
    let r = NacosRegistry::new(&fake.url("")).unwrap();
    r.register(&provider_url("P", 20880, "")).await.unwrap();
    let mut w = Watch::new(r.subscribe(&consumer()).await.unwrap());
    w.until("first list", T, |w| w.addresses("providers").len() == 1)
        .await;
    let regs = fake.script.registers.load(Ordering::SeqCst);
    // Replies after the reconnect are garbage, then of the wrong type: the list stays.
    fake.script.subscribe_mode.store(1, Ordering::SeqCst);
    *fake.script.hosts.lock().unwrap() = vec![20001, 20002, 20003];
    fake.script.push(None);
    let subs = fake.script.subscribes.load(Ordering::SeqCst);
    tests::eventually("a re-subscribe on a new connection", T, || async {
        (fake.script.subscribes.load(Ordering::SeqCst) > subs
            && fake.script.connections.load(Ordering::SeqCst) >= 2)
            .then_some(())
    })
    .await;
    fake.script.subscribe_mode.store(2, Ordering::SeqCst);
    let subs = fake.script.subscribes.load(Ordering::SeqCst);
    tests::eventually("a retried re-subscribe", T, || async {
        (fake.script.subscribes.load(Ordering::SeqCst) > subs).then_some(())
    })
    .await;
    assert_eq!(w.addresses("providers").len(), 1, "never blanked");
    assert!(
        fake.script.registers.load(Ordering::SeqCst) > regs,
        "the registration is redone on the new connection"
    );
    fake.script.subscribe_mode.store(0, Ordering::SeqCst);
    w.until("the fresh snapshot after recovery", T, |w| {
        w.addresses("providers").len() == 3
    })
    .await;
    r.destroy().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_registration_says_why_and_failback_keeps_retrying() {
    let fake = Fake::start().await;
    fake.script.refuse_metadata.store(true, Ordering::SeqCst);
    let r = NacosRegistry::new(&fake.url("")).unwrap();
    let e = r
        .register(&provider_url("Big", 20881, ""))
        .await
        .expect_err("check=true returns the refusal");
    let msg = e.to_string();
    assert!(msg.contains("1024") && msg.contains("400"), "{msg}");
    r.destroy().await;

    let r = NacosRegistry::new(&fake.url("&check=false")).unwrap();
    r.register(&provider_url("Big", 20881, "")).await.unwrap();
    let n = fake.script.registers.load(Ordering::SeqCst);
    tests::eventually("failback retries", T, || async {
        (fake.script.registers.load(Ordering::SeqCst) >= n + 2).then_some(())
    })
    .await;
    fake.script.refuse_metadata.store(false, Ordering::SeqCst);
    let n = fake.script.registers.load(Ordering::SeqCst);
    tests::eventually("accepted once the server allows it", T, || async {
        (fake.script.registers.load(Ordering::SeqCst) > n).then_some(())
    })
    .await;
    r.destroy().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_never_finishes_setup_is_a_clear_error() {
    let fake = Fake::start().await;
    fake.script.never_setup.store(true, Ordering::SeqCst);
    let r = NacosRegistry::new(&fake.url("")).unwrap();
    let started = std::time::Instant::now();
    let e = r
        .subscribe(&consumer_url("S", "providers", "check=true"))
        .await
        .expect_err("no usable connection");
    assert!(started.elapsed() < T);
    let msg = e.to_string();
    assert!(
        msg.contains("connection setup") || msg.contains("timed out"),
        "{msg}"
    );
    assert!(!r.is_available());
    r.destroy().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_10k_instance_service_with_dubbo_sized_metadata_decodes() {
    let fake = Fake::start().await;
    fake.script.pad.store(true, Ordering::SeqCst);
    *fake.script.hosts.lock().unwrap() = (20000..30000).collect();
    // Generous: building and parsing ~10 MB of JSON in a debug build on a loaded machine can
    // take longer than 10 s, and a timed-out reply is retried from scratch.
    let r = NacosRegistry::new(&fake.url("&nacos.request-timeout=60000")).unwrap();
    let mut w = Watch::new(r.subscribe(&consumer()).await.unwrap());
    // ~10 MB of JSON: more than tonic's default 4 MiB decoding limit.
    w.until("10,000 providers", Duration::from_secs(180), |w| {
        w.addresses("providers").len() == 10_000
    })
    .await;
    r.destroy().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn persistent_instances_use_persistent_instance_request_when_advertised() {
    let fake = Fake::start().await;
    *fake.script.abilities.lock().unwrap() =
        Some(json!({"supportPersistentInstanceByGrpc": true, "fuzzyWatch": false}));
    let r = NacosRegistry::new(&fake.url("")).unwrap();
    let persistent = provider_url("P", 20890, "ephemeral=false");
    r.register(&persistent).await.unwrap();
    r.register(&provider_url("P", 20891, "")).await.unwrap();
    let sent = fake.script.requests_of("PersistentInstanceRequest");
    assert_eq!(sent.len(), 1, "{sent:?}");
    assert_eq!(sent[0]["type"], "registerInstance");
    assert_eq!(sent[0]["namespace"], "public");
    assert_eq!(sent[0]["groupName"], "DEFAULT_GROUP");
    assert_eq!(sent[0]["serviceName"], "providers:P::");
    assert_eq!(sent[0]["instance"]["port"], 20890);
    assert_eq!(sent[0]["instance"]["ephemeral"], false);
    assert!(sent[0]["instance"].get("serviceName").is_none());
    // The ephemeral one is an InstanceRequest of its own (not batched with the persistent one).
    let eph = fake.script.requests_of("InstanceRequest");
    assert_eq!(eph.len(), 1, "{eph:?}");
    assert_eq!(eph[0]["instance"]["port"], 20891);
    assert_eq!(eph[0]["instance"]["ephemeral"], true);
    // A reconnect redoes the ephemeral registration only: the server keeps persistent ones.
    fake.script.push(None);
    fake.script
        .until_requests("the ephemeral registration redone", "InstanceRequest", 2)
        .await;
    assert_eq!(
        fake.script.requests_of("PersistentInstanceRequest").len(),
        1
    );
    r.unregister(&persistent).await.unwrap();
    let sent = fake.script.requests_of("PersistentInstanceRequest");
    assert_eq!(sent.len(), 2, "{sent:?}");
    assert_eq!(sent[1]["type"], "deregisterInstance");
    assert_eq!(sent[1]["instance"]["port"], 20890);
    r.destroy().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wildcard_subscription_uses_fuzzy_watch_when_advertised() {
    let fake = Fake::start().await;
    *fake.script.abilities.lock().unwrap() = Some(json!({"fuzzyWatch": true}));
    fake.script
        .fuzzy_keys
        .lock()
        .unwrap()
        .push("public@@DEFAULT_GROUP@@providers:S:1.0:".into());
    {
        let mut per = fake.script.per_service.lock().unwrap();
        per.insert("providers:S:1.0:".into(), vec![21001]);
        per.insert("providers:S:2.0:".into(), vec![21002]);
    }
    let r = NacosRegistry::new(&fake.url("&nacos.scan-interval=200")).unwrap();
    let mut w = Watch::subscribe(&r, &consumer_url("S", "providers", "version=*")).await;
    w.until("the service of the initial sync", T, |w| {
        w.addresses("providers").len() == 1
    })
    .await;
    let setup = fake.script.setup.lock().unwrap().clone().unwrap();
    assert_eq!(
        setup["abilityTable"],
        json!({"fuzzyWatch": true}),
        "{setup}"
    );
    let watch = fake.script.requests_of("NamingFuzzyWatchRequest");
    assert_eq!(watch.len(), 1, "{watch:?}");
    assert_eq!(
        watch[0]["groupKeyPattern"],
        "public>>DEFAULT_GROUP>>providers:S:*"
    );
    assert_eq!(watch[0]["watchType"], "WATCH");
    assert_eq!(watch[0]["namespace"], "public");
    // Java's `isInitializing` field goes out as `initializing` (Jackson names it after the getter).
    assert_eq!(watch[0]["initializing"], true);
    assert!(watch[0].get("isInitializing").is_none());
    tests::eventually("the sync batches acked", T, || async {
        (fake
            .script
            .acked("NamingFuzzyWatchChangeNotifyResponse", "fz-init")
            && fake
                .script
                .acked("NamingFuzzyWatchChangeNotifyResponse", "fz-finish"))
        .then_some(())
    })
    .await;
    // A new service announced by the server is picked up; one the pattern does not cover,
    // another group and garbage are not.
    let change = |id: &str, key: &str, ty: &str| {
        let v = json!({"requestId":id,"module":"naming","serviceKey":key,"changedType":ty,
            "syncType":"FUZZY_WATCH_RESOURCE_CHANGED"});
        payload(
            "NamingFuzzyWatchChangeNotifyRequest",
            v.to_string().as_bytes(),
        )
    };
    fake.script.push(Some(change(
        "c1",
        "public@@OTHER@@providers:S:3.0:",
        "ADD_SERVICE",
    )));
    fake.script.push(Some(payload(
        "NamingFuzzyWatchChangeNotifyRequest",
        b"{not json",
    )));
    fake.script.push(Some(change(
        "c2",
        "public@@DEFAULT_GROUP@@providers:S:2.0:",
        "ADD_SERVICE",
    )));
    w.until_providers(
        "the announced service",
        T,
        &["10.9.0.1:21001", "10.9.0.1:21002"],
    )
    .await;
    assert!(fake
        .script
        .acked("NamingFuzzyWatchChangeNotifyResponse", "c2"));
    fake.script.push(Some(change(
        "c3",
        "public@@DEFAULT_GROUP@@providers:S:1.0:",
        "DELETE_SERVICE",
    )));
    w.until_providers("the deleted service dropped", T, &["10.9.0.1:21002"])
        .await;
    // After a reconnect the watch is re-sent with the keys already known.
    fake.script.push(None);
    fake.script
        .until_requests("the watch redone", "NamingFuzzyWatchRequest", 2)
        .await;
    let redo = fake.script.requests_of("NamingFuzzyWatchRequest")[1].clone();
    assert_eq!(redo["initializing"], false);
    assert_eq!(
        redo["receivedGroupKeys"],
        json!(["public@@DEFAULT_GROUP@@providers:S:2.0:"])
    );
    // No service-list scan in all that time (the scan interval is 200 ms).
    assert!(
        fake.script.requests_of("ServiceListRequest").is_empty(),
        "no ServiceListRequest with a fuzzy watch"
    );
    drop(w);
    r.destroy().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_the_abilities_persistent_goes_to_http_and_wildcards_scan() {
    let fake = Fake::start().await;
    *fake.script.hosts.lock().unwrap() = vec![20001];
    // No ability table at all (rnacos, Java before 2.3): no fuzzy watch, service-list scans.
    let r = NacosRegistry::new(&fake.url("&nacos.scan-interval=200")).unwrap();
    let mut w = Watch::subscribe(&r, &consumer_url("S", "providers", "version=*")).await;
    w.until("the scanned service", T, |w| {
        w.addresses("providers").len() == 1
    })
    .await;
    assert!(fake
        .script
        .requests_of("NamingFuzzyWatchRequest")
        .is_empty());
    fake.script
        .until_requests("re-scans", "ServiceListRequest", 3)
        .await;
    // The v1 HTTP fallback of a persistent instance goes to the main port, where this fake
    // has no HTTP: a clear error, and no gRPC request that the server could not handle.
    r.register(&provider_url("P", 20892, "ephemeral=false"))
        .await
        .expect_err("the fake has no HTTP API");
    assert!(fake
        .script
        .requests_of("PersistentInstanceRequest")
        .is_empty());
    drop(w);
    r.destroy().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_fuzzy_watch_falls_back_to_scans() {
    let fake = Fake::start().await;
    *fake.script.hosts.lock().unwrap() = vec![20001];
    *fake.script.abilities.lock().unwrap() = Some(json!({"fuzzyWatch": true}));
    fake.script.refuse_fuzzy.store(true, Ordering::SeqCst);
    let r = NacosRegistry::new(&fake.url("&nacos.scan-interval=200")).unwrap();
    let mut w = Watch::subscribe(&r, &consumer_url("S", "providers", "version=*")).await;
    w.until("the scanned service", T, |w| {
        w.addresses("providers").len() == 1
    })
    .await;
    assert_eq!(fake.script.requests_of("NamingFuzzyWatchRequest").len(), 1);
    fake.script
        .until_requests(
            "re-scans instead of the refused watch",
            "ServiceListRequest",
            3,
        )
        .await;
    assert_eq!(
        fake.script.requests_of("NamingFuzzyWatchRequest").len(),
        1,
        "a refused watch is not retried"
    );
    drop(w);
    r.destroy().await;
}
