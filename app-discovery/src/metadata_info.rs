//! `MetadataInfo`: what one revision of an application exports (Dubbo's
//! `org.apache.dubbo.metadata.MetadataInfo`), and its JSON form.
//!
//! A [`MetadataInfo`] holds the application, the revision and one [`ServiceInfo`] per exported
//! (interface, group, version, protocol), keyed by the match key
//! `[group/]interface[:version]:protocol`. The revision is an opaque cache key: Java computes an
//! MD5, dubbo-go a CRC sum; a consumer never recomputes it.
//!
//! [`MetadataInfo::from_json`] reads what Java stores in a metadata report and what the Hessian
//! (JSON-mapped) reply of `MetadataService.getMetadataInfo` holds: unknown keys are ignored
//! (getter-based serializers add `matchKey`, `serviceKey`, ...; the Hessian mapping adds
//! `class`), `port` may be a number or a string, a missing `port` is `-1`, non-string
//! parameter values keep their JSON text, `services` may be an object or a list, and an empty
//! `path` is the interface name. A service without a name is skipped.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::{json, Map, Value};

use crate::error::{Error, Result};

/// Largest MetadataInfo JSON accepted (bytes).
pub const MAX_METADATA_JSON: usize = 16 << 20;

/// One exported service of a revision (Dubbo's `MetadataInfo.ServiceInfo`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ServiceInfo {
    /// The interface name.
    pub name: String,
    /// The group, `None` when absent or empty.
    pub group: Option<String>,
    /// The version, `None` when absent or empty.
    pub version: Option<String>,
    /// The protocol (`dubbo`, `tri`, ...), `None` when absent.
    pub protocol: Option<String>,
    /// The port, `-1` (or any value ≤ 0) when unset: then the instance's port applies.
    pub port: i32,
    /// The URL path; usually the interface name.
    pub path: String,
    /// The exported URL's parameters.
    pub params: BTreeMap<String, String>,
}

impl ServiceInfo {
    /// A service of `name` with no group, version or parameters, path = name, port unset.
    pub fn new(name: &str, protocol: &str) -> Self {
        ServiceInfo {
            name: name.to_owned(),
            group: None,
            version: None,
            protocol: Some(protocol.to_owned()).filter(|p| !p.is_empty()),
            port: -1,
            path: name.to_owned(),
            params: BTreeMap::new(),
        }
    }

    /// Dubbo's service key `[group/]interface[:version]`.
    pub fn service_key(&self) -> String {
        registry_core::url::build_key(&self.name, self.group.as_deref(), self.version.as_deref())
    }

    /// Dubbo's match key: the service key, then `:protocol` when there is one.
    pub fn match_key(&self) -> String {
        let mut k = self.service_key();
        if let Some(p) = self.protocol.as_deref().filter(|p| !p.is_empty()) {
            k.push(':');
            k.push_str(p);
        }
        k
    }

    /// One parameter.
    pub fn param(&self, key: &str) -> Option<&str> {
        self.params.get(key).map(String::as_str)
    }

    fn from_json(v: &Value) -> Option<ServiceInfo> {
        let o = v.as_object()?;
        let name = text(o, "name").filter(|n| !n.is_empty())?;
        let path = text(o, "path")
            .filter(|p| !p.is_empty())
            .unwrap_or_else(|| name.clone());
        let port = o
            .get("port")
            .and_then(|p| match p {
                Value::Number(n) => n.as_i64(),
                Value::String(s) => s.trim().parse().ok(),
                _ => None,
            })
            .and_then(|p| i32::try_from(p).ok())
            .unwrap_or(-1);
        let params = o
            .get("params")
            .and_then(Value::as_object)
            .map(string_map)
            .unwrap_or_default();
        Some(ServiceInfo {
            name,
            group: text(o, "group").filter(|s| !s.is_empty()),
            version: text(o, "version").filter(|s| !s.is_empty()),
            protocol: text(o, "protocol").filter(|s| !s.is_empty()),
            port,
            path,
            params,
        })
    }

    fn to_json(&self) -> Value {
        json!({
            "name": self.name,
            "group": self.group,
            "version": self.version,
            "protocol": self.protocol,
            "port": self.port,
            "path": self.path,
            "params": self.params,
        })
    }
}

/// What one revision of an application exports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MetadataInfo {
    /// The application.
    pub app: String,
    /// The revision.
    pub revision: String,
    /// The services, by match key.
    pub services: BTreeMap<String, Arc<ServiceInfo>>,
}

impl MetadataInfo {
    /// A MetadataInfo of `app`/`revision` with `services` keyed by their match keys.
    pub fn new(app: &str, revision: &str, services: impl IntoIterator<Item = ServiceInfo>) -> Self {
        MetadataInfo {
            app: app.to_owned(),
            revision: revision.to_owned(),
            services: services
                .into_iter()
                .map(|s| (s.match_key(), Arc::new(s)))
                .collect(),
        }
    }

    /// Parses the JSON of a metadata report entry or a JSON-mapped Hessian reply (module docs).
    ///
    /// Errors: not JSON, not an object, or too large.
    pub fn from_json_text(text: &str) -> Result<MetadataInfo> {
        if text.len() > MAX_METADATA_JSON {
            return Err(Error::malformed(
                "MetadataInfo",
                format!("{} bytes is too large", text.len()),
            ));
        }
        let v: Value = serde_json::from_str(text)
            .map_err(|e| Error::malformed("MetadataInfo", e.to_string()))?;
        Self::from_json(&v)
    }

