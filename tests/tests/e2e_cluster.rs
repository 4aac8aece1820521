//! End to end through real registries (ZooKeeper, Nacos): provider URLs registered in the
//! registry → `RegistryDirectory` → `invoker::cluster` → recording invokers, for the cluster
//! rules that depend on the live provider list and the registry URL:
//!
//! - failover re-lists between attempts: a provider registered while the first attempt is
//!   failing is used by the second attempt;
//! - a per-method force mock (`sayHello.mock=force:...`) answers only that method, every other
//!   method reaches the provider;
//! - `cluster.availablecheck=false` on the registry URL lets an unavailable provider be
//!   called; with the check on it gets nothing.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use invoker::directory::{Directory, DirectoryOptions, RegistryDirectory};
use invoker::rpc::{
    Invocation, Invoker, InvokerFactory, RpcError, RpcErrorCode, RpcResponse, RpcResult,
    SharedInvoker,
};
use registry_core::{Registry, Url};
use serde_json::Value;
use tests::contract::{consumer_url, provider_url};

const T: Duration = Duration::from_secs(30);

type Hook = Pin<Box<dyn Future<Output = ()> + Send>>;

/// What one provider port does when called.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Behaviour {
    /// Answers with its port.
    Answer,
    /// Runs the factory's hook (once), then fails with a timeout.
    FailAfterHook,
    /// Answers, but reports itself unavailable.
    Unavailable,
}

struct Provider {
    url: Url,
    behaviour: Behaviour,
    calls: AtomicUsize,
    hook: Arc<Mutex<Option<Hook>>>,
}

impl std::fmt::Debug for Provider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Provider").field("url", &self.url).finish()
    }
}

#[async_trait]
impl Invoker for Provider {
    fn url(&self) -> &Url {
        &self.url
    }
    fn is_available(&self) -> bool {
        self.behaviour != Behaviour::Unavailable
    }
    async fn invoke(&self, _invocation: &Invocation) -> RpcResult {
        self.calls.fetch_add(1, Ordering::SeqCst);
        if self.behaviour == Behaviour::FailAfterHook {
            let hook = self.hook.lock().unwrap().take();
            if let Some(h) = hook {
                h.await;
            }
            return Err(RpcError::new(RpcErrorCode::Timeout, "provider timed out"));
        }
        Ok(RpcResponse::new(Value::from(self.url.port())))
    }
}

#[derive(Default)]
struct Factory {
    behaviours: BTreeMap<i32, Behaviour>,
    made: Mutex<Vec<Arc<Provider>>>,
    hook: Arc<Mutex<Option<Hook>>>,
}

impl std::fmt::Debug for Factory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Factory").finish_non_exhaustive()
    }
}

impl Factory {
    fn new(behaviours: &[(i32, Behaviour)]) -> Arc<Self> {
        Arc::new(Factory {
            behaviours: behaviours.iter().copied().collect(),
            ..Factory::default()
        })
    }
    fn calls(&self, port: i32) -> usize {
        self.made
            .lock()
            .unwrap()
            .iter()
            .filter(|p| p.url.port() == port)
            .map(|p| p.calls.load(Ordering::SeqCst))
            .sum()
    }
}

impl InvokerFactory for Factory {
    fn refer(&self, provider: &Url) -> Result<SharedInvoker, RpcError> {
        let p = Arc::new(Provider {
            url: provider.clone(),
            behaviour: self
                .behaviours
                .get(&provider.port())
                .copied()
                .unwrap_or(Behaviour::Answer),
            calls: AtomicUsize::new(0),
            hook: self.hook.clone(),
        });
        self.made.lock().unwrap().push(p.clone());
        Ok(p)
    }
}

fn ports(dir: &RegistryDirectory) -> Vec<i32> {
    let mut v: Vec<i32> = dir
        .list(&Invocation::new("sayHello"))
        .map(|s| s.invokers().iter().map(|i| i.url().port()).collect())
        .unwrap_or_default();
    v.sort_unstable();
    v
}

