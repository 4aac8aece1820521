//! Dubbo 3.3's metric names, descriptions and label keys, as a Java application exports them
//! to Prometheus (`MetricsKey` in `dubbo-metrics-event`, rendered by micrometer: dots become
//! underscores). Every metric this workspace records is named here and nowhere else.
//!
//! Label keys of each family are those a Java 3.3.6 consumer's scrape shows (checked by
//! `cli/tests/observe_java.rs` against a real one).

/// How a family is exported (the `# TYPE` line Java's scrape shows for it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A monotonic counter.
    Counter,
    /// A gauge (Java exports registry counts as gauges too).
    Gauge,
}

/// One metric family: its Prometheus name, Java's description and its type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Family {
    /// The Prometheus name, e.g. `dubbo_consumer_requests_total`.
    pub name: &'static str,
    /// Java's description (the `# HELP` text).
    pub help: &'static str,
    /// Counter or gauge.
    pub kind: Kind,
}

const fn counter(name: &'static str, help: &'static str) -> Family {
    Family {
        name,
        help,
        kind: Kind::Counter,
    }
}

const fn gauge(name: &'static str, help: &'static str) -> Family {
    Family {
        name,
        help,
        kind: Kind::Gauge,
    }
}

/// Label keys.
pub mod label {
    /// The application (a consumer URL's `application`).
    pub const APPLICATION_NAME: &str = "application_name";
    /// Java's id of the application model; a process here is one application: `1.0`.
    pub const APPLICATION_MODULE_ID: &str = "application_module_id";
    /// The framework version (Java: Dubbo's; here this workspace's).
    pub const APPLICATION_VERSION: &str = "application_version";
    /// Java: the Dubbo build's commit; here the commit this workspace was built from, if known.
    pub const GIT_COMMIT_ID: &str = "git_commit_id";
    /// The host name.
    pub const HOSTNAME: &str = "hostname";
    /// The address the application registers.
    pub const IP: &str = "ip";
    /// The interface (method metrics), or the service key `interface[:version]` (registry
    /// and directory metrics), as Java labels them.
    pub const INTERFACE: &str = "interface";
    /// The method (the real method of a generic `$invoke`).
    pub const METHOD: &str = "method";
    /// The service group (`""` when none).
    pub const GROUP: &str = "group";
    /// The service version (`""` when none).
    pub const VERSION: &str = "version";
    /// The registry a register/subscribe went to (Java: the registry config's id,
    /// `default`).
    pub const REGISTRY_CLUSTER: &str = "registry_cluster";
    /// The registry of a directory (Java: the registry config's id, `default`).
    pub const REGISTRY: &str = "registry";
    /// `interface` or `instance`: the discovery level of a directory.
    pub const REGISTER_MODE: &str = "register_mode";
}

/// Java's `application_module_id` of the first application of a process.
pub const MODULE_ID: &str = "1.0";

// ----- consumer calls (labels: application_module_id, application_name, group, interface,
// method, version)

