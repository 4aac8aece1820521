//! A deterministic mutation fuzzer for the Hessian 2.0 decoder that runs on stable Rust without
//! sanitizers (the fallback when `cargo fuzz` is unavailable or too slow to build):
//!
//! ```text
//! cargo run --release -p hessian2 --example fuzz_loop -- [EXECUTIONS] [SEED]
//! ```
//!
//! It builds a seed corpus of valid streams (every kind of value, nested, with class
//! definitions, type references, chunked strings and binaries, cycles), then mutates them
//! (bit flips, interesting tag bytes, inserts, deletes, splices, truncation, length fields set
//! to extremes) and checks each input exactly as `fuzz/fuzz_targets/hessian2_decode.rs` does:
//! no panic, and whatever decodes re-encodes to a stream that decodes and encodes to the same
//! bytes. Inputs that decode to more values than their parent join the corpus. Prints progress
//! and a summary; any failure panics with the input in hex.

use std::time::Instant;

use hessian2::{Decoder, Encoder, Limits, Value};

const LIMITS: Limits = Limits {
    max_depth: 64,
    max_len: 1 << 20,
    ..Limits::DEFAULT
};

/// xorshift64*: deterministic and fast.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next() % n as u64) as usize
        }
    }
}

fn reencode(bytes: &[u8], max_values: usize) -> Option<(Vec<u8>, usize)> {
    let mut d = Decoder::with_limits(bytes, LIMITS);
    let mut e = Encoder::new();
    let mut n = 0;
    while n < max_values && !d.is_empty() {
        match d.read() {
            Ok(v) => {
                if let Err(err) = e.write(&v) {
                    panic!(
                        "a decoded value does not encode: {err}; input {}",
                        hex(bytes)
                    );
                }
                n += 1;
            }
            Err(_) => break,
        }
    }
    (n > 0).then(|| (e.into_bytes(), n))
}

/// The fuzz target's checks; returns how many values decoded.
fn check(data: &[u8]) -> usize {
    let _ = Decoder::with_limits(data, LIMITS).read_map_str();
    let _ = Decoder::with_limits(data, LIMITS).read_json();
    let Some((first, n)) = reencode(data, 16) else {
        return 0;
    };
    let Some((second, m)) = reencode(&first, n) else {
        panic!("our own encoding does not decode; input {}", hex(data));
    };
    assert_eq!(n, m, "value count changed; input {}", hex(data));
    assert!(
        first == second,
        "encode/decode disagree; input {}",
        hex(data)
    );
    n
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn random_value(r: &mut Rng, depth: usize) -> Value {
    let s = |r: &mut Rng| {
        let pool = ["", "a", "héllo", "😀", "日本", "class", "name", "x"];
        let mut out = String::new();
        for _ in 0..r.below(4) {
            out.push_str(pool[r.below(pool.len())]);
        }
        if r.below(50) == 0 {
            out.push_str(&"é".repeat(0x8000 + r.below(10)));
        }
        out
    };
    let kinds = if depth == 0 { 9 } else { 12 };
    match r.below(kinds) {
        0 => Value::Null,
        1 => Value::Bool(r.below(2) == 0),
        2 => Value::Int(
            [
                0,
                47,
                -16,
                2047,
                -2048,
                262_143,
                -262_144,
                i32::MAX,
                i32::MIN,
            ][r.below(9)]
                ^ (r.below(3) as i32),
        ),
        3 => Value::Long(
            [
                0,
                15,
                -8,
                2047,
                -2048,
                262_143,
                i64::from(i32::MAX),
                i64::MAX,
                i64::MIN,
            ][r.below(9)]
                ^ (r.below(3) as i64),
        ),
        4 => Value::Double([0.0, 1.0, -128.0, 32767.0, 0.001, 1.5, 3.3, 1e300][r.below(8)]),
        5 => Value::Date([0, 60_000, -1, 1_700_000_000_123][r.below(4)]),
        6 | 7 => Value::String(s(r)),
        8 => Value::Binary(
            (0..[0, 3, 16, 1024, 40_000][r.below(5)])
                .map(|i| i as u8)
                .collect(),
        ),
        9 => {
            let type_name =
                [None, Some("java.util.LinkedList"), Some("[int")][r.below(3)].map(Into::into);
            let n = [0, 1, 7, 8, 20][r.below(5)];
            let mut items: Vec<Value> = (0..n).map(|_| random_value(r, depth - 1)).collect();
            if r.below(4) == 0 {
                items.push(Value::Ref(0));
            }
            Value::List { type_name, items }
        }
        10 => {
            let type_name = [None, Some("java.util.TreeMap")][r.below(2)].map(Into::into);
            let entries = (0..r.below(4))
                .map(|_| (random_value(r, depth - 1), random_value(r, depth - 1)))
                .collect();
            Value::Map { type_name, entries }
        }
        _ => {
            let class = ["a.B", "C", "java.lang.RuntimeException"][r.below(3)].into();
            let names = ["f", "g", "cause"];
            let fields = (0..r.below(4))
                .map(|i| (names[i % 3].into(), random_value(r, depth - 1)))
                .collect();
            Value::Object { class, fields }
        }
    }
}

fn corpus(r: &mut Rng) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    while out.len() < 400 {
        let mut e = Encoder::new();
        for _ in 0..1 + r.below(3) {
            let v = random_value(r, 4);
            if e.write(&v).is_err() {
                continue;
            }
        }
        let b = e.into_bytes();
        if !b.is_empty() && b.len() < 200_000 {
            out.push(b);
        }
    }
    out
}

