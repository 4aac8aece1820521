//! The behavioural contract every [`Registry`] implementation must pass (memory, ZooKeeper,
//! Nacos): register → notify, unregister → `empty://`, version `*`, group lists, disabled
//! providers, categories, special characters and `$` in interface names, unsubscribe on
//! drop, lookup, destroy, interface `*` and consumer registration.
//!
//! A backend test calls [`run_all`] (or [`run_case`] per case, for parallel tests) with its
//! [`Capabilities`] and a factory. The factory must return a **new client** of the same
//! registry namespace each time (for ZooKeeper: a new session on the same root; for Nacos: a
//! new client on the same namespace; for memory: a new handle on the same named store), so a
//! provider side and a consumer side are separate clients that meet in the registry. Every
//! case uses its own unique interface names, so cases may share a namespace and run in
//! parallel.
//!
//! Assertions compare provider **addresses** (`host:port`) and a few params, never whole URLs:
//! backends legitimately rewrite provider URLs (ZooKeeper strips `timestamp`/`pid`, Nacos adds
//! metadata). A case panics with a message naming the case and what was awaited.

use std::collections::{BTreeMap, BTreeSet};
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use registry_core::{Registry, Subscription, Url};

use crate::set;

/// What a backend supports; cases needing a missing capability are skipped (with a message).
#[derive(Debug, Clone)]
pub struct Capabilities {
    /// `configurators` category (override URLs) is stored and notified.
    pub configurators: bool,
    /// `routers` category is stored and notified.
    pub routers: bool,
    /// `category=consumers` registrations are stored and can be subscribed to.
    pub consumers: bool,
    /// Interface `*` subscriptions see services registered later.
    pub any_interface: bool,
    /// `group=*` / `version=*` / group-list subscriptions (Nacos needs wildcard support).
    pub wildcards: bool,
    /// `dynamic=false` registrations survive `destroy` of the registering client.
    pub persistent: bool,
    /// How long a change may take to reach a subscriber (polling backends need more).
    pub notify_timeout: Duration,
}

impl Capabilities {
    /// Everything supported, changes visible within 10 s (memory, ZooKeeper).
    pub fn full() -> Self {
        Capabilities {
            configurators: true,
            routers: true,
            consumers: true,
            any_interface: true,
            wildcards: true,
            persistent: true,
            notify_timeout: Duration::from_secs(10),
        }
    }

    /// The categories a consumer of this backend subscribes to.
    fn categories(&self) -> String {
        let mut c = String::from("providers");
        if self.configurators {
            c.push_str(",configurators");
        }
        if self.routers {
            c.push_str(",routers");
        }
        c
    }
}

/// One contract case.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Case {
    /// Providers registered before and after subscribing are notified, as a full list.
    RegisterNotify,
    /// A subscription to a service without providers gets `empty://` for every category.
    InitialEmpty,
    /// Unregistering the last provider notifies the `empty://` URL built from the consumer.
    UnregisterEmpty,
    /// `version=*` sees every version; a concrete version only its own; none only none.
    VersionWildcard,
    /// `group=a,b` sees groups a and b; `group=*` all; no group only ungrouped providers.
    GroupList,
    /// `enabled=false` providers are not notified.
    DisabledProviders,
    /// configurators and routers are notified per category, separately from providers.
    Categories,
    /// `$` in the interface name and awkward characters in param values survive.
    SpecialChars,
    /// Dropping a subscription unsubscribes; subscribing again works.
    UnsubscribeOnDrop,
    /// `lookup` returns the matching providers without `empty://`.
    Lookup,
    /// `destroy` removes dynamic registrations and ends subscription streams.
    Destroy,
    /// Interface `*` subscriptions see services registered later.
    AnyInterface,
    /// A consumer registration (`category=consumers`) is visible to a consumers subscriber.
    ConsumerRegistration,
}

impl Case {
    /// Every case, in the order [`run_all`] runs them.
    pub const ALL: [Case; 13] = [
        Case::RegisterNotify,
        Case::InitialEmpty,
        Case::UnregisterEmpty,
        Case::VersionWildcard,
        Case::GroupList,
        Case::DisabledProviders,
        Case::Categories,
        Case::SpecialChars,
        Case::UnsubscribeOnDrop,
        Case::Lookup,
        Case::Destroy,
        Case::AnyInterface,
        Case::ConsumerRegistration,
    ];

