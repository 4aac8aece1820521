//! The operations, one module per area. Each names the Dubbo classes its oracle op calls.

use crate::Operation;

mod configurator;
mod hessian;
mod lb;
mod mock;
mod nacos;
mod router;
mod url;

/// Every operation, in report order.
pub fn all() -> Vec<Box<dyn Operation>> {
    vec![
        Box::new(url::UrlParse),
        Box::new(url::UrlCodec),
        Box::new(url::IsMatch),
        Box::new(nacos::NacosName),
        Box::new(nacos::NacosUrlName),
        Box::new(lb::Weight),
        Box::new(lb::RoundRobin),
        Box::new(lb::ConsistentHash),
        Box::new(router::Condition),
        Box::new(router::ConditionYaml),
        Box::new(router::Tag),
        Box::new(configurator::Configure),
        Box::new(mock::MockValue),
        Box::new(mock::Merge),
        Box::new(hessian::JavaToRust),
        Box::new(hessian::RustToJava),
    ]
}

/// The operation called `name`.
pub fn by_name(name: &str) -> Option<Box<dyn Operation>> {
    all().into_iter().find(|o| o.name() == name)
}
