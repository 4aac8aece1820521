//! The local registry cache file (§3.4): Dubbo's Java-properties format.
//!
//! (Lands with the core issue.)