    /// A short name (used in interface names and messages).
    pub fn name(self) -> &'static str {
        match self {
            Case::RegisterNotify => "RegisterNotify",
            Case::InitialEmpty => "InitialEmpty",
            Case::UnregisterEmpty => "UnregisterEmpty",
            Case::VersionWildcard => "VersionWildcard",
            Case::GroupList => "GroupList",
            Case::DisabledProviders => "DisabledProviders",
            Case::Categories => "Categories",
            Case::SpecialChars => "SpecialChars",
            Case::UnsubscribeOnDrop => "UnsubscribeOnDrop",
            Case::Lookup => "Lookup",
            Case::Destroy => "Destroy",
            Case::AnyInterface => "AnyInterface",
            Case::ConsumerRegistration => "ConsumerRegistration",
        }
    }
}

/// Runs every case in order; panics on the first failure.
pub async fn run_all<F, Fut>(caps: &Capabilities, make: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Arc<dyn Registry>>,
{
    for case in Case::ALL {
        eprintln!("contract: {}", case.name());
        run_case(case, caps, &make).await;
    }
}

/// Runs one case; panics when the backend breaks the contract.
pub async fn run_case<F, Fut>(case: Case, caps: &Capabilities, make: &F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Arc<dyn Registry>>,
{
    let cx = Cx {
        caps: caps.clone(),
        case,
    };
    match case {
        Case::RegisterNotify => register_notify(&cx, make().await, make().await).await,
        Case::InitialEmpty => initial_empty(&cx, make().await).await,
        Case::UnregisterEmpty => unregister_empty(&cx, make().await, make().await).await,
        Case::VersionWildcard => {
            if skip(&cx, caps.wildcards, "wildcards") {
                return;
            }
            version_wildcard(&cx, make().await, make().await).await
        }
        Case::GroupList => {
            if skip(&cx, caps.wildcards, "wildcards") {
                return;
            }
            group_list(&cx, make().await, make().await).await
        }
        Case::DisabledProviders => disabled(&cx, make().await, make().await).await,
        Case::Categories => {
            if skip(
                &cx,
                caps.configurators || caps.routers,
                "configurators/routers",
            ) {
                return;
            }
            categories(&cx, make().await, make().await).await
        }
        Case::SpecialChars => special_chars(&cx, make().await, make().await).await,
        Case::UnsubscribeOnDrop => unsubscribe_on_drop(&cx, make().await, make().await).await,
        Case::Lookup => lookup(&cx, make().await, make().await).await,
        Case::Destroy => destroy(&cx, make().await, make().await).await,
        Case::AnyInterface => {
            if skip(&cx, caps.any_interface, "interface *") {
                return;
            }
            any_interface(&cx, make().await, make().await).await
        }
        Case::ConsumerRegistration => {
            if skip(&cx, caps.consumers, "consumers category") {
                return;
            }
            consumer_registration(&cx, make().await, make().await).await
        }
    }
}

fn skip(cx: &Cx, supported: bool, what: &str) -> bool {
    if !supported {
        eprintln!(
            "contract: {} skipped: backend has no {what}",
            cx.case.name()
        );
    }
    !supported
}

struct Cx {
    caps: Capabilities,
    case: Case,
}

impl Cx {
    /// A unique interface name for this case (letters, digits and dots only).
    fn service(&self) -> String {
        static N: AtomicU64 = AtomicU64::new(0);
        let t = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_millis())
            .unwrap_or(0);
        format!(
            "org.contract.{}.S{}x{}x{t}",
            self.case.name(),
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        )
    }

    fn consumer(&self, iface: &str, extra: &str) -> Url {
        consumer_url(iface, &self.caps.categories(), extra)
    }

    fn fail(&self, what: &str) -> ! {
        panic!("contract case {} failed: {what}", self.case.name())
    }
}

/// A provider URL like a Dubbo 3.3 provider registers (`extra` = `k=v&...`, may be empty).
pub fn provider_url(iface: &str, port: u16, extra: &str) -> Url {
    let ts = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis())
        .unwrap_or(0);
    let mut s = format!(
        "dubbo://127.0.0.1:{port}/{iface}?anyhost=true&application=contract-provider&deprecated=false\
         &dubbo=2.0.2&dynamic=true&generic=false&interface={iface}&methods=sayHello,sayBye\
         &pid={}&release=3.3.1&side=provider&timestamp={ts}",
        std::process::id()
    );
    if !extra.is_empty() {
        s.push('&');
        s.push_str(extra);
    }
    Url::parse(&s).unwrap_or_else(|e| panic!("bad provider URL {s}: {e}"))
}