/// Calls started.
pub const CONSUMER_REQUESTS: Family = counter("dubbo_consumer_requests_total", "Total Requests");
/// Calls that returned a result.
pub const CONSUMER_SUCCEED: Family = counter(
    "dubbo_consumer_requests_succeed_total",
    "Total Succeed Requests",
);
/// Calls that failed, whatever the reason.
pub const CONSUMER_FAILED_TOTAL: Family = counter(
    "dubbo_consumer_requests_failed_total",
    "Total Failed Requests",
);
/// Calls the provider's code failed (a business exception).
pub const CONSUMER_BUSINESS_FAILED: Family = counter(
    "dubbo_consumer_requests_business_failed_total",
    "Total Failed Business Requests",
);
/// Calls that timed out.
pub const CONSUMER_TIMEOUT: Family = counter(
    "dubbo_consumer_requests_timeout_total",
    "Total Timeout Failed Requests",
);
/// Calls refused by a concurrency limit.
pub const CONSUMER_LIMIT: Family = counter(
    "dubbo_consumer_requests_limit_total",
    "Total Limit Failed Requests",
);
/// Calls that failed for another reason (no provider, unknown).
pub const CONSUMER_UNKNOWN_FAILED: Family = counter(
    "dubbo_consumer_requests_unknown_failed_total",
    "Total Unknown Failed Requests",
);
/// Calls that failed on the network.
pub const CONSUMER_NETWORK_FAILED: Family = counter(
    "dubbo_consumer_requests_failed_network_total",
    "Total network Failed Requests",
);
/// Calls refused because the registry forbids the service (`empty://`, all disabled).
pub const CONSUMER_SERVICE_UNAVAILABLE: Family = counter(
    "dubbo_consumer_requests_failed_service_unavailable_total",
    "Total Service Unavailable Failed Requests",
);
/// Calls whose request or response could not be (de)serialized.
pub const CONSUMER_CODEC_FAILED: Family = counter(
    "dubbo_consumer_requests_failed_codec_total",
    "Total Codec Failed Requests",
);
/// Calls in flight.
pub const CONSUMER_PROCESSING: Family = gauge(
    "dubbo_consumer_requests_processing_total",
    "Processing Requests",
);
/// Response time of the last call (ms).
pub const CONSUMER_RT_LAST: Family =
    gauge("dubbo_consumer_rt_milliseconds_last", "Last Response Time");
/// Smallest response time (ms).
pub const CONSUMER_RT_MIN: Family =
    gauge("dubbo_consumer_rt_milliseconds_min", "Min Response Time");
/// Largest response time (ms).
pub const CONSUMER_RT_MAX: Family =
    gauge("dubbo_consumer_rt_milliseconds_max", "Max Response Time");
/// Sum of response times (ms).
pub const CONSUMER_RT_SUM: Family =
    gauge("dubbo_consumer_rt_milliseconds_sum", "Sum Response Time");
/// Mean response time (ms).
pub const CONSUMER_RT_AVG: Family = gauge(
    "dubbo_consumer_rt_milliseconds_avg",
    "Average Response Time",
);

// ----- consumer calls, aggregated over a sliding window (Java's `dubbo.metrics.aggregation`)

/// Calls per second over the last 3 s.
pub const CONSUMER_QPS: Family = gauge("dubbo_consumer_qps_total", "Query Per Seconds");
/// Calls started in the window.
pub const CONSUMER_REQUESTS_AGG: Family = gauge(
    "dubbo_consumer_requests_total_aggregate",
    "Aggregated Total Requests",
);
/// Calls that returned a result, in the window.
pub const CONSUMER_SUCCEED_AGG: Family = gauge(
    "dubbo_consumer_requests_succeed_aggregate",
    "Aggregated Succeed Requests",
);
/// Calls that failed for an unknown reason, in the window.
pub const CONSUMER_UNKNOWN_FAILED_AGG: Family = gauge(
    "dubbo_consumer_requests_failed_aggregate",
    "Aggregated Failed Requests",
);
/// Business exceptions in the window.
pub const CONSUMER_BUSINESS_FAILED_AGG: Family = gauge(
    "dubbo_consumer_requests_business_failed_aggregate",
    "Aggregated Business Failed Requests",
);
/// Timeouts in the window.
pub const CONSUMER_TIMEOUT_AGG: Family = gauge(
    "dubbo_consumer_requests_timeout_failed_aggregate",
    "Aggregated timeout Failed Requests",
);
/// Limit refusals in the window.
pub const CONSUMER_LIMIT_AGG: Family = gauge(
    "dubbo_consumer_requests_limit_aggregate",
    "Aggregated limit Requests",
);
/// Failed calls in the window (every reason).
pub const CONSUMER_FAILED_TOTAL_AGG: Family = gauge(
    "dubbo_consumer_requests_failed_total_aggregate",
    "Aggregated failed total Requests",
);
/// Network failures in the window.
pub const CONSUMER_NETWORK_FAILED_AGG: Family = gauge(
    "dubbo_consumer_requests_failed_network_total_aggregate",
    "Aggregated failed network total Requests",
);
/// Codec failures in the window.
pub const CONSUMER_CODEC_FAILED_AGG: Family = gauge(
    "dubbo_consumer_requests_failed_codec_total_aggregate",
    "Aggregated failed codec total Requests",
);
/// Service-unavailable refusals in the window (Java's description, copied as it is).
pub const CONSUMER_SERVICE_UNAVAILABLE_AGG: Family = gauge(
    "dubbo_consumer_requests_failed_service_unavailable_total_aggregate",
    "Aggregated failed codec total Requests",
);
/// Smallest response time in the window (ms).
pub const CONSUMER_RT_MIN_AGG: Family = gauge(
    "dubbo_consumer_rt_min_milliseconds_aggregate",
    "Aggregated Min Response",
);
/// Largest response time in the window (ms).
pub const CONSUMER_RT_MAX_AGG: Family = gauge(
    "dubbo_consumer_rt_max_milliseconds_aggregate",
    "Aggregated Max Response",
);
/// Mean response time in the window (ms).
pub const CONSUMER_RT_AVG_AGG: Family = gauge(
    "dubbo_consumer_rt_avg_milliseconds_aggregate",
    "Aggregated Avg Response",
);
/// Median response time in the window (ms).
pub const CONSUMER_RT_P50: Family =
    gauge("dubbo_consumer_rt_milliseconds_p50", "Response Time P50");
