//! The rule engines' own entry points, one step at a time: parse a rule, match one
//! condition, route one call through the chain, apply configurators to a URL. This is what
//! conformance and differential testing (the `conformance` and `differential` crates), the
//! fuzz targets and rule-hostile tests drive; a program that calls providers never needs it:
//! [`crate::RegistryDirectory`] runs these steps itself, and rules reach it through
//! [`crate::RegistryDirectory::set_router_rule`] or a [`crate::RuleWatcher`].
//!
//! | step | Dubbo | here |
//! |---|---|---|
//! | parse a configurator document (`*.configurators`) | `ConfigParser.parseConfigurators` | [`parse_configurators`] → [`ParsedConfigurator`] |
//! | `override://` URLs to configurators, and applying one | `Configurator.toConfigurators`, `AbstractConfigurator.configure` | [`to_configurators`], [`Configurator`] |
//! | provider URL merged with the consumer's parameters | `ClusterUtils.mergeUrl` | [`merge_url`] |
//! | one condition rule, its `when`/`then` and key matchers | `ConditionStateRouter`, `ConditionMatcher` | [`ConditionRouter`], [`parse_condition`], [`KeyMatcher`], [`Dialect`] |
//! | the tag rule, the request's tag, routing by tag | `TagStateRouter` | [`tag::TagRule`], [`tag::request_tag`], [`tag::route`] |
//! | the whole chain (tag, service, application conditions) | `RouterChain` | [`RuleSet`], [`Chain`], [`ChainMode`] |
//! | what a router reads of a call | `Invocation` | [`RouteCall`], [`provider_application`] |

pub use crate::directory::config_parser::{parse_configurators, ParsedConfigurator};
pub use crate::directory::configurator::{to_configurators, Configurator};
pub use crate::directory::merge::merge_url;
pub use crate::router::chain::{Chain, ChainMode, ParsedRule, RuleSet};
pub use crate::router::condition::matcher::KeyMatcher;
pub use crate::router::condition::parse::{parse_condition, Side};
pub use crate::router::condition::{ConditionRouter, Dialect};
pub use crate::router::sample::{provider_application, RouteCall};

/// The tag router's steps (Dubbo's `TagStateRouter`).
pub mod tag {
    pub use crate::router::tag::{request_tag, route, ResolvedTags, TagRule};
}