/// A consumer subscribe URL (`extra` = `k=v&...`, may be empty; it may override `category`).
pub fn consumer_url(iface: &str, categories: &str, extra: &str) -> Url {
    let mut s = format!(
        "consumer://127.0.0.1/{iface}?application=contract-consumer&category={categories}\
         &check=false&dubbo=2.0.2&interface={iface}&side=consumer"
    );
    if !extra.is_empty() {
        s.push('&');
        s.push_str(extra);
    }
    Url::parse(&s).unwrap_or_else(|e| panic!("bad consumer URL {s}: {e}"))
}

/// A subscription plus the latest list per category.
pub struct Watch {
    sub: Subscription,
    latest: BTreeMap<String, Vec<Url>>,
    history: Vec<registry_core::Notification>,
    ended: bool,
}

impl std::fmt::Debug for Watch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Watch")
            .field("latest", &self.latest)
            .field("ended", &self.ended)
            .finish()
    }
}

impl Watch {
    /// Wraps a subscription.
    pub fn new(sub: Subscription) -> Self {
        Watch {
            sub,
            latest: BTreeMap::new(),
            history: Vec::new(),
            ended: false,
        }
    }

    /// Subscribes `r` to `consumer` and wraps the subscription; panics when subscribing fails.
    pub async fn subscribe(r: &(impl Registry + ?Sized), consumer: &Url) -> Self {
        let sub = r
            .subscribe(consumer)
            .await
            .unwrap_or_else(|e| panic!("subscribe {consumer}: {e}"));
        Watch::new(sub)
    }

    /// The latest list of `category` (`None` before its first notification).
    pub fn latest(&self, category: &str) -> Option<&[Url]> {
        self.latest.get(category).map(Vec::as_slice)
    }

    /// Addresses of the non-`empty://` URLs of `category`.
    pub fn addresses(&self, category: &str) -> BTreeSet<String> {
        self.latest(category)
            .unwrap_or_default()
            .iter()
            .filter(|u| u.protocol() != Some("empty"))
            .filter_map(Url::address)
            .collect()
    }

    /// True when the latest list of `category` is the single `empty://` marker.
    pub fn is_empty_marker(&self, category: &str) -> bool {
        matches!(self.latest(category), Some([u]) if u.protocol() == Some("empty"))
    }

    /// True once the stream has ended.
    pub fn ended(&self) -> bool {
        self.ended
    }

    /// Every notification applied so far, in order.
    pub fn history(&self) -> &[registry_core::Notification] {
        &self.history
    }

    /// Applies the notifications already queued, without waiting.
    pub fn drain(&mut self) {
        while let Some(n) = self.sub.try_next() {
            self.apply(n);
        }
    }

    fn apply(&mut self, n: registry_core::Notification) {
        assert!(
            !n.urls.is_empty(),
            "a notification with an empty list (must be empty://)"
        );
        self.latest.insert(n.category.to_string(), n.urls.to_vec());
        self.history.push(n);
    }

    /// Applies notifications until the `providers` addresses are exactly `addrs`; panics
    /// after `timeout` naming `what`.
    pub async fn until_providers(&mut self, what: &str, timeout: Duration, addrs: &[&str]) {
        let want = set(addrs);
        self.until(what, timeout, |w| w.addresses("providers") == want)
            .await;
    }

    /// Applies notifications until the `providers` list is the `empty://` marker; panics
    /// after `timeout` naming `what`.
    pub async fn until_no_providers(&mut self, what: &str, timeout: Duration) {
        self.until(what, timeout, |w| w.is_empty_marker("providers"))
            .await;
    }

