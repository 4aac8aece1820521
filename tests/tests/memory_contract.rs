//! The registry contract ([`tests::contract`]) against the in-process `memory://` registry.
#![allow(clippy::unwrap_used)] // test helpers outside #[test] functions

use std::sync::Arc;

use registry_core::{MemoryRegistry, Registry, Url};
use tests::contract::{run_all, run_case, Capabilities, Case};

fn named(name: &str) -> impl Fn() -> std::future::Ready<Arc<dyn Registry>> + '_ {
    move || {
        let url = Url::parse(&format!("memory://{name}")).unwrap();
        std::future::ready(Arc::new(MemoryRegistry::from_url(&url)) as Arc<dyn Registry>)
    }
}

#[tokio::test]
async fn memory_registry_passes_the_contract() {
    let name = tests::unique("contract-all");
    run_all(&Capabilities::full(), named(&name)).await;
}

#[tokio::test]
async fn two_suites_can_share_one_store_concurrently() {
    let name = tests::unique("contract-shared");
    let caps = Capabilities::full();
    let (a, b) = (named(&name), named(&name));
    tokio::join!(run_all(&caps, a), run_case(Case::Destroy, &caps, &b));
}
