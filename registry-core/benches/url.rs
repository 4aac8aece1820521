//! URL benchmarks (criterion): parse (decoded and ZooKeeper-encoded), `is_match`,
//! `to_full_string`, clone, with a realistic ~600-byte Dubbo 3.3 provider URL.
//! Commands and results: `BENCHMARKS.md`.

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use registry_core::matching::is_match;
use registry_core::{codec, Url};

/// A provider URL as Dubbo 3.3 registers it (about 600 bytes).
pub fn provider_url(host_octet: u32, port: u32) -> String {
    format!(
        "dubbo://10.20.{}.{}:{port}/org.apache.dubbo.samples.api.GreetingsService?anyhost=true\
         &application=greetings-provider-app&background=false&deprecated=false&dubbo=2.0.2\
         &dynamic=true&executor-management-mode=isolation&file-cache=true&generic=false\
         &group=production&interface=org.apache.dubbo.samples.api.GreetingsService\
         &ipv6=fd00:6cb1:58a2:8ddf:0:0:0:1000&loadbalance=roundrobin\
         &methods=sayHi,sayHello,sayGoodbye,greetAll,listGreetings,updateGreeting\
         &pid=48213&prefer.serialization=hessian2,fastjson2&release=3.3.1&retries=2\
         &revision=1.0.0-SNAPSHOT&service-name-mapping=true&side=provider&threads=200\
         &timeout=3000&timestamp=1732900000123&token=false&version=1.0.0&weight=100",
        host_octet / 256,
        host_octet % 256
    )
}

fn benches(c: &mut Criterion) {
    let text = provider_url(7, 20880);
    let encoded = codec::encode(&text);
    let url = Url::parse(&text).unwrap_or_else(|e| panic!("{e}"));
    let consumer = Url::parse(
        "consumer://10.0.0.9/org.apache.dubbo.samples.api.GreetingsService?application=web\
         &category=providers,configurators,routers&group=production&version=1.0.0\
         &interface=org.apache.dubbo.samples.api.GreetingsService&side=consumer",
    )
    .unwrap_or_else(|e| panic!("{e}"));

    let mut g = c.benchmark_group("url");
    g.throughput(Throughput::Elements(1));
    g.bench_function(format!("parse_decoded_{}B", text.len()), |b| {
        b.iter(|| Url::parse(black_box(&text)))
    });
    g.bench_function(format!("parse_encoded_zk_child_{}B", encoded.len()), |b| {
        b.iter(|| Url::parse_encoded(black_box(&encoded)))
    });
    // Two services in turn: the table remembered from the previous parse never matches, so
    // every parse scans the query and looks its table up by hash (both tables stay alive, as
    // when a directory holds the providers).
    let other = text.replace("GreetingsService", "OrdersService");
    let _keep = Url::parse(&other);
    let mut flip = false;
    g.bench_function("parse_decoded_alternating_services", |b| {
        b.iter(|| {
            flip = !flip;
            Url::parse(black_box(if flip { &text } else { &other }))
        })
    });
    // Parameters not in key order: the general path (item vector, sort, table hash).
    let (head, query) = text.split_once('?').unwrap_or((&text, ""));
    let mut items: Vec<&str> = query.split('&').collect();
    items.reverse();
    let unsorted = format!("{head}?{}", items.join("&"));
    g.bench_function("parse_decoded_unsorted", |b| {
        b.iter(|| Url::parse(black_box(&unsorted)))
    });
    g.bench_function("is_match", |b| {
        b.iter(|| is_match(black_box(&consumer), black_box(&url)))
    });
    g.bench_function("to_full_string", |b| {
        b.iter(|| black_box(&url).to_full_string())
    });
    g.bench_function("clone", |b| b.iter(|| black_box(&url).clone()));
    g.bench_function("param_lookup", |b| {
        b.iter(|| black_box(&url).param(black_box("timeout")))
    });
    g.bench_function("method_param", |b| {
        b.iter(|| black_box(&url).method_param(black_box("sayHello"), black_box("timeout")))
    });
    g.finish();
}

criterion_group!(url_benches, benches);
criterion_main!(url_benches);
