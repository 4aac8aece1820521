//! Bad input over gRPC, against a scripted fake Nacos gRPC server (HTTP/2 via `h2`, the real
//! `Payload` protobuf): garbage JSON, mismatched reply types, a server that never finishes
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

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::{Buf, Bytes, BytesMut};
use prost::Message;
use registry_core::{Registry, Url};
use registry_nacos::grpc::proto::Payload;
use registry_nacos::NacosRegistry;
use serde_json::{json, Value};
use tests::contract::{consumer_url, provider_url, Watch};
use tokio::net::TcpListener;
use tokio::sync::mpsc;

const T: Duration = Duration::from_secs(15);

/// What the fake does.
#[derive(Default)]
struct Script {
    /// HealthCheck always answers 301: setup never completes.
    never_setup: AtomicBool,
    /// Registrations are refused with errorCode 400 (metadata too long).
    refuse_metadata: AtomicBool,
    /// Subscribe replies: 0 good, 1 garbage JSON, 2 wrong type.
    subscribe_mode: AtomicU64,
    /// Ports of the hosts the service has.
    hosts: Mutex<Vec<u16>>,
    /// Give every host ~1 KB of metadata (a Dubbo-sized instance).
    pad: AtomicBool,
    registers: AtomicU64,
    subscribes: AtomicU64,
    connections: AtomicU64,
    /// While set, the bi-streams stop reading what the client sends (its replies back up).
    deaf: AtomicBool,
    /// (type, requestId) of every reply the client sent on a stream.
    acks: Mutex<Vec<(String, String)>>,
    /// The setup message of the last stream.
    setup: Mutex<Option<Value>>,
    /// Push channels of the open streams (None = reset the stream).
    streams: Mutex<Vec<mpsc::UnboundedSender<Option<Payload>>>>,
    /// When set: ServerCheck says `supportAbilityNegotiation` and every setup is answered with
    /// a `SetupAckRequest` carrying this ability table.
    abilities: Mutex<Option<Value>>,
    /// (type, body) of every unary request.
    requests: Mutex<Vec<(String, Value)>>,
    /// Hosts per service name (others get `hosts`).
    per_service: Mutex<HashMap<String, Vec<u16>>>,
    /// Service keys (`namespace@@group@@service`) announced in the fuzzy-watch initial sync.
    fuzzy_keys: Mutex<Vec<String>>,
    /// Fuzzy watches are answered with ErrorResponse 302 (no handler) despite the ability.
    refuse_fuzzy: AtomicBool,
}

fn payload(ty: &str, body: &[u8]) -> Payload {
    Payload::new(ty, body.to_vec(), HashMap::new(), "")
}

fn hosts_json(ports: &[u16]) -> Value {
    hosts_json_padded(ports, false)
}

fn hosts_json_padded(ports: &[u16], pad: bool) -> Value {
    let methods = if pad { "m".repeat(900) } else { "a".into() };
    Value::Array(
        ports
            .iter()
            .map(|p| {
                json!({"ip":"10.9.0.1","port":p,"enabled":true,"healthy":true,"weight":1.0,
                    "metadata":{"protocol":"dubbo","path":"S","interface":"S","side":"provider",
                        "category":"providers","methods":methods}})
            })
            .collect(),
    )
}

impl Script {
    fn service_info(&self) -> Value {
        self.service_info_of("providers:S::")
    }

    fn service_info_of(&self, name: &str) -> Value {
        let pad = self.pad.load(Ordering::SeqCst);
        let ports = self
            .per_service
            .lock()
            .unwrap()
            .get(name)
            .cloned()
            .unwrap_or_else(|| self.hosts.lock().unwrap().clone());
        json!({"name":name,"groupName":"DEFAULT_GROUP","hosts":hosts_json_padded(&ports, pad)})
    }

    fn requests_of(&self, ty: &str) -> Vec<Value> {
        self.requests
            .lock()
            .unwrap()
            .iter()
            .filter(|(t, _)| t == ty)
            .map(|(_, v)| v.clone())
            .collect()
    }

    /// Waits (up to `T`) until at least `n` unary requests of type `ty` have come in.
    async fn until_requests(&self, what: &str, ty: &str, n: usize) {
        tests::eventually(what, T, || async {
            (self.requests_of(ty).len() >= n).then_some(())
        })
        .await;
    }

