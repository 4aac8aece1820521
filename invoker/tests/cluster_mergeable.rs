//! Multi-group references end to end through a registry directory (memory registry): the
//! reference is joined with the mergeable cluster; without a merger every call goes to one
//! group (the first available), with failover inside that group; with a merger every group is
//! called and the results merged.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test fixtures panic on bad input

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use async_trait::async_trait;
use invoker::cluster::{self, mergeable, ClusterKind};
use invoker::directory::{Directory, DirectoryOptions, RegistryDirectory};
use invoker::rpc::{
    Invocation, Invoker, InvokerFactory, RpcError, RpcErrorCode, RpcResponse, RpcResult,
    SharedInvoker,
};
use parking_lot::Mutex;
use registry_core::{MemoryRegistry, Registry, Url};
use serde_json::{json, Value};

/// Answers with its address, records every call, fails while `down` is set.
#[derive(Debug)]
struct Provider {
    url: Url,
    log: Arc<Mutex<Vec<String>>>,
    down: Arc<Mutex<BTreeSet<String>>>,
    available: AtomicBool,
}

#[async_trait]
impl Invoker for Provider {
    fn url(&self) -> &Url {
        &self.url
    }
    fn is_available(&self) -> bool {
        self.available.load(Ordering::SeqCst)
    }
    async fn invoke(&self, inv: &Invocation) -> RpcResult {
        let addr = self.url.address().unwrap_or_default();
        self.log.lock().push(addr.clone());
        tokio::task::yield_now().await;
        if self.down.lock().contains(&addr) {
            return Err(RpcError::new(
                RpcErrorCode::Network,
                format!("{addr} is down"),
            ));
        }
        let group = self.url.group().unwrap_or("").to_owned();
        Ok(RpcResponse::new(match inv.method() {
            "getMap" => json!({ group: addr, "shared": addr }),
            _ => json!([addr]),
        }))
    }
}

#[derive(Debug, Default)]
struct Factory {
    log: Arc<Mutex<Vec<String>>>,
    down: Arc<Mutex<BTreeSet<String>>>,
    referred: Mutex<Vec<Arc<Provider>>>,
}

impl InvokerFactory for Factory {
    fn refer(&self, provider: &Url) -> Result<SharedInvoker, RpcError> {
        let p = Arc::new(Provider {
            url: provider.clone(),
            log: self.log.clone(),
            down: self.down.clone(),
            available: AtomicBool::new(true),
        });
        self.referred.lock().push(p.clone());
        Ok(p)
    }
}

/// Providers 10.0.0.1/.2 in group a, 10.0.0.3/.5 in group b, 10.0.0.4/.6 in group c.
async fn setup(consumer_params: &str) -> (SharedInvoker, Arc<Factory>, Arc<RegistryDirectory>) {
    let registry: Arc<dyn Registry> = Arc::new(MemoryRegistry::new());
    for (host, group) in [(1, "a"), (2, "a"), (3, "b"), (5, "b"), (4, "c"), (6, "c")] {
        let p = Url::parse(&format!(
            "dubbo://10.0.0.{host}:20880/S?interface=S&side=provider&group={group}"
        ))
        .unwrap();
        registry.register(&p).await.unwrap();
    }
    let factory = Arc::new(Factory::default());
    let consumer = Url::parse(&format!(
        "consumer://10.0.0.9/S?interface=S&{consumer_params}"
    ))
    .unwrap();
    let dir = RegistryDirectory::subscribe(
        registry,
        consumer,
        factory.clone(),
        DirectoryOptions {
            count_calls: false,
            ..DirectoryOptions::default()
        },
    )
    .await
    .unwrap();
    assert!(dir.provider_count() >= 2, "{consumer_params}");
    let reference = cluster::join(dir.clone() as Arc<dyn Directory>);
    (reference, factory, dir)
}

fn group_of(addr: &str) -> &'static str {
    match addr {
        "10.0.0.1:20880" | "10.0.0.2:20880" => "a",
        "10.0.0.3:20880" | "10.0.0.5:20880" => "b",
        "10.0.0.4:20880" | "10.0.0.6:20880" => "c",
        _ => "?",
    }
}

fn list_call() -> Invocation {
    Invocation::new("getList").with_return_type("java.util.List<String>")
}

#[tokio::test]
async fn without_merger_every_call_goes_to_one_group() {
    let (reference, factory, _dir) = setup("group=*").await;
    for _ in 0..60 {
        reference.invoke(&list_call()).await.unwrap();
    }
    let log = factory.log.lock().clone();
    let groups: BTreeSet<&str> = log.iter().map(|a| group_of(a)).collect();
    assert_eq!(groups.len(), 1, "calls went to several groups: {log:?}");
    if groups.contains("a") {
        // Load balancing still happens inside the group.
        let hosts: BTreeSet<&String> = log.iter().collect();
        assert_eq!(
            hosts.len(),
            2,
            "group a balanced over one provider only: {log:?}"
        );
    }
}

