//! End to end: governance rules in a config centre → `RuleWatcher` → a real
//! `RegistryDirectory` → `invoker::cluster` (round robin) → counting invokers.
//!
//! On memory:// (rules written through the config centre API), on a real ZooKeeper with the
//! rules written by a third-party client (kazoo, installed by `scripts/peers/python-kazoo.sh`)
//! under Dubbo's layout `/<root>/config/dubbo/<key>`, and on a real Nacos with the rules written
//! by the server's HTTP open API and by `nacos-sdk-python` 3.2's gRPC config API (installed by
//! `scripts/peers/python-nacos.sh`; dataId = key, group `dubbo`):
//! - a service condition rule changes where calls go; deleting it restores the spread;
//! - a malformed update keeps the previous rule (stale rule, as Java); a rule whose when-part
//!   names another application and a rule under another application's key change nothing;
//! - a tag rule sends tagged calls to the tagged provider and untagged calls elsewhere;
//! - an override rule disables a provider and changes another one's timeout; deleting it
//!   restores both;
//! - hostile rules (a "billion laughs" document, a block sequence nested 10,000 levels deep)
//!   present when the consumer starts, and published to the running consumer, for every rule
//!   kind: refused, the consumer keeps serving its providers with the last good rule.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use invoker::directory::{Directory, RegistryDirectory, RuleWatcher};
use invoker::rpc::{Invocation, SharedInvoker};
use registry_core::config_center::DEFAULT_CONFIG_GROUP;
use registry_core::{MemoryConfigCenter, MemoryRegistry, Registry, SharedConfigCenter, Url};
use tests::contract::provider_url;
use tests::hostile::{billion_laughs, deep_sequence};

const T: Duration = Duration::from_secs(30);
const PORTS: [u16; 3] = [20991, 20992, 20993];

/// Where `n` calls of `inv` land: port → count. A failed call counts under port 0.
async fn spread(cluster: &SharedInvoker, n: usize, inv: &Invocation) -> BTreeMap<u16, usize> {
    let mut m = BTreeMap::new();
    for _ in 0..n {
        let port = match cluster.invoke(inv).await {
            Ok(r) => r
                .attachments
                .get("port")
                .and_then(|p| p.parse().ok())
                .unwrap_or(0),
            Err(_) => 0,
        };
        *m.entry(port).or_default() += 1;
    }
    m
}

/// Round robin over `ports`: every one of them, nothing else, each within one call of an
/// equal share (the balancer's per-provider state survives list changes, as in Dubbo).
fn assert_even(m: &BTreeMap<u16, usize>, ports: &[u16], n: usize, what: &str) {
    let keys: Vec<u16> = m.keys().copied().collect();
    assert_eq!(keys, ports, "{what}: calls landed on {m:?}");
    let share = n / ports.len();
    for p in ports {
        let c = m[p];
        assert!(
            c + 1 >= share && c <= share + 1,
            "{what}: {p} got {c} of {n} calls: {m:?}"
        );
    }
}

fn ports(dir: &RegistryDirectory, inv: &Invocation) -> Vec<u16> {
    let mut p: Vec<u16> = match dir.list(inv) {
        Ok(set) => set
            .invokers()
            .iter()
            .map(|i| i.url().port() as u16)
            .collect(),
        Err(_) => Vec::new(),
    };
    p.sort();
    p
}

/// Writes rules the way an operator's tool would.
#[async_trait]
trait RuleWriter: Send + Sync {
    async fn put(&self, key: &str, text: &str);
    async fn delete(&self, key: &str);
}

struct ApiWriter(SharedConfigCenter);

#[async_trait]
impl RuleWriter for ApiWriter {
    async fn put(&self, key: &str, text: &str) {
        self.0
            .publish(key, DEFAULT_CONFIG_GROUP, text)
            .await
            .unwrap();
    }
    async fn delete(&self, key: &str) {
        self.0.remove(key, DEFAULT_CONFIG_GROUP).await.unwrap();
    }
}

