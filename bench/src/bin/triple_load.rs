//! Bench-only load generator: unary `/tritest.Greeter/SayHello {name: "bench"}` calls against a
//! gRPC peer (normally `tests/peers/grpc_peer.py`), with N calls in flight on one connection,
//! by three clients in the same process so they can alternate in one run:
//!
//! - `invoker`: protocol-triple's [`TripleInvoker`] in IDL mode (proto3 JSON in and out, the
//!   path `dubbo-registry invoke --proto` takes),
//! - `client`: protocol-triple's [`TripleClient`] with prost messages (the same work as tonic),
//! - `tonic`: tonic 0.14's `Grpc::unary` with `tonic_prost::ProstCodec` on the same messages
//!   (hand-derived prost structs, no protoc or build script).
//!
//! ```text
//! cargo run --release -p bench --bin triple-load -- \
//!     HOST:PORT CALLS CONCURRENCY [ROUNDS] [invoker,client,tonic]
//! ```
//! Prints one JSON line per (round, client): calls, concurrency, seconds, calls_per_sec,
//! p50_us, p99_us. `TRIPLE_LOAD_COALESCE=0` turns the `client`'s write coalescing off (for
//! before/after comparisons in one run). A warm-up of `min(CALLS, 2000)` calls precedes each
//! client's first round.

#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use invoker::rpc::Invocation;
use protocol_triple::{
    ConnectionOptions, IdlService, PayloadMode, ProtoSchema, TripleClient, TripleInvoker,
    TripleInvokerFactory,
};
use registry_core::Url;
use serde_json::{json, Value};

/// `tritest.HelloRequest`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct HelloRequest {
    #[prost(string, tag = "1")]
    pub name: String,
}

/// `tritest.HelloReply`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct HelloReply {
    #[prost(string, tag = "1")]
    pub message: String,
}

const PATH: &str = "/tritest.Greeter/SayHello";
const TIMEOUT: Duration = Duration::from_secs(10);

/// One of the three clients, ready to call.
#[derive(Clone, Debug)]
pub enum LoadClient {
    Invoker(Arc<TripleInvoker>, Arc<Invocation>),
    Client(Arc<TripleClient>),
    Tonic(tonic::client::Grpc<tonic::transport::Channel>),
}

impl LoadClient {
    /// The row label.
    pub fn label(&self) -> &'static str {
        match self {
            LoadClient::Invoker(..) => "protocol-triple TripleInvoker (IDL, proto3 JSON)",
            LoadClient::Client(_) => "protocol-triple TripleClient (prost)",
            LoadClient::Tonic(_) => "tonic 0.14 Grpc::unary (prost)",
        }
    }

    /// Connects the named client (`invoker`, `client` or `tonic`) to `addr` (`host:port`).
    pub async fn connect(kind: &str, addr: &str) -> Result<LoadClient, String> {
        let url = Url::parse(&format!(
            "tri://{addr}/tritest.Greeter?interface=tritest.Greeter&timeout=10000"
        ))
        .map_err(|e| e.to_string())?;
        let c = match kind {
            "invoker" => {
                let proto = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                    .join("tests/fixtures/proto/test.proto");
                let schema = ProtoSchema::load(&[proto]).map_err(|e| e.to_string())?;
                let f = TripleInvokerFactory::new(PayloadMode::Idl(IdlService::new(
                    Arc::new(schema),
                    "tritest.Greeter",
                )));
                let inv = f.refer_triple(&url).map_err(|e| e.to_string())?;
                let hello = Invocation::new("SayHello")
                    .with_arguments(vec![], vec![json!({"name": "bench"})]);
                LoadClient::Invoker(inv, Arc::new(hello))
            }
            "client" => {
                let options = ConnectionOptions {
                    write_coalescing: std::env::var("TRIPLE_LOAD_COALESCE").as_deref() != Ok("0"),
                    ..ConnectionOptions::default()
                };
                LoadClient::Client(Arc::new(
                    TripleClient::with_options(&url, options).map_err(|e| e.to_string())?,
                ))
            }
            "tonic" => {
                let ch = tonic::transport::Endpoint::from_shared(format!("http://{addr}"))
                    .map_err(|e| e.to_string())?
                    .connect()
                    .await
                    .map_err(|e| e.to_string())?;
                LoadClient::Tonic(tonic::client::Grpc::new(ch))
            }
            other => return Err(format!("unknown client {other:?}")),
        };
        c.call().await?;
        Ok(c)
    }

    /// One call; checks the reply.
    pub fn call(&self) -> impl Future<Output = Result<(), String>> + Send + 'static {
        let this = self.clone();
        async move {
            let message = match this {
                LoadClient::Invoker(inv, hello) => {
                    let v = inv.call(&hello).await.map_err(|e| e.to_string())?;
                    v.get("message")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_owned()
                }
                LoadClient::Client(c) => {
                    let r: HelloReply = c
                        .unary(
                            PATH,
                            &HelloRequest {
                                name: "bench".into(),
                            },
                            TIMEOUT,
                        )
                        .await
                        .map_err(|e| e.to_string())?;
                    r.message
                }
                LoadClient::Tonic(mut g) => {
                    g.ready().await.map_err(|e| e.to_string())?;
                    let mut req = tonic::Request::new(HelloRequest {
                        name: "bench".into(),
                    });
                    req.set_timeout(TIMEOUT);
                    let codec = tonic_prost::ProstCodec::<HelloRequest, HelloReply>::default();
                    let r = g
                        .unary(req, http::uri::PathAndQuery::from_static(PATH), codec)
                        .await
                        .map_err(|e| e.to_string())?;
                    r.into_inner().message
                }
            };
            if message == "Hello bench" {
                Ok(())
            } else {
                Err(format!("unexpected reply {message:?}"))
            }
        }
    }
}

