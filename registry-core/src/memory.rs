//! `memory://`: an in-process registry with the same semantics as the real backends.
//!
//! (Lands with the core issue.)

/// In-process registry (placeholder until the core issue lands).
#[derive(Debug, Default)]
pub struct MemoryRegistry;
