//! [`Target`]: one provider as the routers see it.

use registry_core::Url;

use crate::rpc::SharedInvoker;

/// A provider as the routers see it, built once per snapshot.
#[derive(Debug, Clone)]
pub struct Target {
    /// The invoker (absent when routing bare URLs, as the conformance runner does).
    pub invoker: Option<SharedInvoker>,
    /// The URL a condition's then-part reads: the provider's own URL in 3.x
    /// (`ServiceAddressURL#toOriginalMap`), the consumer-merged URL in 2.x.
    pub sample: Url,
    /// The provider's own URL (tag `match` conditions read its params; host and port).
    pub raw: Url,
    /// The static tag (`dubbo.tag` of the invoker URL), `None` when absent or empty.
    pub tag: Option<Box<str>>,
}

impl Target {
    /// A target for a bare provider URL (sample, raw and tag all from `url`).
    pub fn from_url(url: Url) -> Target {
        let tag = url
            .param(crate::keys::TAG_KEY)
            .filter(|t| !t.is_empty())
            .map(Box::from);
        Target {
            invoker: None,
            sample: url.clone(),
            raw: url,
            tag,
        }
    }
}
