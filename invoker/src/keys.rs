//! The URL parameter and attachment names, and the defaults, that several layers of the call
//! path read (Dubbo's `CommonConstants`, `ClusterRules`, `LoadbalanceRules`): defined once
//! here so that directory, routers, cluster, load balancers and protocols agree.

/// The tag a consumer asks for (`dubbo.tag`: an attachment, else the consumer URL's
/// parameter) and a provider carries (its URL parameter); the tag router matches them.
pub const TAG_KEY: &str = "dubbo.tag";

/// `dubbo.force.tag`: with `true`, a tagged call finds no provider rather than an untagged
/// one.
pub const FORCE_TAG_KEY: &str = "dubbo.force.tag";

/// The attachment the mock cluster sets to ask the directory for the `mock://` providers
/// only (Dubbo's `INVOCATION_NEED_MOCK`).
pub const NEED_MOCK: &str = "invocation.need.mock";

/// The attachment carrying the caller's remaining time in milliseconds (Dubbo's
/// `TIMEOUT_ATTACHMENT_KEY`, `_TO`): a protocol never waits longer than this.
pub const TIMEOUT_ATTACHMENT_KEY: &str = "_TO";

/// A provider's weight when its URL sets none (Dubbo's `DEFAULT_WEIGHT`), also the weight a
/// multi-destination condition rule gives a destination without one.
pub const DEFAULT_WEIGHT: i32 = 100;
