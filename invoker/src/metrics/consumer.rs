//! Consumer call metrics under Dubbo's names (Java's `MetricsConsumerFilter` and
//! `MetricsClusterFilter`, cluster-level): a cluster built with
//! [`crate::cluster::ClusterOptions::metrics`] records every call once, whatever the retries
//! inside (inline: no layer, no extra boxed future); [`MetricsLayer`] does the same around
//! any invoker.
//!
//! Per method (labels `application_module_id`, `application_name`, `group`, `interface`,
//! `method`, `version`): `dubbo_consumer_requests_total` when a call starts, then one of
//! succeed / business failed / timeout / limit / network / codec / unknown failed (+ service
//! unavailable when the registry forbids the service) with `failed_total` for every failure,
//! `dubbo_consumer_requests_processing_total` while in flight, and the response-time gauges
//! `dubbo_consumer_rt_milliseconds_{last,min,max,sum,avg}`. With
//! [`MetricsOptions::aggregation`] (Java's `dubbo.metrics.aggregation.enabled`) also the
//! sliding-window families: `dubbo_consumer_qps_total`, the `*_aggregate` counts and times,
//! and `dubbo_consumer_rt_milliseconds_{p50,p90,p95,p99}`, refreshed by
//! [`ConsumerMetrics::refresh`] (a directory does it every [`crate::directory::DirectoryOptions::health_interval`]).
//!
//! Cost per call in steady state: a lock-free lookup of the method's handles (the first call
//! of a method registers them: that allocates once), a few atomic operations, two clock
//! reads; no allocation, no label formatting.

use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use arc_swap::ArcSwap;
use async_trait::async_trait;
use metrics::{Counter, Gauge, Label};
use parking_lot::Mutex;
use registry_core::metrics::names::{self, label, MODULE_ID};
use registry_core::metrics::{identity, RtGauges};
use registry_core::Url;
use rustc_hash::FxHashMap;

use super::outcome::Outcome;
use super::window::{now_ms, CallWindow, RateWindow, Slot};
use crate::filter::InvokerLayer;
use crate::rpc::{Invocation, Invoker, RpcResult, SharedInvoker};

/// Method label of calls past [`MetricsOptions::max_methods`] distinct methods.
pub const OTHER_METHOD: &str = "_other";

/// How consumer metrics are kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MetricsOptions {
    /// The sliding-window families (qps, `*_aggregate`, p50..p99); Java's
    /// `dubbo.metrics.aggregation.enabled` (default off there and here).
    pub aggregation: bool,
    /// Panes of the aggregation window (Java's `bucket-num`, 10).
    pub panes: usize,
    /// The aggregation window (Java's `time-window-seconds`, 120 s).
    pub window: Duration,
    /// The QPS window (Java's `qps-time-window-mill-seconds`, 3 s).
    pub qps_window: Duration,
    /// Distinct methods tracked per service; calls of further methods are counted under
    /// [`OTHER_METHOD`] (bounds what generic calls of made-up names can cost).
    pub max_methods: usize,
}

impl Default for MetricsOptions {
    fn default() -> Self {
        MetricsOptions {
            aggregation: false,
            panes: 10,
            window: Duration::from_secs(120),
            qps_window: Duration::from_secs(3),
            max_methods: 1024,
        }
    }
}

/// The counter handles of one method, in [`Slot`] order (Requests first).
#[derive(Debug)]
struct Counters([Counter; 10]);

const COUNTER_FAMILIES: [names::Family; 10] = [
    names::CONSUMER_REQUESTS,
    names::CONSUMER_SUCCEED,
    names::CONSUMER_FAILED_TOTAL,
    names::CONSUMER_BUSINESS_FAILED,
    names::CONSUMER_TIMEOUT,
    names::CONSUMER_LIMIT,
    names::CONSUMER_UNKNOWN_FAILED,
    names::CONSUMER_NETWORK_FAILED,
    names::CONSUMER_CODEC_FAILED,
    names::CONSUMER_SERVICE_UNAVAILABLE,
];

