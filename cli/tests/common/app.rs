//! Helpers of the application-level tests against the real Java Dubbo 3.3.6 peers
//! (`tests::peers`): running `dubbo-registry`, starting a provider registered at application
//! level only, reading its READY document.

use std::time::Duration;

use serde_json::Value;
use tests::peers::{JavaProvider, ProviderOptions};

use super::Out;

/// Runs `dubbo-registry ARGS` to the end.
pub async fn run(args: &[&str]) -> Out {
    let o = tokio::process::Command::new(env!("CARGO_BIN_EXE_dubbo-registry"))
        .args(args)
        .output()
        .await
        .expect("run dubbo-registry");
    Out {
        code: o.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
    }
}

/// Starts a Java provider of `app` on `registry` (`register-mode` as given; `extra` raw
/// arguments, later ones win: `--dubbo-port N` pins a port); `None` after a loud skip when
/// the peer is not installed.
pub async fn java_provider(
    test: &str,
    registry: &str,
    app: &str,
    register_mode: &str,
    services: &[&str],
    extra: &[&str],
) -> Option<JavaProvider> {
    let opts = ProviderOptions {
        registry: Some(registry.to_owned()),
        app: app.to_owned(),
        register_mode: Some(register_mode.to_owned()),
        services: services.iter().map(|s| (*s).to_owned()).collect(),
        extra: extra.iter().map(|s| (*s).to_owned()).collect(),
        ..ProviderOptions::default()
    };
    JavaProvider::start(test, &opts).await
}

/// The revision of the provider's (first) application-level instance.
pub fn revision(p: &JavaProvider) -> String {
    instance_metadata(p)["dubbo.metadata.revision"]
        .as_str()
        .unwrap_or("")
        .to_owned()
}

/// The metadata of the provider's (first) application-level instance.
pub fn instance_metadata(p: &JavaProvider) -> Value {
    p.process.ready()["instances"][0]["metadata"].clone()
}

/// Stops the provider with SIGTERM (Dubbo's shutdown hook unregisters), at most 30 s.
pub async fn stop(mut p: JavaProvider) {
    let _ = p.process.terminate(Duration::from_secs(30)).await;
}

/// The Java consumer's `--mode list` for `interface` on `registry` (`expect` providers, when
/// given): `(protocol, address)` of the providers it ends up with.
pub async fn java_list(
    test: &str,
    registry: &str,
    interface: &str,
    expect: Option<usize>,
) -> Option<(Value, std::collections::BTreeSet<(String, String)>)> {
    let expect_s = expect.map(|e| e.to_string());
    let mut args = vec![
        "--registry",
        registry,
        "--interface",
        interface,
        "--mode",
        "list",
        "--stable-ms",
        "500",
        "--wait-ms",
        "15000",
    ];
    if let Some(e) = &expect_s {
        args.extend(["--expect", e.as_str()]);
    }
    let run = tests::peers::java_consumer(test, &args, Duration::from_secs(120)).await?;
    let seen = run.json["providers"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|p| {
            (
                p["protocol"].as_str().unwrap_or("").to_owned(),
                p["address"].as_str().unwrap_or("").to_owned(),
            )
        })
        .collect();
    Some((run.json.clone(), seen))
}

/// Three distinct free loopback ports (dubbo, tri, MetadataService), held together while chosen.
pub fn ports() -> [String; 3] {
    let l: Vec<std::net::TcpListener> = (0..3)
        .map(|_| std::net::TcpListener::bind("127.0.0.1:0").unwrap())
        .collect();
    let p: Vec<String> = l
        .iter()
        .map(|l| l.local_addr().unwrap().port().to_string())
        .collect();
    [p[0].clone(), p[1].clone(), p[2].clone()]
}

