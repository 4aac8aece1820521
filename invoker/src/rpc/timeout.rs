//! [`call_timeout`]: how long a protocol waits for one call, the same rule for every protocol.

use std::time::Duration;

use registry_core::Url;

use super::Invocation;
use crate::keys::TIMEOUT_ATTACHMENT_KEY;

/// The time a protocol gives one call (Dubbo's `RpcUtils.getTimeout` with the timeout
/// countdown of `DubboInvoker`/`TripleInvoker#calculateTimeout`): the invocation's `timeout`
/// attachment, else the provider URL's `timeout` for the (real) method, else `default_ms`;
/// never more than the caller's remaining time, which the consumer-context filter puts in
/// [`TIMEOUT_ATTACHMENT_KEY`] (at least 1 ms). Non-positive or unreadable values are ignored.
pub fn call_timeout(url: &Url, inv: &Invocation, default_ms: u64) -> Duration {
    let configured = inv
        .attachment("timeout")
        .and_then(|t| t.trim().parse::<u64>().ok())
        .filter(|t| *t > 0)
        .unwrap_or_else(|| {
            let d = i64::try_from(default_ms).unwrap_or(i64::MAX);
            match url.method_param_i64(inv.real_method(), "timeout", d) {
                t if t > 0 => t.unsigned_abs(),
                _ => default_ms,
            }
        });
    let ms = match inv
        .attachment(TIMEOUT_ATTACHMENT_KEY)
        .and_then(|t| t.parse::<u64>().ok())
    {
        Some(left) => configured.min(left.max(1)),
        None => configured,
    };
    Duration::from_millis(ms)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attachment_then_method_then_url_then_default_never_past_the_deadline() {
        let url = Url::parse("dubbo://h:1/S?timeout=800&slow.timeout=5000").unwrap();
        let call = |m: &str| Invocation::new(m);
        assert_eq!(call_timeout(&url, &call("fast"), 1000).as_millis(), 800);
        assert_eq!(call_timeout(&url, &call("slow"), 1000).as_millis(), 5000);
        let bare = Url::parse("dubbo://h:1/S").unwrap();
        assert_eq!(call_timeout(&bare, &call("x"), 3000).as_millis(), 3000);
        let with = call("slow").with_attachment("timeout", "250");
        assert_eq!(call_timeout(&url, &with, 1000).as_millis(), 250);
        let late = call("slow").with_attachment(TIMEOUT_ATTACHMENT_KEY, "120");
        assert_eq!(call_timeout(&url, &late, 1000).as_millis(), 120);
        let gone = call("slow").with_attachment(TIMEOUT_ATTACHMENT_KEY, "0");
        assert_eq!(call_timeout(&url, &gone, 1000).as_millis(), 1);
        let bad = call("fast").with_attachment("timeout", "-5");
        assert_eq!(call_timeout(&url, &bad, 1000).as_millis(), 800);
        // Generic calls read the real method's timeout.
        let generic = Invocation::new("$invoke").with_arguments(
            vec![
                "java.lang.String".into(),
                "[Ljava.lang.String;".into(),
                "[Ljava.lang.Object;".into(),
            ],
            vec!["slow".into(), serde_json::json!([]), serde_json::json!([])],
        );
        assert_eq!(call_timeout(&url, &generic, 1000).as_millis(), 5000);
    }
}