/// The aggregated gauges, in [`Slot`] order, then qps, rt min/max/avg, p50/p90/p95/p99.
const AGG_FAMILIES: [names::Family; 18] = [
    names::CONSUMER_REQUESTS_AGG,
    names::CONSUMER_SUCCEED_AGG,
    names::CONSUMER_FAILED_TOTAL_AGG,
    names::CONSUMER_BUSINESS_FAILED_AGG,
    names::CONSUMER_TIMEOUT_AGG,
    names::CONSUMER_LIMIT_AGG,
    names::CONSUMER_UNKNOWN_FAILED_AGG,
    names::CONSUMER_NETWORK_FAILED_AGG,
    names::CONSUMER_CODEC_FAILED_AGG,
    names::CONSUMER_SERVICE_UNAVAILABLE_AGG,
    names::CONSUMER_QPS,
    names::CONSUMER_RT_MIN_AGG,
    names::CONSUMER_RT_MAX_AGG,
    names::CONSUMER_RT_AVG_AGG,
    names::CONSUMER_RT_P50,
    names::CONSUMER_RT_P90,
    names::CONSUMER_RT_P95,
    names::CONSUMER_RT_P99,
];

#[derive(Debug)]
struct Aggregation {
    calls: CallWindow,
    qps: RateWindow,
    gauges: [Gauge; 18],
}

/// The handles and state of one method.
#[derive(Debug)]
pub struct MethodMetrics {
    counters: Counters,
    processing: Gauge,
    rt: RtGauges,
    agg: Option<Aggregation>,
}

impl MethodMetrics {
    fn new(labels: &[Label], options: &MetricsOptions) -> Self {
        let counter = |f: &names::Family| metrics::counter!(f.name, labels.to_vec());
        MethodMetrics {
            counters: Counters(std::array::from_fn(|i| counter(&COUNTER_FAMILIES[i]))),
            processing: metrics::gauge!(names::CONSUMER_PROCESSING.name, labels.to_vec()),
            rt: RtGauges::new(&names::CONSUMER_RT, labels),
            agg: options.aggregation.then(|| Aggregation {
                calls: CallWindow::new(options.panes, options.window),
                qps: RateWindow::new(options.panes, options.qps_window),
                gauges: std::array::from_fn(|i| {
                    metrics::gauge!(AGG_FAMILIES[i].name, labels.to_vec())
                }),
            }),
        }
    }

    fn started(&self) {
        self.counters.0[Slot::Requests as usize].increment(1);
        self.processing.increment(1.0);
        if let Some(a) = &self.agg {
            let now = now_ms();
            a.calls.started(now);
            a.qps.add(now);
        }
    }

    fn finished(&self, outcome: Outcome, took: Duration) {
        self.processing.decrement(1.0);
        let c = &self.counters.0;
        outcome.for_each_slot(|s| c[s as usize].increment(1));
        self.rt.record(took);
        if let Some(a) = &self.agg {
            let us = u64::try_from(took.as_micros()).unwrap_or(u64::MAX);
            a.calls.finished(now_ms(), outcome, us);
        }
    }

    /// A call that was dropped before it finished: only leaves the in-flight count.
    fn abandoned(&self) {
        self.processing.decrement(1.0);
    }

    /// Publishes the sliding-window gauges (no-op without aggregation).
    fn refresh(&self) {
        let Some(a) = &self.agg else { return };
        let now = now_ms();
        let s = a.calls.stats(now);
        for (g, v) in a.gauges.iter().zip(s.counts) {
            g.set(v as f64);
        }
        a.gauges[10].set(a.qps.per_second(now));
        if let Some((min, max, avg)) = s.rt_min_max_avg {
            a.gauges[11].set(min);
            a.gauges[12].set(max);
            a.gauges[13].set(avg);
        }
        if let Some(q) = s.quantiles {
            for (g, v) in a.gauges[14..].iter().zip(q) {
                g.set(v);
            }
        }
    }
}