    /// Parses a JSON value (module docs). `null` is an error (Java's MetadataService answers
    /// null for an unknown revision).
    pub fn from_json(v: &Value) -> Result<MetadataInfo> {
        let o = v.as_object().ok_or_else(|| {
            Error::malformed("MetadataInfo", format!("not an object: {}", kind(v)))
        })?;
        let mut services = BTreeMap::new();
        match o.get("services") {
            Some(Value::Object(m)) => {
                for (k, s) in m {
                    if let Some(si) = ServiceInfo::from_json(s) {
                        let key = if k.is_empty() {
                            si.match_key()
                        } else {
                            k.clone()
                        };
                        services.insert(key, Arc::new(si));
                    }
                }
            }
            Some(Value::Array(a)) => {
                for s in a {
                    if let Some(si) = ServiceInfo::from_json(s) {
                        services.insert(si.match_key(), Arc::new(si));
                    }
                }
            }
            _ => {}
        }
        Ok(MetadataInfo {
            app: text(o, "app").unwrap_or_default(),
            revision: text(o, "revision").unwrap_or_default(),
            services,
        })
    }

    /// The JSON Java stores in a metadata report (`app`, `revision`, `services`).
    pub fn to_json(&self) -> Value {
        let services: Map<String, Value> = self
            .services
            .iter()
            .map(|(k, s)| (k.clone(), s.to_json()))
            .collect();
        json!({"app": self.app, "revision": self.revision, "services": services})
    }

    /// The distinct interface names, sorted.
    pub fn interfaces(&self) -> Vec<&str> {
        let mut v: Vec<&str> = self.services.values().map(|s| s.name.as_str()).collect();
        v.sort_unstable();
        v.dedup();
        v
    }
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

fn text(o: &Map<String, Value>, k: &str) -> Option<String> {
    match o.get(k)? {
        Value::String(s) => Some(s.clone()),
        Value::Null => None,
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

fn string_map(o: &Map<String, Value>) -> BTreeMap<String, String> {
    o.iter()
        .filter_map(|(k, v)| {
            let v = match v {
                Value::String(s) => s.clone(),
                Value::Null => return None,
                other => other.to_string(),
            };
            Some((k.clone(), v))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What Java 3.3 stores in `/dubbo/metadata/<app>/<revision>` (shape of `JsonUtils.toJson`).
    const JAVA: &str = r#"{"app":"shop","revision":"2c9f4b3c0d8a","services":{
        "com.foo.Greeter:1.0.0:dubbo":{"name":"com.foo.Greeter","version":"1.0.0","protocol":"dubbo","port":20880,"path":"com.foo.Greeter","params":{"side":"provider","methods":"greet","version":"1.0.0","interface":"com.foo.Greeter","application":"shop","release":"3.3.6"}},
        "g1/com.foo.Greeter:tri":{"name":"com.foo.Greeter","group":"g1","protocol":"tri","port":50051,"path":"com.foo.Greeter","params":{"group":"g1"},"matchKey":"g1/com.foo.Greeter:tri","serviceKey":"g1/com.foo.Greeter"}}}"#;

    #[test]
    fn reads_java_json_and_ignores_extra_keys() {
        let m = MetadataInfo::from_json_text(JAVA).unwrap();
        assert_eq!(m.app, "shop");
        assert_eq!(m.revision, "2c9f4b3c0d8a");
        assert_eq!(m.services.len(), 2);
        let s = &m.services["com.foo.Greeter:1.0.0:dubbo"];
        assert_eq!(s.port, 20880);
        assert_eq!(s.group, None);
        assert_eq!(s.version.as_deref(), Some("1.0.0"));
        assert_eq!(s.match_key(), "com.foo.Greeter:1.0.0:dubbo");
        assert_eq!(
            m.services["g1/com.foo.Greeter:tri"].match_key(),
            "g1/com.foo.Greeter:tri"
        );
        assert_eq!(m.interfaces(), vec!["com.foo.Greeter"]);
        // Round trip through our own JSON.
        let again = MetadataInfo::from_json(&m.to_json()).unwrap();
        assert_eq!(again, m);
    }

    #[test]
    fn reads_the_hessian_mapping() {
        // `Value::to_json` of the typed objects a v1 MetadataService returns.
        let v = json!({"class": "org.apache.dubbo.metadata.MetadataInfo", "app": "a", "revision": "r",
            "services": {"S:dubbo": {"class": "org.apache.dubbo.metadata.MetadataInfo$ServiceInfo",
            "name": "S", "group": null, "version": null, "protocol": "dubbo", "port": -1, "path": null,
            "params": {"timeout": 3000, "x": null}}}});
        let m = MetadataInfo::from_json(&v).unwrap();
        let s = &m.services["S:dubbo"];
        assert_eq!(s.path, "S");
        assert_eq!(s.port, -1);
        assert_eq!(s.param("timeout"), Some("3000"));
        assert_eq!(s.param("x"), None);
    }

    #[test]
    fn lenient_and_refusing() {
        let m = MetadataInfo::from_json_text(
            r#"{"app":"a","services":[{"name":"S","protocol":"tri","port":"7"},{"port":1}]}"#,
        )
        .unwrap();
        assert_eq!(m.services.len(), 1, "a service without a name is skipped");
        assert_eq!(m.services["S:tri"].port, 7);
        for bad in ["null", "[]", "\"x\"", "{", ""] {
            assert!(MetadataInfo::from_json_text(bad).is_err(), "{bad}");
        }
        let huge = " ".repeat(MAX_METADATA_JSON + 1);
        assert!(MetadataInfo::from_json_text(&huge).is_err());
    }
}
