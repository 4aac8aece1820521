//! 2.x registry router URLs (`condition://...?rule=<encoded>`, routers.md R2.1).
//!
//! Dubbo 3.3 has no `RouterFactory` named `condition` and ignores these URLs; 2.6/2.7
//! consumers apply them. The directory applies them only in its 2.6/2.7 compatibility modes.

use std::sync::Arc;

use registry_core::Url;

use crate::router::condition::{ConditionRouter, Dialect};
use crate::router::sample::RouteCall;
use crate::router::target::Target;
use crate::router::{Router, RouterError};
use crate::rpc::SharedInvoker;

/// A `condition://` router URL with its priority.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UrlCondition {
    /// The rule.
    pub router: ConditionRouter,
    /// `priority` (default 0; lower runs first in 2.7).
    pub priority: i32,
    /// `runtime` (2.6: false routes once per method when the snapshot is built).
    pub runtime: bool,
    /// `url.toFullString()` (2.6 orders equal priorities by it).
    pub full: String,
}

/// True for a URL naming the condition router (`condition://`, or `router=condition`).
pub(crate) fn is_condition_url(url: &Url) -> bool {
    url.protocol() == Some("condition")
}

impl UrlCondition {
    /// Reads `rule` (decoded), `force` (`Boolean.parseBoolean`), `enabled`, `runtime`,
    /// `priority`.
    ///
    /// Errors: no or blank rule, or a rule that does not parse.
    pub fn from_url(url: &Url, dialect: Dialect) -> Result<UrlCondition, RouterError> {
        // `getParameterAndDecoded`: URL-decoded, `+` is a space.
        let raw = url.param("rule").unwrap_or("");
        let decoded = if raw.contains('%') || raw.contains('+') {
            registry_core::codec::decode(&raw.replace('+', " ")).unwrap_or_else(|_| raw.to_owned())
        } else {
            raw.to_owned()
        };
        let rule = decoded.as_str();
        let truthy = |k: &str, d: bool| url.param(k).map_or(d, |v| v.eq_ignore_ascii_case("true"));
        let router = ConditionRouter::new(
            rule,
            truthy("force", false),
            truthy("enabled", true),
            dialect,
        )?;
        Ok(UrlCondition {
            router,
            priority: i32::try_from(url.param_i64("priority", 0)).unwrap_or(0),
            runtime: truthy("runtime", false),
            full: url.to_full_string(),
        })
    }
}

/// The 2.6 per-method form: a [`Router`] run when the snapshot is built, with an invocation
/// carrying only the method name (Dubbo 2.6 `runtime=false` routers).
#[derive(Debug, Clone)]
pub(crate) struct UrlConditionRouter(pub Arc<UrlCondition>);

impl Router for UrlConditionRouter {
    fn route(
        &self,
        invokers: Vec<SharedInvoker>,
        consumer: &Url,
        method: Option<&str>,
    ) -> Vec<SharedInvoker> {
        let targets: Vec<Target> = invokers
            .iter()
            .map(|i| {
                let mut t = Target::from_url(i.url().clone());
                t.invoker = Some(i.clone());
                t
            })
            .collect();
        let mut idx: Vec<u32> = (0..u32::try_from(targets.len()).unwrap_or(u32::MAX)).collect();
        let call = RouteCall {
            method,
            arguments: Some(&[]),
            attachments: None,
        };
        self.0.router.route(&targets, &mut idx, consumer, &call);
        idx.into_iter()
            .filter_map(|i| invokers.get(i as usize).cloned())
            .collect()
    }
}
