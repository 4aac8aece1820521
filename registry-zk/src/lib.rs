//! registry-zk (placeholder)
