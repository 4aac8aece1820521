//! Interop with an independent gRPC client: PyPI `nacos-sdk-python` 3.2 (its v2 API speaks
//! gRPC), installed by `scripts/peers/python-nacos.sh` into `$DUBBO_TEST_PEERS_DIR/python-nacos`,
//! against rnacos (`DUBBO_TEST_NACOS`). What it registers with Dubbo-style metadata we list and
//! watch as exact provider URLs; what we register it sees under the exact Dubbo service name,
//! group and metadata; config published by either side is seen by the other's watch.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers outside #[test] functions

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::time::Duration;

use registry_core::config_center::ConfigCenter;
use registry_core::{Registry, Url};
use registry_nacos::convert::instance_metadata;
use registry_nacos::{NacosConfigCenter, NacosRegistry};
use serde_json::Value;
use tests::contract::{consumer_url, provider_url, Watch};

const T: Duration = Duration::from_secs(60);

/// The driver: `python driver.py SERVER NAMESPACE MODE ARGS...`, one JSON line per event.
const DRIVER: &str = r#"
import asyncio, json, sys
from v2.nacos import (ClientConfigBuilder, NacosNamingService, NacosConfigService, ConfigParam,
                      RegisterInstanceParam, ListInstanceParam, SubscribeServiceParam)

def out(v):
    print(json.dumps(v), flush=True)

async def main():
    server, ns, mode = sys.argv[1], sys.argv[2], sys.argv[3]
    cfg = (ClientConfigBuilder().server_address(server).namespace_id(ns)
           .log_level("ERROR").build())
    if mode == "register":
        service, port, md = sys.argv[4], int(sys.argv[5]), json.loads(sys.argv[6])
        naming = await NacosNamingService.create_naming_service(cfg)
        await naming.register_instance(RegisterInstanceParam(
            service_name=service, ip="127.0.0.1", port=port, metadata=md))
        out({"registered": True})
        await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)
    elif mode == "list":
        naming = await NacosNamingService.create_naming_service(cfg)
        for _ in range(100):
            hosts = await naming.list_instances(ListInstanceParam(
                service_name=sys.argv[4], subscribe=False, healthy_only=None))
            if hosts:
                break
            await asyncio.sleep(0.2)
        out([{"ip": h.ip, "port": h.port, "metadata": h.metadata, "enabled": h.enabled} for h in hosts])
    elif mode == "watch":
        naming = await NacosNamingService.create_naming_service(cfg)
        async def cb(instances):
            out([{"ip": h.ip, "port": h.port} for h in instances])
        await naming.subscribe(SubscribeServiceParam(service_name=sys.argv[4], subscribe_callback=cb))
        out({"subscribed": True})
        await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)
    elif mode == "publish":
        config = await NacosConfigService.create_config_service(cfg)
        ok = await config.publish_config(ConfigParam(data_id=sys.argv[4], group=sys.argv[5], content=sys.argv[6]))
        out({"published": ok})
    elif mode == "config-watch":
        config = await NacosConfigService.create_config_service(cfg)
        async def listener(tenant, group, data_id, content):
            out({"content": content})
        await config.add_listener(sys.argv[4], sys.argv[5], listener)
        out({"listening": True})
        await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)

asyncio.run(main())
"#;

/// The python of the peer's venv, or `None` after a loud skip (a failure when servers are
/// required).
fn python(test: &str) -> Option<String> {
    let dir = std::env::var("DUBBO_TEST_PEERS_DIR")
        .unwrap_or_else(|_| format!("{}/../.peers", env!("CARGO_MANIFEST_DIR")));
    let py = format!("{dir}/python-nacos/venv/bin/python");
    if std::path::Path::new(&py).exists() {
        return Some(py);
    }
    assert!(
        !tests::servers_required(),
        "{test}: nacos-sdk-python is not installed ({py}); run scripts/peers/python-nacos.sh install"
    );
    eprintln!("\n*** SKIPPED {test}: {py} missing (scripts/peers/python-nacos.sh install) ***\n");
    None
}

