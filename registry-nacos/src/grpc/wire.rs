//! The JSON bodies this client sends and reads over gRPC (Nacos's `Request`/`Response` classes of
//! `api/naming/remote`, `api/remote`). Every request
//! carries `headers: {}` and its `module`; replies are read leniently (every field optional,
//! unknown fields ignored); success is `resultCode == 200`.

use std::borrow::Cow;
use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

/// `resultCode` of a successful reply.
pub const SUCCESS: i32 = 200;
/// errorCode: the server is starting (try another server / later).
pub const CODE_SERVER_STARTING: i32 = 300;
/// errorCode: the connection is not (or no longer) registered: reconnect.
pub const CODE_UNREGISTERED: i32 = 301;
/// errorCode: no handler for the request type.
pub const CODE_NO_HANDLER: i32 = 302;
/// errorCode: invalid parameter (for example instance metadata over 1024 characters).
pub const CODE_INVALID_PARAM: i32 = 400;
/// errorCode: no right (auth): log in again.
pub const CODE_NO_RIGHT: i32 = 403;

/// Server ability: `PersistentInstanceRequest` over gRPC (Java 2.3+).
pub const ABILITY_PERSISTENT_INSTANCE: &str = "supportPersistentInstanceByGrpc";
/// Server ability: naming/config fuzzy watch (Java 3.0+).
pub const ABILITY_FUZZY_WATCH: &str = "fuzzyWatch";

/// `SetupAckRequest` (server to client, Java 2.3+): the server's abilities.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct SetupAck {
    /// Ability name → supported (`true`; anything else counts as not supported).
    pub ability_table: std::collections::HashMap<String, serde_json::Value>,
}

/// The fields of the request base every body has.
#[derive(Debug, Serialize)]
pub struct Base {
    /// Always `{}` (headers travel in the gRPC metadata).
    pub headers: BTreeMap<String, String>,
    /// `internal`, `naming` or `config`.
    pub module: &'static str,
}

impl Base {
    /// A base of `module`.
    pub fn of(module: &'static str) -> Self {
        Base {
            headers: BTreeMap::new(),
            module,
        }
    }
}

/// `ConnectionSetupRequest` (first message on the stream).
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ConnectionSetup<'a> {
    /// Base fields.
    #[serde(flatten)]
    pub base: Base,
    /// `Nacos-Rust-Dubbo:v<version>`.
    pub client_version: &'a str,
    /// `source: sdk`, `module`, `AppName`.
    pub labels: BTreeMap<&'static str, &'a str>,
    /// Sent when the server negotiates abilities (then it answers with SetupAckRequest):
    /// `{"fuzzyWatch": true}` on naming connections, `{}` on config ones.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ability_table: Option<BTreeMap<String, bool>>,
    /// The namespace (config connections only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tenant: Option<&'a str>,
}

/// An instance as registered.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Instance<'a> {
    /// IP.
    pub ip: &'a str,
    /// Port.
    pub port: i32,
    /// Always 1.0.
    pub weight: f64,
    /// Always true.
    pub healthy: bool,
    /// Always true.
    pub enabled: bool,
    /// True (the default): bound to the connection. False: a persistent instance
    /// (`PersistentInstanceRequest`), kept by the server until deregistered.
    pub ephemeral: bool,
    /// `DEFAULT`.
    pub cluster_name: &'a str,
    /// Dubbo metadata.
    pub metadata: &'a BTreeMap<String, String>,
}

/// The naming request base (`AbstractNamingRequest`).
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NamingBase<'a> {
    /// Base fields (`module: naming`).
    #[serde(flatten)]
    pub base: Base,
    /// Namespace id (always explicit, `public` by default).
    pub namespace: &'a str,
    /// Service name (no group prefix).
    pub service_name: &'a str,
    /// Group.
    pub group_name: &'a str,
}

impl<'a> NamingBase<'a> {
    /// A naming base.
    pub fn new(namespace: &'a str, service_name: &'a str, group_name: &'a str) -> Self {
        NamingBase {
            base: Base::of("naming"),
            namespace,
            service_name,
            group_name,
        }
    }
}