type MethodMap = FxHashMap<Box<str>, Arc<MethodMetrics>>;

/// The metrics of one service a consumer references (interface, group, version, for an
/// application): one [`MethodMetrics`] per method called.
///
/// One instance per distinct key in the process ([`ConsumerMetrics::for_consumer`]), shared
/// by the reference's [`MetricsLayer`] and its directory.
#[derive(Debug)]
pub struct ConsumerMetrics {
    base: Vec<Label>,
    options: MetricsOptions,
    methods: ArcSwap<MethodMap>,
    insert: Mutex<()>,
}

type Key = (String, String, String, String);

fn live() -> &'static Mutex<FxHashMap<Key, Weak<ConsumerMetrics>>> {
    static LIVE: std::sync::OnceLock<Mutex<FxHashMap<Key, Weak<ConsumerMetrics>>>> =
        std::sync::OnceLock::new();
    LIVE.get_or_init(|| Mutex::new(FxHashMap::default()))
}

fn key_of(consumer: &Url) -> Key {
    let app = consumer
        .param("application")
        .filter(|a| !a.is_empty())
        .map_or_else(|| identity().application_name.clone(), str::to_owned);
    let interface = consumer
        .service_interface()
        .or_else(|| consumer.path())
        .unwrap_or("")
        .to_owned();
    let group = consumer.param("group").unwrap_or("").to_owned();
    let version = consumer.param("version").unwrap_or("").to_owned();
    (app, interface, group, version)
}

impl ConsumerMetrics {
    /// The live metrics of the service `consumer` references, if a [`MetricsLayer`] made
    /// them.
    pub fn lookup(consumer: &Url) -> Option<Arc<ConsumerMetrics>> {
        live().lock().get(&key_of(consumer)).and_then(Weak::upgrade)
    }

    /// The metrics of the service `consumer` references (its `application`, `interface`,
    /// `group`, `version`; the process [`identity()`]'s application when it names none). The
    /// same key gives the same instance while one is alive; the options of the first
    /// creation stay.
    pub fn for_consumer(consumer: &Url, options: MetricsOptions) -> Arc<ConsumerMetrics> {
        let key = key_of(consumer);
        let mut live = live().lock();
        if let Some(m) = live.get(&key).and_then(Weak::upgrade) {
            return m;
        }
        live.retain(|_, w| w.strong_count() > 0);
        let (app, interface, group, version) = key.clone();
        let m = Arc::new(ConsumerMetrics {
            base: vec![
                Label::new(label::APPLICATION_MODULE_ID, MODULE_ID),
                Label::new(label::APPLICATION_NAME, app),
                Label::new(label::GROUP, group),
                Label::new(label::INTERFACE, interface),
                Label::new(label::VERSION, version),
            ],
            options,
            methods: ArcSwap::from_pointee(MethodMap::default()),
            insert: Mutex::new(()),
        });
        live.insert(key, Arc::downgrade(&m));
        m
    }

    /// The handles of `method`, registered on its first call (lock-free afterwards).
    pub fn method(&self, method: &str) -> Arc<MethodMetrics> {
        if let Some(m) = self.methods.load().get(method) {
            return m.clone();
        }
        let _g = self.insert.lock();
        let current = self.methods.load_full();
        if let Some(m) = current.get(method) {
            return m.clone();
        }
        let name = if current.len() >= self.options.max_methods {
            if let Some(m) = current.get(OTHER_METHOD) {
                return m.clone();
            }
            OTHER_METHOD
        } else {
            method
        };
        let mut labels = self.base.clone();
        labels.push(Label::new(label::METHOD, name.to_owned()));
        let m = Arc::new(MethodMetrics::new(&labels, &self.options));
        let mut next = MethodMap::clone(&current);
        next.insert(Box::from(name), m.clone());
        self.methods.store(Arc::new(next));
        m
    }