fn driver() -> String {
    let path = std::env::temp_dir().join(format!("nacos-py-driver-{}.py", std::process::id()));
    std::fs::write(&path, DRIVER).unwrap();
    path.to_string_lossy().into_owned()
}

/// A running driver (killed on drop; closing stdin ends it).
struct Peer {
    child: std::process::Child,
    lines: std::sync::mpsc::Receiver<Value>,
}

impl Peer {
    fn start(py: &str, args: &[&str]) -> Peer {
        let mut child = Command::new(py)
            .arg(driver())
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for l in BufReader::new(stdout).lines().map_while(Result::ok) {
                if let Ok(v) = serde_json::from_str::<Value>(&l) {
                    if tx.send(v).is_err() {
                        break;
                    }
                }
            }
        });
        Peer { child, lines }
    }

    /// The next line that satisfies `pred` (within `T`).
    fn expect(&self, what: &str, pred: impl Fn(&Value) -> bool) -> Value {
        let deadline = std::time::Instant::now() + T;
        loop {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(v) if pred(&v) => return v,
                Ok(_) => {}
                Err(_) => panic!("python peer: timed out waiting for {what}"),
            }
        }
    }
}

impl Drop for Peer {
    fn drop(&mut self) {
        if let Some(mut i) = self.child.stdin.take() {
            let _ = i.write_all(b"");
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn iface(tag: &str) -> String {
    tests::unique(&format!("org.pypeer.{tag}")).replace('-', "_")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_python_registers_we_list_and_watch_as_exact_urls() {
    let test = "what_python_registers_we_list_and_watch_as_exact_urls";
    let (Some(addr), Some(py)) = (tests::nacos_addr(test), python(test)) else {
        return;
    };
    let ns = tests::unique("py-peer");
    let s = iface("FromPy");
    let md: BTreeMap<String, String> = [
        ("application", "py-provider"),
        ("category", "providers"),
        ("interface", s.as_str()),
        ("methods", "sayHello,sayBye"),
        ("path", s.as_str()),
        ("protocol", "dubbo"),
        ("side", "provider"),
        ("version", "1.0"),
        ("group", "g1"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v.to_owned()))
    .collect();
    let service = format!("providers:{s}:1.0:g1");
    let peer = Peer::start(
        &py,
        &[
            &addr,
            &ns,
            "register",
            &service,
            "20501",
            &serde_json::to_string(&md).unwrap(),
        ],
    );
    tokio::task::block_in_place(|| peer.expect("registered", |v| v["registered"] == true));
    let r = NacosRegistry::new(
        &Url::parse(&format!("nacos://{addr}?namespace={ns}&file-cache=false")).unwrap(),
    )
    .unwrap();
    let consumer = consumer_url(&s, "providers", "version=1.0&group=g1");
    let mut w = Watch::new(r.subscribe(&consumer).await.unwrap());
    w.until("the python provider", T, |w| {
        w.addresses("providers").len() == 1
    })
    .await;
    let u = &w.latest("providers").unwrap()[0];
    assert_eq!(u.protocol(), Some("dubbo"));
    assert_eq!((u.host(), u.port()), (Some("127.0.0.1"), 20501));
    assert_eq!(u.path(), Some(s.as_str()));
    let params: BTreeMap<String, String> = u
        .params()
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect();
    assert_eq!(params, md, "the URL is exactly the registered metadata");
    let looked = r.lookup(&consumer).await.unwrap();
    assert_eq!(looked.len(), 1);
    assert_eq!(&looked[0], u);
    drop(peer); // its connection closes: the instance goes
    w.until("gone with the python process", T, |w| {
        w.is_empty_marker("providers")
    })
    .await;
    r.destroy().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_we_register_python_sees_with_the_exact_name_group_and_metadata() {
    let test = "what_we_register_python_sees_with_the_exact_name_group_and_metadata";
    let (Some(addr), Some(py)) = (tests::nacos_addr(test), python(test)) else {
        return;
    };
    let ns = tests::unique("py-peer2");
    let s = iface("ToPy");
    let service = format!("providers:{s}:2.0:blue");
    let watcher = Peer::start(&py, &[&addr, &ns, "watch", &service]);
    tokio::task::block_in_place(|| watcher.expect("subscribed", |v| v["subscribed"] == true));
    let r = NacosRegistry::new(
        &Url::parse(&format!("nacos://{addr}?namespace={ns}&file-cache=false")).unwrap(),
    )
    .unwrap();
    let p1 = provider_url(&s, 20511, "version=2.0&group=blue");
    let p2 = provider_url(&s, 20512, "version=2.0&group=blue");
    r.register(&p1).await.unwrap();
    r.register(&p2).await.unwrap(); // the second instance of one service: a batch
    tokio::task::block_in_place(|| {
        watcher.expect("both instances pushed to python", |v| {
            v.as_array().is_some_and(|a| a.len() == 2)
        })
    });
    let listed = Peer::start(&py, &[&addr, &ns, "list", &service]);
    let hosts = tokio::task::block_in_place(|| listed.expect("the list", Value::is_array));
    let hosts = hosts.as_array().unwrap();
    assert_eq!(hosts.len(), 2, "{hosts:?}");
    let want = instance_metadata(&p1);
    let h = hosts.iter().find(|h| h["port"] == 20511).unwrap();
    let got: BTreeMap<String, String> = serde_json::from_value(h["metadata"].clone()).unwrap();
    assert_eq!(got, want);
    assert_eq!(h["ip"], "127.0.0.1");
    r.unregister(&p1).await.unwrap();
    tokio::task::block_in_place(|| {
        watcher.expect("one instance left", |v| {
            v.as_array()
                .is_some_and(|a| a.len() == 1 && a[0]["port"] == 20512)
        })
    });
    r.destroy().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn config_published_by_either_side_is_seen_by_the_other() {
    let test = "config_published_by_either_side_is_seen_by_the_other";
    let (Some(addr), Some(py)) = (tests::nacos_addr(test), python(test)) else {
        return;
    };
    let ns = tests::unique("py-cfg");
    // A key of its own: nacos-sdk-python keeps a local copy per key, and a copy equal to the
    // server's value would never be reported (below).
    let key = format!("{}.condition-router", tests::unique("org.demo.Py"));
    let key = key.as_str();
    let ours =
        NacosConfigCenter::connect(&Url::parse(&format!("nacos://{addr}?namespace={ns}")).unwrap())
            .await
            .unwrap();
    let mut w = ours.watch(key, "dubbo").await.unwrap();
    assert_eq!(w.next().await.unwrap(), None);
    let p = Peer::start(&py, &[&addr, &ns, "publish", key, "dubbo", "from: python"]);
    tokio::task::block_in_place(|| p.expect("published", |v| v["published"] == true));
    let v = tokio::time::timeout(T, w.next()).await.unwrap().unwrap();
    assert_eq!(v.as_deref(), Some("from: python"));

    let pw = Peer::start(&py, &[&addr, &ns, "config-watch", key, "dubbo"]);
    tokio::task::block_in_place(|| pw.expect("listening", |v| v["listening"] == true));
    // nacos-sdk-python 3.2 refreshes a listened key in two steps: it queries the value, then
    // marks the key in sync with the server. A change pushed between the two is lost: the push
    // marks the key out of sync, the refresh of the older value marks it in sync again, and the
    // client re-checks an in-sync key only every 5 minutes. Its first refresh (reporting the value
    // python published above) is in flight right after "listening", so publish only once it has
    // reported that value: then our change's push finds no refresh to undo it.
    tokio::task::block_in_place(|| {
        pw.expect("its first refresh of the key", |v| {
            v["content"] == "from: python"
        })
    });
    ours.publish(key, "dubbo", "from: rust").await.unwrap();
    tokio::task::block_in_place(|| pw.expect("our value", |v| v["content"] == "from: rust"));
}