    fn unary(&self, req: &Payload) -> Payload {
        let ok = |ty: &str, mut v: Value| {
            v["resultCode"] = json!(200);
            payload(ty, v.to_string().as_bytes())
        };
        let body: Value = serde_json::from_slice(req.json()).unwrap_or(Value::Null);
        self.requests
            .lock()
            .unwrap()
            .push((req.type_name().to_owned(), body.clone()));
        match req.type_name() {
            "ServerCheckRequest" => ok(
                "ServerCheckResponse",
                json!({"connectionId":"fake-1",
                    "supportAbilityNegotiation": self.abilities.lock().unwrap().is_some()}),
            ),
            "HealthCheckRequest" if self.never_setup.load(Ordering::SeqCst) => payload(
                "ErrorResponse",
                br#"{"resultCode":500,"errorCode":301,"message":"Connection is unregistered."}"#,
            ),
            "HealthCheckRequest" => ok("HealthCheckResponse", json!({})),
            "InstanceRequest" | "BatchInstanceRequest" => {
                self.registers.fetch_add(1, Ordering::SeqCst);
                if self.refuse_metadata.load(Ordering::SeqCst) {
                    payload(
                        "InstanceResponse",
                        br#"{"resultCode":500,"errorCode":400,"message":"Param check invalid:Param 'Metadata' is illegal, the param length should not exceed 1024."}"#,
                    )
                } else {
                    ok("InstanceResponse", json!({"type":"registerInstance"}))
                }
            }
            "PersistentInstanceRequest" => {
                ok("InstanceResponse", json!({"type": body["type"].clone()}))
            }
            "NamingFuzzyWatchRequest" if self.refuse_fuzzy.load(Ordering::SeqCst) => payload(
                "ErrorResponse",
                br#"{"resultCode":500,"errorCode":302,"message":"RequestHandler Not Found"}"#,
            ),
            "NamingFuzzyWatchRequest" => {
                let pattern = body["groupKeyPattern"].as_str().unwrap_or("").to_owned();
                if body["watchType"] == "WATCH" {
                    // The initial sync follows the reply, on the stream.
                    let contexts: Vec<Value> = self
                        .fuzzy_keys
                        .lock()
                        .unwrap()
                        .iter()
                        .map(|k| json!({"serviceKey":k,"changedType":"ADD_SERVICE"}))
                        .collect();
                    let init = json!({"requestId":"fz-init","module":"naming","groupKeyPattern":pattern,
                        "syncType":"FUZZY_WATCH_INIT_NOTIFY","contexts":contexts,"totalBatch":1,"currentBatch":1});
                    let finish = json!({"requestId":"fz-finish","module":"naming","groupKeyPattern":pattern,
                        "syncType":"FINISH_FUZZY_WATCH_INIT_NOTIFY"});
                    for v in [init, finish] {
                        self.push(Some(payload(
                            "NamingFuzzyWatchSyncRequest",
                            v.to_string().as_bytes(),
                        )));
                    }
                }
                ok("NamingFuzzyWatchResponse", json!({}))
            }
            "SubscribeServiceRequest" => {
                self.subscribes.fetch_add(1, Ordering::SeqCst);
                let name = body["serviceName"].as_str().unwrap_or("").to_owned();
                match self.subscribe_mode.load(Ordering::SeqCst) {
                    1 => payload(
                        "SubscribeServiceResponse",
                        b"{\"resultCode\":200,\"serviceInfo\":{\"hosts\":[{",
                    ),
                    2 => ok("InstanceResponse", json!({})),
                    _ => ok(
                        "SubscribeServiceResponse",
                        json!({"serviceInfo": self.service_info_of(&name)}),
                    ),
                }
            }
            "ServiceQueryRequest" => ok(
                "QueryServiceResponse",
                json!({"serviceInfo": self.service_info()}),
            ),
            "ServiceListRequest" => ok(
                "ServiceListResponse",
                json!({"count":1,"serviceNames":["providers:S::"]}),
            ),
            other => payload(
                "ErrorResponse",
                format!(
                    r#"{{"resultCode":500,"errorCode":302,"message":"no handler for {other}"}}"#
                )
                .as_bytes(),
            ),
        }
    }

    fn push(&self, p: Option<Payload>) {
        self.streams
            .lock()
            .unwrap()
            .retain(|s| s.send(p.clone()).is_ok());
    }

    fn acked(&self, ty: &str, id: &str) -> bool {
        self.acks
            .lock()
            .unwrap()
            .iter()
            .any(|(t, i)| t == ty && i == id)
    }
}

fn frame(p: &Payload) -> Bytes {
    let body = p.encode_to_vec();
    let mut b = BytesMut::with_capacity(body.len() + 5);
    b.extend_from_slice(&[0]);
    b.extend_from_slice(&u32::try_from(body.len()).unwrap().to_be_bytes());
    b.extend_from_slice(&body);
    b.freeze()
}