    /// Applies notifications until `pred` holds; panics after `timeout` naming `what`.
    pub async fn until(&mut self, what: &str, timeout: Duration, pred: impl Fn(&Watch) -> bool) {
        let deadline = Instant::now() + timeout;
        loop {
            if pred(self) {
                return;
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                panic!(
                    "timed out after {timeout:?} waiting for: {what}; latest: {:?}",
                    self.latest
                );
            }
            match tokio::time::timeout(left, self.sub.next()).await {
                Ok(Some(n)) => self.apply(n),
                Ok(None) => {
                    self.ended = true;
                    if !pred(self) {
                        panic!(
                            "subscription ended while waiting for: {what}; latest: {:?}",
                            self.latest
                        );
                    }
                    return;
                }
                Err(_) => {}
            }
        }
    }
}

async fn reg(cx: &Cx, r: &Arc<dyn Registry>, u: &Url) {
    if let Err(e) = r.register(u).await {
        cx.fail(&format!("register {u}: {e}"));
    }
}

async fn unreg(cx: &Cx, r: &Arc<dyn Registry>, u: &Url) {
    if let Err(e) = r.unregister(u).await {
        cx.fail(&format!("unregister {u}: {e}"));
    }
}

async fn sub(cx: &Cx, r: &Arc<dyn Registry>, consumer: &Url) -> Watch {
    match r.subscribe(consumer).await {
        Ok(s) => Watch::new(s),
        Err(e) => cx.fail(&format!("subscribe {consumer}: {e}")),
    }
}

async fn register_notify(cx: &Cx, p: Arc<dyn Registry>, c: Arc<dyn Registry>) {
    let t = cx.caps.notify_timeout;
    let s = cx.service();
    let a = provider_url(&s, 20001, "");
    reg(cx, &p, &a).await;
    reg(cx, &p, &a).await; // idempotent
    let mut w = sub(cx, &c, &cx.consumer(&s, "")).await;
    w.until("provider A registered before subscribing", t, |w| {
        w.addresses("providers") == set(&["127.0.0.1:20001"])
    })
    .await;
    let b = provider_url(&s, 20002, "");
    reg(cx, &p, &b).await;
    w.until("providers A and B (full list)", t, |w| {
        w.addresses("providers") == set(&["127.0.0.1:20001", "127.0.0.1:20002"])
    })
    .await;
    let n = w.latest("providers").map_or(0, <[Url]>::len);
    if n != 2 {
        cx.fail(&format!("expected exactly 2 provider URLs, got {n}"));
    }
    drop(w);
    p.destroy().await;
    c.destroy().await;
}

async fn initial_empty(cx: &Cx, c: Arc<dyn Registry>) {
    let s = cx.service();
    let consumer = cx.consumer(&s, "version=1.0.0");
    let mut w = sub(cx, &c, &consumer).await;
    let cats_text = cx.caps.categories();
    let cats: Vec<&str> = cats_text.split(',').collect();
    w.until(
        "empty:// for every subscribed category",
        cx.caps.notify_timeout,
        |w| cats.iter().all(|c| w.is_empty_marker(c)),
    )
    .await;
    for cat in &cats {
        let e = &w.latest(cat).unwrap_or_default()[0];
        if e.param("category") != Some(*cat) || e.service_interface() != Some(s.as_str()) {
            cx.fail(&format!(
                "empty URL for {cat} must carry category and interface: {e}"
            ));
        }
    }
    drop(w);
    c.destroy().await;
}

async fn unregister_empty(cx: &Cx, p: Arc<dyn Registry>, c: Arc<dyn Registry>) {
    let t = cx.caps.notify_timeout;
    let s = cx.service();
    let a = provider_url(&s, 20011, "version=1.0.0");
    reg(cx, &p, &a).await;
    let mut w = sub(cx, &c, &cx.consumer(&s, "version=1.0.0")).await;
    w.until("provider A", t, |w| {
        w.addresses("providers") == set(&["127.0.0.1:20011"])
    })
    .await;
    unreg(cx, &p, &a).await;
    w.until("empty:// after unregistering the last provider", t, |w| {
        w.is_empty_marker("providers")
    })
    .await;
    let e = &w.latest("providers").unwrap_or_default()[0];
    let ok = e.param("category") == Some("providers")
        && e.service_interface() == Some(s.as_str())
        && e.param("version") == Some("1.0.0");
    if !ok {
        cx.fail(&format!(
            "empty URL must be built from the consumer (toUrlsWithEmpty): {e}"
        ));
    }
    drop(w);
    p.destroy().await;
    c.destroy().await;
}

