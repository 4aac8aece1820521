//! [`RouterError`]: why a routing rule was refused.

/// Why a routing rule (YAML from the config centre, or a `condition://` URL) was refused.
///
/// A refused rule never replaces the previous one: the directory keeps routing with the last
/// good rule (Dubbo's stale-rule behaviour, routers.md R3.3) until the key is deleted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RouterError {
    /// The text is not YAML, or its top level is not a map.
    #[error("malformed YAML rule: {0}")]
    Yaml(String),
    /// The text passed a limit of the rule reader (size, nesting, aliases, expanded size:
    /// [`registry_core::rule_yaml::YamlLimits`]) and was not read.
    #[error("rule refused: {0}")]
    Limit(String),
    /// A field has the wrong type or value (`configVersion` not a string, `priority` not an
    /// integer, a non-integer `weight`, no `conditions`, ...).
    #[error("invalid rule: {0}")]
    Invalid(String),
    /// The rule is valid YAML but carries nothing to apply (`valid=false` in Java: missing
    /// or empty `conditions` / `tags`).
    #[error("rule has nothing to apply: {0}")]
    Empty(String),
    /// `configVersion` names a version this engine does not know (`v3.2`, `v4`, ...).
    #[error("unsupported rule version {0:?}")]
    UnsupportedVersion(String),
    /// A condition's text does not parse (`==`, `&&`, a blank rule, ...).
    #[error("invalid condition {condition:?}: {reason}")]
    Condition {
        /// The condition text as given.
        condition: String,
        /// What is wrong with it.
        reason: String,
    },
    /// Script routers (JavaScript) are not supported (a documented divergence).
    #[error("script routers are not supported")]
    Script,
    /// The directory was destroyed.
    #[error("the directory is destroyed")]
    Destroyed,
}

impl RouterError {
    /// The error of [`registry_core::rule_yaml`] as a rule refusal.
    pub fn from_yaml(e: registry_core::Error) -> RouterError {
        match e {
            registry_core::Error::RuleLimit(m) => RouterError::Limit(m),
            other => RouterError::Yaml(other.to_string()),
        }
    }

    /// Never retryable: the same text is refused again; a new value of the key may be accepted.
    pub fn is_retryable(&self) -> bool {
        false
    }

    /// True when the rule text itself is bad (as opposed to unsupported or a closed directory).
    pub fn is_bad_rule(&self) -> bool {
        matches!(
            self,
            RouterError::Yaml(_)
                | RouterError::Limit(_)
                | RouterError::Invalid(_)
                | RouterError::Empty(_)
                | RouterError::Condition { .. }
        )
    }
}
