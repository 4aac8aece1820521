//! What a rule matches against: the URL view Dubbo calls `toOriginalMap` and the parts of an
//! invocation routing may read.

use std::borrow::Cow;
use std::collections::BTreeMap;

use registry_core::Url;
use serde_json::Value;

use crate::rpc::Invocation;

/// The parts of a call a router may read. `None` fields model Java's null (no method name,
/// no argument array); [`RouteCall::none`] is a null invocation.
#[derive(Debug, Clone, Copy)]
pub struct RouteCall<'a> {
    /// The method name (`RpcUtils#getMethodName`: the real method of a generic call).
    pub method: Option<&'a str>,
    /// The raw argument array (for `$invoke` that is `[method, types, args]`).
    pub arguments: Option<&'a [Value]>,
    /// The call attachments.
    pub attachments: Option<&'a BTreeMap<String, String>>,
}

impl<'a> RouteCall<'a> {
    /// A Java null invocation.
    pub fn none() -> RouteCall<'static> {
        RouteCall {
            method: None,
            arguments: None,
            attachments: None,
        }
    }

    /// The view of an invocation.
    pub fn of(inv: &'a Invocation) -> RouteCall<'a> {
        RouteCall {
            method: Some(inv.real_method()),
            arguments: Some(inv.arguments()),
            attachments: Some(&inv.attachments),
        }
    }

    /// True for a null invocation.
    pub fn is_none(&self) -> bool {
        self.method.is_none() && self.arguments.is_none() && self.attachments.is_none()
    }

    /// An attachment (`RpcInvocation#getAttachment`).
    pub fn attachment(&self, k: &str) -> Option<&'a str> {
        self.attachments.and_then(|a| a.get(k)).map(String::as_str)
    }
}

/// `URL#toOriginalMap().get(key)`: the params, overlaid by `protocol`, `username`,
/// `password`, `host`, `port` (only if > 0), `path` and `address`.
pub(crate) fn original_value<'u>(url: &'u Url, key: &str) -> Option<Cow<'u, str>> {
    let field = match key {
        "protocol" => url.protocol().map(Cow::Borrowed),
        "username" => url.username().map(Cow::Borrowed),
        "password" => url.password().map(Cow::Borrowed),
        "host" => url.host().map(Cow::Borrowed),
        "port" => (url.port() > 0).then(|| Cow::Owned(url.port().to_string())),
        "path" => url.path().map(Cow::Borrowed),
        "address" => url.host().map(|h| {
            if url.port() > 0 {
                Cow::Owned(format!("{h}:{}", url.port()))
            } else {
                Cow::Borrowed(h)
            }
        }),
        _ => None,
    };
    field.or_else(|| url.param(key).map(Cow::Borrowed))
}

/// `URL#getRawParameter(key)` (the `$name` references of a then-part): the URL fields
/// (`port` always, as a string) and otherwise the param.
pub(crate) fn raw_parameter<'u>(url: &'u Url, key: &str) -> Option<Cow<'u, str>> {
    match key {
        "protocol" => url.protocol().map(Cow::Borrowed),
        "username" => url.username().map(Cow::Borrowed),
        "password" => url.password().map(Cow::Borrowed),
        "host" => url.host().map(Cow::Borrowed),
        "port" => Some(Cow::Owned(url.port().to_string())),
        "path" => url.path().map(Cow::Borrowed),
        _ => url.param(key).map(Cow::Borrowed),
    }
}

/// Java's `String.valueOf(argument)` for a JSON argument value.
pub(crate) fn java_string(v: &Value) -> Cow<'_, str> {
    match v {
        Value::Null => Cow::Borrowed("null"),
        Value::String(s) => Cow::Borrowed(s),
        Value::Bool(b) => Cow::Borrowed(if *b { "true" } else { "false" }),
        Value::Number(n) => Cow::Owned(n.to_string()),
        other => Cow::Owned(other.to_string()),
    }
}

/// The application of a provider URL (`getRemoteApplication`): its `application`, else
/// `remote.application`; `""` when neither is set.
pub fn provider_application(raw: &Url) -> &str {
    raw.param("application")
        .filter(|a| !a.is_empty())
        .or_else(|| raw.param("remote.application"))
        .unwrap_or("")
}
