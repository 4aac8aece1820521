//! The one error type of `dubbo-consumer`.

use std::time::Duration;

use invoker::rpc::RpcError;
use thiserror::Error;

/// Everything the front door can fail with: a URL it cannot use, a registry or config centre
/// it cannot reach, a reference that cannot subscribe, a call that failed.
///
/// Messages never contain credentials: URLs are shown with their password and secret
/// parameters masked (`registry_core::url::secret`).
#[derive(Debug, Clone, Error)]
#[non_exhaustive]
pub enum Error {
    /// The text is not a URL (or names no protocol).
    #[error("invalid {what} URL {input:?}: {reason}")]
    InvalidUrl {
        /// `registry`, `config centre` or `provider`.
        what: &'static str,
        /// The input, with its secrets masked.
        input: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The URL's protocol is not one this build serves (see the crate's features).
    #[error("unsupported {what} protocol {protocol:?} (supported: {supported})")]
    Unsupported {
        /// `registry`, `config centre` or `provider`.
        what: &'static str,
        /// The protocol asked for.
        protocol: String,
        /// The protocols this build serves, comma separated.
        supported: String,
    },
    /// An option has a value the front door cannot use.
    #[error("invalid option {name}: {reason}")]
    InvalidOption {
        /// The option (builder method or URL parameter).
        name: &'static str,
        /// What is wrong.
        reason: String,
    },
    /// Connecting did not finish within the caller's timeout.
    #[error("{what} {url} not reachable within {timeout:?}")]
    Timeout {
        /// `registry` or `config centre`.
        what: &'static str,
        /// The URL, secrets masked.
        url: String,
        /// The timeout that elapsed.
        timeout: Duration,
    },
    /// The registry or config centre refused or failed (the `memory://` backend, and every
    /// registry operation behind the `Registry` trait).
    #[error("{what} {url}: {source}")]
    Registry {
        /// What was being done (`registry`, `config centre`, `subscribe to <service> in`).
        what: String,
        /// The URL, secrets masked.
        url: String,
        /// The registry's error.
        source: registry_core::Error,
    },
    /// The ZooKeeper backend failed.
    #[cfg(feature = "zookeeper")]
    #[error("cannot connect to {what} {url}: {source}")]
    Zookeeper {
        /// `registry` or `config centre`.
        what: &'static str,
        /// The URL, secrets masked.
        url: String,
        /// The backend's error.
        source: registry_zk::ZkError,
    },
    /// The Nacos backend failed.
    #[cfg(feature = "nacos")]
    #[error("cannot connect to {what} {url}: {source}")]
    Nacos {
        /// `registry` or `config centre`.
        what: &'static str,
        /// The URL, secrets masked.
        url: String,
        /// The backend's error.
        source: registry_nacos::NacosError,
    },
    /// The registry does not serve the discovery level asked for (an application-level
    /// registry, `registry-type=service`, has no interface level).
    #[error(
        "registry {url} has no {level} level (registry-type=service is application level only)"
    )]
    NoLevel {
        /// `interface`.
        level: &'static str,
        /// The registry URL, secrets masked.
        url: String,
    },
    /// A reference could not subscribe (the registry refused the consumer's registration or
    /// subscription, with `check=true`).
    #[error("subscribe to {service} in {registry} failed: {source}")]
    Subscribe {
        /// The interface.
        service: String,
        /// The registry URL, secrets masked.
        registry: String,
        /// What failed.
        source: RpcError,
    },
    /// A reference with `check=true` found no available provider within its ready timeout
    /// (Dubbo's "No provider available" when a reference is created).
    #[error("no provider available for {service} within {timeout:?}")]
    NoProvider {
        /// The service key (`group/interface:version`).
        service: String,
        /// How long the reference waited.
        timeout: Duration,
    },
    /// A call failed (Dubbo's `RpcException`, or a business exception of the provider).
    #[error(transparent)]
    Rpc(#[from] RpcError),
}

impl Error {
    /// `map_err` for a ZooKeeper backend failing to connect to `what` (`registry`, `config
    /// centre`, ...) at `url`.
    #[cfg(feature = "zookeeper")]
    pub(crate) fn zookeeper<'a>(
        what: &'static str,
        url: &'a registry_core::Url,
    ) -> impl FnOnce(registry_zk::ZkError) -> Error + 'a {
        move |source| Error::Zookeeper {
            what,
            url: url.to_string(),
            source,
        }
    }

    /// `map_err` for a Nacos backend failing to connect to `what` at `url`.
    #[cfg(feature = "nacos")]
    pub(crate) fn nacos<'a>(
        what: &'static str,
        url: &'a registry_core::Url,
    ) -> impl FnOnce(registry_nacos::NacosError) -> Error + 'a {
        move |source| Error::Nacos {
            what,
            url: url.to_string(),
            source,
        }
    }

    /// True when the same operation may succeed later: an unreachable or failing server, a
    /// timeout, no provider yet, or a retryable call failure. Wrong URLs and options are not.
    pub fn is_retryable(&self) -> bool {
        match self {
            Error::InvalidUrl { .. }
            | Error::Unsupported { .. }
            | Error::InvalidOption { .. }
            | Error::NoLevel { .. } => false,
            Error::Timeout { .. } | Error::NoProvider { .. } => true,
            Error::Subscribe { source, .. } => source.is_retryable(),
            Error::Registry { source, .. } => source.is_retryable(),
            #[cfg(feature = "zookeeper")]
            Error::Zookeeper { source, .. } => source.is_retryable(),
            #[cfg(feature = "nacos")]
            Error::Nacos { source, .. } => source.is_retryable(),
            Error::Rpc(e) => e.is_retryable(),
        }
    }

    /// True when the input itself is wrong (URL, protocol, option); retrying cannot help.
    pub fn is_invalid_input(&self) -> bool {
        match self {
            Error::InvalidUrl { .. }
            | Error::Unsupported { .. }
            | Error::InvalidOption { .. }
            | Error::NoLevel { .. } => true,
            Error::Registry { source, .. } => source.is_invalid_input(),
            _ => false,
        }
    }

    /// The call failure, when this error is one.
    pub fn as_rpc(&self) -> Option<&RpcError> {
        match self {
            Error::Rpc(e) => Some(e),
            _ => None,
        }
    }
}

/// Result alias of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;
