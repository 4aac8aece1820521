//! [`MockInvoker`]: answers a call from a mock string (`return`, `throw`, or an impl mock).

use std::sync::Arc;

use async_trait::async_trait;
use registry_core::Url;

use super::is_config_default;
use super::registry::{MockRegistry, RegisteredImpl};
use super::value::{parse_mock_value, JavaType};
use super::value_cache::{MockValueCache, Parsed};
use crate::rpc::{Invocation, Invoker, RpcError, RpcErrorCode, RpcResponse, RpcResult};

const RETURN_PREFIX: &str = "return ";
const THROW_PREFIX: &str = "throw";
const FAIL_PREFIX: &str = "fail:";
const FORCE_PREFIX: &str = "force:";

/// The message of mocked exceptions.
pub(super) const MOCK_EXCEPTION_MESSAGE: &str = "mocked exception for service degradation.";

/// Dubbo's `MockInvoker.normalizeMock`: trim; `return` → `return null`;
/// `true`/`default`/`fail`/`force` → `default`; strip `fail:` then `force:`; in `return`/`throw`
/// forms back quotes become `"`. `None` stays `None`.
pub fn normalize_mock(mock: Option<&str>) -> Option<String> {
    let mock = mock?.trim();
    if mock.is_empty() {
        return Some(String::new());
    }
    if mock.eq_ignore_ascii_case("return") {
        return Some(format!("{RETURN_PREFIX}null"));
    }
    if is_config_default(mock)
        || mock.eq_ignore_ascii_case("fail")
        || mock.eq_ignore_ascii_case("force")
    {
        return Some("default".to_owned());
    }
    let mut m = mock;
    if let Some(rest) = m.strip_prefix(FAIL_PREFIX) {
        m = rest.trim();
    }
    if let Some(rest) = m.strip_prefix(FORCE_PREFIX) {
        m = rest.trim();
    }
    if m.starts_with(RETURN_PREFIX) || m.starts_with(THROW_PREFIX) {
        return Some(m.replace('`', "\""));
    }
    Some(m.to_owned())
}

/// What the mock string asks for.
enum Prepared {
    /// A `return` value.
    Value(RpcResponse),
    /// An impl mock to run.
    Impl(RegisteredImpl),
}

/// Answers calls from the `mock` parameter of its URL: the consumer URL, or the URL of a
/// `mock://` provider.
#[derive(Debug, Clone)]
pub struct MockInvoker {
    url: Url,
    interface: String,
    registry: Arc<MockRegistry>,
    values: Option<Arc<MockValueCache>>,
}

impl MockInvoker {
    /// A mock invoker reading `mock` from `url`; `interface` names `<Interface>Mock` impls.
    pub fn new(url: Url, interface: impl Into<String>, registry: Arc<MockRegistry>) -> Self {
        MockInvoker {
            url,
            interface: interface.into(),
            registry,
            values: None,
        }
    }

    /// Keeps the answers of `return`/`throw` mocks in `values` (read once per mock string
    /// and return type, not per call).
    pub fn with_value_cache(mut self, values: Arc<MockValueCache>) -> Self {
        self.values = Some(values);
        self
    }

    /// Runs the mock for one call without waiting: `return`, `throw` and synchronous impl
    /// mocks answer here; an asynchronous impl mock ([`crate::mock::AsyncMockImpl`]) cannot,
    /// and gives an error saying so: use [`MockInvoker::answer_async`] (what the mock cluster
    /// does).
    pub fn answer(&self, invocation: &Invocation) -> RpcResult {
        match self.prepare(invocation)? {
            Prepared::Value(r) => Ok(r),
            Prepared::Impl(RegisteredImpl::Sync(imp)) => imp.invoke(invocation),
            Prepared::Impl(RegisteredImpl::Async(_)) => Err(RpcError::new(
                RpcErrorCode::Unknown,
                format!(
                    "the impl mock for {} answers asynchronously; await MockInvoker::answer_async",
                    invocation.real_method()
                ),
            )),
        }
    }