/// `InstanceRequest` (`registerInstance` / `deregisterInstance`).
#[derive(Debug, Serialize)]
pub struct InstanceRequest<'a> {
    /// Naming base.
    #[serde(flatten)]
    pub base: NamingBase<'a>,
    /// The operation.
    #[serde(rename = "type")]
    pub op: &'static str,
    /// The instance.
    pub instance: Instance<'a>,
}

/// `BatchInstanceRequest` (`batchRegisterInstance`, the full set of this connection).
#[derive(Debug, Serialize)]
pub struct BatchInstanceRequest<'a> {
    /// Naming base.
    #[serde(flatten)]
    pub base: NamingBase<'a>,
    /// Always `batchRegisterInstance`.
    #[serde(rename = "type")]
    pub op: &'static str,
    /// The instances.
    pub instances: Vec<Instance<'a>>,
}

/// `SubscribeServiceRequest`.
#[derive(Debug, Serialize)]
pub struct SubscribeRequest<'a> {
    /// Naming base.
    #[serde(flatten)]
    pub base: NamingBase<'a>,
    /// Subscribe or unsubscribe.
    pub subscribe: bool,
    /// Always `""` (clusters are filtered client-side).
    pub clusters: &'static str,
}

/// `ServiceQueryRequest`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct QueryRequest<'a> {
    /// Naming base.
    #[serde(flatten)]
    pub base: NamingBase<'a>,
    /// `""`.
    pub cluster: &'static str,
    /// false: Dubbo ignores health.
    pub healthy_only: bool,
    /// 0 (no UDP push).
    pub udp_port: i32,
}

/// `ServiceListRequest`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ServiceListRequest<'a> {
    /// Naming base (`serviceName` empty).
    #[serde(flatten)]
    pub base: NamingBase<'a>,
    /// 1-based page.
    pub page_no: u32,
    /// Page size.
    pub page_size: u32,
    /// `""` (ignored by servers).
    pub selector: &'static str,
}

/// `NamingFuzzyWatchRequest` (3.0+): start (`WATCH`) or stop (`CANCEL_WATCH`) a fuzzy watch.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FuzzyWatchRequest<'a> {
    /// Base fields (`module: naming`).
    #[serde(flatten)]
    pub base: Base,
    /// Namespace id.
    pub namespace: &'a str,
    /// `namespace>>groupPattern>>servicePattern`.
    pub group_key_pattern: &'a str,
    /// Service keys already known (`namespace@@group@@service`): the server sends only the
    /// difference.
    pub received_group_keys: Vec<String>,
    /// `WATCH` or `CANCEL_WATCH`.
    pub watch_type: &'static str,
    /// True for the first watch of the pattern (Java's `isInitializing` field, which Jackson
    /// names `initializing` after its `isInitializing()` getter).
    #[serde(rename = "initializing")]
    pub is_initializing: bool,
}

/// One service of a fuzzy-watch sync batch.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct FuzzyContext {
    /// `namespace@@group@@service`.
    pub service_key: String,
    /// `ADD_SERVICE` or `DELETE_SERVICE`.
    pub changed_type: String,
}

/// `NamingFuzzyWatchSyncRequest` (server to client): a batch of the initial or diff sync.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct FuzzySync {
    /// The pattern the batch is for.
    pub group_key_pattern: String,
    /// `FUZZY_WATCH_INIT_NOTIFY`, `FINISH_FUZZY_WATCH_INIT_NOTIFY` or
    /// `FUZZY_WATCH_DIFF_SYNC_NOTIFY`.
    pub sync_type: String,
    /// The services of the batch.
    pub contexts: Vec<FuzzyContext>,
}

/// `NamingFuzzyWatchChangeNotifyRequest` (server to client): one service added or deleted.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct FuzzyChange {
    /// `namespace@@group@@service`.
    pub service_key: String,
    /// `ADD_SERVICE` or `DELETE_SERVICE`.
    pub changed_type: String,
}

/// The response base of every reply.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ResponseHead {
    /// 200 on success.
    pub result_code: i32,
    /// The failure code.
    pub error_code: i32,
    /// The failure message.
    pub message: Option<String>,
}

