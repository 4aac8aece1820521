//! Dubbo's consumer metrics, recorded by a cluster with `ClusterOptions::metrics` and read back
//! from a Prometheus scrape: names, label keys and values as a Java 3.3 consumer exports them,
//! one count per call whatever the retries, and the sliding-window families. One test binary
//! with one global recorder: the tests share it and use their own service names.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use async_trait::async_trait;
use invoker::cluster::{self, ClusterOptions};
use invoker::directory::Directory;
use invoker::directory::StaticDirectory;
use invoker::metrics::{refresh_all, MetricsOptions};
use invoker::rpc::{
    Invocation, Invoker, RpcError, RpcErrorCode, RpcResponse, RpcResult, SharedInvoker,
};
use metrics_exporter_prometheus::{PrometheusBuilder, PrometheusHandle};
use registry_core::Url;
use serde_json::json;

fn handle() -> &'static PrometheusHandle {
    static H: OnceLock<PrometheusHandle> = OnceLock::new();
    H.get_or_init(|| {
        let h = PrometheusBuilder::new().install_recorder().unwrap();
        registry_core::metrics::names::describe_all();
        h
    })
}

/// `(name, labels) -> value` of every sample of a scrape.
type Samples = BTreeMap<(String, BTreeMap<String, String>), f64>;

fn parse(text: &str) -> Samples {
    let mut out = Samples::new();
    for line in text
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
    {
        let (series, value) = line.rsplit_once(' ').unwrap();
        let (name, labels) = match series.split_once('{') {
            Some((n, rest)) => (n, rest.trim_end_matches('}')),
            None => (series, ""),
        };
        let mut map = BTreeMap::new();
        for kv in labels.split("\",").filter(|s| !s.is_empty()) {
            let (k, v) = kv.split_once("=\"").unwrap();
            map.insert(k.to_owned(), v.trim_end_matches('"').to_owned());
        }
        out.insert((name.to_owned(), map), value.parse().unwrap());
    }
    out
}

/// The value of `name` for the method `method` of `interface`.
fn method_value(s: &Samples, name: &str, interface: &str, method: &str) -> Option<f64> {
    s.iter()
        .find(|((n, l), _)| {
            n == name
                && l.get("interface").map(String::as_str) == Some(interface)
                && l.get("method").map(String::as_str) == Some(method)
        })
        .map(|(_, v)| *v)
}

/// Answers by method: `sayHello` ok, `fail` a business exception, `slow` a timeout,
/// `forbid` forbidden, `codec` a serialization error, `flaky` a network error on this
/// provider when `flaky` is set.
#[derive(Debug)]
struct ByMethod {
    url: Url,
    flaky: bool,
    calls: AtomicUsize,
}

#[async_trait]
impl Invoker for ByMethod {
    fn url(&self) -> &Url {
        &self.url
    }

    async fn invoke(&self, inv: &Invocation) -> RpcResult {
        self.calls.fetch_add(1, Ordering::SeqCst);
        tokio::time::sleep(Duration::from_millis(2)).await;
        let err = |c, m: &str| Err(RpcError::new(c, m));
        match inv.real_method() {
            "fail" => Err(RpcError::biz("java.lang.IllegalStateException", "boom")),
            "slow" => err(RpcErrorCode::Timeout, "timed out"),
            "forbid" => err(RpcErrorCode::Forbidden, "forbidden"),
            "codec" => err(RpcErrorCode::Serialization, "bad bytes"),
            "flaky" if self.flaky => err(RpcErrorCode::Network, "reset"),
            "hang" => {
                tokio::time::sleep(Duration::from_secs(60)).await;
                Ok(RpcResponse::empty())
            }
            _ => Ok(RpcResponse::new(json!("ok"))),
        }
    }
}

