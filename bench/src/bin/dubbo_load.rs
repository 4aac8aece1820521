//! A small load generator: `sayHello("rust")` on one provider with C calls in flight, and the
//! raw TCP round trip to an in-process echo server as the floor. Prints one JSON line each.
//!
//! `cargo run --release -p bench --bin dubbo-load -- 127.0.0.1:20880 CALLS CONCURRENCY`
//! (the same numbers as `dubbo-registry invoke --repeat N --concurrency C`, with fewer
//! dependencies to build: a bin, not an example, so dev-dependencies stay out).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use invoker::rpc::{Invocation, Invoker};
use protocol_dubbo::DubboInvokerFactory;
use registry_core::Url;
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

fn stats(name: &str, mut lat: Vec<u64>, errors: u64, concurrency: u64, seconds: f64) {
    lat.sort_unstable();
    let pct = |p: f64| {
        if lat.is_empty() {
            return 0.0;
        }
        let i = ((lat.len() as f64 * p).ceil() as usize).clamp(1, lat.len()) - 1;
        lat[i] as f64 / 1e3
    };
    println!(
        "{}",
        json!({
            "client": name, "calls": lat.len(), "errors": errors, "concurrency": concurrency,
            "seconds": seconds, "calls_per_sec": lat.len() as f64 / seconds,
            "p50_us": pct(0.5), "p99_us": pct(0.99),
        })
    );
}

async fn raw_tcp(calls: u64) -> Result<(), Box<dyn std::error::Error>> {
    let l = TcpListener::bind("127.0.0.1:0").await?;
    let port = l.local_addr()?.port();
    tokio::spawn(async move {
        if let Ok((mut s, _)) = l.accept().await {
            let _ = s.set_nodelay(true);
            let mut buf = [0u8; 4096];
            while let Ok(n) = s.read(&mut buf).await {
                if n == 0 || s.write_all(&buf[..n]).await.is_err() {
                    break;
                }
            }
        }
    });
    let mut s = TcpStream::connect(("127.0.0.1", port)).await?;
    s.set_nodelay(true)?;
    let mut lat = Vec::with_capacity(calls as usize);
    let msg = [7u8; 64];
    let mut got = [0u8; 64];
    let start = Instant::now();
    for _ in 0..calls {
        let t = Instant::now();
        s.write_all(&msg).await?;
        s.read_exact(&mut got).await?;
        lat.push(t.elapsed().as_nanos() as u64);
    }
    stats(
        "raw TCP 64-byte round trip (tokio echo)",
        lat,
        0,
        1,
        start.elapsed().as_secs_f64(),
    );
    Ok(())
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let addr = args.next().unwrap_or_else(|| "127.0.0.1:20880".into());
    let calls: u64 = args.next().and_then(|s| s.parse().ok()).unwrap_or(20_000);
    let concurrency: u64 = args.next().and_then(|s| s.parse().ok()).unwrap_or(1);
    if addr == "raw" {
        return raw_tcp(calls).await;
    }
    let svc = "org.apache.dubbo.demo.DemoService";
    let url = Url::parse(&format!(
        "dubbo://{addr}/{svc}?interface={svc}&version=1.0.0&timeout=5000"
    ))?;
    let inv = DubboInvokerFactory::new().refer_dubbo(&url)?;
    let call = Arc::new(
        Invocation::new("sayHello")
            .with_arguments(vec!["java.lang.String".into()], vec![json!("rust")]),
    );
    for _ in 0..2000 {
        inv.invoke(&call).await?;
    }
    let next = Arc::new(AtomicU64::new(0));
    let start = Instant::now();
    let mut tasks = Vec::new();
    for _ in 0..concurrency.max(1) {
        let (inv, call, next) = (inv.clone(), call.clone(), next.clone());
        tasks.push(tokio::spawn(async move {
            let mut lat = Vec::new();
            let mut errors = 0;
            while next.fetch_add(1, Ordering::Relaxed) < calls {
                let t = Instant::now();
                if inv.invoke(&call).await.is_err() {
                    errors += 1;
                }
                lat.push(t.elapsed().as_nanos() as u64);
            }
            (lat, errors)
        }));
    }
    let (mut all, mut errors) = (Vec::new(), 0);
    for t in tasks {
        let (l, e) = t.await?;
        all.extend(l);
        errors += e;
    }
    let secs = start.elapsed().as_secs_f64();
    stats("protocol-dubbo (Rust)", all, errors, concurrency, secs);
    Ok(())
}