/// `ServerCheckResponse`.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ServerCheckResponse {
    /// The connection id.
    pub connection_id: Option<String>,
    /// True on Java 2.3+ (a SetupAckRequest follows the setup).
    pub support_ability_negotiation: bool,
}

/// A reply carrying `serviceInfo` (`SubscribeServiceResponse`, `QueryServiceResponse`) or a
/// push (`NotifySubscriberRequest`); the service info is kept as raw JSON.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WithServiceInfo<'a> {
    /// The service info.
    #[serde(borrow, default)]
    pub service_info: Option<&'a RawValue>,
    /// The push id (pushes only).
    #[serde(default)]
    pub request_id: Option<String>,
}

/// The identifying fields of a `ServiceInfo`.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ServiceInfoHead<'a> {
    /// Service name (maybe `group@@name`).
    #[serde(borrow)]
    pub name: Option<Cow<'a, str>>,
    /// Group.
    #[serde(borrow)]
    pub group_name: Option<Cow<'a, str>>,
}

/// `ServiceListResponse`.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ServiceListResponse {
    /// Total names in the group.
    pub count: usize,
    /// This page.
    pub service_names: Vec<String>,
}

/// The `requestId` of a server request.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ServerRequestHead {
    /// The id to echo.
    pub request_id: Option<String>,
}

/// `ConnectResetRequest`.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ConnectReset {
    /// The server to move to (main port), if any.
    pub server_ip: Option<String>,
    /// Its port (a string on the wire; a number is accepted too).
    pub server_port: Option<serde_json::Value>,
}

/// The reply sent for a server request: `{resultCode, errorCode, requestId}`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Ack<'a> {
    /// 200, or 500 for an unknown request.
    pub result_code: i32,
    /// 0, or 302 for an unknown request.
    pub error_code: i32,
    /// Echoed id.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub request_id: Option<&'a str>,
    /// Failure message.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<&'a str>,
}

/// Splits a `group@@name` service name.
pub fn split_grouped(name: &str) -> (Option<&str>, &str) {
    match name.split_once("@@") {
        Some((g, n)) => (Some(g), n),
        None => (None, name),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn instance_request_json() {
        let md: BTreeMap<String, String> = [("k".to_owned(), "v".to_owned())].into();
        let r = InstanceRequest {
            base: NamingBase::new("public", "providers:a.B::", "DEFAULT_GROUP"),
            op: "registerInstance",
            instance: Instance {
                ip: "1.2.3.4",
                port: 20880,
                weight: 1.0,
                healthy: true,
                enabled: true,
                ephemeral: true,
                cluster_name: "DEFAULT",
                metadata: &md,
            },
        };
        let v: serde_json::Value = serde_json::to_value(&r).unwrap();
        assert_eq!(v["namespace"], "public");
        assert_eq!(v["serviceName"], "providers:a.B::");
        assert_eq!(v["groupName"], "DEFAULT_GROUP");
        assert_eq!(v["type"], "registerInstance");
        assert_eq!(v["module"], "naming");
        assert_eq!(v["headers"], serde_json::json!({}));
        assert_eq!(v["instance"]["clusterName"], "DEFAULT");
        assert_eq!(v["instance"]["metadata"]["k"], "v");
        assert!(v["instance"].get("serviceName").is_none());
    }

    #[test]
    fn lenient_replies() {
        let h: ResponseHead =
            serde_json::from_str(r#"{"resultCode":500,"errorCode":301,"x":1}"#).unwrap();
        assert_eq!((h.result_code, h.error_code), (500, 301));
        let p: WithServiceInfo<'_> = serde_json::from_str(
            r#"{"serviceInfo":{"name":"DEFAULT_GROUP@@s","hosts":[]},"requestId":"7"}"#,
        )
        .unwrap();
        assert_eq!(p.request_id.as_deref(), Some("7"));
        let head: ServiceInfoHead<'_> =
            serde_json::from_str(p.service_info.unwrap().get()).unwrap();
        assert_eq!(
            split_grouped(head.name.as_deref().unwrap()),
            (Some("DEFAULT_GROUP"), "s")
        );
    }
}