/// 90th percentile response time in the window (ms).
pub const CONSUMER_RT_P90: Family =
    gauge("dubbo_consumer_rt_milliseconds_p90", "Response Time P90");
/// 95th percentile response time in the window (ms).
pub const CONSUMER_RT_P95: Family =
    gauge("dubbo_consumer_rt_milliseconds_p95", "Response Time P95");
/// 99th percentile response time in the window (ms).
pub const CONSUMER_RT_P99: Family =
    gauge("dubbo_consumer_rt_milliseconds_p99", "Response Time P99");

// ----- directories (labels: application_module_id, application_name, interface = service
// key, register_mode, registry)

/// Providers the directory holds an invoker for.
pub const DIRECTORY_ALL: Family = gauge("dubbo_registry_directory_num_all", "All Directory Urls");
/// Invokers available for calls.
pub const DIRECTORY_VALID: Family = gauge(
    "dubbo_registry_directory_num_valid_total",
    "Valid Directory Urls",
);
/// Invokers whose connection is down (being reconnected).
pub const DIRECTORY_TO_RECONNECT: Family = gauge(
    "dubbo_registry_directory_num_to_reconnect_total",
    "ToReconnect Directory Urls",
);
/// Providers listed but disabled (by a configurator, or not referable).
pub const DIRECTORY_DISABLE: Family = gauge(
    "dubbo_registry_directory_num_disable_total",
    "Disable Directory Urls",
);

// ----- notifications (labels: application_module_id, application_name [, interface])

/// Notifications applied by the application's directories.
pub const NOTIFY_REQUESTS: Family = gauge(
    "dubbo_registry_notify_requests_total",
    "Total Notify Requests",
);
/// URLs in a service's last providers notification (label `interface` = service key).
pub const NOTIFY_NUM_LAST: Family = gauge("dubbo_registry_notify_num_last", "Last Notify Nums");
/// Time to apply a notification (ms); Java labels it `interface` = the application name.
pub const NOTIFY_RT_LAST: Family = gauge("dubbo_notify_rt_milliseconds_last", "Last Response Time");
/// See [`NOTIFY_RT_LAST`].
pub const NOTIFY_RT_MIN: Family = gauge("dubbo_notify_rt_milliseconds_min", "Min Response Time");
/// See [`NOTIFY_RT_LAST`].
pub const NOTIFY_RT_MAX: Family = gauge("dubbo_notify_rt_milliseconds_max", "Max Response Time");
/// See [`NOTIFY_RT_LAST`].
pub const NOTIFY_RT_SUM: Family = gauge("dubbo_notify_rt_milliseconds_sum", "Sum Response Time");
/// See [`NOTIFY_RT_LAST`].
pub const NOTIFY_RT_AVG: Family =
    gauge("dubbo_notify_rt_milliseconds_avg", "Average Response Time");

// ----- registry operations (labels: application_module_id, application_name,
// application_version, git_commit_id, hostname, ip, registry_cluster; the subscribe RT family
// has no registry_cluster, as in Java)

