//! invoker (placeholder)
