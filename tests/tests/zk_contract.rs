//! The registry contract ([`tests::contract`]) against a real ZooKeeper (`DUBBO_TEST_ZK`), one
//! test per case so they run in parallel; every case uses its own root (`group`).

use std::sync::Arc;

use registry_core::{Registry, Url};
use registry_zk::ZookeeperRegistry;
use tests::contract::{run_case, Capabilities, Case};

async fn case(case: Case) {
    let Some(addr) = tests::zk_addr(case.name()) else {
        return;
    };
    let root = tests::unique("zk-contract");
    let url = Url::parse(&format!(
        "zookeeper://{addr}?group={root}&timeout=10000&session=10000"
    ))
    .unwrap();
    let make = || {
        let url = url.clone();
        async move {
            let r = ZookeeperRegistry::connect(&url)
                .await
                .expect("connect to ZooKeeper");
            Arc::new(r) as Arc<dyn Registry>
        }
    };
    run_case(case, &Capabilities::full(), &make).await;
}

macro_rules! cases {
    ($($name:ident => $case:ident),* $(,)?) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $name() {
                case(Case::$case).await;
            }
        )*
    };
}

cases! {
    zk_contract_register_notify => RegisterNotify,
    zk_contract_initial_empty => InitialEmpty,
    zk_contract_unregister_empty => UnregisterEmpty,
    zk_contract_version_wildcard => VersionWildcard,
    zk_contract_group_list => GroupList,
    zk_contract_disabled_providers => DisabledProviders,
    zk_contract_categories => Categories,
    zk_contract_special_chars => SpecialChars,
    zk_contract_unsubscribe_on_drop => UnsubscribeOnDrop,
    zk_contract_lookup => Lookup,
    zk_contract_destroy => Destroy,
    zk_contract_any_interface => AnyInterface,
    zk_contract_consumer_registration => ConsumerRegistration,
}