/// Runs `calls` calls with `conc` in flight (one task each, sharing a counter) and returns
/// the JSON row.
pub async fn measure(c: &LoadClient, calls: usize, conc: usize) -> Value {
    let next = Arc::new(AtomicUsize::new(0));
    let start = Instant::now();
    let tasks: Vec<_> = (0..conc)
        .map(|_| {
            let (c, next) = (c.clone(), next.clone());
            tokio::spawn(async move {
                let mut lat = Vec::with_capacity(calls / conc + 1);
                let mut errors = 0usize;
                while next.fetch_add(1, Ordering::Relaxed) < calls {
                    let t = Instant::now();
                    if c.call().await.is_err() {
                        errors += 1;
                    }
                    lat.push(t.elapsed().as_nanos() as u64);
                }
                (lat, errors)
            })
        })
        .collect();
    let mut lat = Vec::with_capacity(calls);
    let mut errors = 0;
    for t in tasks {
        let (l, e) = t.await.unwrap();
        lat.extend(l);
        errors += e;
    }
    let secs = start.elapsed().as_secs_f64();
    lat.sort_unstable();
    let pct = |p: f64| {
        if lat.is_empty() {
            return 0.0;
        }
        let i = ((lat.len() as f64 * p).ceil() as usize).clamp(1, lat.len()) - 1;
        (lat[i] as f64 / 100.0).round() / 10.0
    };
    json!({"client": c.label(), "calls": lat.len(), "errors": errors, "concurrency": conc,
           "seconds": (secs * 1e3).round() / 1e3,
           "calls_per_sec": (lat.len() as f64 / secs).round(),
           "p50_us": pct(0.5), "p99_us": pct(0.99)})
}

#[allow(dead_code)]
fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.len() < 3 {
        eprintln!("usage: triple_load HOST:PORT CALLS CONCURRENCY [ROUNDS] [invoker,client,tonic]");
        std::process::exit(2);
    }
    let addr = args[0].clone();
    let calls: usize = args[1].parse().expect("CALLS");
    let conc: usize = args[2].parse().expect("CONCURRENCY");
    let rounds: usize = args.get(3).map_or(1, |r| r.parse().expect("ROUNDS"));
    let kinds: Vec<String> = args
        .get(4)
        .map_or("invoker,client,tonic", String::as_str)
        .split(',')
        .map(str::to_owned)
        .collect();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let mut clients = Vec::new();
        for k in &kinds {
            let c = LoadClient::connect(k, &addr).await.expect("connect");
            measure(&c, calls.min(2000), conc).await;
            clients.push(c);
        }
        for round in 1..=rounds {
            for c in &clients {
                let mut row = measure(c, calls, conc).await;
                row["round"] = json!(round);
                println!("{row}");
            }
        }
    });
}