fn cluster_for(interface: &str, aggregation: bool) -> (SharedInvoker, Vec<Arc<ByMethod>>) {
    let consumer = Url::parse(&format!(
        "consumer://10.0.0.1/{interface}?interface={interface}&application=metrics-app&group=g1&version=1.0.0&retries=2"
    ))
    .unwrap();
    let providers: Vec<Arc<ByMethod>> = (0..2)
        .map(|i| {
            Arc::new(ByMethod {
                url: Url::parse(&format!("test://127.0.0.1:{}/{interface}", 20880 + i)).unwrap(),
                flaky: i == 0,
                calls: AtomicUsize::new(0),
            })
        })
        .collect();
    let shared: Vec<SharedInvoker> = providers
        .iter()
        .map(|p| p.clone() as SharedInvoker)
        .collect();
    let dir: Arc<dyn Directory> = Arc::new(StaticDirectory::new(consumer, shared));
    let options = ClusterOptions {
        metrics: Some(MetricsOptions {
            aggregation,
            ..MetricsOptions::default()
        }),
        ..ClusterOptions::default()
    };
    (cluster::join_with(dir, options), providers)
}

#[tokio::test]
async fn calls_count_by_outcome_under_javas_names_and_labels() {
    let h = handle();
    let iface = "metrics.CountService";
    let (c, providers) = cluster_for(iface, false);
    for _ in 0..3 {
        c.invoke(&Invocation::new("sayHello")).await.unwrap();
    }
    assert!(c
        .invoke(&Invocation::new("fail"))
        .await
        .unwrap_err()
        .is_biz());
    assert!(c.invoke(&Invocation::new("slow")).await.is_err());
    assert!(c.invoke(&Invocation::new("forbid")).await.is_err());
    assert!(c.invoke(&Invocation::new("codec")).await.is_err());
    // Failover: provider 0 fails on the network, the retry succeeds: one request, one success.
    for _ in 0..6 {
        c.invoke(&Invocation::new("flaky")).await.unwrap();
    }
    // A generic call counts under the method it calls.
    let generic = Invocation::new("$invoke").with_arguments(
        vec![
            "java.lang.String".into(),
            "[Ljava.lang.String;".into(),
            "[Ljava.lang.Object;".into(),
        ],
        vec![json!("echo"), json!([]), json!([])],
    );
    c.invoke(&generic).await.unwrap();

    let s = parse(&h.render());
    let v = |name: &str, method: &str| method_value(&s, name, iface, method).unwrap_or(-1.0);
    assert_eq!(v("dubbo_consumer_requests_total", "sayHello"), 3.0);
    assert_eq!(v("dubbo_consumer_requests_succeed_total", "sayHello"), 3.0);
    assert_eq!(v("dubbo_consumer_requests_failed_total", "sayHello"), 0.0);
    assert_eq!(
        v("dubbo_consumer_requests_business_failed_total", "fail"),
        1.0
    );
    assert_eq!(v("dubbo_consumer_requests_failed_total", "fail"), 1.0);
    assert_eq!(v("dubbo_consumer_requests_succeed_total", "fail"), 0.0);
    assert_eq!(v("dubbo_consumer_requests_timeout_total", "slow"), 1.0);
    assert_eq!(v("dubbo_consumer_requests_failed_total", "slow"), 1.0);
    // Forbidden: Java's two filters count it as unknown and as service unavailable.
    assert_eq!(
        v("dubbo_consumer_requests_unknown_failed_total", "forbid"),
        1.0
    );
    assert_eq!(
        v(
            "dubbo_consumer_requests_failed_service_unavailable_total",
            "forbid"
        ),
        1.0
    );
    assert_eq!(
        v("dubbo_consumer_requests_failed_codec_total", "codec"),
        1.0
    );
    let flaky_attempts: usize = providers
        .iter()
        .map(|p| p.calls.load(Ordering::SeqCst))
        .sum();
    assert!(
        flaky_attempts > 6,
        "some flaky calls were retried: {flaky_attempts}"
    );
    assert_eq!(v("dubbo_consumer_requests_total", "flaky"), 6.0);
    assert_eq!(v("dubbo_consumer_requests_succeed_total", "flaky"), 6.0);
    assert_eq!(
        v("dubbo_consumer_requests_failed_network_total", "flaky"),
        0.0
    );
    assert_eq!(v("dubbo_consumer_requests_total", "echo"), 1.0);
    assert_eq!(v("dubbo_consumer_requests_total", "$invoke"), -1.0);
    assert_eq!(
        v("dubbo_consumer_requests_processing_total", "sayHello"),
        0.0
    );
    let (last, min, max, sum, avg) = (
        v("dubbo_consumer_rt_milliseconds_last", "sayHello"),
        v("dubbo_consumer_rt_milliseconds_min", "sayHello"),
        v("dubbo_consumer_rt_milliseconds_max", "sayHello"),
        v("dubbo_consumer_rt_milliseconds_sum", "sayHello"),
        v("dubbo_consumer_rt_milliseconds_avg", "sayHello"),
    );
    assert!(
        min >= 2.0 && min <= last && last <= max,
        "{min} {last} {max}"
    );
    assert!((sum / 3.0 - avg).abs() < 0.01, "{sum} {avg}");
    assert!(sum >= 6.0);

    // The label keys and values of a method series, as Java's `MethodMetric#getTags`.
    let ((_, labels), _) = s
        .iter()
        .find(|((n, l), _)| {
            n == "dubbo_consumer_requests_total"
                && l.get("method").is_some_and(|m| m == "sayHello")
                && l.get("interface").is_some_and(|i| i == iface)
        })
        .unwrap();
    let keys: BTreeSet<&str> = labels.keys().map(String::as_str).collect();
    assert_eq!(
        keys,
        BTreeSet::from([
            "application_module_id",
            "application_name",
            "group",
            "interface",
            "method",
            "version"
        ])
    );
    assert_eq!(labels["application_name"], "metrics-app");
    assert_eq!(labels["application_module_id"], "1.0");
    assert_eq!(labels["group"], "g1");
    assert_eq!(labels["version"], "1.0.0");
    // Java's descriptions are the HELP lines.
    assert!(h
        .render()
        .contains("# HELP dubbo_consumer_requests_total Total Requests"));
    // Without aggregation there is no window family.
    assert!(method_value(&s, "dubbo_consumer_rt_milliseconds_p99", iface, "sayHello").is_none());
}