/// The (instance address, revision) pairs the application level serves for `app`, sorted;
/// `skip_stale` leaves out the instances whose revision is being replaced.
pub async fn served(
    reg: &app_discovery::ServiceDiscoveryRegistry,
    app: &str,
    skip_stale: bool,
) -> Vec<(String, String)> {
    let snap = reg.describe_app(app, Duration::from_secs(1)).await;
    let mut v: Vec<(String, String)> = snap
        .revisions
        .iter()
        .flat_map(|r| {
            r.instances
                .iter()
                .filter(move |i| !skip_stale || !r.stale.contains(&i.address()))
                .map(move |i| (i.address(), r.revision.to_string()))
        })
        .collect();
    v.sort();
    v
}

/// A reference to `service` over Dubbo2 as consumer application `app`, at the levels given
/// (an interface-level registry, an application-level one, a config centre for the migration
/// rule, waited for `rule_wait`), ready within a minute.
pub async fn dubbo_reference(
    service: &str,
    app: &str,
    interface_registry: Option<std::sync::Arc<dyn registry_core::Registry>>,
    app_registry: Option<app_discovery::ServiceDiscoveryRegistry>,
    config_center: Option<registry_core::SharedConfigCenter>,
    rule_wait: Duration,
) -> app_discovery::migration::MigrationReference {
    use app_discovery::migration::{MigrationReference, ReferenceConfig};
    use invoker::directory::DirectoryOptions;
    let consumer = registry_core::Url::parse(&format!(
        "consumer://127.0.0.1/{service}?interface={service}&application={app}&protocol=dubbo&check=false&timeout=3000&retries=2"
    ))
    .unwrap();
    let factory: std::sync::Arc<dyn invoker::rpc::InvokerFactory> =
        std::sync::Arc::new(protocol_dubbo::DubboInvokerFactory::new());
    MigrationReference::open(ReferenceConfig {
        consumer,
        factory,
        options: DirectoryOptions {
            register: false,
            ready_timeout: Duration::from_secs(60),
            ..DirectoryOptions::default()
        },
        interface_registry,
        app_registry,
        config_center,
        rule_wait,
    })
    .await
    .unwrap()
}

/// Calls `whoAmI` through a cluster invoker every 10 ms until [`Caller::finish`], counting the
/// answers and keeping every failure (a rolling restart's view from the consumer).
pub struct Caller {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    ok: std::sync::Arc<std::sync::atomic::AtomicUsize>,
    failures: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
    task: tokio::task::JoinHandle<()>,
}

impl Caller {
    /// Starts calling.
    pub fn start(cluster: invoker::rpc::SharedInvoker) -> Caller {
        use std::sync::atomic::Ordering;
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let ok = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let failures: std::sync::Arc<std::sync::Mutex<Vec<String>>> = Default::default();
        let task = {
            let (stop, ok, failures) = (stop.clone(), ok.clone(), failures.clone());
            tokio::spawn(async move {
                let inv = invoker::rpc::Invocation::new("whoAmI");
                while !stop.load(Ordering::Relaxed) {
                    match cluster.invoke(&inv).await {
                        Ok(_) => {
                            ok.fetch_add(1, Ordering::Relaxed);
                        }
                        Err(e) => failures.lock().unwrap().push(e.to_string()),
                    }
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
            })
        };
        Caller {
            stop,
            ok,
            failures,
            task,
        }
    }

    /// Calls answered so far.
    pub fn ok(&self) -> usize {
        self.ok.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Waits until another call is answered (within `within`).
    pub async fn answers_again(&self, within: Duration) {
        tests::eventually("calls served again", within, || async {
            let before = self.ok();
            tokio::time::sleep(Duration::from_millis(100)).await;
            (self.ok() > before).then_some(())
        })
        .await;
    }

    /// Stops calling: the calls answered and every failure.
    pub async fn finish(self) -> (usize, Vec<String>) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        let ok = self.ok.clone();
        self.task.await.unwrap();
        let f = self.failures.lock().unwrap().clone();
        (ok.load(std::sync::atomic::Ordering::Relaxed), f)
    }
}
