//! `RpcStatus` (§11.1): per invoker identity and method counters (active, total, failed,
//! elapsed), shared by the least-active / shortest-response balancers and ActiveLimit.
//!
//! (Lands with the invoker issue.)