async fn version_wildcard(cx: &Cx, p: Arc<dyn Registry>, c: Arc<dyn Registry>) {
    let t = cx.caps.notify_timeout;
    let s = cx.service();
    reg(cx, &p, &provider_url(&s, 20021, "version=1.0.0")).await;
    reg(cx, &p, &provider_url(&s, 20022, "version=2.0.0")).await;
    reg(cx, &p, &provider_url(&s, 20023, "")).await;
    let mut any = sub(cx, &c, &cx.consumer(&s, "version=*")).await;
    any.until("version=* sees every version", t, |w| {
        w.addresses("providers") == set(&["127.0.0.1:20021", "127.0.0.1:20022", "127.0.0.1:20023"])
    })
    .await;
    let mut one = sub(cx, &c, &cx.consumer(&s, "version=1.0.0")).await;
    one.until("version=1.0.0 sees only 1.0.0", t, |w| {
        w.addresses("providers") == set(&["127.0.0.1:20021"])
    })
    .await;
    let mut none = sub(cx, &c, &cx.consumer(&s, "")).await;
    none.until("no version sees only the unversioned provider", t, |w| {
        w.addresses("providers") == set(&["127.0.0.1:20023"])
    })
    .await;
    drop((any, one, none));
    p.destroy().await;
    c.destroy().await;
}

async fn group_list(cx: &Cx, p: Arc<dyn Registry>, c: Arc<dyn Registry>) {
    let t = cx.caps.notify_timeout;
    let s = cx.service();
    reg(cx, &p, &provider_url(&s, 20031, "group=a")).await;
    reg(cx, &p, &provider_url(&s, 20032, "group=b")).await;
    reg(cx, &p, &provider_url(&s, 20033, "group=c")).await;
    reg(cx, &p, &provider_url(&s, 20034, "")).await;
    let mut ab = sub(cx, &c, &cx.consumer(&s, "group=a,b")).await;
    ab.until("group=a,b sees a and b", t, |w| {
        w.addresses("providers") == set(&["127.0.0.1:20031", "127.0.0.1:20032"])
    })
    .await;
    let mut all = sub(cx, &c, &cx.consumer(&s, "group=*")).await;
    all.until("group=* sees every group", t, |w| {
        w.addresses("providers")
            == set(&[
                "127.0.0.1:20031",
                "127.0.0.1:20032",
                "127.0.0.1:20033",
                "127.0.0.1:20034",
            ])
    })
    .await;
    let mut none = sub(cx, &c, &cx.consumer(&s, "")).await;
    none.until("no group sees only the ungrouped provider", t, |w| {
        w.addresses("providers") == set(&["127.0.0.1:20034"])
    })
    .await;
    drop((ab, all, none));
    p.destroy().await;
    c.destroy().await;
}

async fn disabled(cx: &Cx, p: Arc<dyn Registry>, c: Arc<dyn Registry>) {
    let t = cx.caps.notify_timeout;
    let s = cx.service();
    reg(cx, &p, &provider_url(&s, 20041, "enabled=true")).await;
    reg(cx, &p, &provider_url(&s, 20042, "enabled=false")).await;
    let mut w = sub(cx, &c, &cx.consumer(&s, "")).await;
    w.until("only the enabled provider", t, |w| {
        w.addresses("providers") == set(&["127.0.0.1:20041"])
    })
    .await;
    // A later change still never shows the disabled one.
    reg(cx, &p, &provider_url(&s, 20043, "")).await;
    w.until("enabled providers after a change", t, |w| {
        w.addresses("providers") == set(&["127.0.0.1:20041", "127.0.0.1:20043"])
    })
    .await;
    drop(w);
    p.destroy().await;
    c.destroy().await;
}

