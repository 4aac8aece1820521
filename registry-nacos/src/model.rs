//! Wire types of the Nacos v1 open API replies this crate reads.

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::value::RawValue;

/// One host of an `instance/list` reply. `metadata` is kept as raw JSON text so an unchanged
/// instance can be recognised without parsing its metadata again.
#[derive(Debug, Deserialize)]
pub(crate) struct RawHost<'a> {
    #[serde(borrow)]
    pub ip: Cow<'a, str>,
    pub port: i64,
    #[serde(default = "yes")]
    pub enabled: bool,
    #[serde(default = "yes")]
    pub healthy: bool,
    #[serde(borrow, default)]
    pub metadata: Option<&'a RawValue>,
}

fn yes() -> bool {
    true
}

/// `GET /nacos/v1/ns/instance/list`.
#[derive(Debug, Deserialize)]
pub(crate) struct RawInstanceList<'a> {
    #[serde(borrow, default)]
    pub hosts: Vec<RawHost<'a>>,
}

/// `GET /nacos/v1/ns/service/list`.
#[derive(Debug, Deserialize)]
pub(crate) struct ServiceList {
    #[serde(default)]
    pub count: usize,
    #[serde(default)]
    pub doms: Vec<String>,
}

/// `PUT /nacos/v1/ns/instance/beat`.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct BeatReply {
    #[serde(default)]
    pub client_beat_interval: Option<i64>,
    #[serde(default)]
    pub code: Option<i64>,
}

/// `POST /nacos/v1/auth/login` (the token is never logged).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct LoginReply {
    pub access_token: Option<String>,
    #[serde(default)]
    pub token_ttl: Option<i64>,
}

/// The beat JSON a v1 client sends; servers (rnacos in particular) re-create an unknown
/// instance from it, so it must carry the full instance including metadata.
#[derive(Debug, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct BeatInfo<'a> {
    pub service_name: &'a str,
    pub ip: &'a str,
    pub port: i32,
    pub cluster: &'a str,
    pub weight: f64,
    pub metadata: &'a std::collections::BTreeMap<String, String>,
    pub scheduled: bool,
    pub period: i64,
    pub stopped: bool,
}

/// Nacos' "resource not found" code in a beat reply: the instance is unknown, register again.
pub(crate) const CODE_RESOURCE_NOT_FOUND: i64 = 20404;
