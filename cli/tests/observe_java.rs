//! Observability against a real Apache Dubbo 3.3.6 (Java) application:
//! - the metric families `dubbo-registry invoke --metrics-addr` serves carry Java's names and
//!   label keys: diffed with the scrape of a Java 3.3.6 consumer (metrics on, Prometheus, QOS
//!   `/metrics`) calling the same provider through the same ZooKeeper;
//! - the W3C trace context `invoke --trace` sends (Dubbo2 attachments, Triple headers) is the
//!   one Java's tracing (micrometer over OpenTelemetry) continues on the provider: same trace
//!   id, our span as the parent, and the provider logs it.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use serde_json::Value;
use tests::peers::{free_port, JavaProvider, ProviderOptions};
use tests::prometheus::{families, parse, scrape, value};

const DEMO: &str = "com.example.peer.DemoService";
const T: Duration = Duration::from_secs(90);

/// Families ours has that the Java consumer's scrape of this run lacks, and why.
const OURS_ONLY: &[(&str, &str)] = &[
    // Java registers these on the first event of their kind; its run had none (ours
    // registers every outcome of a method with its first call, at 0).
    (
        "dubbo_consumer_requests_limit_total",
        "no call refused by a limit in the Java run",
    ),
    (
        "dubbo_consumer_requests_unknown_failed_total",
        "no unknown failure in the Java run",
    ),
    (
        "dubbo_consumer_requests_failed_network_total",
        "no network failure in the Java run",
    ),
    (
        "dubbo_consumer_requests_failed_codec_total",
        "no codec failure in the Java run",
    ),
    (
        "dubbo_consumer_requests_limit_aggregate",
        "no limit refusal in the Java run",
    ),
    (
        "dubbo_consumer_requests_failed_aggregate",
        "no unknown failure in the Java run",
    ),
    (
        "dubbo_consumer_requests_failed_network_total_aggregate",
        "no network failure in the Java run",
    ),
    (
        "dubbo_consumer_requests_failed_codec_total_aggregate",
        "no codec failure in the Java run",
    ),
    (
        "dubbo_consumer_requests_failed_service_unavailable_total_aggregate",
        "Java declares it and never counts it",
    ),
    // Java's aggregate collector counts the success and the start of a call under the
    // non-aggregate keys and reads the aggregate ones, which stay empty (a Java bug;
    // docs/compatibility.md).
    (
        "dubbo_consumer_requests_total_aggregate",
        "never filled by Java",
    ),
    (
        "dubbo_consumer_requests_succeed_aggregate",
        "never filled by Java",
    ),
    (
        "dubbo_consumer_requests_failed_total_aggregate",
        "never filled by Java",
    ),
];

