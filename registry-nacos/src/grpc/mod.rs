//! The Nacos 2.x/3.x gRPC transport (fact sheet `nacos-grpc.md`): hand-written prost
//! messages ([`proto`]), the JSON bodies ([`wire`]), one connection and its handshake
//! (`link`), the session task that owns it (`session`), naming ([`GrpcNaming`]), the 3.x
//! fuzzy watch of service names (`fuzzy`) and config (`config`) on top.

mod config;
mod fuzzy;
mod link;
mod naming;
pub mod proto;
mod session;
pub mod wire;

pub(crate) use config::{ConfigKey, GrpcConfig};
pub use fuzzy::FuzzyNames;
pub use naming::GrpcNaming;
pub use session::GrpcStats;
