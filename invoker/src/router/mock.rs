//! The mock selector (Dubbo's `MockInvokersSelector`): `mock://` providers are hidden
//! from normal calls and are the only ones returned when the invocation carries
//! `invocation.need.mock=true`.
//!
//! The directory applies it while building a snapshot: it keeps the `mock://` providers in a
//! separate list, so [`crate::directory::Directory::list`] picks one of two prebuilt sets with
//! one attachment lookup and no allocation.

use async_trait::async_trait;
use registry_core::Url;

use crate::keys::NEED_MOCK;
use crate::rpc::{Invocation, Invoker, RpcError, RpcErrorCode, RpcResult};

/// True when the invocation asks for the mock providers.
pub(crate) fn wants_mock(invocation: &Invocation) -> bool {
    !invocation.attachments.is_empty() && invocation.attachment(NEED_MOCK) == Some("true")
}

/// The invoker the directory keeps for a `mock://` provider: it only carries the provider's
/// URL, whose parameters define the mock (the mock cluster builds its `MockInvoker` from
/// [`Invoker::url`]). Invoking it directly fails.
#[derive(Debug)]
pub(crate) struct MockProviderInvoker {
    url: Url,
}

impl MockProviderInvoker {
    /// Wraps a `mock://` provider URL.
    pub(crate) fn new(url: Url) -> Self {
        MockProviderInvoker { url }
    }
}

#[async_trait]
impl Invoker for MockProviderInvoker {
    fn url(&self) -> &Url {
        &self.url
    }

    async fn invoke(&self, _invocation: &Invocation) -> RpcResult {
        Err(RpcError::new(
            RpcErrorCode::Unknown,
            "a mock:// provider is served by the mock cluster, not invoked directly",
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attachment_selects_mock() {
        assert!(!wants_mock(&Invocation::new("m")));
        assert!(wants_mock(
            &Invocation::new("m").with_attachment(NEED_MOCK, "true")
        ));
        assert!(!wants_mock(
            &Invocation::new("m").with_attachment(NEED_MOCK, "false")
        ));
    }
}
