//! `Invocation`: one call's method, arguments and attachments.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::Value;

/// How the caller waits for the result (Dubbo's `InvokeMode` + oneway).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CallMode {
    /// The caller waits for the response.
    #[default]
    Sync,
    /// The caller gets a future.
    Async,
    /// Fire and forget: no response is expected.
    Oneway,
}

/// One RPC call.
///
/// Cheap to clone: method, types and arguments are shared. Attachments are per call.
#[derive(Debug, Clone, PartialEq)]
pub struct Invocation {
    method: Arc<str>,
    parameter_types: Arc<[String]>,
    arguments: Arc<[Value]>,
    return_type: Option<Arc<str>>,
    /// Call attachments (Dubbo's client attachments), sent to the provider.
    pub attachments: BTreeMap<String, String>,
    /// How the caller waits.
    pub mode: CallMode,
}

impl Invocation {
    /// A call of `method` with no arguments.
    pub fn new(method: impl Into<Arc<str>>) -> Self {
        Invocation {
            method: method.into(),
            parameter_types: Arc::from(Vec::new()),
            arguments: Arc::from(Vec::new()),
            return_type: None,
            attachments: BTreeMap::new(),
            mode: CallMode::Sync,
        }
    }

    /// Sets argument types (Java simple or full names) and values.
    pub fn with_arguments(mut self, types: Vec<String>, args: Vec<Value>) -> Self {
        self.parameter_types = types.into();
        self.arguments = args.into();
        self
    }

    /// Sets the declared return type (used by mock `return` values), e.g. `java.lang.String`.
    pub fn with_return_type(mut self, t: impl Into<Arc<str>>) -> Self {
        self.return_type = Some(t.into());
        self
    }

    /// Adds an attachment.
    pub fn with_attachment(mut self, k: impl Into<String>, v: impl Into<String>) -> Self {
        self.attachments.insert(k.into(), v.into());
        self
    }

    /// Sets the call mode.
    pub fn with_mode(mut self, mode: CallMode) -> Self {
        self.mode = mode;
        self
    }

    /// The method name (for generic `$invoke` this is `$invoke`).
    pub fn method(&self) -> &str {
        &self.method
    }

    /// The real method name (`RpcUtils.getMethodName`): for `$invoke`/`$invokeAsync` whose
    /// first argument is a string, that string; otherwise the method name.
    pub fn real_method(&self) -> &str {
        if self.is_generic_name() {
            if let Some(Value::String(m)) = self.arguments.first() {
                return m;
            }
        }
        &self.method
    }

    /// The real arguments (`RpcUtils.getArguments`): for `$invoke`/`$invokeAsync` whose third
    /// argument is an array, that array; otherwise the arguments.
    pub fn real_arguments(&self) -> &[Value] {
        if self.is_generic_name() {
            if let Some(Value::Array(a)) = self.arguments.get(2) {
                return a;
            }
        }
        &self.arguments
    }

    fn is_generic_name(&self) -> bool {
        matches!(&*self.method, "$invoke" | "$invokeAsync")
    }

    /// True for `$invoke` / `$invokeAsync`.
    pub fn is_generic(&self) -> bool {
        matches!(&*self.method, "$invoke" | "$invokeAsync") && self.arguments.len() == 3
    }

    /// Parameter type names.
    pub fn parameter_types(&self) -> &[String] {
        &self.parameter_types
    }

    /// Argument values.
    pub fn arguments(&self) -> &[Value] {
        &self.arguments
    }

    /// Declared return type, if known.
    pub fn return_type(&self) -> Option<&str> {
        self.return_type.as_deref()
    }

    /// An attachment value.
    pub fn attachment(&self, k: &str) -> Option<&str> {
        self.attachments.get(k).map(String::as_str)
    }
}

/// A successful result (Dubbo's `AppResponse` without an exception).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct RpcResponse {
    /// The returned value (`Null` for void, failsafe/failback empty results and oneway calls).
    pub value: Value,
    /// Result attachments from the provider.
    pub attachments: BTreeMap<String, String>,
}

impl RpcResponse {
    /// A response carrying `value`.
    pub fn new(value: Value) -> Self {
        RpcResponse {
            value,
            attachments: BTreeMap::new(),
        }
    }

    /// The empty result (`null` value) used by failsafe, failback and oneway.
    pub fn empty() -> Self {
        RpcResponse::default()
    }
}
