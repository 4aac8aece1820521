//! The registry of a command: where its URL comes from ([`RegistrySource`]), and the
//! connection through the front door ([`dubbo_consumer::Connector`]: `zookeeper://`,
//! `nacos://`, `memory://`) with the CLI's defaults.

use std::io::Read as _;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{anyhow, bail, Context};
use dubbo_consumer::Connector;
use registry_core::{Registry, Url};

/// The environment variable that gives the registry URL when the command line leaves it out.
pub const REGISTRY_ENV: &str = "DUBBO_REGISTRY";

/// Largest `--registry-file` read.
const MAX_REGISTRY_FILE: u64 = 64 * 1024;

/// Where a registry URL left out of the command line comes from: `--registry-file`, else
/// `$DUBBO_REGISTRY`. Either keeps credentials out of the process list (`ps`, shell history).
#[derive(Debug, Clone, Default, clap::Args)]
pub struct RegistrySource {
    /// Read the registry URL from FILE (its first non-blank line) and leave REGISTRY out of
    /// the command line; without it, a left-out REGISTRY is read from $DUBBO_REGISTRY.
    #[arg(long = "registry-file", value_name = "FILE")]
    pub file: Option<PathBuf>,
}

impl RegistrySource {
    /// The registry URL of the file, else of the environment.
    ///
    /// Errors: the file cannot be read or has no URL; neither is given.
    pub fn read(&self) -> anyhow::Result<String> {
        if let Some(path) = &self.file {
            let mut text = String::new();
            std::fs::File::open(path)
                .and_then(|f| f.take(MAX_REGISTRY_FILE).read_to_string(&mut text))
                .with_context(|| format!("cannot read --registry-file {}", path.display()))?;
            return text
                .lines()
                .map(str::trim)
                .find(|l| !l.is_empty() && !l.starts_with('#'))
                .map(str::to_owned)
                .ok_or_else(|| anyhow!("--registry-file {} has no registry URL", path.display()));
        }
        match std::env::var(REGISTRY_ENV) {
            Ok(v) if !v.trim().is_empty() => Ok(v.trim().to_owned()),
            _ => bail!("no registry: give REGISTRY, --registry-file FILE or ${REGISTRY_ENV}"),
        }
    }

    /// Splits the positional arguments of a command whose first one is REGISTRY followed by
    /// `rest` more: with `rest + 1` of them the first is the registry (then `--registry-file`
    /// must not be given too); with `rest` the registry comes from [`RegistrySource::read`].
    ///
    /// Errors: another count; the registry given twice; [`RegistrySource::read`]'s.
    pub fn split(
        &self,
        mut positionals: Vec<String>,
        rest: usize,
    ) -> anyhow::Result<(String, Vec<String>)> {
        if positionals.len() == rest + 1 {
            if self.file.is_some() {
                bail!("the registry is given twice: as an argument and by --registry-file");
            }
            let registry = positionals.remove(0);
            return Ok((registry, positionals));
        }
        if positionals.len() == rest {
            return Ok((self.read()?, positionals));
        }
        bail!(
            "expected {} or {} arguments, got {}",
            rest,
            rest + 1,
            positionals.len()
        )
    }
}

/// Help text on registry URLs shared by the `list`, `watch` and `register` commands.
pub const REGISTRY_URL_HELP: &str = "\
REGISTRY (left out: the first non-blank line of --registry-file FILE, else $DUBBO_REGISTRY;
either keeps credentials out of the process list):
  zookeeper://[user:pass@]host:port[?param=value&...]
      backup=h2:p2,h3:p3         more ensemble members (connect string = host:port,backup)
      group=dubbo                root znode (default /dubbo)
      timeout=MS                 connect timeout (default: the --timeout option)
      session=MS                 session timeout (default 60000)
      enable-empty-protection=true  never report an empty providers list
      user:pass@                 digest ACL auth; created nodes get CREATOR_ALL_ACL
  memory://NAME                  in-process registry (same process only)
  nacos://[user:pass@]host:port[?param=value&...]
      backup=h2:p2,h3:p3         more servers (requests fail over)
      namespace=ID               Nacos namespace (default public)
      group=DEFAULT_GROUP        Nacos group of the service names
      username=..&password=..    open-API credentials (or user:pass@)
      nacos.transport=grpc|http  gRPC (Nacos 2.x/3.x, default) or the v1 HTTP API (Nacos 1.x)
      nacos.grpc-port-offset=N   gRPC port = port + N (default 1000)
      nacos.poll-interval=MS     HTTP transport: instance-list polling period (default 1000)
      nacos.query-interval=MS    gRPC: also query subscribed services this often (default off)
      nacos.scan-interval=MS     re-scan period of wildcard subscriptions (CLI default 1000;
                                 library default 30000)