    /// Runs the mock for one call, awaiting an asynchronous impl mock's future (Dubbo's proxy
    /// invoker over a mock method returning `CompletableFuture`: the call completes with the
    /// future's value or error).
    pub async fn answer_async(&self, invocation: &Invocation) -> RpcResult {
        match self.prepare(invocation)? {
            Prepared::Value(r) => Ok(r),
            Prepared::Impl(RegisteredImpl::Sync(imp)) => imp.invoke(invocation),
            Prepared::Impl(RegisteredImpl::Async(imp)) => imp.invoke(invocation).await,
        }
    }

    /// Decodes the mock string: a value (`return`), an error (`throw`, bad mock) or the impl
    /// mock to run.
    fn prepare(&self, invocation: &Invocation) -> Result<Prepared, RpcError> {
        let method = invocation.real_method();
        let raw = self
            .url
            .method_param(method, "mock")
            .filter(|s| !s.trim().is_empty());
        let Some(raw) = raw else {
            return Err(RpcError::new(
                RpcErrorCode::Unknown,
                format!("mock can not be null. url :{}", self.url),
            ));
        };
        let parsed = match &self.values {
            Some(cache) => cache.get_or(raw, invocation.return_type(), || {
                read_mock(raw, invocation.return_type())
            }),
            None => read_mock(raw, invocation.return_type()),
        };
        match parsed {
            Parsed::Value(r) => Ok(Prepared::Value(r)),
            Parsed::BadValue { value, reason } => Err(RpcError::new(
                RpcErrorCode::Unknown,
                format!(
                    "mock return invoke error. method :{method}, mock:{value}, url: {}; {reason}",
                    self.url
                ),
            )),
            Parsed::Bad(e) => Err(e),
            Parsed::Throw(class) => Err(self.throw(&class)),
            Parsed::Impl(mock) => self.impl_mock(mock),
        }
    }

    /// The error a `throw <class>` mock raises (the class must be known to the registry).
    fn throw(&self, class: &str) -> RpcError {
        if class.is_empty() {
            return RpcError::new(RpcErrorCode::Unknown, MOCK_EXCEPTION_MESSAGE);
        }
        if self.registry.knows_exception(class) {
            return RpcError::biz(class, MOCK_EXCEPTION_MESSAGE);
        }
        RpcError::new(
            RpcErrorCode::Unknown,
            format!(
                "mock throw error :{class} argument error. Caused by java.lang.IllegalStateException: class not found: {class}"
            ),
        )
    }

    /// The impl mock a normalized mock string names (`default`: `<Interface>Mock`).
    fn impl_mock(&self, mock: String) -> Result<Prepared, RpcError> {
        let class = if is_config_default(&mock) {
            format!("{}Mock", self.interface)
        } else {
            mock
        };
        match self.registry.registered(&class) {
            Some(imp) => Ok(Prepared::Impl(imp)),
            None => Err(RpcError::new(
                RpcErrorCode::Unknown,
                format!(
                    "Failed to create mock implementation class {class}: no impl mock registered"
                ),
            )),
        }
    }
}

/// Reads a raw `mock` value (`URL.decode`, `normalizeMock`, `parseMockValue` for `return`):
/// everything about it that depends only on the text and the call's return type.
fn read_mock(raw: &str, return_type: Option<&str>) -> Parsed {
    let decoded = match registry_core::codec::decode(raw) {
        Ok(d) => d,
        Err(e) => {
            return Parsed::Bad(RpcError::new(
                RpcErrorCode::Unknown,
                format!("bad mock {raw:?}: {e}"),
            ))
        }
    };
    let mock = normalize_mock(Some(&decoded)).unwrap_or_default();
    if let Some(v) = mock.strip_prefix(RETURN_PREFIX) {
        let v = v.trim();
        let rt = return_type.map(JavaType::parse);
        return match parse_mock_value(v, rt.as_ref()) {
            Ok(value) => Parsed::Value(RpcResponse::new(value)),
            Err(e) => Parsed::BadValue {
                value: v.to_owned(),
                reason: e.message,
            },
        };
    }
    if let Some(class) = mock.strip_prefix(THROW_PREFIX) {
        return Parsed::Throw(class.trim().to_owned());
    }
    Parsed::Impl(mock)
}

#[async_trait]
impl Invoker for MockInvoker {
    fn url(&self) -> &Url {
        &self.url
    }

    async fn invoke(&self, invocation: &Invocation) -> RpcResult {
        self.answer_async(invocation).await
    }
}
