//! Mock (Dubbo's `MockClusterInvoker` and `MockInvoker`): service degradation.
//!
//! [`MockClusterInvoker`] wraps every cluster. Per call it reads
//! `consumerUrl.method_param(method, "mock")` (method level beats service level):
//! - empty / `false` / `0` / `null` / `N/A` ([`is_config_empty`]): no mock;
//! - starting with `force`: the mock answers, the providers are not called;
//! - anything else (fail-mock): the providers are called; a **non-biz** error is replaced by
//!   the mock's answer; biz errors propagate.
//!
//! The mock is a `mock://` provider from the directory if there is one (its own URL defines
//! the mock), else the consumer URL. [`MockInvoker`] normalizes the mock string
//! ([`normalize_mock`]) and then:
//! - `return <v>`: [`parse_mock_value`] (lenient JSON, typed by the invocation's return type);
//! - `throw`: a non-biz error "mocked exception for service degradation.";
//!   `throw <Class>`: a biz error carrying that class (the class must be known to the
//!   [`MockRegistry`]);
//! - otherwise an impl mock registered by class name (`true`/`default` → `<Interface>Mock`);
//!   an [`AsyncMockImpl`] (a mock class whose methods return `CompletableFuture`) answers
//!   through a future that the call awaits.

mod cluster_invoker;
mod mock_invoker;
mod registry;
mod value;
mod value_cache;

pub use cluster_invoker::{MockClusterInvoker, MockDecision};
pub use mock_invoker::{normalize_mock, MockInvoker};
pub use registry::{AsyncMockImpl, MockImpl, MockRegistry, RegisteredImpl};
pub use value::{empty_value, parse_mock_value, IntWidth, JavaType};
pub use value_cache::{MockValueCache, MOCK_CACHE_CAP, MOCK_CACHE_MAX_LEN};

/// Dubbo's `ConfigUtils.isEmpty`: absent, empty, or (case-insensitive) `false`, `0`, `null`,
/// `N/A`.
pub fn is_config_empty(v: Option<&str>) -> bool {
    match v {
        None => true,
        Some(s) => {
            s.is_empty()
                || s.eq_ignore_ascii_case("false")
                || s == "0"
                || s.eq_ignore_ascii_case("null")
                || s.eq_ignore_ascii_case("N/A")
        }
    }
}

/// Dubbo's `ConfigUtils.isDefault`: `true` or `default` (case-insensitive).
pub fn is_config_default(v: &str) -> bool {
    v.eq_ignore_ascii_case("true") || v.eq_ignore_ascii_case("default")
}
