//! The Curator x-discovery JSON of an application-level instance node
//! (`<root>/<app>/<host:port>`), read leniently and written as Java Dubbo 3.3 writes it
//! (`CuratorFrameworkUtils.build` → Curator's `JsonInstanceSerializer`).
//!
//! What Java writes:
//!
//! ```json
//! {"name":"shop","id":"10.0.0.1:20880","address":"10.0.0.1","port":20880,"sslPort":null,
//!  "payload":{"@class":"org.apache.dubbo.registry.zookeeper.ZookeeperInstance",
//!             "id":"10.0.0.1:20880","name":"shop","metadata":{"dubbo.metadata.revision":"..."}},
//!  "registrationTimeUTC":1700000000000,"serviceType":"DYNAMIC","uriSpec":null}
//! ```
//!
//! Reading (what Java's `CuratorFrameworkUtils.build` uses): `name`, `address`, `port` and
//! `payload.metadata`. Everything else is optional (`enabled` is absent in older Curator
//! versions, dubbo-go writes a subset); a missing `address`/`port` is taken from the node name
//! (`host:port`), a missing `name` from the parent path. Non-string metadata values are kept
//! as their JSON text. Anything that is not a JSON object with a usable address is an error.

use std::collections::BTreeMap;
use std::time::{SystemTime, UNIX_EPOCH};

use registry_core::ServiceInstance;
use serde_json::{json, Map, Value};

/// The `@class` of the payload Java writes.
pub const PAYLOAD_CLASS: &str = "org.apache.dubbo.registry.zookeeper.ZookeeperInstance";

/// Largest node data accepted (ZooKeeper's default `jute.maxbuffer` is 1 MiB).
pub const MAX_NODE_DATA: usize = 1 << 20;

/// Parses the data of node `node` (`host:port`) under application `app`.
///
/// Errors: not UTF-8 JSON, not an object, too large, or no usable address/port.
pub fn parse_instance(app: &str, node: &str, data: &[u8]) -> Result<ServiceInstance, String> {
    if data.len() > MAX_NODE_DATA {
        return Err(format!("node data of {} bytes is too large", data.len()));
    }
    let v: Value = serde_json::from_slice(data).map_err(|e| format!("not JSON: {e}"))?;
    let Value::Object(o) = v else {
        return Err("not a JSON object".into());
    };
    let (node_host, node_port) = split_host_port(node);
    let name = str_field(&o, "name").filter(|s| !s.is_empty());
    let host = str_field(&o, "address")
        .filter(|s| !s.is_empty())
        .or(node_host)
        .ok_or("no address")?;
    let port = o
        .get("port")
        .and_then(int_value)
        .or(node_port)
        .filter(|p| (1..=65535).contains(p))
        .ok_or("no usable port")?;
    let metadata = o
        .get("payload")
        .and_then(|p| p.get("metadata"))
        .and_then(Value::as_object)
        .map(string_map)
        .unwrap_or_default();
    let enabled = o.get("enabled").and_then(Value::as_bool).unwrap_or(true);
    Ok(
        ServiceInstance::new(name.unwrap_or(app), host, port as i32, metadata)
            .with_status(enabled, true),
    )
}

/// The node data Java writes for `instance` (its metadata sorted, `registrationTimeUTC` now).
pub fn to_json(instance: &ServiceInstance) -> Vec<u8> {
    let id = instance.address();
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0);
    let v = json!({
        "name": instance.app(),
        "id": id,
        "address": instance.host(),
        "port": instance.port(),
        "sslPort": null,
        "payload": {
            "@class": PAYLOAD_CLASS,
            "id": id,
            "name": instance.app(),
            "metadata": instance.metadata(),
        },
        "registrationTimeUTC": now,
        "serviceType": "DYNAMIC",
        "uriSpec": null,
    });
    v.to_string().into_bytes()
}

fn str_field<'a>(o: &'a Map<String, Value>, k: &str) -> Option<&'a str> {
    o.get(k).and_then(Value::as_str)
}

fn int_value(v: &Value) -> Option<i64> {
    match v {
        Value::Number(n) => n.as_i64(),
        Value::String(s) => s.trim().parse().ok(),
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

/// `host:port` of a node name (IPv6 hosts keep their colons: the port is after the last one).
fn split_host_port(node: &str) -> (Option<&str>, Option<i64>) {
    match node.rsplit_once(':') {
        Some((h, p)) if !h.is_empty() => (Some(h), p.parse().ok()),
        _ => (None, None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use registry_core::instance::REVISION_KEY;

    #[test]
    fn java_node_round_trip() {
        let java = r#"{"name":"shop","id":"10.0.0.1:20880","address":"10.0.0.1","port":20880,"sslPort":null,"payload":{"@class":"org.apache.dubbo.registry.zookeeper.ZookeeperInstance","id":"10.0.0.1:20880","name":"shop","metadata":{"dubbo.endpoints":"[{\"port\":20880,\"protocol\":\"dubbo\"}]","dubbo.metadata.revision":"9b1c","dubbo.metadata.storage-type":"local","timestamp":"1700000000000"}},"registrationTimeUTC":1700000000000,"serviceType":"DYNAMIC","uriSpec":null}"#;
        let i = parse_instance("shop", "10.0.0.1:20880", java.as_bytes()).unwrap();
        assert_eq!(i.app(), "shop");
        assert_eq!((i.host(), i.port()), ("10.0.0.1", 20880));
        assert_eq!(i.get(REVISION_KEY), Some("9b1c"));
        assert!(i.is_enabled());
        let again = parse_instance("shop", "10.0.0.1:20880", &to_json(&i)).unwrap();
        assert!(ServiceInstance::identical(&i, &again));
    }

    #[test]
    fn lenient_subsets_and_odd_values() {
        // dubbo-go's subset, a string port, a number in the metadata, enabled=false.
        let go = r#"{"name":"g","id":"1.2.3.4:2000","address":"1.2.3.4","port":"2000","enabled":false,"payload":{"metadata":{"n":5,"x":null}}}"#;
        let i = parse_instance("g", "1.2.3.4:2000", go.as_bytes()).unwrap();
        assert_eq!(i.port(), 2000);
        assert_eq!(i.get("n"), Some("5"));
        assert_eq!(i.get("x"), None);
        assert!(!i.is_enabled());
        // Address and port from the node name; name from the parent.
        let bare = parse_instance("app", "10.1.1.1:7", b"{}").unwrap();
        assert_eq!(
            (bare.app(), bare.host(), bare.port()),
            ("app", "10.1.1.1", 7)
        );
        let v6 = parse_instance("app", "fe80::1:7", b"{}").unwrap();
        assert_eq!((v6.host(), v6.port()), ("fe80::1", 7));
    }

    #[test]
    fn garbage_is_an_error() {
        for bad in [
            &b"not json"[..],
            b"[]",
            b"\xff\xfe",
            b"{\"port\":0}",
            b"{\"port\":70000}",
        ] {
            assert!(parse_instance("a", "h", bad).is_err(), "{bad:?}");
        }
        assert!(parse_instance("a", "h:1", &vec![b' '; MAX_NODE_DATA + 1]).is_err());
    }
}
