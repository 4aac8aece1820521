//! Maps a registry (or config-centre) URL to a connected [`SharedConfigCenter`].
//!
//! As in Dubbo, **the config centre defaults to the registry address** (Dubbo's
//! `useRegistryAsConfigCenterIfNecessary`: same protocol, address, credentials and parameters,
//! namespace = the registry `group`). A registry URL with `use-as-config-center=false` has no
//! config centre, and `--config-center URL` (Dubbo's `dubbo.config-center.address`) replaces
//! the default.
//!
//! - `zookeeper://` → [`registry_zk::ZkConfigCenter`] (`/<group or namespace>/config/<group>/<key>`)
//! - `memory://NAME` → [`registry_core::MemoryConfigCenter::named`] (same process only)
//! - `nacos://` → the Nacos config client (not part of this build yet, see [`connect`])

use std::sync::Arc;
use std::time::Duration;

use anyhow::{anyhow, bail};
use registry_core::url::secret::redact;
use registry_core::{MemoryConfigCenter, SharedConfigCenter, Url};

/// The config-centre URL for `registry`: `override_url` when given, none when the registry
/// says `use-as-config-center=false`, else the registry URL itself.
pub fn config_center_url(
    registry: &Url,
    override_url: Option<&str>,
) -> anyhow::Result<Option<Url>> {
    if let Some(o) = override_url {
        let u =
            Url::parse(o).map_err(|e| anyhow!("invalid config-centre URL {:?}: {e}", redact(o)))?;
        return Ok(Some(u));
    }
    if !registry.param_bool("use-as-config-center", true) {
        return Ok(None);
    }
    Ok(Some(registry.clone()))
}

/// Connects to the config centre at `url`, failing with a clear error within `timeout`.
pub async fn connect(url: &Url, timeout: Duration) -> anyhow::Result<SharedConfigCenter> {
    let fut = async {
        match url.protocol() {
            Some("zookeeper") => {
                let url = if url.has_param("timeout") {
                    url.clone()
                } else {
                    url.with_param("timeout", &timeout.as_millis().to_string())
                };
                let cc = registry_zk::ZkConfigCenter::connect(&url)
                    .await
                    .map_err(|e| anyhow!("cannot connect to config centre {url}: {e}"))?;
                Ok(Arc::new(cc) as SharedConfigCenter)
            }
            Some("memory") => Ok(
                Arc::new(MemoryConfigCenter::named(url.host().unwrap_or(""))) as SharedConfigCenter,
            ),
            Some("nacos") => {
                let cc = registry_nacos::NacosConfigCenter::connect(url)
                    .await
                    .map_err(|e| anyhow!("cannot connect to config centre {url}: {e}"))?;
                Ok(Arc::new(cc) as SharedConfigCenter)
            }
            Some(p) => bail!("unsupported config-centre protocol {p:?} (zookeeper, memory, nacos)"),
            None => bail!("config-centre URL without protocol: {url}"),
        }
    };
    tokio::time::timeout(timeout + Duration::from_millis(500), fut)
        .await
        .map_err(|_| anyhow!("config centre {url} not reachable within {timeout:?}"))?
}

/// The config centre of `registry` (see [`config_center_url`]), connected; `None` when the
/// registry is not used as one and no override is given.
pub async fn for_registry(
    registry: &str,
    override_url: Option<&str>,
    timeout: Duration,
) -> anyhow::Result<Option<SharedConfigCenter>> {
    let reg = Url::parse(registry)
        .map_err(|e| anyhow!("invalid registry URL {:?}: {e}", redact(registry)))?;
    match config_center_url(&reg, override_url)? {
        Some(u) => Ok(Some(connect(&u, timeout).await?)),
        None => Ok(None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_is_the_registry() {
        let r = Url::parse("zookeeper://127.0.0.1:2181?group=g").unwrap();
        assert_eq!(config_center_url(&r, None).unwrap(), Some(r.clone()));
        let off = r.with_param("use-as-config-center", "false");
        assert_eq!(config_center_url(&off, None).unwrap(), None);
        let o = config_center_url(&off, Some("zookeeper://10.0.0.1:2181")).unwrap();
        assert_eq!(o.unwrap().host(), Some("10.0.0.1"));
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