SERVICE is an interface name (then --group/--version default to * = all; check=true, so a
failing subscribe is an error) or a full
consumer:// URL (used as given; --group/--version/--category override its params).";

/// Connects to `registry` for looking only (`list`, `watch`): the same as [`connect`], except
/// that subscribing writes nothing to the registry ([`dubbo_consumer::Connector::read_only`]).
pub async fn connect_read_only(
    registry: &str,
    timeout: Duration,
) -> anyhow::Result<Arc<dyn Registry>> {
    connector(registry, timeout)?
        .read_only(true)
        .registry()
        .await
        .map_err(Into::into)
}

/// Connects to `registry` (the front door, [`dubbo_consumer::Connector`]), failing with a
/// clear error within `timeout`.
pub async fn connect(registry: &str, timeout: Duration) -> anyhow::Result<Arc<dyn Registry>> {
    connector(registry, timeout)?
        .registry()
        .await
        .map_err(Into::into)
}

/// The connector of `registry` with the CLI's defaults: `timeout` bounds the connect, and a
/// Nacos registry re-scans wildcard subscriptions every second (`nacos.scan-interval=1000`):
/// a bare interface name is widened to version/group `*`, a service-list scan, so a new
/// service shows up within ~1 s instead of the 30 s library default (Java's rule for
/// consumers).
pub fn connector(registry: &str, timeout: Duration) -> anyhow::Result<Connector> {
    let mut url = dubbo_consumer::parse_url("registry", registry)?;
    if url.protocol() == Some("nacos") && !url.has_param("nacos.scan-interval") {
        url = url.with_param("nacos.scan-interval", "1000");
    }
    Ok(Connector::from_url(url).timeout(timeout))
}

/// Builds the consumer (subscribe) URL from `SERVICE` and the filter options.
pub fn consumer_url(
    service: &str,
    group: Option<&str>,
    version: Option<&str>,
    category: Option<&str>,
) -> anyhow::Result<Url> {
    let base = if service.contains("://") {
        Url::parse(service).with_context(|| format!("invalid consumer URL {service:?}"))?
    } else {
        if service.is_empty() {
            bail!("empty service name");
        }
        Url::builder("consumer")
            .host("127.0.0.1")
            .path(service)
            .param("interface", service)
            .param("side", "consumer")
            .param("check", "true")
            .param("category", "providers,configurators,routers")
            .param("group", group.unwrap_or("*"))
            .param("version", version.unwrap_or("*"))
            .build()
    };
    let mut set: Vec<(&str, &str)> = Vec::new();
    if let Some(g) = group {
        set.push(("group", g));
    }
    if let Some(v) = version {
        set.push(("version", v));
    }
    if let Some(c) = category {
        set.push(("category", c));
    }
    Ok(if set.is_empty() {
        base
    } else {
        base.with_params(set)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn consumer_from_name_and_url() {
        let c = consumer_url("com.foo.Bar", None, Some("1.0"), None).unwrap();
        assert_eq!(c.service_interface(), Some("com.foo.Bar"));
        assert_eq!(c.param("group"), Some("*"));
        assert_eq!(c.param("version"), Some("1.0"));
        let c = consumer_url(
            "consumer://1.2.3.4/S?version=2",
            None,
            None,
            Some("routers"),
        )
        .unwrap();
        assert_eq!(c.param("version"), Some("2"));
        assert_eq!(c.param("category"), Some("routers"));
    }

    #[tokio::test]
    async fn unsupported_protocol_is_an_error() {
        let e = connect("foo://h:1", Duration::from_secs(1))
            .await
            .unwrap_err();
        assert!(e.to_string().contains("unsupported"));
    }
}