async fn subscribe(
    registry: Arc<dyn Registry>,
    iface: &str,
    extra: &str,
    factory: Arc<Factory>,
    expect: &[i32],
) -> Arc<RegistryDirectory> {
    let consumer = consumer_url(iface, "providers,configurators,routers", extra);
    let dir =
        RegistryDirectory::subscribe(registry, consumer, factory, DirectoryOptions::default())
            .await
            .expect("subscribe");
    let _ = dir.wait_ready().await;
    let want = expect.to_vec();
    let d = dir.clone();
    tests::eventually(&format!("{iface}: providers {want:?} listed"), T, || {
        let ok = ports(&d) == want;
        async move { ok.then_some(()) }
    })
    .await;
    dir
}

/// A provider registered while the only provider's attempt fails is used by the retry.
async fn failover_uses_a_provider_registered_during_the_failing_attempt(
    providers: Arc<dyn Registry>,
    consumers: Arc<dyn Registry>,
    iface: &str,
) {
    let (old, new) = (20891u16, 20892u16);
    let old_url = provider_url(iface, old, "warmup=0");
    let new_url = provider_url(iface, new, "warmup=0");
    providers.register(&old_url).await.expect("register");
    let factory = Factory::new(&[(i32::from(old), Behaviour::FailAfterHook)]);
    let dir = subscribe(
        consumers,
        iface,
        "retries=2",
        factory.clone(),
        &[i32::from(old)],
    )
    .await;
    // The registry notification arrives while the first attempt is failing: register the new
    // provider and wait until the directory lists it before the attempt returns its error.
    let (reg, d, nu) = (providers.clone(), dir.clone(), new_url.clone());
    *factory.hook.lock().unwrap() = Some(Box::pin(async move {
        reg.register(&nu).await.expect("register the new provider");
        tests::eventually("the new provider is listed", T, || {
            let ok = ports(&d).len() == 2;
            async move { ok.then_some(()) }
        })
        .await;
    }));
    let cluster = invoker::cluster::join(dir.clone());
    let r = cluster
        .invoke(&Invocation::new("sayHello"))
        .await
        .expect("the retry reaches the new provider");
    assert_eq!(r.value, Value::from(i32::from(new)));
    assert_eq!(
        factory.calls(i32::from(old)),
        1,
        "the failed provider is not tried again"
    );
    assert_eq!(factory.calls(i32::from(new)), 1);
    for u in [&old_url, &new_url] {
        providers.unregister(u).await.expect("unregister");
    }
    cluster.destroy();
}

/// `sayHello.mock=force:return mocked` answers sayHello only; other methods reach the provider.
async fn per_method_mock(providers: Arc<dyn Registry>, consumers: Arc<dyn Registry>, iface: &str) {
    let port = 20893u16;
    let url = provider_url(iface, port, "warmup=0");
    providers.register(&url).await.expect("register");
    let factory = Factory::new(&[]);
    let dir = subscribe(
        consumers,
        iface,
        "sayHello.mock=force:return mocked",
        factory.clone(),
        &[i32::from(port)],
    )
    .await;
    let cluster = invoker::cluster::join(dir.clone());
    let r = cluster
        .invoke(&Invocation::new("sayHello").with_return_type("java.lang.String"))
        .await
        .unwrap();
    assert_eq!(r.value, Value::from("mocked"));
    assert_eq!(
        factory.calls(i32::from(port)),
        0,
        "force mock: provider not called"
    );
    let r = cluster.invoke(&Invocation::new("sayBye")).await.unwrap();
    assert_eq!(r.value, Value::from(i32::from(port)));
    assert_eq!(factory.calls(i32::from(port)), 1);
    providers.unregister(&url).await.expect("unregister");
    cluster.destroy();
}