/// Registrations attempted.
pub const REGISTER_REQUESTS: Family = gauge(
    "dubbo_registry_register_requests_total",
    "Total Register Requests",
);
/// Registrations that succeeded at once.
pub const REGISTER_SUCCEED: Family = gauge(
    "dubbo_registry_register_requests_succeed_total",
    "Succeed Register Requests",
);
/// Registrations that failed (and are retried in the background unless `check`).
pub const REGISTER_FAILED: Family = gauge(
    "dubbo_registry_register_requests_failed_total",
    "Failed Register Requests",
);
/// Subscriptions attempted.
pub const SUBSCRIBE_NUM: Family =
    gauge("dubbo_registry_subscribe_num_total", "Total Subscribe Num");
/// Subscriptions that succeeded at once.
pub const SUBSCRIBE_SUCCEED: Family = gauge(
    "dubbo_registry_subscribe_num_succeed_total",
    "Succeed Subscribe Num",
);
/// Subscriptions that failed (and are retried in the background unless `check`).
pub const SUBSCRIBE_FAILED: Family = gauge(
    "dubbo_registry_subscribe_num_failed_total",
    "Failed Subscribe Num",
);
/// Time of a registration (ms).
pub const REGISTER_RT_LAST: Family =
    gauge("dubbo_register_rt_milliseconds_last", "Last Response Time");
/// See [`REGISTER_RT_LAST`].
pub const REGISTER_RT_MIN: Family =
    gauge("dubbo_register_rt_milliseconds_min", "Min Response Time");
/// See [`REGISTER_RT_LAST`].
pub const REGISTER_RT_MAX: Family =
    gauge("dubbo_register_rt_milliseconds_max", "Max Response Time");
/// See [`REGISTER_RT_LAST`].
pub const REGISTER_RT_SUM: Family =
    gauge("dubbo_register_rt_milliseconds_sum", "Sum Response Time");
/// See [`REGISTER_RT_LAST`].
pub const REGISTER_RT_AVG: Family = gauge(
    "dubbo_register_rt_milliseconds_avg",
    "Average Response Time",
);
/// Time of a subscription until its first lists (ms).
pub const SUBSCRIBE_RT_LAST: Family =
    gauge("dubbo_subscribe_rt_milliseconds_last", "Last Response Time");
/// See [`SUBSCRIBE_RT_LAST`].
pub const SUBSCRIBE_RT_MIN: Family =
    gauge("dubbo_subscribe_rt_milliseconds_min", "Min Response Time");
/// See [`SUBSCRIBE_RT_LAST`].
pub const SUBSCRIBE_RT_MAX: Family =
    gauge("dubbo_subscribe_rt_milliseconds_max", "Max Response Time");
/// See [`SUBSCRIBE_RT_LAST`].
pub const SUBSCRIBE_RT_SUM: Family =
    gauge("dubbo_subscribe_rt_milliseconds_sum", "Sum Response Time");
/// See [`SUBSCRIBE_RT_LAST`].
pub const SUBSCRIBE_RT_AVG: Family = gauge(
    "dubbo_subscribe_rt_milliseconds_avg",
    "Average Response Time",
);

/// The application itself (value 1; labels: application_module_id, application_name,
/// application_version, git_commit_id, hostname, ip).
pub const APPLICATION_INFO: Family =
    counter("dubbo_application_info_total", "Total Application Info");

/// The five response-time gauges of one measured operation, in the order
/// `[last, min, max, sum, avg]`.
pub type RtFamilies = [Family; 5];

/// Consumer call response times.
pub const CONSUMER_RT: RtFamilies = [
    CONSUMER_RT_LAST,
    CONSUMER_RT_MIN,
    CONSUMER_RT_MAX,
    CONSUMER_RT_SUM,
    CONSUMER_RT_AVG,
];
/// Registration times.
pub const REGISTER_RT: RtFamilies = [
    REGISTER_RT_LAST,
    REGISTER_RT_MIN,
    REGISTER_RT_MAX,
    REGISTER_RT_SUM,
    REGISTER_RT_AVG,
];
/// Subscription times.
pub const SUBSCRIBE_RT: RtFamilies = [
    SUBSCRIBE_RT_LAST,
    SUBSCRIBE_RT_MIN,
    SUBSCRIBE_RT_MAX,
    SUBSCRIBE_RT_SUM,
    SUBSCRIBE_RT_AVG,
];
/// Notification apply times.
pub const NOTIFY_RT: RtFamilies = [
    NOTIFY_RT_LAST,
    NOTIFY_RT_MIN,
    NOTIFY_RT_MAX,
    NOTIFY_RT_SUM,
    NOTIFY_RT_AVG,
];

