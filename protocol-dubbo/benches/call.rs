//! Calls on loopback against the Java Dubbo2 peer (scripts/peers/java-dubbo.sh), 1 and 64 in
//! flight, with the raw TCP round trip (an in-process tokio echo) as the floor, and the
//! request encode / response decode cost alone.
//!
//! `cargo bench -p protocol-dubbo --bench call` (needs JDK 17 + libhessian-java; without them
//! the peer groups are skipped with a message).

#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use invoker::rpc::{Invocation, Invoker};
use protocol_dubbo::frame::Frame;
use protocol_dubbo::header::Header;
use protocol_dubbo::request::{encode_call_body, CallBody};
use protocol_dubbo::response::decode_response;
use protocol_dubbo::DubboInvokerFactory;
use registry_core::Url;
use serde_json::json;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};

const SERVICE: &str = "org.apache.dubbo.demo.DemoService";

async fn start_java(rt_child: &mut Vec<tokio::process::Child>) -> Option<u16> {
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../scripts/peers/java-dubbo.sh"
    );
    let mut child = tokio::process::Command::new("bash")
        .arg(script)
        .arg("run")
        .arg("--port")
        .arg("0")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .ok()?;
    let out = child.stdout.take()?;
    let mut lines = BufReader::new(out).lines();
    let line = tokio::time::timeout(Duration::from_secs(120), lines.next_line())
        .await
        .ok()?
        .ok()??;
    let port = line.strip_prefix("READY ")?.trim().parse().ok()?;
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    rt_child.push(child);
    Some(port)
}

async fn echo_server() -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = l.local_addr().unwrap().port();
    tokio::spawn(async move {
        while let Ok((mut s, _)) = l.accept().await {
            let _ = s.set_nodelay(true);
            tokio::spawn(async move {
                let mut buf = [0u8; 4096];
                while let Ok(n) = s.read(&mut buf).await {
                    if n == 0 || s.write_all(&buf[..n]).await.is_err() {
                        break;
                    }
                }
            });
        }
    });
    port
}

fn bench(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();

    // Pure codec cost.
    let mut g = c.benchmark_group("codec");
    let args = [json!("rust")];
    let types = ["java.lang.String".to_owned()];
    let mut enc = hessian2::Encoder::new();
    g.bench_function("encode_sayHello_request", |b| {
        b.iter(|| {
            enc.clear();
            let body = CallBody {
                service_path: SERVICE,
                version: "1.0.0",
                method: "sayHello",
                descriptor: "Ljava/lang/String;",
                types: &types,
                args: &args,
            };
            let att = [
                ("interface", SERVICE),
                ("path", SERVICE),
                ("version", "1.0.0"),
                ("timeout", "1000"),
            ];
            encode_call_body(&mut enc, &body, att).unwrap();
            enc.as_bytes().len()
        })
    });
    let body = Bytes::from_static(b"\x94\x0aHello rust\x48\x05dubbo\x052.0.2\x5a");
    let frame = Frame {
        header: Header {
            flag: 0x02,
            status: 20,
            id: 1,
            body_len: body.len() as u32,
        },
        body,
    };
    g.bench_function("decode_sayHello_response", |b| {
        b.iter(|| decode_response(&frame, "127.0.0.1:20880").unwrap())
    });
    g.finish();

    // The floor: one 64-byte TCP round trip on loopback.
    let port = rt.block_on(echo_server());
    let s = rt
        .block_on(TcpStream::connect(("127.0.0.1", port)))
        .unwrap();
    s.set_nodelay(true).unwrap();
    let s = tokio::sync::Mutex::new(s);
    let mut g = c.benchmark_group("loopback");
    g.bench_function("raw_tcp_round_trip_64B", |b| {
        b.to_async(&rt).iter(|| async {
            let mut s = s.lock().await;
            let msg = [7u8; 64];
            s.write_all(&msg).await.unwrap();
            let mut got = [0u8; 64];
            s.read_exact(&mut got).await.unwrap();
        })
    });
    g.finish();
    drop(s);

    let mut children = Vec::new();
    let Some(port) = rt.block_on(start_java(&mut children)) else {
        eprintln!("*** skipping the Java peer benches: scripts/peers/java-dubbo.sh run failed ***");
        return;
    };
    let url = Url::parse(&format!(
        "dubbo://127.0.0.1:{port}/{SERVICE}?interface={SERVICE}&version=1.0.0&timeout=5000"
    ))
    .unwrap();
    let factory = DubboInvokerFactory::new();
    let inv = rt.block_on(async { factory.refer_dubbo(&url).unwrap() });
    let call = Arc::new(
        Invocation::new("sayHello")
            .with_arguments(vec!["java.lang.String".into()], vec![json!("rust")]),
    );
    // Warm the JVM up.
    rt.block_on(async {
        for _ in 0..2000 {
            inv.invoke(&call).await.unwrap();
        }
    });
    let mut g = c.benchmark_group("java_peer");
    g.throughput(Throughput::Elements(1));
    g.bench_function("sayHello_1_in_flight", |b| {
        b.to_async(&rt)
            .iter(|| async { inv.invoke(&call).await.unwrap() })
    });
    g.throughput(Throughput::Elements(64));
    g.bench_function("sayHello_64_in_flight", |b| {
        b.to_async(&rt).iter(|| async {
            let calls = (0..64).map(|_| inv.invoke(&call));
            for r in futures::future::join_all(calls).await {
                r.unwrap();
            }
        })
    });
    g.finish();
    drop(children);
}

criterion_group!(benches, bench);
criterion_main!(benches);
