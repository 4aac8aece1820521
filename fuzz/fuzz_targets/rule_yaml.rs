//! Fuzzes the governance-rule readers: `RUSTC_BOOTSTRAP=1 cargo fuzz run rule_yaml` (from the
//! repository root). Any text must be read within the bounds of `registry_core::rule_yaml`
//! (size, nesting, aliases, expanded size) and give a rule or an error for every kind
//! (condition, tag, override), never a panic, a stack overflow or an unbounded allocation.
#![no_main]

use invoker::router::condition_rule::ConditionRule;
use invoker::rules::parse_configurators;
use invoker::rules::tag::TagRule;
use invoker::rules::Dialect;
use libfuzzer_sys::fuzz_target;
use registry_core::rule_yaml;

fuzz_target!(|data: &[u8]| {
    let s = String::from_utf8_lossy(data);
    if let Ok(y) = rule_yaml::load(&s) {
        // Whatever was read is within the depth bound (the tree is walked without trouble).
        fn depth(y: &rule_yaml::Yaml) -> usize {
            match y {
                rule_yaml::Yaml::Array(v) => 1 + v.iter().map(depth).max().unwrap_or(0),
                rule_yaml::Yaml::Hash(h) => {
                    1 + h
                        .iter()
                        .map(|(k, v)| depth(k).max(depth(v)))
                        .max()
                        .unwrap_or(0)
                }
                _ => 0,
            }
        }
        assert!(depth(&y) <= rule_yaml::YamlLimits::default().max_depth + 1);
    }
    let _ = ConditionRule::parse(&s, Dialect::V3);
    let _ = ConditionRule::parse(&s, Dialect::V27);
    let _ = TagRule::parse(&s);
    let _ = parse_configurators(&s);
});
