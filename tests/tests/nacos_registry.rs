//! The Nacos registry suite (`nacos_suite/registry.rs`) over the v1 HTTP transport.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers outside #[test] functions

/// Registry-URL suffix choosing the transport.
const TRANSPORT: &str = "&nacos.transport=http";

#[path = "nacos_suite/registry.rs"]
mod suite;
