//! Cost of one poll on the consumer side (criterion): applying an `instance/list` reply of
//! 1k / 10k / 50k Dubbo 3.3 provider instances to an [`InstanceCache`], when nothing changed
//! (the steady state: one JSON scan, every `Url` reused) and when one instance changed.
//! Commands and results: `BENCHMARKS.md`.

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use registry_core::Url;
use registry_nacos::convert::{instance_metadata, InstanceCache};

/// An `instance/list` reply like rnacos sends, `n` instances of a realistic provider URL.
fn reply(n: u32, changed: Option<u32>) -> String {
    let mut hosts = Vec::with_capacity(n as usize);
    for i in 0..n {
        let ip = format!("10.{}.{}.{}", i / 65536, (i / 256) % 256, i % 256);
        let weight = if Some(i) == changed { "50" } else { "100" };
        let u = Url::parse(&format!(
            "dubbo://{ip}:20880/org.apache.dubbo.samples.api.GreetingsService?anyhost=true\
             &application=greetings-provider-app&deprecated=false&dubbo=2.0.2&dynamic=true\
             &generic=false&group=production&interface=org.apache.dubbo.samples.api.GreetingsService\
             &methods=sayHi,sayHello,sayGoodbye,greetAll,listGreetings,updateGreeting\
             &pid=48213&release=3.3.1&retries=2&service-name-mapping=true&side=provider\
             &timeout=3000&timestamp=1732900000123&version=1.0.0&weight={weight}"
        ))
        .unwrap_or_else(|e| panic!("{e}"));
        let md = serde_json::to_string(&instance_metadata(&u)).unwrap_or_default();
        hosts.push(format!(
            r#"{{"service":"DEFAULT_GROUP@@providers:org.apache.dubbo.samples.api.GreetingsService:1.0.0:production","ip":"{ip}","port":20880,"clusterName":"DEFAULT","weight":1.0,"healthy":true,"instanceId":"{ip}#20880#DEFAULT#x","metadata":{md},"marked":true,"enabled":true,"ephemeral":true}}"#
        ));
    }
    format!(
        r#"{{"name":"DEFAULT_GROUP@@x","clusters":"","cacheMillis":10000,"hosts":[{}],"lastRefTime":1,"checksum":"1"}}"#,
        hosts.join(",")
    )
}

fn benches(c: &mut Criterion) {
    let mut g = c.benchmark_group("nacos_poll_apply");
    g.sample_size(10);
    for n in [1_000u32, 10_000, 50_000] {
        let same = reply(n, None);
        let one = reply(n, Some(n / 2));
        g.throughput(Throughput::Bytes(same.len() as u64));
        let mut cache = InstanceCache::new();
        cache.apply("s", &same).unwrap_or_else(|e| panic!("{e}"));
        g.bench_with_input(BenchmarkId::new("unchanged", n), &same, |b, body| {
            b.iter(|| black_box(cache.apply("s", body).unwrap_or(false)))
        });
        let mut flip = false;
        let mut cache = InstanceCache::new();
        g.bench_with_input(BenchmarkId::new("one_changed", n), &n, |b, _| {
            b.iter(|| {
                flip = !flip;
                black_box(
                    cache
                        .apply("s", if flip { &one } else { &same })
                        .unwrap_or(false),
                )
            })
        });
        eprintln!("reply size for {n} instances: {} bytes", same.len());
    }
    g.finish();
}

criterion_group!(poll, benches);
criterion_main!(poll);
