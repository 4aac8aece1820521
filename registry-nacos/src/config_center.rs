//! [`NacosConfigCenter`]: the [`ConfigCenter`] (registry-core) over Nacos config on gRPC, for
//! Dubbo's traffic rules (`*.condition-router`, `*.tag-router`, `*.configurators`, group
//! `dubbo` by default). It sits beside the registry:
//!
//! ```text
//! Nacos config (ConfigQuery / ConfigBatchListen + ConfigChangeNotify pushes / Publish / Remove)
//!   --> NacosConfigCenter --> ConfigWatch (current value first, then changes)
//!   --> routers / configurators
//! ```
//!
//! It takes the same registry URL as the naming backend (`namespace`, credentials, `backup`,
//! `nacos.grpc-port-offset`, `nacos.request-timeout`) and opens its own gRPC connection
//! (labels `module=config`, `tenant` = namespace). Key = dataId, group = group; the namespace
//! `public` is sent as tenant `""`. Connection trouble never produces a `None`: a watch keeps
//! its value until a successful read says otherwise; after a reconnect every watched key is
//! read and listened to again.

use async_trait::async_trait;
use registry_core::config_center::{ConfigCenter, ConfigValue, ConfigWatch};
use registry_core::Url;

use crate::client::NacosClient;
use crate::config::NacosConfig;
use crate::error::NacosError;
use crate::grpc::{ConfigKey, GrpcConfig};

/// Nacos config over gRPC (see the module docs).
#[derive(Debug)]
pub struct NacosConfigCenter {
    inner: GrpcConfig,
}

impl NacosConfigCenter {
    /// Connects with the settings of a `nacos://` registry URL; fails when no server completes
    /// the gRPC handshake within `nacos.request-timeout` (the session keeps retrying inside
    /// only while the config centre is alive).
    pub async fn connect(url: &Url) -> Result<Self, NacosError> {
        let cfg = NacosConfig::from_url(url)?;
        let http = std::sync::Arc::new(NacosClient::new(&cfg)?);
        let inner = GrpcConfig::start(&cfg, http)?;
        inner.wait_connected().await?;
        Ok(NacosConfigCenter { inner })
    }

    fn key(key: &str, group: &str) -> ConfigKey {
        let group = if group.is_empty() {
            registry_core::config_center::DEFAULT_CONFIG_GROUP
        } else {
            group
        };
        ConfigKey {
            data_id: key.to_owned(),
            group: group.to_owned(),
        }
    }
}

impl Drop for NacosConfigCenter {
    fn drop(&mut self) {
        self.inner.close();
    }
}

#[async_trait]
impl ConfigCenter for NacosConfigCenter {
    async fn get(&self, key: &str, group: &str) -> registry_core::Result<ConfigValue> {
        Ok(self.inner.get(&Self::key(key, group)).await?)
    }

    async fn watch(&self, key: &str, group: &str) -> registry_core::Result<ConfigWatch> {
        let rx = self.inner.watch(Self::key(key, group)).await?;
        Ok(ConfigWatch::new(rx, None))
    }

    async fn publish(&self, key: &str, group: &str, content: &str) -> registry_core::Result<()> {
        Ok(self.inner.publish(&Self::key(key, group), content).await?)
    }

    async fn remove(&self, key: &str, group: &str) -> registry_core::Result<()> {
        Ok(self.inner.remove(&Self::key(key, group)).await?)
    }
}
