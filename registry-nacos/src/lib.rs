//! registry-nacos (placeholder)