/// Round robin over an unavailable and an available provider: with
/// `cluster.availablecheck=false` on the registry URL both are called; with the check on
/// (default) only the available one.
async fn availablecheck(
    providers: Arc<dyn Registry>,
    unchecked: Arc<dyn Registry>,
    checked: Arc<dyn Registry>,
    iface: &str,
) {
    let (down, up) = (20894u16, 20895u16);
    let urls = [
        provider_url(iface, down, "warmup=0"),
        provider_url(iface, up, "warmup=0"),
    ];
    for u in &urls {
        providers.register(u).await.expect("register");
    }
    let both = [i32::from(down), i32::from(up)];
    for (registry, check) in [(unchecked, false), (checked, true)] {
        let factory = Factory::new(&[(i32::from(down), Behaviour::Unavailable)]);
        let dir = subscribe(
            registry,
            iface,
            "loadbalance=roundrobin",
            factory.clone(),
            &both,
        )
        .await;
        let cluster = invoker::cluster::join(dir.clone());
        for _ in 0..10 {
            cluster.invoke(&Invocation::new("sayHello")).await.unwrap();
        }
        let (d, u) = (factory.calls(i32::from(down)), factory.calls(i32::from(up)));
        if check {
            assert_eq!((d, u), (0, 10), "availablecheck on");
        } else {
            assert_eq!((d, u), (5, 5), "availablecheck off: round robin over both");
        }
        cluster.destroy();
    }
    for u in &urls {
        providers.unregister(u).await.expect("unregister");
    }
}

async fn zk(addr: &str, group: &str, extra: &str) -> Arc<dyn Registry> {
    let url = Url::parse(&format!(
        "zookeeper://{addr}?group={group}&timeout=10000&session=10000{extra}"
    ))
    .unwrap();
    Arc::new(
        registry_zk::ZookeeperRegistry::connect(&url)
            .await
            .expect("zk connect"),
    )
}

fn nacos(addr: &str, group: &str, extra: &str) -> Arc<dyn Registry> {
    let url = Url::parse(&format!(
        "nacos://{addr}?group={group}&nacos.poll-interval=200{extra}"
    ))
    .unwrap();
    Arc::new(registry_nacos::NacosRegistry::new(&url).expect("nacos"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn e2e_cluster_zookeeper() {
    let Some(addr) = tests::zk_addr("e2e_cluster_zookeeper") else {
        return;
    };
    let group = tests::unique("e2e-cluster-zk");
    let providers = zk(&addr, &group, "").await;
    let consumers = zk(&addr, &group, "").await;
    failover_uses_a_provider_registered_during_the_failing_attempt(
        providers.clone(),
        consumers.clone(),
        "org.e2e.cluster.ZkFailover",
    )
    .await;
    per_method_mock(
        providers.clone(),
        consumers.clone(),
        "org.e2e.cluster.ZkMock",
    )
    .await;
    let unchecked = zk(&addr, &group, "&cluster.availablecheck=false").await;
    availablecheck(
        providers,
        unchecked,
        consumers,
        "org.e2e.cluster.ZkAvailable",
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn e2e_cluster_nacos() {
    let Some(addr) = tests::nacos_addr("e2e_cluster_nacos") else {
        return;
    };
    let group = tests::unique("e2e-cluster-nacos");
    let providers = nacos(&addr, &group, "");
    let consumers = nacos(&addr, &group, "");
    failover_uses_a_provider_registered_during_the_failing_attempt(
        providers.clone(),
        consumers.clone(),
        "org.e2e.cluster.NacosFailover",
    )
    .await;
    per_method_mock(
        providers.clone(),
        consumers.clone(),
        "org.e2e.cluster.NacosMock",
    )
    .await;
    let unchecked = nacos(&addr, &group, "&cluster.availablecheck=false");
    availablecheck(
        providers,
        unchecked,
        consumers,
        "org.e2e.cluster.NacosAvailable",
    )
    .await;
}
