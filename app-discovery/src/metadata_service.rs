//! Asking an instance for its `MetadataInfo` (storage type `local`): the MetadataService URL
//! built from the instance metadata, and the [`MetadataServiceClient`] seam the protocols
//! implement.
//!
//! URL (`StandardMetadataServiceURLBuilder`): from the instance's
//! `dubbo.metadata-service.url-params` JSON, `<protocol>://<instance host>:<port>/
//! org.apache.dubbo.metadata.MetadataService?<those params>&group=<app>&side=consumer&
//! timeout=5000&retries=0&check=false`; without that key,
//! `dubbo://<host>:<instance port>/...MetadataService?group=<app>&version=1.0.0`.
//!
//! Version: an instance saying `meta-v=2.0.0` exports `MetadataServiceV2` (protobuf over
//! Triple IDL, `version=2.0.0`): a consumer with a v2 client calls it (Java:
//! `MetadataUtils.referMetadataService`); otherwise v1 `getMetadataInfo(String)` over the
//! URL's protocol (Hessian2 over `dubbo`, or Triple wrapper mode).
//!
//! - v1 over any protocol with an [`invoker::rpc::InvokerFactory`]: [`InvokerMetadataClient`]
//!   (here, protocol-neutral);
//! - v2: `protocol_triple::MetadataServiceV2Client`, in the Triple crate.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use async_trait::async_trait;
use invoker::rpc::{Invocation, InvokerFactory};
use registry_core::instance::{
    ENDPOINTS_KEY, METADATA_SERVICE_URL_PARAMS_KEY, METADATA_SERVICE_VERSION_KEY,
};
use registry_core::{ServiceInstance, Url};
use serde_json::Value;

use crate::error::{Error, Result};
use crate::metadata_info::MetadataInfo;

/// The v1 interface.
pub const METADATA_SERVICE: &str = "org.apache.dubbo.metadata.MetadataService";
/// The v2 (protobuf) service.
pub const METADATA_SERVICE_V2: &str = "org.apache.dubbo.metadata.MetadataServiceV2";
/// The v1 method.
pub const GET_METADATA_INFO: &str = "getMetadataInfo";
/// v1's version.
pub const V1: &str = "1.0.0";
/// v2's version.
pub const V2: &str = "2.0.0";
/// Java's default MetadataService call timeout (`dubbo.application.metadata.proxy.delay`).
pub const DEFAULT_TIMEOUT_MS: u64 = 5000;

/// One `dubbo.endpoints` entry: a protocol the instance exports and its port.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    /// The protocol name.
    pub protocol: String,
    /// Its port.
    pub port: i32,
}

/// The instance's `dubbo.endpoints` (empty when absent or unreadable).
pub fn endpoints(instance: &ServiceInstance) -> Vec<Endpoint> {
    let Some(text) = instance.get(ENDPOINTS_KEY) else {
        return Vec::new();
    };
    let Ok(Value::Array(items)) = serde_json::from_str::<Value>(text) else {
        tracing::debug!(instance = %instance, "unreadable dubbo.endpoints");
        return Vec::new();
    };
    items
        .iter()
        .filter_map(|e| {
            let protocol = e.get("protocol")?.as_str()?.to_owned();
            let port = int(e.get("port")?)?;
            Some(Endpoint { protocol, port })
        })
        .collect()
}

