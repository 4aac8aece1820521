//! Hostile Dubbo2 providers against the `dubbo-registry invoke` binary, with its peak memory
//! read from the outside (`tests::peak_rss`).
//!
//! A scripted fake provider (the only kind of fake allowed: no real provider sends these)
//! answers every call with a Hessian2 body built to expand when decoded: one class definition
//! with a long class name and then one-byte instances of it; a long field name repeated by
//! two-byte instances; a typed list, or a typed map, whose long type name every later one
//! reuses by index. Each comes in 64 KiB, 1 MiB and 8 MiB bodies (8 MiB is the default
//! `payload` limit). The binary must stay under 256 MiB of resident memory and end with a
//! result or a clear error, never an abort.
//!
//! `DUBBO_REGISTRY_BIN` runs another build of the binary (e.g. `target/release/dubbo-registry`)
//! instead of the one Cargo built for this test; `--nocapture` prints the measured peaks.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers panic on bad fixtures

use std::sync::Arc;
use std::time::Duration;

use hessian2::Encoder;
use protocol_dubbo::header::{Header, HEADER_LEN};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// The ceiling the issue sets for the release CLI.
const MAX_RSS: u64 = 256 * 1024 * 1024;
/// Sizes of the hostile bodies.
const SIZES: [usize; 3] = [64 * 1024, 1024 * 1024, 8 * 1024 * 1024];

/// The binary under test.
fn binary() -> String {
    std::env::var("DUBBO_REGISTRY_BIN")
        .ok()
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| env!("CARGO_BIN_EXE_dubbo-registry").to_owned())
}

/// A run is killed past this much resident memory, so that a regression cannot exhaust the
/// machine (`HOSTILE_RSS_CAP_MIB`, default 1024).
fn kill_cap() -> u64 {
    std::env::var("HOSTILE_RSS_CAP_MIB")
        .ok()
        .and_then(|v| v.parse::<u64>().ok())
        .unwrap_or(1024)
        * 1024
        * 1024
}

/// A long Java-looking name of `n` bytes.
fn long_name(n: usize) -> String {
    let mut s = String::from("com.example.");
    while s.len() < n {
        s.push('A');
    }
    s.truncate(n);
    s
}

/// A response body (result flag 1, a value) holding an untyped variable-length list: `first`
/// writes the first element (and whatever definition it needs), then `unit` (one later
/// element, a few bytes) is repeated until the body is `size` bytes.
fn list_body(size: usize, first: impl FnOnce(&mut Encoder), unit: &[u8]) -> Vec<u8> {
    let mut e = Encoder::new();
    e.write_int(1);
    e.write_raw(b"W");
    first(&mut e);
    let head = e.len();
    let count = size.saturating_sub(head + 1) / unit.len();
    let mut body = e.into_bytes();
    body.reserve(count * unit.len() + 1);
    for _ in 0..count {
        body.extend_from_slice(unit);
    }
    body.push(b'Z');
    body
}

/// (a) One class definition with a long class name, then one-byte instances (`0x60`).
fn class_name_attack(size: usize) -> Vec<u8> {
    let name = long_name(size / 2);
    list_body(size, |e| e.write_object_begin(&name, []), &[0x60])
}

/// (b) A class with one field of a long name, then two-byte instances (`0x60 N`).
fn field_name_attack(size: usize) -> Vec<u8> {
    let field = long_name(size / 2);
    list_body(
        size,
        |e| {
            e.write_object_begin("com.example.A", [field.as_str()]);
            e.write_null();
        },
        &[0x60, b'N'],
    )
}

/// (c) A typed empty list with a long type name, then lists that reuse it (`0x70`, type 0).
fn list_type_attack(size: usize) -> Vec<u8> {
    let ty = long_name(size / 2);
    list_body(size, |e| e.write_list_begin(0, Some(&ty)), &[0x70, 0x90])
}

/// (c') A typed empty map with a long type name, then maps that reuse it (`M`, type 0, `Z`).
fn map_type_attack(size: usize) -> Vec<u8> {
    let ty = long_name(size / 2);
    list_body(
        size,
        |e| {
            e.write_map_begin(Some(&ty));
            e.write_map_end();
        },
        &[b'M', 0x90, b'Z'],
    )
}

async fn read_request(s: &mut TcpStream) -> Option<Header> {
    let mut h = [0u8; HEADER_LEN];
    s.read_exact(&mut h).await.ok()?;
    let header = Header::parse(&h).ok()?;
    let mut body = vec![0u8; header.body_len as usize];
    s.read_exact(&mut body).await.ok()?;
    Some(header)
}

/// A fake provider answering every call with `body`; returns its port.
async fn fake_provider(body: Arc<Vec<u8>>) -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = l.local_addr().unwrap().port();
    tokio::spawn(async move {
        while let Ok((mut s, _)) = l.accept().await {
            let body = body.clone();
            tokio::spawn(async move {
                while let Some(req) = read_request(&mut s).await {
                    if req.is_event() {
                        continue;
                    }
                    let h = Header {
                        flag: 0x02,
                        status: 20,
                        id: req.id,
                        body_len: u32::try_from(body.len()).unwrap(),
                    };
                    if s.write_all(&h.to_bytes()).await.is_err()
                        || s.write_all(&body).await.is_err()
                    {
                        return;
                    }
                }
            });
        }
    });
    port
}

/// Runs `invoke` against a fake answering `body`; returns the measurement.
async fn measure(body: Vec<u8>) -> tests::peak_rss::Measured {
    let port = fake_provider(Arc::new(body)).await;
    let mut cmd = tokio::process::Command::new(binary());
    cmd.args([
        "invoke",
        &format!("dubbo://127.0.0.1:{port}/com.example.S"),
        "com.example.S",
        "get",
        "[]",
        "--timeout",
        "60000",
    ]);
    tests::peak_rss::run(cmd, kill_cap(), Duration::from_secs(180)).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn expanding_bodies_stay_bounded() {
    type Attack = fn(usize) -> Vec<u8>;
    let attacks: [(&str, Attack); 4] = [
        ("long class name", class_name_attack),
        ("long field name", field_name_attack),
        ("reused list type", list_type_attack),
        ("reused map type", map_type_attack),
    ];
    let mut failures = Vec::new();
    for (name, attack) in attacks {
        for size in SIZES {
            let body = attack(size);
            assert!(
                body.len() <= size && body.len() + 8 >= size,
                "{name}: {}",
                body.len()
            );
            let m = measure(body).await;
            let line = format!(
                "{name:>16}, {:>5} KiB body: peak {:7.1} MiB, exit {:?}, {:.1} s{}{}",
                size / 1024,
                m.peak_mib(),
                m.code,
                m.elapsed.as_secs_f64(),
                if m.over_cap {
                    " (killed at the cap)"
                } else {
                    ""
                },
                if m.timed_out { " (timed out)" } else { "" },
            );
            let stderr = m.stderr.trim();
            eprintln!("{line}: {}", stderr.lines().next().unwrap_or(""));
            let ok = m.peak_rss > 0
                && m.peak_rss < MAX_RSS
                && !m.over_cap
                && !m.timed_out
                && match m.code {
                    Some(0) => !m.stdout.is_empty(),
                    // A clear error naming the limit, as the CLI prints a serialization error.
                    Some(2) => {
                        stderr.contains("serialization error") && stderr.contains("memory budget")
                    }
                    _ => false,
                };
            if !ok {
                let tail: String = stderr.chars().take(400).collect();
                failures.push(format!("{line}: {tail}"));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
