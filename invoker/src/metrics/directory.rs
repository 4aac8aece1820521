//! Directory and notification metrics under Dubbo's names: the provider counts of a directory
//! (`dubbo_registry_directory_num_{all,valid_total,to_reconnect_total,disable_total}`, Java's
//! `AbstractDirectory#getSummary`), the size of a service's last providers notification
//! (`dubbo_registry_notify_num_last`), and per application the notifications applied
//! (`dubbo_registry_notify_requests_total`) and their apply times
//! (`dubbo_notify_rt_milliseconds_*`).

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use metrics::{Gauge, Label};
use parking_lot::Mutex;
use registry_core::metrics::names::{self, label, MODULE_ID};
use registry_core::metrics::{identity, registry_cluster, RtGauges};
use registry_core::Url;
use rustc_hash::FxHashMap;

/// The provider counts of one directory.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DirectoryCounts {
    /// Invokers held (`num_all`).
    pub all: usize,
    /// Invokers available (`num_valid_total`).
    pub valid: usize,
    /// Invokers whose connection is down (`num_to_reconnect_total`).
    pub to_reconnect: usize,
    /// Providers listed without an invoker: disabled, or not referable (`num_disable_total`).
    pub disabled: usize,
}

/// Notification counts and times of one application (shared by its directories).
#[derive(Debug)]
struct AppNotify {
    requests: Gauge,
    rt: RtGauges,
}

fn app_notify(app: &str) -> Arc<AppNotify> {
    static APPS: OnceLock<Mutex<FxHashMap<String, Arc<AppNotify>>>> = OnceLock::new();
    let mut apps = APPS.get_or_init(|| Mutex::new(FxHashMap::default())).lock();
    if let Some(a) = apps.get(app) {
        return a.clone();
    }
    let labels = vec![
        Label::new(label::APPLICATION_MODULE_ID, MODULE_ID),
        Label::new(label::APPLICATION_NAME, app.to_owned()),
    ];
    let mut rt_labels = labels.clone();
    // Java labels the notify times with `interface` = the application name.
    rt_labels.push(Label::new(label::INTERFACE, app.to_owned()));
    let a = Arc::new(AppNotify {
        requests: metrics::gauge!(names::NOTIFY_REQUESTS.name, labels),
        rt: RtGauges::new(&names::NOTIFY_RT, &rt_labels),
    });
    apps.insert(app.to_owned(), a.clone());
    a
}

/// The metrics of one directory.
#[derive(Debug)]
pub struct DirectoryMetrics {
    counts: [Gauge; 4],
    notify_last: Gauge,
    app: Arc<AppNotify>,
}

impl DirectoryMetrics {
    /// Registers the gauges of the directory of `consumer` following `registry`
    /// (`register_mode`: `interface` or `instance`).
    pub fn new(consumer: &Url, registry: &Url, register_mode: &str) -> Self {
        let app = consumer
            .param("application")
            .filter(|a| !a.is_empty())
            .map_or_else(|| identity().application_name.clone(), str::to_owned);
        let service_key = consumer.service_key().unwrap_or_default();
        let app_labels = [
            Label::new(label::APPLICATION_MODULE_ID, MODULE_ID),
            Label::new(label::APPLICATION_NAME, app.clone()),
            Label::new(label::INTERFACE, service_key),
        ];
        let mut labels = app_labels.to_vec();
        labels.push(Label::new(label::REGISTER_MODE, register_mode.to_owned()));
        labels.push(Label::new(label::REGISTRY, registry_cluster(registry)));
        let g = |f: names::Family| metrics::gauge!(f.name, labels.clone());
        DirectoryMetrics {
            counts: [
                g(names::DIRECTORY_ALL),
                g(names::DIRECTORY_VALID),
                g(names::DIRECTORY_TO_RECONNECT),
                g(names::DIRECTORY_DISABLE),
            ],
            notify_last: metrics::gauge!(names::NOTIFY_NUM_LAST.name, app_labels.to_vec()),
            app: app_notify(&app),
        }
    }

    /// Publishes the provider counts.
    pub fn set_counts(&self, c: DirectoryCounts) {
        for (g, v) in self
            .counts
            .iter()
            .zip([c.all, c.valid, c.to_reconnect, c.disabled])
        {
            g.set(v as f64);
        }
    }

    /// One notification was applied in `took`; `providers` is the size of a providers list
    /// (`None` for other categories).
    pub fn notified(&self, providers: Option<usize>, took: Duration) {
        self.app.requests.increment(1.0);
        self.app.rt.record(took);
        if let Some(n) = providers {
            self.notify_last.set(n as f64);
        }
    }
}
