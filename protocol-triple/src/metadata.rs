//! MetadataService v2 over Triple IDL: how an application-level consumer asks a Dubbo 3.3
//! instance announcing `meta-v=2.0.0` for the `MetadataInfo` of a revision
//! ([`MetadataServiceV2Client`], an [`app_discovery::MetadataServiceClient`]).
//!
//! The call is `/org.apache.dubbo.metadata.MetadataServiceV2/GetMetadataInfo` with
//! `tri-service-group: <app>` and `tri-service-version: 2.0.0`, protobuf in and out
//! (Dubbo's `metadata_service_v2.proto`, written out below as `prost` messages: no protoc, no
//! Hessian). An empty reply (no services) is "no MetadataInfo for this revision".
//!
//! v1 over Triple (`getMetadataInfo(String)` in wrapper mode) needs no code here: give
//! `app_discovery::InvokerMetadataClient` a [`crate::TripleInvokerFactory`] in wrapper mode.

use std::collections::HashMap;
use std::time::Duration;

use app_discovery::{Error as AppError, MetadataInfo, MetadataServiceClient, ServiceInfo};
use async_trait::async_trait;
use registry_core::Url;

use crate::client::TripleClient;
use crate::connection::ConnectionOptions;

/// The v2 method path.
pub const GET_METADATA_INFO_PATH: &str =
    "/org.apache.dubbo.metadata.MetadataServiceV2/GetMetadataInfo";

/// `MetadataRequest { string revision = 1; }`
#[derive(Clone, PartialEq, prost::Message)]
pub struct MetadataRequest {
    /// The revision asked for.
    #[prost(string, tag = "1")]
    pub revision: String,
}

/// `MetadataInfoV2 { string app = 1; string version = 2; map<string, ServiceInfoV2> services = 3; }`
#[derive(Clone, PartialEq, prost::Message)]
pub struct MetadataInfoV2 {
    /// The application.
    #[prost(string, tag = "1")]
    pub app: String,
    /// The revision.
    #[prost(string, tag = "2")]
    pub version: String,
    /// The services by match key.
    #[prost(map = "string, message", tag = "3")]
    pub services: HashMap<String, ServiceInfoV2>,
}

/// `ServiceInfoV2` (fields 1–7: name, group, version, protocol, port, path, params).
#[derive(Clone, PartialEq, prost::Message)]
pub struct ServiceInfoV2 {
    /// The interface.
    #[prost(string, tag = "1")]
    pub name: String,
    /// The group (empty: none).
    #[prost(string, tag = "2")]
    pub group: String,
    /// The version (empty: none).
    #[prost(string, tag = "3")]
    pub version: String,
    /// The protocol.
    #[prost(string, tag = "4")]
    pub protocol: String,
    /// The port (≤ 0: unset).
    #[prost(int32, tag = "5")]
    pub port: i32,
    /// The path.
    #[prost(string, tag = "6")]
    pub path: String,
    /// The parameters.
    #[prost(map = "string, string", tag = "7")]
    pub params: HashMap<String, String>,
}

impl MetadataInfoV2 {
    /// The crate-neutral form (empty strings become absent values).
    pub fn into_metadata_info(self) -> MetadataInfo {
        let none_if_empty = |s: String| (!s.is_empty()).then_some(s);
        let services = self
            .services
            .into_iter()
            .filter(|(_, s)| !s.name.is_empty())
            .map(|(key, s)| {
                let info = ServiceInfo {
                    path: if s.path.is_empty() {
                        s.name.clone()
                    } else {
                        s.path
                    },
                    name: s.name,
                    group: none_if_empty(s.group),
                    version: none_if_empty(s.version),
                    protocol: none_if_empty(s.protocol),
                    port: if s.port == 0 { -1 } else { s.port },
                    params: s.params.into_iter().collect(),
                };
                let key = if key.is_empty() {
                    info.match_key()
                } else {
                    key
                };
                (key, std::sync::Arc::new(info))
            })
            .collect();
        MetadataInfo {
            app: self.app,
            revision: self.version,
            services,
        }
    }
}

/// Calls MetadataService v2 (module docs). One connection per call, closed afterwards, as
/// Java refers and destroys a proxy per fetch.
#[derive(Debug, Clone, Default)]
pub struct MetadataServiceV2Client {
    options: ConnectionOptions,
}

impl MetadataServiceV2Client {
    /// A client with default connection options.
    pub fn new() -> Self {
        Self::default()
    }
}

#[async_trait]
impl MetadataServiceClient for MetadataServiceV2Client {
    async fn get_metadata_info(
        &self,
        url: &Url,
        revision: &str,
    ) -> app_discovery::Result<MetadataInfo> {
        let target = url.to_identity_string();
        let timeout = Duration::from_millis(url.param_positive_i64("timeout", 5000) as u64);
        let client = TripleClient::with_options(url, self.options.clone()).map_err(|e| {
            AppError::MetadataService {
                target: target.clone(),
                reason: e.to_string(),
                retryable: false,
            }
        })?;
        let request = MetadataRequest {
            revision: revision.to_owned(),
        };
        let r = client
            .unary::<_, MetadataInfoV2>(GET_METADATA_INFO_PATH, &request, timeout)
            .await;
        client.connection().close();
        let reply = r.map_err(|e| AppError::MetadataService {
            target: target.clone(),
            reason: e.to_string(),
            retryable: e.is_retryable(),
        })?;
        let info = reply.into_metadata_info();
        if info.services.is_empty() {
            return Err(AppError::NoMetadata {
                app: url.param("group").unwrap_or("").to_owned(),
                revision: revision.to_owned(),
                source_desc: target,
            });
        }
        Ok(info)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use prost::Message;

    #[test]
    fn v2_reply_becomes_metadata_info() {
        let mut params = HashMap::new();
        params.insert("side".to_owned(), "provider".to_owned());
        let mut services = HashMap::new();
        services.insert(
            "com.foo.S:tri".to_owned(),
            ServiceInfoV2 {
                name: "com.foo.S".into(),
                group: String::new(),
                version: String::new(),
                protocol: "tri".into(),
                port: 50051,
                path: "com.foo.S".into(),
                params,
            },
        );
        services.insert("x".to_owned(), ServiceInfoV2::default());
        let v2 = MetadataInfoV2 {
            app: "shop".into(),
            version: "abc".into(),
            services,
        };
        let bytes = v2.encode_to_vec();
        let back = MetadataInfoV2::decode(bytes.as_slice()).unwrap();
        let m = back.into_metadata_info();
        assert_eq!((m.app.as_str(), m.revision.as_str()), ("shop", "abc"));
        assert_eq!(m.services.len(), 1, "a service without a name is dropped");
        let s = &m.services["com.foo.S:tri"];
        assert_eq!(
            (s.group.as_deref(), s.version.as_deref(), s.port),
            (None, None, 50051)
        );
        assert_eq!(s.param("side"), Some("provider"));
    }
}