#[tokio::test]
async fn a_cancelled_call_leaves_the_in_flight_count() {
    let h = handle();
    let iface = "metrics.CancelService";
    let (c, _) = cluster_for(iface, false);
    let call = Invocation::new("hang");
    let fut = c.invoke(&call);
    assert!(tokio::time::timeout(Duration::from_millis(50), fut)
        .await
        .is_err());
    let s = parse(&h.render());
    let v = |name: &str| method_value(&s, name, iface, "hang").unwrap_or(-1.0);
    assert_eq!(v("dubbo_consumer_requests_total"), 1.0);
    assert_eq!(v("dubbo_consumer_requests_processing_total"), 0.0);
    assert_eq!(v("dubbo_consumer_requests_succeed_total"), 0.0);
    assert_eq!(v("dubbo_consumer_requests_failed_total"), 0.0);
}

#[tokio::test]
async fn aggregation_publishes_the_window_families() {
    let h = handle();
    let iface = "metrics.WindowService";
    let (c, _) = cluster_for(iface, true);
    for _ in 0..20 {
        c.invoke(&Invocation::new("sayHello")).await.unwrap();
    }
    c.invoke(&Invocation::new("slow")).await.unwrap_err();
    refresh_all();
    let s = parse(&h.render());
    let v = |name: &str, m: &str| method_value(&s, name, iface, m).unwrap_or(-1.0);
    assert_eq!(
        v("dubbo_consumer_requests_total_aggregate", "sayHello"),
        20.0
    );
    assert_eq!(
        v("dubbo_consumer_requests_succeed_aggregate", "sayHello"),
        20.0
    );
    assert_eq!(
        v("dubbo_consumer_requests_timeout_failed_aggregate", "slow"),
        1.0
    );
    assert_eq!(
        v("dubbo_consumer_requests_failed_total_aggregate", "slow"),
        1.0
    );
    assert!(v("dubbo_consumer_qps_total", "sayHello") > 0.0);
    let (p50, p99) = (
        v("dubbo_consumer_rt_milliseconds_p50", "sayHello"),
        v("dubbo_consumer_rt_milliseconds_p99", "sayHello"),
    );
    let (min, max) = (
        v("dubbo_consumer_rt_min_milliseconds_aggregate", "sayHello"),
        v("dubbo_consumer_rt_max_milliseconds_aggregate", "sayHello"),
    );
    assert!(
        min >= 2.0 && min <= p50 && p50 <= p99 && p99 <= max,
        "{min} {p50} {p99} {max}"
    );
}
