//! A scripted Nacos 2.x/3.x gRPC server (HTTP/2 via `h2`, the real `Payload` protobuf): what
//! it answers to every request type, pushes on the bi-stream, stream resets, a deaf stream,
//! ability negotiation and fuzzy watch are set by the test through [`Script`]; what the client
//! sent is recorded there. For bad-input tests and for what only Java Nacos servers do.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::{Buf, Bytes, BytesMut};
use prost::Message;
use registry_core::Url;
use registry_nacos::grpc::proto::Payload;
use serde_json::{json, Value};
use tokio::net::TcpListener;
use tokio::sync::mpsc;

/// How long [`Script::until_requests`] waits.
const T: Duration = Duration::from_secs(15);

/// What the fake does.
#[derive(Debug, Default)]
pub struct Script {
    /// HealthCheck always answers 301: setup never completes.
    pub never_setup: AtomicBool,
    /// Registrations are refused with errorCode 400 (metadata too long).
    pub refuse_metadata: AtomicBool,
    /// Subscribe replies: 0 good, 1 garbage JSON, 2 wrong type.
    pub subscribe_mode: AtomicU64,
    /// Ports of the hosts the service has.
    pub hosts: Mutex<Vec<u16>>,
    /// Give every host ~1 KB of metadata (a Dubbo-sized instance).
    pub pad: AtomicBool,
    /// Register requests received (`InstanceRequest`, `BatchInstanceRequest`).
    pub registers: AtomicU64,
    /// `SubscribeServiceRequest`s received.
    pub subscribes: AtomicU64,
    /// TCP connections accepted.
    pub connections: AtomicU64,
    /// While set, the bi-streams stop reading what the client sends (its replies back up).
    pub deaf: AtomicBool,
    /// (type, requestId) of every reply the client sent on a stream.
    pub acks: Mutex<Vec<(String, String)>>,
    /// The setup message of the last stream.
    pub setup: Mutex<Option<Value>>,
    /// Push channels of the open streams (None = reset the stream).
    pub streams: Mutex<Vec<mpsc::UnboundedSender<Option<Payload>>>>,
    /// When set: ServerCheck says `supportAbilityNegotiation` and every setup is answered with
    /// a `SetupAckRequest` carrying this ability table.
    pub abilities: Mutex<Option<Value>>,
    /// (type, body) of every unary request.
    pub requests: Mutex<Vec<(String, Value)>>,
    /// Hosts per service name (others get `hosts`).
    pub per_service: Mutex<HashMap<String, Vec<u16>>>,
    /// Service keys (`namespace@@group@@service`) announced in the fuzzy-watch initial sync.
    pub fuzzy_keys: Mutex<Vec<String>>,
    /// Fuzzy watches are answered with ErrorResponse 302 (no handler) despite the ability.
    pub refuse_fuzzy: AtomicBool,
}

/// A payload of type `ty` with the JSON `body`.
pub fn payload(ty: &str, body: &[u8]) -> Payload {
    Payload::new(ty, body.to_vec(), HashMap::new(), "")
}

/// The `hosts` of a service info: one enabled Dubbo provider per port.
pub fn hosts_json(ports: &[u16]) -> Value {
    hosts_json_padded(ports, false)
}

/// [`hosts_json`], each host with ~1 KB of metadata when `pad`.
pub fn hosts_json_padded(ports: &[u16], pad: bool) -> Value {
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
    /// The service info of `providers:S::`.
    pub fn service_info(&self) -> Value {
        self.service_info_of("providers:S::")
    }

    /// The service info of `name`: its hosts from `per_service`, else `hosts`.
    pub fn service_info_of(&self, name: &str) -> Value {
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

    /// The bodies of the unary requests of type `ty` received so far.
    pub fn requests_of(&self, ty: &str) -> Vec<Value> {
        self.requests
            .lock()
            .unwrap()
            .iter()
            .filter(|(t, _)| t == ty)
            .map(|(_, v)| v.clone())
            .collect()
    }

    /// Waits (up to `T`) until at least `n` unary requests of type `ty` have come in.
    pub async fn until_requests(&self, what: &str, ty: &str, n: usize) {
        crate::eventually(what, T, || async {
            (self.requests_of(ty).len() >= n).then_some(())
        })
        .await;
    }

    /// The reply to one unary request, as the script says.
    pub fn unary(&self, req: &Payload) -> Payload {
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

    /// Sends `p` on every open bi-stream (`None` resets them).
    pub fn push(&self, p: Option<Payload>) {
        self.streams
            .lock()
            .unwrap()
            .retain(|s| s.send(p.clone()).is_ok());
    }

    /// True when the client answered a pushed request of type `ty` with id `id`.
    pub fn acked(&self, ty: &str, id: &str) -> bool {
        self.acks
            .lock()
            .unwrap()
            .iter()
            .any(|(t, i)| t == ty && i == id)
    }
}

/// One gRPC message (length-prefixed, uncompressed).
pub fn frame(p: &Payload) -> Bytes {
    let body = p.encode_to_vec();
    let mut b = BytesMut::with_capacity(body.len() + 5);
    b.extend_from_slice(&[0]);
    b.extend_from_slice(&u32::try_from(body.len()).unwrap().to_be_bytes());
    b.extend_from_slice(&body);
    b.freeze()
}

/// Takes every complete gRPC message out of `buf`.
pub fn unframe(buf: &mut BytesMut) -> Vec<Payload> {
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

/// The fake server: an HTTP/2 listener on a free 127.0.0.1 port serving the Nacos gRPC
/// services as `script` says.
#[derive(Debug)]
pub struct Fake {
    /// Its port (the gRPC port: use offset 0).
    pub port: u16,
    /// What it does, and what it saw.
    pub script: Arc<Script>,
}

impl Fake {
    /// Starts a fake with an empty script.
    pub async fn start() -> Fake {
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
    pub fn url(&self, extra: &str) -> Url {
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

/// A `NotifySubscriberRequest` push of `providers:S::` with one host per port.
pub fn push_request(id: &str, ports: &[u16]) -> Payload {
    let v = json!({"requestId": id, "module":"naming",
        "serviceInfo": {"name":"providers:S::","groupName":"DEFAULT_GROUP","hosts":hosts_json(ports)}});
    payload("NotifySubscriberRequest", v.to_string().as_bytes())
}
