//! No secret in any log line, error or `Display`: URLs whose user info and `password`,
//! `token`, `accessToken`, `secret*` parameters hold a secret go through the URL model,
//! failing ZooKeeper and Nacos connections, failback retries, a directory and its rules, with
//! every `tracing` event down to TRACE captured; the secret must appear nowhere.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use invoker::directory::{DirectoryOptions, RegistryDirectory};
use registry_core::{MemoryRegistry, Registry, Url};
use tests::recording::RecordingFactory;

const SECRET: &str = "hunter2";

/// Every formatted log line.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn check(what: &str, text: &str) {
    assert!(!text.contains(SECRET), "{what} shows the secret: {text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn secrets_never_reach_logs_errors_or_display() {
    let captured = Captured::default();
    let writer = captured.clone();
    tracing_subscriber::fmt()
        .with_max_level(tracing::Level::TRACE)
        .with_writer(move || writer.clone())
        .with_ansi(false)
        .init();

    // The URL model.
    let u = Url::parse(&format!(
        "nacos://nacos:{SECRET}@127.0.0.1:1/svc?password={SECRET}&token={SECRET}&accessToken={SECRET}&secretKey={SECRET}&nacos.password={SECRET}&x=1"
    ))
    .unwrap();
    check("Display", &u.to_string());
    check("Debug", &format!("{u:?}"));
    check("masked identity", &u.to_masked_identity_string());
    assert!(u.to_string().contains("password=******"), "{u}");
    assert!(
        u.to_full_string().contains(SECRET),
        "the data form keeps it"
    );
    for bad in [
        format!("zookeeper://bob:{SECRET}@h:notaport"),
        format!("dubbo://h:1/S?password={SECRET}&%zz"),
    ] {
        if let Err(e) = Url::parse(&bad) {
            check("parse error", &e.to_string());
            check("parse error (Debug)", &format!("{e:?}"));
        }
    }

    // Failing registries: errors and every log line of connect, subscribe, retries.
    let zk = Url::parse(&format!(
        "zookeeper://bob:{SECRET}@127.0.0.1:1?password={SECRET}&timeout=300&check=false"
    ))
    .unwrap();
    match registry_zk::ZookeeperRegistry::connect(&zk).await {
        Ok(r) => {
            let e = r
                .subscribe(&tests::contract::consumer_url("S", "providers", ""))
                .await;
            if let Err(e) = e {
                check("zk subscribe error", &e.to_string());
            }
            r.destroy().await;
        }
        Err(e) => check("zk connect error", &format!("{e} {e:?}")),
    }
    let nacos = Url::parse(&format!(
        "nacos://nacos:{SECRET}@127.0.0.1:1?password={SECRET}&accessToken={SECRET}&nacos.request-timeout=300&check=false"
    ))
    .unwrap();
    match registry_nacos::NacosRegistry::new(&nacos) {
        Ok(r) => {
            let consumer = tests::contract::consumer_url("S", "providers", "");
            if let Err(e) = r.subscribe(&consumer).await {
                check("nacos subscribe error", &format!("{e} {e:?}"));
            }
            if let Err(e) = r.backend().probe().await {
                check("nacos probe error", &format!("{e} {e:?}"));
            }
            tokio::time::sleep(Duration::from_millis(1500)).await; // let a retry or two log
            r.destroy().await;
        }
        Err(e) => check("nacos registry error", &format!("{e} {e:?}")),
    }

    // A directory whose consumer and providers carry secrets, with a refused rule.
    let registry: Arc<dyn Registry> = Arc::new(MemoryRegistry::new());
    registry
        .register(&tests::contract::provider_url(
            "org.secret.Svc",
            21201,
            &format!("token={SECRET}&password={SECRET}"),
        ))
        .await
        .unwrap();
    let consumer = Url::parse(&format!(
        "consumer://127.0.0.1/org.secret.Svc?interface=org.secret.Svc&application=a&token={SECRET}&category=providers,configurators,routers"
    ))
    .unwrap();
    let dir = RegistryDirectory::subscribe(
        registry.clone(),
        consumer,
        Arc::new(RecordingFactory::default()),
        DirectoryOptions::default(),
    )
    .await
    .unwrap();
    let _ = dir.set_router_rule(
        invoker::router::RuleKey::ServiceCondition,
        Some("conditions:\n  - => host = &&\n"),
    );
    for u in dir.invoker_urls() {
        check("provider URL", &u.to_string());
    }
    dir.destroy();
    registry.destroy().await;

    let text = String::from_utf8_lossy(&captured.0.lock().unwrap()).into_owned();
    assert!(!text.is_empty(), "nothing was logged");
    for line in text.lines() {
        check("log line", line);
    }
}