/// kazoo through `kazoo_rules.py` in the peer's venv.
struct Kazoo {
    python: PathBuf,
    script: PathBuf,
    hosts: String,
    /// `/<root>/config/dubbo`.
    base: String,
}

impl Kazoo {
    /// The installed peer, or `None` after a loud skip (a failure when servers are required).
    fn find(hosts: &str, root: &str) -> Option<Kazoo> {
        let dir = std::env::var("DUBBO_TEST_PEERS_DIR")
            .map(PathBuf::from)
            .unwrap_or_else(|_| {
                PathBuf::from(env!("CARGO_MANIFEST_DIR"))
                    .join("..")
                    .join(".peers")
            })
            .join("python-kazoo");
        let (python, script) = (dir.join("bin/python"), dir.join("kazoo_rules.py"));
        if !python.exists() || !script.exists() {
            let msg = format!(
                "kazoo peer missing in {} (run bash scripts/peers/python-kazoo.sh install)",
                dir.display()
            );
            if tests::servers_required() {
                panic!("{msg}");
            }
            eprintln!("\n*** SKIPPED rules e2e on ZooKeeper: {msg} ***\n");
            return None;
        }
        Some(Kazoo {
            python,
            script,
            hosts: hosts.to_owned(),
            base: format!("/{root}/config/dubbo"),
        })
    }

    async fn run(&self, verb: &str, key: &str, input: Option<&str>) {
        let (py, script, hosts) = (self.python.clone(), self.script.clone(), self.hosts.clone());
        let path = format!("{}/{key}", self.base);
        let input = input.map(str::to_owned);
        let verb = verb.to_owned();
        tokio::task::spawn_blocking(move || {
            use std::io::Write;
            let mut child = std::process::Command::new(py)
                .arg(script)
                .arg(&hosts)
                .arg(&verb)
                .arg(&path)
                .stdin(std::process::Stdio::piped())
                .spawn()
                .expect("start kazoo");
            if let Some(text) = input {
                child
                    .stdin
                    .take()
                    .unwrap()
                    .write_all(text.as_bytes())
                    .unwrap();
            } else {
                drop(child.stdin.take());
            }
            let st = child.wait().unwrap();
            assert!(st.success(), "kazoo {verb} {path} failed: {st}");
        })
        .await
        .unwrap();
    }
}

#[async_trait]
impl RuleWriter for Kazoo {
    async fn put(&self, key: &str, text: &str) {
        self.run("put", key, Some(text)).await;
    }
    async fn delete(&self, key: &str) {
        self.run("delete", key, None).await;
    }
}

/// Writes (or deletes with `None`) and waits until the watcher handed the value over.
async fn write(w: &dyn RuleWriter, rules: &RuleWatcher, key: &str, text: Option<&str>) {
    let n = rules.values_seen();
    match text {
        Some(t) => w.put(key, t).await,
        None => w.delete(key).await,
    }
    tests::eventually(&format!("rule update of {key} handled"), T, || {
        let ok = rules.values_seen() > n;
        async move { ok.then_some(()) }
    })
    .await;
}

fn condition_rule(iface: &str, condition: &str) -> String {
    format!(
        "configVersion: v3.0\nscope: service\nforce: true\nenabled: true\nkey: {iface}\nconditions:\n  - {condition}\n"
    )
}