/// Java families this workspace does not export, and why.
const JAVA_ONLY_PREFIXES: &[(&str, &str)] = &[
    ("dubbo_provider_", "a consumer: no provider side"),
    ("dubbo_thread_pool_", "no Java thread pools"),
    (
        "dubbo_metadata_",
        "metadata push/subscribe of application-level discovery",
    ),
    (
        "dubbo_registry_subscribe_service_",
        "application-level (service discovery) subscriptions",
    ),
    (
        "dubbo_subscribe_service_rt_",
        "application-level (service discovery) subscriptions",
    ),
    (
        "dubbo_error_code_count",
        "counts of Java's logged error codes",
    ),
    ("dubbo_configcenter_", "config-centre change counts"),
    (
        "dubbo_consumer_rt_milliseconds_histogram_",
        "Java's optional histogram (dubbo.metrics.histogram)",
    ),
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metric_families_and_labels_match_a_java_consumer() {
    let test = "metric_families_match_java";
    let Some(zk) = tests::zk_addr(test) else {
        return;
    };
    let root = tests::unique("obs-metrics").replace('_', "-");
    let registry = format!("zookeeper://{zk}?group={root}");
    let opts = ProviderOptions {
        registry: Some(registry.clone()),
        app: tests::unique("obs-prov").replace('_', "-"),
        version: Some("1.0.0".into()),
        protocols: vec!["dubbo".into()],
        services: vec!["demo".into()],
        ..ProviderOptions::default()
    };
    let Some(_provider) = JavaProvider::start(test, &opts).await else {
        return;
    };
    // The Java consumer: a success, a business exception, a timeout, then its scrape.
    let out = std::env::temp_dir().join(format!("{}.prom", tests::unique("java-metrics")));
    let out_s = out.to_string_lossy().into_owned();
    let batch = r#"[{"method":"sayHello","args":["a"]},{"method":"fail","args":["x"]},{"method":"sleep","args":[1500]}]"#;
    let run = tests::peers::java_consumer(
        test,
        &[
            "--registry",
            &registry,
            "--version",
            "1.0.0",
            "--protocol",
            "dubbo",
            "--timeout",
            "500",
            "--retries",
            "0",
            "--batch",
            batch,
            "--metrics-out",
            &out_s,
        ],
        T,
    )
    .await
    .unwrap();
    assert_eq!(run.code, 0, "{}", run.json);
    let java_text = std::fs::read_to_string(&out).unwrap();
    let _ = std::fs::remove_file(&out);
    let java = parse(&java_text);
    assert!(
        value(
            &java,
            "dubbo_consumer_requests_succeed_total",
            &[("method", "sayHello")]
        ) == Some(1.0),
        "the Java consumer counted its call:\n{java_text}"
    );

    // Ours: the same service through the same registry, with a scrape while it lingers.
    let port = free_port();
    let addr = format!("127.0.0.1:{port}");
    let bin = env!("CARGO_BIN_EXE_dubbo-registry");
    let mut child = tokio::process::Command::new(bin)
        .args([
            "invoke",
            &registry,
            DEMO,
            "sayHello",
            r#"["b"]"#,
            "--version",
            "1.0.0",
            "--protocol",
            "dubbo",
            "--repeat",
            "20",
            "--metrics-addr",
            &addr,
            "--metrics-linger",
            "30",
        ])
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let ours_text = tests::eventually("our scrape with every call counted", T, || async {
        let text = scrape(&addr).await?;
        let s = parse(&text);
        // One warm-up call and the 20 measured ones.
        (value(
            &s,
            "dubbo_consumer_requests_succeed_total",
            &[("method", "sayHello")],
        ) == Some(21.0))
        .then_some(text)
    })
    .await;
    let _ = child.kill().await;
    let ours = parse(&ours_text);
    assert_eq!(
        value(
            &ours,
            "dubbo_registry_directory_num_valid_total",
            &[("interface", "com.example.peer.DemoService:1.0.0")]
        ),
        Some(1.0),
        "{ours_text}"
    );

    let (jf, of) = (families(&java), families(&ours));
    let mut problems = Vec::new();
    for (name, keys) in &of {
        match jf.get(name) {
            Some(jk) if jk == keys => {}
            Some(jk) => problems.push(format!("{name}: labels {keys:?}, Java {jk:?}")),
            None if OURS_ONLY.iter().any(|(n, _)| n == name) => {}
            None => problems.push(format!("{name}: not in Java's scrape")),
        }
    }
    for name in jf.keys().filter(|n| n.starts_with("dubbo_")) {
        if !of.contains_key(name) && !JAVA_ONLY_PREFIXES.iter().any(|(p, _)| name.starts_with(p)) {
            problems.push(format!("{name}: Java has it, we do not"));
        }
    }
    for (name, _) in OURS_ONLY {
        if jf.contains_key(*name) {
            problems.push(format!(
                "{name} is listed as absent from Java's scrape but is there"
            ));
        }
    }
    assert!(
        problems.is_empty(),
        "{}\n--- Java ---\n{java_text}\n--- ours ---\n{ours_text}",
        problems.join("\n")
    );
    // The families both have, counted the same way: the core of Java's dashboards.
    let both: BTreeSet<&String> = of.keys().filter(|n| jf.contains_key(*n)).collect();
    for must in [
        "dubbo_consumer_requests_total",
        "dubbo_consumer_requests_succeed_total",
        "dubbo_consumer_requests_failed_total",
        "dubbo_consumer_requests_business_failed_total",
        "dubbo_consumer_requests_timeout_total",
        "dubbo_consumer_requests_processing_total",
        "dubbo_consumer_rt_milliseconds_avg",
        "dubbo_consumer_rt_milliseconds_p99",
        "dubbo_consumer_qps_total",
        "dubbo_registry_directory_num_all",
        "dubbo_registry_directory_num_valid_total",
        "dubbo_registry_notify_num_last",
        "dubbo_registry_subscribe_num_total",
        "dubbo_subscribe_rt_milliseconds_last",
        "dubbo_application_info_total",
    ] {
        assert!(
            both.iter().any(|n| *n == must),
            "{must} is not in both scrapes"
        );
    }
    let label_values = |s: &tests::prometheus::Samples| -> BTreeMap<String, String> {
        s.keys()
            .find(|(n, l)| {
                n == "dubbo_consumer_requests_total"
                    && l.get("method").is_some_and(|m| m == "sayHello")
            })
            .map(|(_, l)| l.clone())
            .unwrap()
    };
    let (jl, ol) = (label_values(&java), label_values(&ours));
    for k in [
        "interface",
        "method",
        "group",
        "version",
        "application_module_id",
    ] {
        assert_eq!(jl[k], ol[k], "label {k}");
    }
}

/// `invoke --trace` against the provider: Java's tracing continues our trace.
async fn traced_call(target: &str) -> (Value, Value) {
    let out = common::invoke(&[
        target,
        DEMO,
        "traceContext",
        "--version",
        "1.0.0",
        "--trace",
        "--json",
    ])
    .await;
    assert_eq!(out.code, 0, "{}: {} / {}", target, out.stdout, out.stderr);
    let v = out.json();
    (v["result"].clone(), v)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_java_provider_continues_the_trace_we_send_over_dubbo_and_tri() {
    let test = "java_provider_continues_our_trace";
    let opts = ProviderOptions {
        app: tests::unique("obs-trace").replace('_', "-"),
        version: Some("1.0.0".into()),
        services: vec!["demo".into()],
        extra: vec!["--tracing".into()],
        ..ProviderOptions::default()
    };
    let Some(p) = JavaProvider::start(test, &opts).await else {
        return;
    };
    for target in [p.dubbo_target(), p.tri_target()] {
        let (java, ours) = traced_call(&target).await;
        let trace_id = ours["trace_id"].as_str().unwrap();
        let span_id = ours["span_id"].as_str().unwrap();
        assert_eq!(trace_id.len(), 32, "{ours}");
        // The raw attachment / header as Java received it.
        assert_eq!(
            java["traceparent"],
            format!("00-{trace_id}-{span_id}-01").as_str(),
            "{target}: {java}"
        );
        // Java's tracing made its server span a child of ours, in our trace, sampled.
        assert_eq!(java["trace_id"], trace_id, "{target}: {java}");
        assert_eq!(java["parent_id"], span_id, "{target}: {java}");
        assert_eq!(java["sampled"], true, "{target}: {java}");
        assert_ne!(java["span_id"], span_id, "{target}: {java}");
        // ... and logged it.
        let needle = format!("\"trace_id\":\"{trace_id}\"");
        tests::eventually(
            "the provider's TRACE log line",
            Duration::from_secs(10),
            || {
                let log = std::fs::read_to_string(p.process.log()).unwrap_or_default();
                let found = log
                    .lines()
                    .any(|l| l.starts_with("TRACE") || l.contains("TRACE {"))
                    && log.contains(&needle);
                async move { found.then_some(()) }
            },
        )
        .await;
    }
}