    /// Registers the handles of `methods` now (their series appear with 0, as Java's
    /// `enable-metrics-init` does).
    pub fn preregister<'a>(&self, methods: impl IntoIterator<Item = &'a str>) {
        for m in methods {
            self.method(m);
        }
    }

    /// Methods tracked.
    pub fn method_count(&self) -> usize {
        self.methods.load().len()
    }

    /// Publishes the sliding-window gauges of every method (aggregation only).
    pub fn refresh(&self) {
        for m in self.methods.load().values() {
            m.refresh();
        }
    }

    /// The options.
    pub fn options(&self) -> &MetricsOptions {
        &self.options
    }
}

/// Refreshes the sliding-window gauges of every live service (for consumers without a
/// registry directory, which otherwise does it on its own).
pub fn refresh_all() {
    let all: Vec<Arc<ConsumerMetrics>> = live().lock().values().filter_map(Weak::upgrade).collect();
    for m in all {
        m.refresh();
    }
}

/// The cluster-level layer that records Dubbo's consumer metrics for every call (add it to
/// [`crate::cluster::ClusterOptions::layers`]).
#[derive(Debug, Clone, Default)]
pub struct MetricsLayer {
    options: MetricsOptions,
    consumer: Option<Url>,
}

impl MetricsLayer {
    /// A layer with `options`; the wrapped invoker's URL names the service and application
    /// (a cluster invoker's URL is the consumer URL).
    pub fn new(options: MetricsOptions) -> Self {
        MetricsLayer {
            options,
            consumer: None,
        }
    }

    /// A layer whose labels come from `consumer` (for an invoker whose own URL is a
    /// provider's, e.g. a provider called directly).
    pub fn for_consumer(consumer: Url, options: MetricsOptions) -> Self {
        MetricsLayer {
            options,
            consumer: Some(consumer),
        }
    }
}

impl InvokerLayer for MetricsLayer {
    fn layer(&self, inner: SharedInvoker) -> SharedInvoker {
        let url = self.consumer.as_ref().unwrap_or(inner.url());
        let metrics = ConsumerMetrics::for_consumer(url, self.options);
        Arc::new(MetricsInvoker { inner, metrics })
    }
}

/// The invoker [`MetricsLayer`] makes.
#[derive(Debug)]
pub struct MetricsInvoker {
    inner: SharedInvoker,
    metrics: Arc<ConsumerMetrics>,
}

impl MetricsInvoker {
    /// The service's metrics.
    pub fn metrics(&self) -> &Arc<ConsumerMetrics> {
        &self.metrics
    }
}

/// One call being recorded ([`ConsumerMetrics::start`]): [`CallRecord::finish`] counts its
/// outcome and time; dropped unfinished (the call was cancelled) it only leaves the in-flight
/// count.
#[derive(Debug)]
#[must_use = "finish the record with the call's result"]
pub struct CallRecord {
    method: Arc<MethodMetrics>,
    started: Instant,
    done: bool,
}

impl CallRecord {
    /// Counts the call's result and response time.
    pub fn finish(mut self, r: &RpcResult) {
        self.done = true;
        self.method.finished(Outcome::of(r), self.started.elapsed());
    }
}

impl Drop for CallRecord {
    fn drop(&mut self) {
        if !self.done {
            self.method.abandoned();
        }
    }
}

impl ConsumerMetrics {
    /// Starts recording a call of `invocation` (its real method: a generic `$invoke` counts
    /// under the method it calls).
    pub fn start(&self, invocation: &Invocation) -> CallRecord {
        let method = self.method(invocation.real_method());
        method.started();
        CallRecord {
            method,
            started: Instant::now(),
            done: false,
        }
    }
}

#[async_trait]
impl Invoker for MetricsInvoker {
    crate::delegate_invoker!(inner);

    async fn invoke(&self, invocation: &Invocation) -> RpcResult {
        let record = self.metrics.start(invocation);
        let r = self.inner.invoke(invocation).await;
        record.finish(&r);
        r
    }
}
