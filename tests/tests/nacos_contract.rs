//! The registry contract ([`tests::contract`]) against a real Nacos-compatible server
//! (`DUBBO_TEST_NACOS`), one test per case so they run in parallel; every case uses its own
//! namespace. Polling and re-scanning are fast here so changes show up quickly.

use std::sync::Arc;
use std::time::Duration;

use registry_core::{Registry, Url};
use tests::contract::{run_case, Capabilities, Case};

fn caps() -> Capabilities {
    Capabilities {
        // Nacos carries providers (and consumers) only: no configurators/routers (`NacosRegistry`).
        configurators: false,
        routers: false,
        // Dubbo reaches `consumers:` names only through a non-concrete subscription.
        consumers: false,
        // Interface `*` matches nothing outside `admin://` (`NacosRegistry.doSubscribe`).
        any_interface: false,
        wildcards: true,
        // Nacos v1 ephemeral instances only.
        persistent: false,
        notify_timeout: Duration::from_secs(15),
    }
}

async fn case(case: Case, transport: &str) {
    let Some(addr) = tests::nacos_addr(case.name()) else {
        return;
    };
    let ns = tests::unique("nacos-contract");
    let url = Url::parse(&format!(
        "nacos://{addr}?namespace={ns}&nacos.poll-interval=200&nacos.scan-interval=300{transport}"
    ))
    .unwrap();
    let make = || {
        let url = url.clone();
        async move { Arc::new(registry_nacos::NacosRegistry::new(&url).unwrap()) as Arc<dyn Registry> }
    };
    run_case(case, &caps(), &make).await;
}

macro_rules! cases {
    ($($name:ident => $case:ident),* $(,)?) => {
        /// Over gRPC (the default transport).
        mod grpc {
            use super::*;
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    case(Case::$case, "&nacos.transport=grpc").await;
                }
            )*
        }
        /// Over the v1 HTTP transport.
        mod http {
            use super::*;
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    case(Case::$case, "&nacos.transport=http").await;
                }
            )*
        }
    };
}

cases! {
    nacos_contract_register_notify => RegisterNotify,
    nacos_contract_initial_empty => InitialEmpty,
    nacos_contract_unregister_empty => UnregisterEmpty,
    nacos_contract_version_wildcard => VersionWildcard,
    nacos_contract_group_list => GroupList,
    nacos_contract_disabled_providers => DisabledProviders,
    nacos_contract_categories => Categories,
    nacos_contract_special_chars => SpecialChars,
    nacos_contract_unsubscribe_on_drop => UnsubscribeOnDrop,
    nacos_contract_lookup => Lookup,
    nacos_contract_destroy => Destroy,
    nacos_contract_any_interface => AnyInterface,
    nacos_contract_consumer_registration => ConsumerRegistration,
}
