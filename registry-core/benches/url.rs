//! URL benchmarks (criterion); see docs/bench/core.md.

fn main() {}