#[tokio::test]
async fn failover_stays_inside_the_chosen_group_and_unavailable_groups_are_skipped() {
    let (reference, factory, _dir) = setup("group=a,b").await;
    // Find the first group: one call.
    reference.invoke(&list_call()).await.unwrap();
    let down = factory.log.lock()[0].clone();
    let first = group_of(&down);
    factory.log.lock().clear();
    factory.down.lock().insert(down.clone());
    for _ in 0..10 {
        let r = reference.invoke(&list_call()).await.unwrap();
        let addr = r.value[0].as_str().unwrap().to_owned();
        assert_ne!(addr, down);
        assert_eq!(group_of(&addr), first);
    }
    assert!(factory.log.lock().iter().all(|a| group_of(a) == first));
    assert!(
        factory.log.lock().contains(&down),
        "failover never tried the failing provider"
    );
    factory.down.lock().clear();
    // Every provider of the first group unavailable: the next group answers.
    for p in factory.referred.lock().iter() {
        if group_of(&p.url.address().unwrap_or_default()) == first {
            p.available.store(false, Ordering::SeqCst);
        }
    }
    factory.log.lock().clear();
    let r = reference.invoke(&list_call()).await.unwrap();
    let addr = r.value[0].as_str().unwrap().to_owned();
    assert_ne!(group_of(&addr), first);
    assert!(factory.log.lock().iter().all(|a| group_of(a) != first));
}

#[tokio::test]
async fn with_merger_every_group_is_called_and_merged() {
    let (reference, factory, _dir) = setup("group=*&merger=true").await;
    let r = reference.invoke(&list_call()).await.unwrap();
    let got: Vec<&str> = r
        .value
        .as_array()
        .unwrap()
        .iter()
        .map(|v| group_of(v.as_str().unwrap()))
        .collect();
    let mut sorted = got.clone();
    sorted.sort_unstable();
    assert_eq!(
        sorted,
        ["a", "b", "c"],
        "one answer per group: {:?}",
        r.value
    );
    assert_eq!(factory.log.lock().len(), 3);

    // Map by declared type: putAll in list order.
    let r = reference
        .invoke(&Invocation::new("getMap").with_return_type("java.util.Map<String,String>"))
        .await
        .unwrap();
    let obj = r.value.as_object().unwrap();
    assert!(obj.contains_key("a") && obj.contains_key("b") && obj.contains_key("c"));

    // A declared type without a merger fails as in Java.
    let e = reference
        .invoke(&Invocation::new("getList").with_return_type("java.util.ArrayList<String>"))
        .await
        .unwrap_err();
    assert!(
        e.message.contains("There is no merger to merge result."),
        "{e}"
    );

    // No declared type: the value's shape picks the merger.
    let r = reference.invoke(&Invocation::new("getList")).await.unwrap();
    assert_eq!(r.value.as_array().map(Vec::len), Some(3));

    // A void method: an empty result after calling every group.
    factory.log.lock().clear();
    let r = reference
        .invoke(&Invocation::new("ping").with_return_type("void"))
        .await
        .unwrap();
    assert_eq!(r.value, Value::Null);
    assert_eq!(factory.log.lock().len(), 3);
}

#[tokio::test]
async fn method_level_merger_and_failing_group() {
    let (reference, factory, _dir) =
        setup("group=*&getList.merger=list&getMap.merger=.putAll").await;
    let r = reference.invoke(&list_call()).await.unwrap();
    assert_eq!(r.value.as_array().map(Vec::len), Some(3));
    let r = reference
        .invoke(&Invocation::new("getMap").with_return_type("java.util.Map"))
        .await
        .unwrap();
    assert_eq!(r.value.as_object().map(|o| o.len()), Some(4), "{}", r.value);
    // other methods have no merger: one group only.
    factory.log.lock().clear();
    reference.invoke(&Invocation::new("other")).await.unwrap();
    assert_eq!(factory.log.lock().len(), 1);
    // A group that fails after its retries fails the merged call.
    factory.down.lock().insert("10.0.0.3:20880".into());
    factory.down.lock().insert("10.0.0.5:20880".into());
    let e = reference.invoke(&list_call()).await.unwrap_err();
    assert!(e.message.contains("b/S"), "{e}");
}

#[tokio::test]
async fn single_group_lists_are_not_mergeable() {
    for params in ["group=a", "group=a,"] {
        let (reference, factory, _dir) = setup(&format!("{params}&merger=true")).await;
        let r = reference.invoke(&list_call()).await.unwrap();
        // Not mergeable: one provider answers, nothing is merged.
        assert_eq!(r.value.as_array().map(Vec::len), Some(1), "{params}");
        assert_eq!(factory.log.lock().len(), 1, "{params}");
        assert!(factory.log.lock().iter().all(|a| group_of(a) == "a"));
    }
    let u = |g: &str| Url::parse(&format!("consumer://h/S?group={g}")).unwrap();
    assert_eq!(ClusterKind::for_reference(&u("*")), ClusterKind::Mergeable);
    assert_eq!(
        ClusterKind::for_reference(&u("a,b")),
        ClusterKind::Mergeable
    );
    assert_eq!(ClusterKind::for_reference(&u("a,")), ClusterKind::Failover);
    assert!(!mergeable::is_mergeable(&u("a")));
}
