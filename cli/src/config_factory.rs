//! Maps a registry (or config-centre) URL to a connected [`SharedConfigCenter`].
//!
//! As in Dubbo, **the config centre defaults to the registry address** (Dubbo's
//! `useRegistryAsConfigCenterIfNecessary`: same protocol, address, credentials and parameters,
//! namespace = the registry `group`). A registry URL with `use-as-config-center=false` has no
//! config centre, and `--config-center URL` (Dubbo's `dubbo.config-center.address`) replaces
//! the default.
//!
//! Connected through the front door ([`dubbo_consumer::Connector::config_center`]):
//! `zookeeper://` (`/<group or namespace>/config/<group>/<key>`), `nacos://` (the Nacos
//! config client), `memory://NAME` (same process only).

use std::time::Duration;

use dubbo_consumer::Connector;
use registry_core::{SharedConfigCenter, Url};

/// The config-centre URL for `registry`: `override_url` when given, none when the registry
/// says `use-as-config-center=false`, else the registry URL itself
/// ([`dubbo_consumer::config_center_url`]).
pub fn config_center_url(
    registry: &Url,
    override_url: Option<&str>,
) -> anyhow::Result<Option<Url>> {
    let o = match override_url {
        Some(o) => Some(dubbo_consumer::parse_url("config centre", o)?),
        None => None,
    };
    Ok(dubbo_consumer::config_center_url(registry, o.as_ref()))
}

/// Connects to the config centre at `url`, failing with a clear error within `timeout`.
pub async fn connect(url: &Url, timeout: Duration) -> anyhow::Result<SharedConfigCenter> {
    Connector::from_url(url.clone())
        .timeout(timeout)
        .config_center()
        .await
        .map_err(Into::into)
}

/// The config centre of `registry` (see [`config_center_url`]), connected; `None` when the
/// registry is not used as one and no override is given.
pub async fn for_registry(
    registry: &str,
    override_url: Option<&str>,
    timeout: Duration,
) -> anyhow::Result<Option<SharedConfigCenter>> {
    let reg = dubbo_consumer::parse_url("registry", registry)?;
    match config_center_url(&reg, override_url)? {
        Some(u) => Ok(Some(connect(&u, timeout).await?)),
        None => Ok(None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use registry_core::MemoryConfigCenter;

    #[test]
    fn default_is_the_registry() {
        let r = Url::parse("zookeeper://127.0.0.1:2181?group=g").unwrap();
        assert_eq!(config_center_url(&r, None).unwrap(), Some(r.clone()));
        let off = r.with_param("use-as-config-center", "false");
        assert_eq!(config_center_url(&off, None).unwrap(), None);
        let o = config_center_url(&off, Some("zookeeper://10.0.0.1:2181")).unwrap();
        assert_eq!(o.unwrap().host(), Some("10.0.0.1"));
        assert!(config_center_url(&off, Some("zookeeper://u:pw@h:x")).is_err());
    }

    #[tokio::test]
    async fn memory_and_nacos_arms() {
        let m = connect(
            &Url::parse("memory://cc-factory").unwrap(),
            Duration::from_secs(1),
        )
        .await
        .unwrap();
        m.publish("k", "dubbo", "v").await.unwrap();
        let again = MemoryConfigCenter::named("cc-factory");
        use registry_core::ConfigCenter;
        assert_eq!(again.get("k", "dubbo").await.unwrap().as_deref(), Some("v"));
        // nacos:// is served by the Nacos config client: an unreachable server is a clear
        // error naming the config centre, within the timeout.
        let e = connect(
            &Url::parse("nacos://127.0.0.1:1?nacos.request-timeout=500").unwrap(),
            Duration::from_secs(1),
        )
        .await
        .err()
        .unwrap();
        assert!(e.to_string().contains("config centre"), "{e}");
    }
}
