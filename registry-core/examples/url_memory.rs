//! Measures what provider URLs cost: bytes per URL for 100k distinct providers of one service
//! (growth of the resident set, so allocator overhead is included; a counting allocator would
//! need `unsafe`, which the workspace forbids), and parse throughput in CPU time (robust on a
//! busy machine).
//!
//! `cargo run --release -p registry-core --example url_memory [count]`; results in
//! `BENCHMARKS.md`.

use registry_core::{codec, Url};

/// Resident set size in bytes (`VmRSS` of `/proc/self/status`).
fn rss() -> i64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<i64>().ok())
        .map_or(0, |kb| kb * 1024)
}

/// A ~1 KB Dubbo 3.3 provider URL; providers differ in host, port, pid and timestamp.
fn provider(i: u32) -> String {
    format!(
        "dubbo://10.{}.{}.{}:{}/org.apache.dubbo.samples.api.GreetingsService?anyhost=true\
         &application=greetings-provider-app&background=false&deprecated=false&dubbo=2.0.2\
         &dynamic=true&executor-management-mode=isolation&file-cache=true&generic=false\
         &group=production&interface=org.apache.dubbo.samples.api.GreetingsService\
         &loadbalance=roundrobin&metadata-type=local&qos.enable=false&register-mode=instance\
         &methods=sayHi,sayHello,sayGoodbye,greetAll,listGreetings,updateGreeting,deleteGreeting\
         ,findGreetingByName,findGreetingsByLanguage,countGreetings,resetGreetings,ping\
         &pid={}&prefer.serialization=hessian2,fastjson2&release=3.3.1&retries=2\
         &revision=1.0.0-SNAPSHOT&service-name-mapping=true&side=provider&threads=200\
         &sayHello.timeout=5000&sayHello.retries=0&greetAll.timeout=10000&greetAll.loadbalance=leastactive\
         &listGreetings.timeout=8000&listGreetings.cache=lru&updateGreeting.retries=0\
         &cluster=failover&connections=1&accesslog=false&serialization=hessian2\
         &timeout=3000&timestamp={}&token=false&version=1.0.0&weight=100",
        (i >> 16) & 255,
        (i >> 8) & 255,
        i & 255,
        20000 + i % 10000,
        10000 + i % 50000,
        1_732_900_000_000u64 + u64::from(i)
    )
}

fn cpu_seconds() -> f64 {
    // /proc/self/stat fields 14 and 15: utime and stime in clock ticks (100 Hz).
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let after = stat.rsplit(')').next().unwrap_or("");
    let f: Vec<&str> = after.split_whitespace().collect();
    let t = |i: usize| f.get(i).and_then(|x| x.parse::<f64>().ok()).unwrap_or(0.0);
    (t(11) + t(12)) / 100.0
}

fn main() {
    let n: u32 = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(100_000);
    // As stored in ZooKeeper: `toFullString()`, parameters sorted by key.
    let texts: Vec<String> = (0..n)
        .map(provider)
        .map(|t| Url::parse(&t).map(|u| u.to_full_string()).unwrap_or(t))
        .collect();
    let avg_len = texts.iter().map(String::len).sum::<usize>() / texts.len().max(1);

    let mut urls: Vec<Url> = Vec::with_capacity(texts.len());
    let before = rss();
    urls.extend(texts.iter().filter_map(|t| Url::parse(t).ok()));
    let after = rss();
    let per = (after - before) as f64 / f64::from(n);
    println!("providers: {n}, text length: {avg_len} B");
    println!(
        "resident bytes per provider URL: {per:.0} B ({} parsed)",
        urls.len()
    );
    println!("shared parameter tables: one per distinct stable-parameter set");

    // Parse throughput, CPU time (single thread).
    let sample: Vec<&String> = texts.iter().take(10_000).collect();
    let encoded: Vec<String> = sample.iter().map(|t| codec::encode(t)).collect();
    let rounds = 20;
    let t0 = cpu_seconds();
    let mut ok = 0usize;
    let mut ok_enc = 0usize;
    for _ in 0..rounds {
        for t in &sample {
            ok += usize::from(Url::parse(std::hint::black_box(t)).is_ok());
        }
    }
    let dt = cpu_seconds() - t0;
    println!(
        "parse (decoded, {avg_len} B): {:.2} M URLs/s per core ({ok} parsed, {dt:.2} s CPU)",
        f64::from(rounds) * sample.len() as f64 / dt / 1e6
    );
    let t0 = cpu_seconds();
    for _ in 0..rounds / 4 {
        for t in &encoded {
            ok_enc += usize::from(Url::parse_encoded(std::hint::black_box(t)).is_ok());
        }
    }
    let dt = cpu_seconds() - t0;
    println!(
        "parse (encoded ZK child): {:.2} M URLs/s per core ({ok_enc} parsed)",
        f64::from(rounds / 4) * encoded.len() as f64 / dt / 1e6
    );
    drop(urls);
}