fn int(v: &Value) -> Option<i32> {
    match v {
        Value::Number(n) => n.as_i64().and_then(|p| i32::try_from(p).ok()),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

/// True when the instance exports MetadataService v2 (`meta-v=2.0.0`).
pub fn wants_v2(instance: &ServiceInstance) -> bool {
    instance.get(METADATA_SERVICE_VERSION_KEY) == Some(V2)
}

/// The v1 MetadataService URL of `instance` (module docs), calls bounded by `timeout_ms`.
///
/// Errors: `url-params` present but not a JSON object with a protocol and a port.
pub fn metadata_service_url(instance: &ServiceInstance, timeout_ms: u64) -> Result<Url> {
    let timeout = timeout_ms.to_string();
    let common = [
        ("group", instance.app()),
        ("side", "consumer"),
        ("timeout", timeout.as_str()),
        ("retries", "0"),
        ("check", "false"),
    ];
    let Some(text) = instance
        .get(METADATA_SERVICE_URL_PARAMS_KEY)
        .filter(|t| !t.trim().is_empty())
    else {
        return Ok(Url::builder("dubbo")
            .host(instance.host())
            .port(instance.port())
            .path(METADATA_SERVICE)
            .params(common)
            .param("version", V1)
            .build());
    };
    let bad = |reason: &str| {
        Error::malformed(
            "dubbo.metadata-service.url-params",
            format!("{reason} in {text:?} of {instance}"),
        )
    };
    let Ok(Value::Object(o)) = serde_json::from_str::<Value>(text) else {
        return Err(bad("not a JSON object"));
    };
    let params: BTreeMap<&str, String> = o
        .iter()
        .filter_map(|(k, v)| match v {
            Value::String(s) => Some((k.as_str(), s.clone())),
            Value::Number(n) => Some((k.as_str(), n.to_string())),
            Value::Bool(b) => Some((k.as_str(), b.to_string())),
            _ => None,
        })
        .collect();
    let protocol = params
        .get("protocol")
        .filter(|p| !p.is_empty())
        .ok_or_else(|| bad("no protocol"))?;
    let port: i32 = params
        .get("port")
        .and_then(|p| p.trim().parse().ok())
        .filter(|p| (1..=65535).contains(p))
        .ok_or_else(|| bad("no usable port"))?;
    let mut b = Url::builder(protocol)
        .host(instance.host())
        .port(port)
        .path(METADATA_SERVICE);
    for (k, v) in &params {
        if !matches!(*k, "protocol" | "port") {
            b = b.param(k, v);
        }
    }
    b = b.params(common);
    let url = b.build();
    // A provider exporting v2 announces v2's parameters (`version=2.0.0`); the v1 service
    // beside it is version 1.0.0.
    Ok(match url.param("version") {
        None | Some(V2) => url.with_param("version", V1),
        Some(_) => url,
    })
}

/// The v2 form of a MetadataService URL: path `MetadataServiceV2`, `version=2.0.0`.
pub fn v2_url(v1: &Url) -> Url {
    v1.with_path(METADATA_SERVICE_V2).with_param("version", V2)
}

/// Calls `getMetadataInfo(revision)` on one instance's MetadataService.
#[async_trait]
pub trait MetadataServiceClient: Send + Sync + fmt::Debug {
    /// Calls the service at `url` (a [`metadata_service_url`], or its [`v2_url`]) and
    /// returns the MetadataInfo of `revision`.
    ///
    /// Errors: the call failed ([`Error::MetadataService`]), the service answered null or an
    /// empty MetadataInfo ([`Error::NoMetadata`]), the reply is unreadable.
    async fn get_metadata_info(&self, url: &Url, revision: &str) -> Result<MetadataInfo>;
}

/// A shared client.
pub type SharedMetadataServiceClient = Arc<dyn MetadataServiceClient>;

/// The clients a consumer can call MetadataServices with: v1 per protocol, and v2.
#[derive(Debug, Clone, Default)]
pub struct MetadataServiceClients {
    v1: BTreeMap<String, SharedMetadataServiceClient>,
    v2: Option<SharedMetadataServiceClient>,
}

impl MetadataServiceClients {
    /// No client: only `remote` storage can be read.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds the v1 client of `protocol`.
    pub fn with_v1(mut self, protocol: &str, client: SharedMetadataServiceClient) -> Self {
        self.v1.insert(protocol.to_owned(), client);
        self
    }

    /// Sets the v2 client (Triple IDL).
    pub fn with_v2(mut self, client: SharedMetadataServiceClient) -> Self {
        self.v2 = Some(client);
        self
    }

    /// The protocols with a v1 client.
    pub fn v1_protocols(&self) -> Vec<&str> {
        self.v1.keys().map(String::as_str).collect()
    }

    /// Asks `instance` for `revision`: v2 when it says `meta-v=2.0.0` and a v2 client exists,
    /// else v1 over the URL's protocol.
    pub async fn fetch(
        &self,
        instance: &ServiceInstance,
        revision: &str,
        timeout_ms: u64,
    ) -> Result<MetadataInfo> {
        let url = metadata_service_url(instance, timeout_ms)?;
        if wants_v2(instance) {
            if let Some(v2) = &self.v2 {
                return v2.get_metadata_info(&v2_url(&url), revision).await;
            }
        }
        let protocol = url.protocol().unwrap_or("");
        match self.v1.get(protocol) {
            Some(c) => c.get_metadata_info(&url, revision).await,
            None => Err(Error::Unsupported(format!(
                "no MetadataService client for protocol {protocol:?} (instance {instance}; clients: {})",
                self.v1_protocols().join(", ")
            ))),
        }
    }
}

/// MetadataService v1 through an [`InvokerFactory`] (`dubbo` with Hessian2, or a Triple factory
/// in wrapper mode): refers the URL, calls `getMetadataInfo(java.lang.String)`, destroys the
/// invoker (as Java's `MetadataUtils` does with its proxy).
#[derive(Debug, Clone)]
pub struct InvokerMetadataClient {
    factory: Arc<dyn InvokerFactory>,
}

impl InvokerMetadataClient {
    /// A client calling through `factory`.
    pub fn new(factory: Arc<dyn InvokerFactory>) -> Self {
        InvokerMetadataClient { factory }
    }
}

#[async_trait]
impl MetadataServiceClient for InvokerMetadataClient {
    async fn get_metadata_info(&self, url: &Url, revision: &str) -> Result<MetadataInfo> {
        let target = url.to_identity_string();
        let invoker = self
            .factory
            .refer(url)
            .map_err(|e| Error::MetadataService {
                target: target.clone(),
                reason: e.to_string(),
                retryable: false,
            })?;
        let inv = Invocation::new(GET_METADATA_INFO).with_arguments(
            vec!["java.lang.String".to_owned()],
            vec![Value::String(revision.to_owned())],
        );
        let r = invoker.invoke(&inv).await;
        invoker.destroy();
        let reply = r.map_err(|e| Error::MetadataService {
            target: target.clone(),
            reason: e.to_string(),
            retryable: e.is_retryable() || !e.is_biz(),
        })?;
        from_reply(
            &reply.value,
            url.param("group").unwrap_or(""),
            revision,
            &target,
        )
    }
}

/// A MetadataService reply: `null` or a MetadataInfo without services is "no metadata".
pub fn from_reply(v: &Value, app: &str, revision: &str, target: &str) -> Result<MetadataInfo> {
    let none = || Error::NoMetadata {
        app: app.to_owned(),
        revision: revision.to_owned(),
        source_desc: target.to_owned(),
    };
    if v.is_null() {
        return Err(none());
    }
    let m = MetadataInfo::from_json(v)?;
    if m.services.is_empty() {
        return Err(none());
    }
    Ok(m)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn inst(meta: &[(&str, &str)]) -> ServiceInstance {
        ServiceInstance::new(
            "shop",
            "10.0.0.5",
            20880,
            meta.iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
        )
    }

    #[test]
    fn url_from_url_params() {
        let i = inst(&[(
            METADATA_SERVICE_URL_PARAMS_KEY,
            r#"{"connections":"1","version":"1.0.0","dubbo":"2.0.2","release":"3.3.6","side":"provider","port":"20881","protocol":"dubbo"}"#,
        )]);
        let u = metadata_service_url(&i, 5000).unwrap();
        assert_eq!(u.protocol(), Some("dubbo"));
        assert_eq!((u.host(), u.port()), (Some("10.0.0.5"), 20881));
        assert_eq!(u.path(), Some(METADATA_SERVICE));
        assert_eq!(u.param("group"), Some("shop"));
        assert_eq!(u.param("version"), Some("1.0.0"));
        assert_eq!(
            u.param("side"),
            Some("consumer"),
            "ours, not the provider's"
        );
        assert_eq!(u.param("timeout"), Some("5000"));
        assert_eq!(u.param("port"), None);
        let java = inst(&[(
            METADATA_SERVICE_URL_PARAMS_KEY,
            r#"{"prefer.serialization":"hessian2,fastjson2","version":"2.0.0","dubbo":"2.0.2","release":"3.3.6","side":"provider","port":"34899","protocol":"tri"}"#,
        )]);
        let j = metadata_service_url(&java, 5000).unwrap();
        assert_eq!((j.protocol(), j.port()), (Some("tri"), 34899));
        assert_eq!(j.param("version"), Some(V1), "the v1 URL of a v2 provider");
        assert_eq!(v2_url(&j).param("version"), Some(V2));
        let v2 = v2_url(&u);
        assert_eq!(v2.path(), Some(METADATA_SERVICE_V2));
        assert_eq!(v2.param("version"), Some(V2));
    }

    #[test]
    fn url_without_params_and_bad_params() {
        let u = metadata_service_url(&inst(&[]), 100).unwrap();
        assert_eq!(u.to_string(), "dubbo://10.0.0.5:20880/org.apache.dubbo.metadata.MetadataService?check=false&group=shop&retries=0&side=consumer&timeout=100&version=1.0.0");
        for bad in [
            "[]",
            "{\"port\":1}",
            "{\"protocol\":\"tri\"}",
            "{\"protocol\":\"tri\",\"port\":\"x\"}",
            "{",
        ] {
            let i = inst(&[(METADATA_SERVICE_URL_PARAMS_KEY, bad)]);
            assert!(metadata_service_url(&i, 1).is_err(), "{bad}");
        }
    }

    #[test]
    fn endpoints_are_lenient() {
        let i = inst(&[(
            ENDPOINTS_KEY,
            r#"[{"port":20880,"protocol":"dubbo"},{"port":"50051","protocol":"tri"},{"protocol":"x"}]"#,
        )]);
        assert_eq!(
            endpoints(&i),
            vec![
                Endpoint {
                    protocol: "dubbo".into(),
                    port: 20880
                },
                Endpoint {
                    protocol: "tri".into(),
                    port: 50051
                }
            ]
        );
        assert!(endpoints(&inst(&[(ENDPOINTS_KEY, "garbage")])).is_empty());
    }

    #[test]
    fn replies() {
        assert!(matches!(
            from_reply(&Value::Null, "a", "r", "t"),
            Err(Error::NoMetadata { .. })
        ));
        let empty = serde_json::json!({"app": "a", "revision": "r", "services": {}});
        assert!(matches!(
            from_reply(&empty, "a", "r", "t"),
            Err(Error::NoMetadata { .. })
        ));
        assert!(from_reply(&serde_json::json!([1]), "a", "r", "t").is_err());
    }
}