async fn categories(cx: &Cx, p: Arc<dyn Registry>, c: Arc<dyn Registry>) {
    let t = cx.caps.notify_timeout;
    let s = cx.service();
    reg(cx, &p, &provider_url(&s, 20051, "")).await;
    let mut w = sub(cx, &c, &cx.consumer(&s, "")).await;
    let caps = cx.caps.clone();
    w.until("providers plus empty configurators/routers", t, |w| {
        w.addresses("providers") == set(&["127.0.0.1:20051"])
            && (!caps.configurators || w.is_empty_marker("configurators"))
            && (!caps.routers || w.is_empty_marker("routers"))
    })
    .await;
    let ov = Url::parse(&format!(
        "override://0.0.0.0/{s}?category=configurators&dynamic=false&enabled=true&timeout=999"
    ))
    .unwrap_or_else(|e| cx.fail(&e.to_string()));
    let rt = Url::parse(&format!(
        "route://0.0.0.0/{s}?category=routers&dynamic=false&enabled=true&force=false&name=r1\
         &priority=1&router=condition&runtime=false&rule=host+%3D+127.0.0.1"
    ))
    .unwrap_or_else(|e| cx.fail(&e.to_string()));
    if cx.caps.configurators {
        reg(cx, &p, &ov).await;
        w.until("the override URL in configurators", t, |w| {
            w.latest("configurators")
                .is_some_and(|l| l.len() == 1 && l[0].param("timeout") == Some("999"))
        })
        .await;
    }
    if cx.caps.routers {
        reg(cx, &p, &rt).await;
        w.until("the route URL in routers", t, |w| {
            w.latest("routers")
                .is_some_and(|l| l.len() == 1 && l[0].param("name") == Some("r1"))
        })
        .await;
    }
    if w.addresses("providers") != set(&["127.0.0.1:20051"]) {
        cx.fail("providers changed by configurator/router registrations");
    }
    if cx.caps.configurators {
        unreg(cx, &p, &ov).await;
        w.until("configurators back to empty://", t, |w| {
            w.is_empty_marker("configurators")
        })
        .await;
    }
    if cx.caps.routers {
        unreg(cx, &p, &rt).await;
        w.until("routers back to empty://", t, |w| {
            w.is_empty_marker("routers")
        })
        .await;
    }
    drop(w);
    p.destroy().await;
    c.destroy().await;
}

async fn special_chars(cx: &Cx, p: Arc<dyn Registry>, c: Arc<dyn Registry>) {
    let t = cx.caps.notify_timeout;
    let s = format!("{}$Inner", cx.service());
    let value = "a b:c/d*e~f,g 中文";
    let a = provider_url(&s, 20061, &format!("x-special={value}&version=1.0.0"));
    if a.param("x-special") != Some(value) {
        cx.fail("test URL did not parse as intended");
    }
    reg(cx, &p, &a).await;
    let mut w = sub(cx, &c, &cx.consumer(&s, "version=1.0.0")).await;
    w.until("provider of an interface with '$'", t, |w| {
        w.addresses("providers") == set(&["127.0.0.1:20061"])
    })
    .await;
    let got = w.latest("providers").unwrap_or_default()[0].clone();
    if got.param("x-special") != Some(value) || got.service_interface() != Some(s.as_str()) {
        cx.fail(&format!("awkward characters not preserved: {got}"));
    }
    unreg(cx, &p, &a).await;
    w.until("empty:// for the '$' interface", t, |w| {
        w.is_empty_marker("providers")
    })
    .await;
    drop(w);
    p.destroy().await;
    c.destroy().await;
}

async fn unsubscribe_on_drop(cx: &Cx, p: Arc<dyn Registry>, c: Arc<dyn Registry>) {
    let t = cx.caps.notify_timeout;
    let s = cx.service();
    reg(cx, &p, &provider_url(&s, 20071, "")).await;
    let consumer = cx.consumer(&s, "");
    let mut w = sub(cx, &c, &consumer).await;
    w.until("provider A", t, |w| {
        w.addresses("providers") == set(&["127.0.0.1:20071"])
    })
    .await;
    drop(w);
    reg(cx, &p, &provider_url(&s, 20072, "")).await;
    let mut again = sub(cx, &c, &consumer).await;
    again
        .until(
            "a new subscription after dropping one sees A and B",
            t,
            |w| w.addresses("providers") == set(&["127.0.0.1:20071", "127.0.0.1:20072"]),
        )
        .await;
    drop(again);
    p.destroy().await;
    c.destroy().await;
}

