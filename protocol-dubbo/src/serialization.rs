//! Choosing the serialization for a provider (Dubbo's `CodecSupport`).
//!
//! Java takes the first `prefer.serialization` entry it supports, then `serialization`, then
//! the default `hessian2`. A provider accepts every id in `prefer ∪ serialization ∪ {hessian2}`,
//! so a consumer that only speaks Hessian2 can always use it: this picks Hessian2 and says so
//! (at debug level) when the provider prefers something else.

use registry_core::Url;

use crate::header::HESSIAN2_ID;

/// The serialization names this crate encodes, with their ids.
pub const SUPPORTED: &[(&str, u8)] = &[("hessian2", HESSIAN2_ID)];

/// The serialization id to use for `provider`.
pub fn choose(provider: &Url) -> u8 {
    let prefer = provider.param("prefer.serialization").unwrap_or("");
    let configured = provider.param("serialization").unwrap_or("");
    let candidates = prefer
        .split(',')
        .chain(std::iter::once(configured))
        .map(str::trim)
        .filter(|s| !s.is_empty());
    for name in candidates {
        if let Some((_, id)) = SUPPORTED.iter().find(|(n, _)| *n == name) {
            return *id;
        }
        tracing::debug!(
            serialization = name,
            "provider prefers a serialization this client does not speak; trying the next"
        );
    }
    HESSIAN2_ID
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn hessian2_is_chosen_even_after_fastjson2() {
        for q in [
            "",
            "?prefer.serialization=hessian2,fastjson2",
            "?prefer.serialization=fastjson2,hessian2",
            "?serialization=fastjson2",
        ] {
            let u = Url::parse(&format!("dubbo://127.0.0.1:20880/S{q}")).unwrap();
            assert_eq!(choose(&u), HESSIAN2_ID, "{q}");
        }
    }
}