const INTERESTING: &[u8] = &[
    b'N', b'T', b'F', b'I', b'L', b'Y', b'D', b'J', b'K', b'S', b'R', b'B', b'A', b'V', b'X', b'U',
    b'W', b'H', b'M', b'Z', b'C', b'O', b'Q', 0x00, 0x1f, 0x30, 0x33, 0x34, 0x37, 0x38, 0x3f, 0x5b,
    0x5f, 0x60, 0x6f, 0x70, 0x77, 0x78, 0x7f, 0x80, 0x90, 0xbf, 0xc0, 0xcf, 0xd0, 0xd7, 0xd8, 0xef,
    0xf0, 0xff, 0xed, 0xa0, 0xb8, 0xc3,
];

fn mutate(r: &mut Rng, input: &[u8], other: &[u8]) -> Vec<u8> {
    let mut b = input.to_vec();
    for _ in 0..1 + r.below(4) {
        let n = b.len();
        match r.below(8) {
            0 if n > 0 => {
                let i = r.below(n);
                b[i] ^= 1 << r.below(8);
            }
            1 if n > 0 => {
                let i = r.below(n);
                b[i] = INTERESTING[r.below(INTERESTING.len())];
            }
            2 => {
                let i = r.below(n + 1);
                b.insert(i, INTERESTING[r.below(INTERESTING.len())]);
            }
            3 if n > 0 => {
                let i = r.below(n);
                let len = 1 + r.below((n - i).min(8));
                b.drain(i..i + len);
            }
            4 if n > 0 => b.truncate(r.below(n)),
            5 if !other.is_empty() => {
                let i = r.below(n + 1);
                let j = r.below(other.len());
                let len = 1 + r.below((other.len() - j).min(64));
                b.splice(i..i, other[j..j + len].iter().copied());
            }
            6 if n > 2 => {
                // A length/index field set to an extreme.
                let i = r.below(n - 2);
                let ext: [&[u8]; 4] = [&[0xff, 0xff], &[0x7f, 0xff], &[0x00, 0x00], &[0x80, 0x00]];
                let e = ext[r.below(4)];
                b[i..i + 2].copy_from_slice(e);
            }
            _ if n > 0 => {
                // Duplicate a slice (e.g. repeat a `Q` or a class definition).
                let i = r.below(n);
                let len = 1 + r.below((n - i).min(16));
                let piece: Vec<u8> = b[i..i + len].to_vec();
                let at = r.below(n + 1);
                b.splice(at..at, piece);
            }
            _ => b.push(INTERESTING[r.below(INTERESTING.len())]),
        }
    }
    b
}

fn main() {
    let mut args = std::env::args().skip(1);
    let total: u64 = args
        .next()
        .and_then(|a| a.parse().ok())
        .unwrap_or(10_000_000);
    let seed: u64 = args
        .next()
        .and_then(|a| a.parse().ok())
        .unwrap_or(0x5eed_1234_abcd_0001);
    let mut r = Rng(seed | 1);
    let mut pool = corpus(&mut r);
    let start = Instant::now();
    let mut decoded_any = 0u64;
    let mut total_bytes = 0u64;
    for i in 0..total {
        let a = r.below(pool.len());
        let b = r.below(pool.len());
        let input = if i % 16 == 0 {
            // Pure random bytes now and then.
            (0..r.below(64)).map(|_| r.next() as u8).collect()
        } else {
            mutate(&mut r, &pool[a], &pool[b])
        };
        total_bytes += input.len() as u64;
        let n = check(&input);
        if n > 0 {
            decoded_any += 1;
            if pool.len() < 20_000 && r.below(64) == 0 && input.len() < 4096 {
                pool.push(input);
            }
        }
        if (i + 1) % 1_000_000 == 0 {
            let secs = start.elapsed().as_secs_f64();
            eprintln!(
                "fuzz_loop: {} execs, {:.0}/s, {} decoded at least one value, corpus {}",
                i + 1,
                (i + 1) as f64 / secs,
                decoded_any,
                pool.len()
            );
        }
    }
    let secs = start.elapsed().as_secs_f64();
    println!(
        "fuzz_loop: {total} executions in {secs:.1} s ({:.0}/s), seed {seed:#x}, mean input {:.0} bytes, {decoded_any} inputs decoded at least one value, corpus {}; no failures",
        total as f64 / secs,
        total_bytes as f64 / total as f64,
        pool.len()
    );
}