async fn lookup(cx: &Cx, p: Arc<dyn Registry>, c: Arc<dyn Registry>) {
    let t = cx.caps.notify_timeout;
    let s = cx.service();
    reg(cx, &p, &provider_url(&s, 20081, "version=1.0.0")).await;
    reg(cx, &p, &provider_url(&s, 20082, "version=2.0.0")).await;
    let consumer = consumer_url(&s, "providers", "version=1.0.0");
    let found = crate::eventually("lookup sees the 1.0.0 provider only", t, || {
        let c = c.clone();
        let consumer = consumer.clone();
        async move {
            let v = c.lookup(&consumer).await.ok()?;
            let addrs: BTreeSet<String> = v.iter().filter_map(Url::address).collect();
            (addrs == set(&["127.0.0.1:20081"])).then_some(v)
        }
    })
    .await;
    if found.iter().any(|u| u.protocol() == Some("empty")) {
        cx.fail("lookup must not return empty:// URLs");
    }
    p.destroy().await;
    c.destroy().await;
}

async fn destroy(cx: &Cx, p: Arc<dyn Registry>, c: Arc<dyn Registry>) {
    let t = cx.caps.notify_timeout;
    let s = cx.service();
    reg(cx, &p, &provider_url(&s, 20091, "")).await;
    let persistent = provider_url(&s, 20092, "dynamic=false");
    if cx.caps.persistent {
        reg(cx, &p, &persistent).await;
    }
    let observer: Arc<dyn Registry> = c;
    let mut w = sub(cx, &observer, &cx.consumer(&s, "")).await;
    let want = if cx.caps.persistent {
        set(&["127.0.0.1:20091", "127.0.0.1:20092"])
    } else {
        set(&["127.0.0.1:20091"])
    };
    w.until("providers before destroy", t, |w| {
        w.addresses("providers") == want
    })
    .await;
    p.destroy().await;
    if cx.caps.persistent {
        w.until("only the dynamic=false provider survives destroy", t, |w| {
            w.addresses("providers") == set(&["127.0.0.1:20092"])
        })
        .await;
        unreg(cx, &observer, &persistent).await;
    }
    w.until("empty:// once the providers are gone", t, |w| {
        w.is_empty_marker("providers")
    })
    .await;
    observer.destroy().await;
    w.until("the stream ends after destroy", t, |w| w.ended())
        .await;
}

async fn any_interface(cx: &Cx, p: Arc<dyn Registry>, c: Arc<dyn Registry>) {
    let t = cx.caps.notify_timeout;
    let consumer = consumer_url("*", "providers", "group=*&version=*&classifier=*&enabled=*");
    let mut w = sub(cx, &c, &consumer).await;
    let s = cx.service();
    reg(cx, &p, &provider_url(&s, 20101, "")).await;
    w.until("interface * sees a service registered later", t, |w| {
        w.latest("providers").unwrap_or_default().iter().any(|u| {
            u.service_interface() == Some(s.as_str())
                && u.address().as_deref() == Some("127.0.0.1:20101")
        })
    })
    .await;
    let s2 = cx.service();
    reg(cx, &p, &provider_url(&s2, 20102, "group=g&version=2")).await;
    w.until("interface * sees a second new service", t, |w| {
        w.latest("providers")
            .unwrap_or_default()
            .iter()
            .any(|u| u.service_interface() == Some(s2.as_str()))
    })
    .await;
    drop(w);
    p.destroy().await;
    c.destroy().await;
}

async fn consumer_registration(cx: &Cx, p: Arc<dyn Registry>, c: Arc<dyn Registry>) {
    let t = cx.caps.notify_timeout;
    let s = cx.service();
    let registered = consumer_url(&s, "consumers", "").with_param("check", "false");
    reg(cx, &p, &registered).await;
    let mut w = sub(cx, &c, &consumer_url(&s, "consumers", "")).await;
    w.until("the registered consumer", t, |w| {
        w.latest("consumers")
            .is_some_and(|l| l.iter().any(|u| u.protocol() == Some("consumer")))
    })
    .await;
    unreg(cx, &p, &registered).await;
    w.until("consumers back to empty://", t, |w| {
        w.is_empty_marker("consumers")
    })
    .await;
    drop(w);
    p.destroy().await;
    c.destroy().await;
}
