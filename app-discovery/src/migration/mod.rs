//! Migration between the interface level and the application level (Dubbo 3's
//! `MIGRATION` steps): the rule ([`rule`]), the per-call choice ([`directory`]) and the
//! reference that applies rules live ([`mod@reference`]).

pub mod directory;
pub mod reference;
pub mod rule;

pub use directory::{Level, MigrationDirectory};
pub use reference::{
    local_rule, rule_key, should_migrate, MigrationReference, ReferenceConfig, MIGRATION_FILE_KEY,
};
pub use rule::{MigrationRule, MigrationStep, MIGRATION_GROUP};