/// Every family this workspace records (always on, and with aggregation on).
pub const ALL: &[Family] = &[
    CONSUMER_REQUESTS,
    CONSUMER_SUCCEED,
    CONSUMER_FAILED_TOTAL,
    CONSUMER_BUSINESS_FAILED,
    CONSUMER_TIMEOUT,
    CONSUMER_LIMIT,
    CONSUMER_UNKNOWN_FAILED,
    CONSUMER_NETWORK_FAILED,
    CONSUMER_SERVICE_UNAVAILABLE,
    CONSUMER_CODEC_FAILED,
    CONSUMER_PROCESSING,
    CONSUMER_RT_LAST,
    CONSUMER_RT_MIN,
    CONSUMER_RT_MAX,
    CONSUMER_RT_SUM,
    CONSUMER_RT_AVG,
    CONSUMER_QPS,
    CONSUMER_REQUESTS_AGG,
    CONSUMER_SUCCEED_AGG,
    CONSUMER_UNKNOWN_FAILED_AGG,
    CONSUMER_BUSINESS_FAILED_AGG,
    CONSUMER_TIMEOUT_AGG,
    CONSUMER_LIMIT_AGG,
    CONSUMER_FAILED_TOTAL_AGG,
    CONSUMER_NETWORK_FAILED_AGG,
    CONSUMER_CODEC_FAILED_AGG,
    CONSUMER_SERVICE_UNAVAILABLE_AGG,
    CONSUMER_RT_MIN_AGG,
    CONSUMER_RT_MAX_AGG,
    CONSUMER_RT_AVG_AGG,
    CONSUMER_RT_P50,
    CONSUMER_RT_P90,
    CONSUMER_RT_P95,
    CONSUMER_RT_P99,
    DIRECTORY_ALL,
    DIRECTORY_VALID,
    DIRECTORY_TO_RECONNECT,
    DIRECTORY_DISABLE,
    NOTIFY_REQUESTS,
    NOTIFY_NUM_LAST,
    NOTIFY_RT_LAST,
    NOTIFY_RT_MIN,
    NOTIFY_RT_MAX,
    NOTIFY_RT_SUM,
    NOTIFY_RT_AVG,
    REGISTER_REQUESTS,
    REGISTER_SUCCEED,
    REGISTER_FAILED,
    SUBSCRIBE_NUM,
    SUBSCRIBE_SUCCEED,
    SUBSCRIBE_FAILED,
    REGISTER_RT_LAST,
    REGISTER_RT_MIN,
    REGISTER_RT_MAX,
    REGISTER_RT_SUM,
    REGISTER_RT_AVG,
    SUBSCRIBE_RT_LAST,
    SUBSCRIBE_RT_MIN,
    SUBSCRIBE_RT_MAX,
    SUBSCRIBE_RT_SUM,
    SUBSCRIBE_RT_AVG,
    APPLICATION_INFO,
];

/// Gives every family its description and type with the installed `metrics` recorder (call it
/// once after installing one; the Prometheus exporter then prints `# HELP` lines).
pub fn describe_all() {
    for f in ALL {
        match f.kind {
            Kind::Counter => metrics::describe_counter!(f.name, f.help),
            Kind::Gauge => metrics::describe_gauge!(f.name, f.help),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_prometheus_safe() {
        let mut seen = std::collections::HashSet::new();
        for f in ALL {
            assert!(seen.insert(f.name), "{} twice", f.name);
            assert!(f.name.starts_with("dubbo_"), "{}", f.name);
            assert!(
                f.name
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_'),
                "{}",
                f.name
            );
        }
    }
}