async fn scenario(
    registry: Arc<dyn Registry>,
    cc: SharedConfigCenter,
    writer: &dyn RuleWriter,
    iface: &str,
) {
    for p in PORTS {
        registry
            .register(&provider_url(iface, p, "warmup=0"))
            .await
            .unwrap();
    }
    let (_factory, dir) = tests::recording::subscribe(registry.clone(), iface).await;
    let call = Invocation::new("sayHello");
    tests::eventually("three providers", T, || {
        let ok = ports(&dir, &call) == PORTS;
        async move { ok.then_some(()) }
    })
    .await;
    // 0. Hostile rules already in the config centre when the consumer starts: refused, and
    // every provider is served.
    let cfg_key = format!("{iface}::.configurators");
    let service_key = format!("{iface}::.condition-router");
    let tag_key = "contract-provider.tag-router";
    writer.put(&service_key, &billion_laughs("condition")).await;
    writer
        .put(&cfg_key, &deep_sequence("configurators", 10_000))
        .await;
    writer.put(tag_key, &billion_laughs("tag")).await;
    let rules = RuleWatcher::start(cc.clone(), &dir, T).await;
    tests::eventually("the three hostile rules were handled", T, || {
        let ok = rules.values_seen() >= 3;
        async move { ok.then_some(()) }
    })
    .await;
    let cluster = invoker::cluster::join(dir.clone());
    assert_even(
        &spread(&cluster, 30, &call).await,
        &PORTS,
        30,
        "hostile rules at start-up",
    );

    // 1. An override rule: disable 20992, timeout 1234 on 20991.
    let override_rule = format!(
        "configVersion: v3.0\nscope: service\nkey: {iface}\nenabled: true\nconfigs:\n  - side: consumer\n    addresses: [0.0.0.0]\n    providerAddresses: [\"127.0.0.1:20992\"]\n    parameters:\n      disabled: true\n  - side: consumer\n    addresses: [0.0.0.0]\n    providerAddresses: [\"127.0.0.1:20991\"]\n    parameters:\n      timeout: 1234\n"
    );
    write(writer, &rules, &cfg_key, Some(&override_rule)).await;
    assert_eq!(
        ports(&dir, &call),
        [20991, 20993],
        "disabled provider listed"
    );
    let timeout_of = |port: i32| {
        dir.invoker_urls()
            .iter()
            .find(|u| u.port() == port)
            .and_then(|u| u.param("timeout").map(str::to_owned))
    };
    assert_eq!(timeout_of(20991).as_deref(), Some("1234"));
    assert_eq!(timeout_of(20993), None);
    assert_even(
        &spread(&cluster, 20, &call).await,
        &[20991, 20993],
        20,
        "override",
    );
    // A bad override update keeps it.
    write(
        writer,
        &rules,
        &cfg_key,
        Some("configVersion: v3.0\nkey: x\n"),
    )
    .await;
    assert_eq!(ports(&dir, &call), [20991, 20993]);
    write(writer, &rules, &cfg_key, None).await;
    assert_eq!(ports(&dir, &call), PORTS);
    assert_eq!(timeout_of(20991), None);
    assert_even(
        &spread(&cluster, 30, &call).await,
        &PORTS,
        30,
        "override deleted",
    );

    // 2. A condition rule sends every sayHello to the first provider.
    let to_a = condition_rule(iface, "method = sayHello => port = 20991");
    write(writer, &rules, &service_key, Some(&to_a)).await;
    assert_eq!(ports(&dir, &call), [20991], "condition rule applied");
    assert_eq!(
        spread(&cluster, 12, &call).await,
        BTreeMap::from([(20991, 12)])
    );
    // Another method is not matched by the when-part: all providers.
    assert_eq!(ports(&dir, &Invocation::new("sayBye")), PORTS);

    // 3. A malformed update keeps the previous rule (stale rule, as Java).
    write(
        writer,
        &rules,
        &service_key,
        Some("conditions: [ not: yaml"),
    )
    .await;
    assert_eq!(ports(&dir, &call), [20991], "bad rule changed routing");
    write(
        writer,
        &rules,
        &service_key,
        Some("configVersion: v3.0\nconditions:\n  - method == sayHello => port = 20992\n"),
    )
    .await;
    assert_eq!(
        ports(&dir, &call),
        [20991],
        "unparsable condition changed routing"
    );

    // 4. Deleting the rule restores the spread.
    write(writer, &rules, &service_key, None).await;
    assert_eq!(ports(&dir, &call), PORTS);
    assert_even(
        &spread(&cluster, 30, &call).await,
        &PORTS,
        30,
        "rule deleted",
    );

    // 5. A rule for another application: in the when-part, and under another app's key.
    let other = condition_rule(iface, "application = some-other-app => port = 20992");
    write(writer, &rules, &service_key, Some(&other)).await;
    assert_eq!(
        ports(&dir, &call),
        PORTS,
        "other application's rule applied"
    );
    writer
        .put(
            "some-other-app.condition-router",
            &condition_rule(iface, "=> port = 20992"),
        )
        .await;
    write(writer, &rules, &service_key, None).await;
    assert_eq!(ports(&dir, &call), PORTS);
    assert_even(&spread(&cluster, 30, &call).await, &PORTS, 30, "other app");

    // 6. A tag rule of the provider application.
    let tag = "configVersion: v3.0\nforce: false\nenabled: true\nkey: contract-provider\ntags:\n  - name: gray\n    addresses: [\"127.0.0.1:20993\"]\n";
    write(writer, &rules, tag_key, Some(tag)).await;
    let gray = Invocation::new("sayHello").with_attachment("dubbo.tag", "gray");
    assert_eq!(ports(&dir, &gray), [20993], "tagged call");
    assert_eq!(
        spread(&cluster, 10, &gray).await,
        BTreeMap::from([(20993, 10)])
    );
    assert_eq!(
        ports(&dir, &call),
        [20991, 20992],
        "untagged call avoids gray"
    );
    write(writer, &rules, tag_key, None).await;
    assert_eq!(ports(&dir, &call), PORTS);

    // 7. Hostile rules published to the running consumer, for every kind: refused, the last
    // good rule stays and the providers are served.
    write(writer, &rules, &service_key, Some(&to_a)).await;
    assert_eq!(ports(&dir, &call), [20991]);
    for (key, kind) in [
        (service_key.as_str(), "condition"),
        (tag_key, "tag"),
        (cfg_key.as_str(), "configurators"),
    ] {
        for text in [billion_laughs(kind), deep_sequence(kind, 10_000)] {
            write(writer, &rules, key, Some(&text)).await;
            assert_eq!(
                ports(&dir, &call),
                [20991],
                "hostile {kind} rule under {key}"
            );
            assert_eq!(
                spread(&cluster, 6, &call).await,
                BTreeMap::from([(20991, 6)])
            );
        }
    }
    for key in [service_key.as_str(), tag_key, cfg_key.as_str()] {
        write(writer, &rules, key, None).await;
    }
    assert_eq!(ports(&dir, &call), PORTS);

    drop(rules);
    dir.destroy();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rules_e2e_on_memory() {
    let registry: Arc<dyn Registry> = Arc::new(MemoryRegistry::new());
    let cc: SharedConfigCenter = Arc::new(MemoryConfigCenter::new());
    let writer = ApiWriter(cc.clone());
    scenario(registry, cc, &writer, "org.rules.MemorySvc").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rules_e2e_on_zookeeper_written_by_kazoo() {
    let Some(addr) = tests::zk_addr("rules_e2e_zk") else {
        return;
    };
    let root = tests::unique("rules-zk");
    let Some(kazoo) = Kazoo::find(&addr, &root) else {
        return;
    };
    let url = Url::parse(&format!("zookeeper://{addr}?group={root}&timeout=15000")).unwrap();
    let registry: Arc<dyn Registry> =
        Arc::new(registry_zk::ZookeeperRegistry::connect(&url).await.unwrap());
    // By default the config centre is the registry address (root from its group).
    let cc: SharedConfigCenter =
        Arc::new(registry_zk::ZkConfigCenter::connect(&url).await.unwrap());
    scenario(registry, cc, &kazoo, "org.rules.ZkSvc").await;
}

/// Nacos: rules written through the server's own config open API (`POST /nacos/v1/cs/configs`,
/// dataId = key, group `dubbo`), read by `registry_nacos::NacosConfigCenter` over gRPC.
mod nacos {
    use super::*;

    /// The Nacos registry and config centre (gRPC) of namespace `ns` on the server `addr`.
    async fn registry_and_config_center(
        addr: &str,
        ns: &str,
    ) -> (Arc<dyn Registry>, SharedConfigCenter) {
        let url = Url::parse(&format!("nacos://{addr}?namespace={ns}")).unwrap();
        let registry: Arc<dyn Registry> =
            Arc::new(registry_nacos::NacosRegistry::new(&url).unwrap());
        let cc: SharedConfigCenter = Arc::new(
            registry_nacos::NacosConfigCenter::connect(&url)
                .await
                .unwrap(),
        );
        (registry, cc)
    }

    struct OpenApi {
        http: reqwest::Client,
        base: String,
        namespace: String,
    }

    impl OpenApi {
        async fn send(&self, key: &str, content: Option<&str>) {
            let mut form = vec![
                ("dataId", key.to_owned()),
                ("group", DEFAULT_CONFIG_GROUP.to_owned()),
                ("tenant", self.namespace.clone()),
            ];
            let url = format!("{}/nacos/v1/cs/configs", self.base);
            let req = match content {
                Some(c) => {
                    form.push(("content", c.to_owned()));
                    self.http.post(&url).form(&form)
                }
                None => self.http.delete(&url).query(&form),
            };
            let r = req.send().await.expect("nacos config open API");
            assert!(r.status().is_success(), "nacos config API: {}", r.status());
        }
    }

    #[async_trait]
    impl RuleWriter for OpenApi {
        async fn put(&self, key: &str, text: &str) {
            self.send(key, Some(text)).await;
        }
        async fn delete(&self, key: &str) {
            self.send(key, None).await;
        }
    }

    /// `nacos-sdk-python` 3.2 (`NacosConfigService.publish_config` / `remove_config`, over
    /// gRPC): one long-lived client reading `{"op", "key", "content"}` lines, answering each
    /// with `{"ok": ...}`.
    const SDK_DRIVER: &str = r#"
import asyncio, json, sys
from v2.nacos import ClientConfigBuilder, NacosConfigService, ConfigParam

async def main():
    server, ns, group = sys.argv[1], sys.argv[2], sys.argv[3]
    cfg = (ClientConfigBuilder().server_address(server).namespace_id(ns)
           .log_level("ERROR").build())
    config = await NacosConfigService.create_config_service(cfg)
    print(json.dumps({"ready": True}), flush=True)
    loop = asyncio.get_running_loop()
    while True:
        line = await loop.run_in_executor(None, sys.stdin.readline)
        if not line:
            break
        cmd = json.loads(line)
        try:
            if cmd["op"] == "put":
                ok = await config.publish_config(ConfigParam(
                    data_id=cmd["key"], group=group, content=cmd["content"]))
            else:
                ok = await config.remove_config(ConfigParam(data_id=cmd["key"], group=group))
            print(json.dumps({"ok": ok is not False}), flush=True)
        except Exception as e:
            print(json.dumps({"ok": False, "error": repr(e)}), flush=True)
    await config.shutdown()

asyncio.run(main())
"#;

    /// The running SDK client (killed on drop).
    struct NacosSdk {
        child: std::sync::Mutex<std::process::Child>,
        replies: Arc<std::sync::Mutex<std::sync::mpsc::Receiver<serde_json::Value>>>,
    }

    impl NacosSdk {
        /// Starts the SDK client on `addr`/`namespace`, or `None` after a loud skip (a
        /// failure when servers are required) when the peer is not installed.
        async fn start(addr: &str, namespace: &str) -> Option<NacosSdk> {
            let dir = std::env::var("DUBBO_TEST_PEERS_DIR")
                .map(PathBuf::from)
                .unwrap_or_else(|_| {
                    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
                        .join("..")
                        .join(".peers")
                });
            let py = dir.join("python-nacos/venv/bin/python");
            if !py.exists() {
                let msg = format!(
                    "nacos-sdk-python missing ({}; run bash scripts/peers/python-nacos.sh install)",
                    py.display()
                );
                assert!(!tests::servers_required(), "{msg}");
                eprintln!("\n*** SKIPPED rules e2e on Nacos by nacos-sdk-python: {msg} ***\n");
                return None;
            }
            let script = std::env::temp_dir().join(format!(
                "nacos-sdk-rules-{}-{}.py",
                std::process::id(),
                tests::unique("d")
            ));
            std::fs::write(&script, SDK_DRIVER).unwrap();
            let mut child = std::process::Command::new(py)
                .arg(&script)
                .arg(addr)
                .arg(namespace)
                .arg(DEFAULT_CONFIG_GROUP)
                .stdin(std::process::Stdio::piped())
                .stdout(std::process::Stdio::piped())
                .spawn()
                .expect("start nacos-sdk-python");
            let stdout = child.stdout.take().unwrap();
            let (tx, rx) = std::sync::mpsc::channel();
            std::thread::spawn(move || {
                use std::io::BufRead;
                for l in std::io::BufReader::new(stdout)
                    .lines()
                    .map_while(Result::ok)
                {
                    if let Ok(v) = serde_json::from_str::<serde_json::Value>(&l) {
                        if tx.send(v).is_err() {
                            break;
                        }
                    }
                }
            });
            let sdk = NacosSdk {
                child: std::sync::Mutex::new(child),
                replies: Arc::new(std::sync::Mutex::new(rx)),
            };
            let ready = sdk.reply(Duration::from_secs(60)).await;
            assert_eq!(
                ready["ready"], true,
                "nacos-sdk-python did not start: {ready}"
            );
            Some(sdk)
        }

        /// The next line of the client (panics after `within`).
        async fn reply(&self, within: Duration) -> serde_json::Value {
            let rx = self.replies.clone();
            tokio::task::spawn_blocking(move || {
                rx.lock()
                    .unwrap()
                    .recv_timeout(within)
                    .expect("nacos-sdk-python: no answer")
            })
            .await
            .unwrap()
        }

        async fn send(&self, cmd: serde_json::Value) {
            {
                use std::io::Write;
                let mut child = self.child.lock().unwrap();
                let stdin = child.stdin.as_mut().unwrap();
                writeln!(stdin, "{cmd}").unwrap();
                stdin.flush().unwrap();
            }
            let r = self.reply(T).await;
            assert_eq!(r["ok"], true, "nacos-sdk-python {cmd}: {r}");
        }
    }

    impl Drop for NacosSdk {
        fn drop(&mut self) {
            if let Ok(mut c) = self.child.lock() {
                drop(c.stdin.take());
                let _ = c.kill();
                let _ = c.wait();
            }
        }
    }

    #[async_trait]
    impl RuleWriter for NacosSdk {
        async fn put(&self, key: &str, text: &str) {
            self.send(serde_json::json!({"op": "put", "key": key, "content": text}))
                .await;
        }
        async fn delete(&self, key: &str) {
            self.send(serde_json::json!({"op": "delete", "key": key}))
                .await;
        }
    }

    /// The rules published by a third-party gRPC client (`nacos-sdk-python` 3.2), read by our
    /// gRPC config client through the directory.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn rules_e2e_on_nacos_written_by_nacos_sdk_python() {
        let Some(addr) = tests::nacos_addr("rules_e2e_nacos_sdk") else {
            return;
        };
        let ns = tests::unique("rules-nacos-sdk");
        let Some(writer) = NacosSdk::start(&addr, &ns).await else {
            return;
        };
        let (registry, cc) = registry_and_config_center(&addr, &ns).await;
        scenario(registry, cc, &writer, "org.rules.NacosSdkSvc").await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn rules_e2e_on_nacos_written_by_open_api() {
        let Some(addr) = tests::nacos_addr("rules_e2e_nacos") else {
            return;
        };
        let ns = tests::unique("rules-nacos");
        let (registry, cc) = registry_and_config_center(&addr, &ns).await;
        let writer = OpenApi {
            http: reqwest::Client::new(),
            base: format!("http://{addr}"),
            namespace: ns,
        };
        scenario(registry, cc, &writer, "org.rules.NacosSvc").await;
    }
}
