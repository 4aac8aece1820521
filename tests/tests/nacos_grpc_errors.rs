//! Bad input over gRPC, against a scripted fake Nacos gRPC server (HTTP/2 via `h2`, the real
//! `Payload` protobuf): garbage JSON, mismatched reply types, a server that never finishes
//! setup, a stream reset in the middle of a push, a refused registration (metadata over 1024
//! characters), unknown server requests. Every case must give a clear error or warning and
//! keep the last good list. (Fakes are only for bad input; behaviour is tested on rnacos.)
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::{Buf, Bytes, BytesMut};
use prost::Message;
use registry_core::{Registry, Url};
use registry_nacos::grpc::proto::Payload;
use registry_nacos::nacos_registry;
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
    /// (type, requestId) of every reply the client sent on a stream.
    acks: Mutex<Vec<(String, String)>>,
    /// The setup message of the last stream.
    setup: Mutex<Option<Value>>,
    /// Push channels of the open streams (None = reset the stream).
    streams: Mutex<Vec<mpsc::UnboundedSender<Option<Payload>>>>,
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
        let pad = self.pad.load(Ordering::SeqCst);
        json!({"name":"providers:S::","groupName":"DEFAULT_GROUP",
            "hosts":hosts_json_padded(&self.hosts.lock().unwrap(), pad)})
    }

    fn unary(&self, req: &Payload) -> Payload {
        let ok = |ty: &str, mut v: Value| {
            v["resultCode"] = json!(200);
            payload(ty, v.to_string().as_bytes())
        };
        match req.type_name() {
            "ServerCheckRequest" => ok("ServerCheckResponse", json!({"connectionId":"fake-1"})),
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
            "SubscribeServiceRequest" => {
                self.subscribes.fetch_add(1, Ordering::SeqCst);
                match self.subscribe_mode.load(Ordering::SeqCst) {
                    1 => payload(
                        "SubscribeServiceResponse",
                        b"{\"resultCode\":200,\"serviceInfo\":{\"hosts\":[{",
                    ),
                    2 => ok("InstanceResponse", json!({})),
                    _ => ok(
                        "SubscribeServiceResponse",
                        json!({"serviceInfo": self.service_info()}),
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
        tokio::select! {
            chunk = body.data() => {
                let Some(Ok(chunk)) = chunk else { return };
                let _ = body.flow_control().release_capacity(chunk.len());
                buf.extend_from_slice(&chunk);
                for m in unframe(&mut buf) {
                    let v: Value = serde_json::from_slice(m.json()).unwrap_or(Value::Null);
                    if m.type_name() == "ConnectionSetupRequest" {
                        *sc.setup.lock().unwrap() = Some(v);
                    } else {
                        let id = v["requestId"].as_str().unwrap_or("").to_owned();
                        sc.acks.lock().unwrap().push((m.type_name().to_owned(), id));
                    }
                }
            }
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
    let r = nacos_registry(&fake.url("")).unwrap();
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
    w.until("empty", T, |w| w.is_empty_marker("providers"))
        .await;
    assert_eq!(fake.script.connections.load(Ordering::SeqCst), 1);
    r.destroy().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_reset_mid_push_reconnects_and_resubscribes_keeping_the_list() {
    let fake = Fake::start().await;
    *fake.script.hosts.lock().unwrap() = vec![20001];
    let r = nacos_registry(&fake.url("")).unwrap();
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
    let r = nacos_registry(&fake.url("")).unwrap();
    let e = r
        .register(&provider_url("Big", 20881, ""))
        .await
        .expect_err("check=true returns the refusal");
    let msg = e.to_string();
    assert!(msg.contains("1024") && msg.contains("400"), "{msg}");
    r.destroy().await;

    let r = nacos_registry(&fake.url("&check=false")).unwrap();
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
    let r = nacos_registry(&fake.url("")).unwrap();
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
    let r = nacos_registry(&fake.url("&nacos.request-timeout=10000")).unwrap();
    let mut w = Watch::new(r.subscribe(&consumer()).await.unwrap());
    // ~10 MB of JSON: more than tonic's default 4 MiB decoding limit.
    w.until("10,000 providers", Duration::from_secs(60), |w| {
        w.addresses("providers").len() == 10_000
    })
    .await;
    r.destroy().await;
}