/// Takes every complete gRPC message out of `buf`.
fn unframe(buf: &mut BytesMut) -> Vec<Payload> {
    let mut out = Vec::new();
    while buf.len() >= 5 {
        let len = u32::from_be_bytes([buf[1], buf[2], buf[3], buf[4]]) as usize;
        if buf.len() < 5 + len {
            break;
        }
        buf.advance(5);
        let msg = buf.split_to(len);
        out.push(Payload::decode(msg.freeze()).unwrap());
    }
    out
}

struct Fake {
    port: u16,
    script: Arc<Script>,
}

impl Fake {
    async fn start() -> Fake {
        let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = l.local_addr().unwrap().port();
        let script = Arc::new(Script::default());
        let sc = script.clone();
        tokio::spawn(async move {
            while let Ok((tcp, _)) = l.accept().await {
                let sc = sc.clone();
                sc.connections.fetch_add(1, Ordering::SeqCst);
                tokio::spawn(async move {
                    let Ok(mut conn) = h2::server::handshake(tcp).await else {
                        return;
                    };
                    while let Some(Ok((req, respond))) = conn.accept().await {
                        tokio::spawn(handle(sc.clone(), req, respond));
                    }
                });
            }
        });
        Fake { port, script }
    }

    /// A registry URL for this fake (gRPC on the fake's port: offset 0).
    fn url(&self, extra: &str) -> Url {
        Url::parse(&format!(
            "nacos://127.0.0.1:{}?nacos.grpc-port-offset=0&file-cache=false&nacos.request-timeout=1000{extra}",
            self.port
        ))
        .unwrap()
    }
}

async fn handle(
    sc: Arc<Script>,
    req: http::Request<h2::RecvStream>,
    mut respond: h2::server::SendResponse<Bytes>,
) {
    let path = req.uri().path().to_owned();
    let mut body = req.into_body();
    let headers = http::Response::builder()
        .status(200)
        .header("content-type", "application/grpc")
        .body(())
        .unwrap();
    let mut trailers = http::HeaderMap::new();
    trailers.insert("grpc-status", http::HeaderValue::from_static("0"));
    let mut buf = BytesMut::new();
    if path == "/Request/request" {
        let mut msgs = Vec::new();
        while msgs.is_empty() {
            let Some(Ok(chunk)) = body.data().await else {
                return;
            };
            let _ = body.flow_control().release_capacity(chunk.len());
            buf.extend_from_slice(&chunk);
            msgs = unframe(&mut buf);
        }
        let reply = sc.unary(&msgs[0]);
        let Ok(mut send) = respond.send_response(headers, false) else {
            return;
        };
        let _ = send.send_data(frame(&reply), false);
        let _ = send.send_trailers(trailers);
        return;
    }
    // The bi-stream.
    let Ok(mut send) = respond.send_response(headers, false) else {
        return;
    };
    let (tx, mut rx) = mpsc::unbounded_channel();
    sc.streams.lock().unwrap().push(tx);
    loop {
        let deaf = sc.deaf.load(Ordering::SeqCst);
        tokio::select! {
            chunk = body.data(), if !deaf => {
                let Some(Ok(chunk)) = chunk else { return };
                let _ = body.flow_control().release_capacity(chunk.len());
                buf.extend_from_slice(&chunk);
                for m in unframe(&mut buf) {
                    let v: Value = serde_json::from_slice(m.json()).unwrap_or(Value::Null);
                    if m.type_name() == "ConnectionSetupRequest" {
                        *sc.setup.lock().unwrap() = Some(v);
                        let table = sc.abilities.lock().unwrap().clone();
                        if let Some(t) = table {
                            let ack = json!({"requestId":"setup-1","module":"internal","abilityTable":t});
                            let _ = send.send_data(
                                frame(&payload("SetupAckRequest", ack.to_string().as_bytes())),
                                false,
                            );
                        }
                    } else {
                        let id = v["requestId"].as_str().unwrap_or("").to_owned();
                        sc.acks.lock().unwrap().push((m.type_name().to_owned(), id));
                    }
                }
            }
            _ = tokio::time::sleep(Duration::from_millis(50)), if deaf => {}
            p = rx.recv() => match p {
                Some(Some(p)) => { let _ = send.send_data(frame(&p), false); }
                Some(None) => { send.send_reset(h2::Reason::INTERNAL_ERROR); return; }
                None => return,
            }
        }
    }
}

fn push_request(id: &str, ports: &[u16]) -> Payload {
    let v = json!({"requestId": id, "module":"naming",
        "serviceInfo": {"name":"providers:S::","groupName":"DEFAULT_GROUP","hosts":hosts_json(ports)}});
    payload("NotifySubscriberRequest", v.to_string().as_bytes())
}

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
