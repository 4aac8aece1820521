//! The migration rule (Dubbo's `MigrationRule`, YAML): which discovery level a reference uses.
//!
//! ```yaml
//! key: demo-consumer            # informational
//! step: APPLICATION_FIRST       # FORCE_INTERFACE | APPLICATION_FIRST | FORCE_APPLICATION
//! threshold: 0.5                # app-level addresses / interface-level addresses needed to switch
//! proportion: 50                # APPLICATION_FIRST: % of calls on the app level (100 = all)
//! delay: 10                     # seconds to wait before comparing (FORCE_* switches)
//! force: false                  # switch without comparing
//! interfaces:                   # per reference: serviceKey = interface[:version] (no group)
//!   - serviceKey: com.foo.Greeter:1.0.0
//!     step: FORCE_APPLICATION
//! applications:                 # per provider application the interface maps to
//!   - serviceKey: shop
//!     step: FORCE_INTERFACE
//! ```
//!
//! Each value is looked up (`MigrationRule.getValue`): the interface sub-rule keyed by the
//! reference's `interface[:version]`, then the sub-rule of any application the interface maps
//! to, then the top level, then the reference parameter (`migration.step`,
//! `migration.threshold`, `migration.promotion`, `migration.delay`, `migration.force`), then
//! the default (`APPLICATION_FIRST`, threshold unset = compare with 0, proportion 100, delay 0,
//! force false). Unknown keys are ignored; a value of the wrong type makes the whole rule
//! invalid (the previous rule stays, as Java keeps it when parsing throws).

use std::collections::{BTreeSet, HashMap};
use std::fmt;
use std::str::FromStr;

use registry_core::rule_yaml::{self, Yaml};
use registry_core::Url;

use crate::error::{Error, Result};

/// The config-centre group of migration rules.
pub const MIGRATION_GROUP: &str = "DUBBO_SERVICEDISCOVERY_MIGRATION";
/// The key suffix: the rule of consumer application `app` is `<app>.migration`.
pub const MIGRATION_SUFFIX: &str = ".migration";

/// Where a reference takes its providers from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MigrationStep {
    /// Interface level only.
    ForceInterface,
    /// Both levels; the application level when it has addresses (Dubbo 3.3's default).
    ApplicationFirst,
    /// Application level only.
    ForceApplication,
}

impl MigrationStep {
    /// The name as Dubbo writes it.
    pub fn as_str(self) -> &'static str {
        match self {
            MigrationStep::ForceInterface => "FORCE_INTERFACE",
            MigrationStep::ApplicationFirst => "APPLICATION_FIRST",
            MigrationStep::ForceApplication => "FORCE_APPLICATION",
        }
    }
}

impl fmt::Display for MigrationStep {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for MigrationStep {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        match s.trim() {
            "FORCE_INTERFACE" => Ok(MigrationStep::ForceInterface),
            "APPLICATION_FIRST" => Ok(MigrationStep::ApplicationFirst),
            "FORCE_APPLICATION" => Ok(MigrationStep::ForceApplication),
            other => Err(Error::malformed(
                "migration step",
                format!("{other:?} is not FORCE_INTERFACE, APPLICATION_FIRST or FORCE_APPLICATION"),
            )),
        }
    }
}

/// The values a rule or a sub-rule may set.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RuleValues {
    /// `step`.
    pub step: Option<MigrationStep>,
    /// `threshold`.
    pub threshold: Option<f32>,
    /// `proportion` (percent of calls on the application level).
    pub proportion: Option<i32>,
    /// `delay` (seconds).
    pub delay: Option<i32>,
    /// `force`.
    pub force: Option<bool>,
}

/// A parsed migration rule (module docs). [`MigrationRule::default`] is Java's `INIT` rule.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct MigrationRule {
    /// `key` (informational).
    pub key: Option<String>,
    /// The top-level values.
    pub values: RuleValues,
    /// Sub-rules by `interface[:version]`.
    pub interfaces: HashMap<String, RuleValues>,
    /// Sub-rules by provider application.
    pub applications: HashMap<String, RuleValues>,
}

/// The values in effect for one reference.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Effective {
    /// The step.
    pub step: MigrationStep,
    /// The threshold; negative = unset (the comparator then uses 0).
    pub threshold: f32,
    /// Percent of calls on the application level in `APPLICATION_FIRST`.
    pub proportion: i32,
    /// Seconds to wait before comparing.
    pub delay: i32,
    /// Switch without comparing.
    pub force: bool,
}

impl MigrationRule {
    /// Parses YAML (module docs), read within the bounds of every rule document
    /// ([`registry_core::rule_yaml`]). An empty document is the default rule.
    ///
    /// Errors: not YAML, past a [`rule_yaml`] limit, not a mapping, or a value of the wrong
    /// type.
    pub fn parse(text: &str) -> Result<MigrationRule> {
        let doc = rule_yaml::load_with(text, &rule_yaml::YamlLimits::default())
            .map_err(|e| Error::malformed("migration rule", e.to_string()))?;
        let Some(doc) = doc else {
            return Ok(MigrationRule::default());
        };
        if doc.is_null() {
            return Ok(MigrationRule::default());
        }
        let Yaml::Hash(_) = &doc else {
            return Err(Error::malformed("migration rule", "not a YAML mapping"));
        };
        let mut rule = MigrationRule {
            key: scalar_text(&doc["key"]),
            values: values(&doc)?,
            ..MigrationRule::default()
        };
        for (field, target) in [
            ("interfaces", &mut rule.interfaces),
            ("applications", &mut rule.applications),
        ] {
            match &doc[field] {
                Yaml::Array(items) => {
                    for item in items {
                        let Some(k) = scalar_text(&item["serviceKey"]) else {
                            continue;
                        };
                        target.insert(k, values(item)?);
                    }
                }
                Yaml::BadValue | Yaml::Null => {}
                _ => {
                    return Err(Error::malformed(
                        "migration rule",
                        format!("`{field}` is not a list"),
                    ))
                }
            }
        }
        Ok(rule)
    }

    /// The values for `consumer`, whose interface maps to `apps` (module docs for the order).
    pub fn effective(&self, consumer: &Url, apps: &BTreeSet<String>) -> Effective {
        let iface_key = consumer.display_service_key().unwrap_or_default();
        let sub_iface = self.interfaces.get(&iface_key);
        let sub_apps: Vec<&RuleValues> = apps
            .iter()
            .filter_map(|a| self.applications.get(a))
            .collect();
        macro_rules! pick {
            ($f:ident) => {
                sub_iface
                    .and_then(|v| v.$f)
                    .or_else(|| sub_apps.iter().find_map(|v| v.$f))
                    .or(self.values.$f)
            };
        }
        let step = pick!(step)
            .or_else(|| {
                consumer
                    .param("migration.step")
                    .and_then(|s| s.parse().ok())
            })
            .unwrap_or(MigrationStep::ApplicationFirst);
        let threshold = pick!(threshold)
            .or_else(|| {
                consumer
                    .param("migration.threshold")
                    .and_then(|s| s.trim().parse().ok())
            })
            .unwrap_or(-1.0);
        let proportion = pick!(proportion)
            .or_else(|| {
                consumer
                    .param("migration.promotion")
                    .and_then(|s| s.trim().parse().ok())
            })
            .unwrap_or(100);
        let delay = pick!(delay)
            .or_else(|| {
                consumer
                    .param("migration.delay")
                    .and_then(|s| s.trim().parse().ok())
            })
            .unwrap_or(0);
        let force = pick!(force).unwrap_or_else(|| consumer.param_bool("migration.force", false));
        Effective {
            step,
            threshold,
            proportion,
            delay,
            force,
        }
    }
}

fn scalar_text(y: &Yaml) -> Option<String> {
    match y {
        Yaml::String(s) | Yaml::Real(s) => Some(s.clone()),
        Yaml::Integer(i) => Some(i.to_string()),
        Yaml::Boolean(b) => Some(b.to_string()),
        _ => None,
    }
}

fn values(y: &Yaml) -> Result<RuleValues> {
    let bad = |field: &str, v: &Yaml| {
        Error::malformed(
            "migration rule",
            format!("`{field}` has an unusable value {v:?}"),
        )
    };
    let text = |field: &str| -> Result<Option<String>> {
        match &y[field] {
            Yaml::BadValue | Yaml::Null => Ok(None),
            v => scalar_text(v).map(Some).ok_or_else(|| bad(field, v)),
        }
    };
    let step = text("step")?.map(|s| s.parse()).transpose()?;
    let threshold = text("threshold")?
        .map(|s| {
            s.trim()
                .parse::<f32>()
                .map_err(|_| bad("threshold", &y["threshold"]))
        })
        .transpose()?;
    let proportion = text("proportion")?
        .map(|s| {
            s.trim()
                .parse::<i32>()
                .map_err(|_| bad("proportion", &y["proportion"]))
        })
        .transpose()?;
    let delay = text("delay")?
        .map(|s| {
            s.trim()
                .parse::<i32>()
                .map_err(|_| bad("delay", &y["delay"]))
        })
        .transpose()?;
    // Java: Boolean.valueOf(text) — anything but "true" (any case) is false.
    let force = text("force")?.map(|s| s.trim().eq_ignore_ascii_case("true"));
    Ok(RuleValues {
        step,
        threshold,
        proportion,
        delay,
        force,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn consumer(extra: &str) -> Url {
        Url::parse(&format!(
            "consumer://1.2.3.4/com.foo.Greeter?interface=com.foo.Greeter&version=1.0.0&group=g{extra}"
        ))
        .unwrap()
    }

    #[test]
    fn defaults_and_url_params() {
        let r = MigrationRule::default();
        let e = r.effective(&consumer(""), &BTreeSet::new());
        assert_eq!(e.step, MigrationStep::ApplicationFirst);
        assert_eq!(
            (e.threshold, e.proportion, e.delay, e.force),
            (-1.0, 100, 0, false)
        );
        let e = r.effective(
            &consumer("&migration.step=FORCE_INTERFACE&migration.threshold=0.5&migration.promotion=30&migration.delay=2&migration.force=true"),
            &BTreeSet::new(),
        );
        assert_eq!(e.step, MigrationStep::ForceInterface);
        assert_eq!(
            (e.threshold, e.proportion, e.delay, e.force),
            (0.5, 30, 2, true)
        );
    }

    #[test]
    fn sub_rules_win_in_order() {
        let r = MigrationRule::parse(
            "key: c\nstep: FORCE_INTERFACE\nthreshold: 0.8\nproportion: 60\ninterfaces:\n  - serviceKey: com.foo.Greeter:1.0.0\n    step: FORCE_APPLICATION\napplications:\n  - serviceKey: shop\n    step: APPLICATION_FIRST\n    threshold: 0.1\n    force: TRUE\n",
        )
        .unwrap();
        assert_eq!(r.key.as_deref(), Some("c"));
        let apps: BTreeSet<String> = ["shop".to_owned()].into();
        let e = r.effective(&consumer(""), &apps);
        assert_eq!(
            e.step,
            MigrationStep::ForceApplication,
            "interface sub-rule first (no group in the key)"
        );
        assert_eq!(e.threshold, 0.1, "then the application sub-rule");
        assert!(e.force);
        assert_eq!(e.proportion, 60, "then the top level");
        let e = r.effective(
            &consumer("").with_param("version", "2.0.0"),
            &BTreeSet::new(),
        );
        assert_eq!(e.step, MigrationStep::ForceInterface);
        assert_eq!(e.threshold, 0.8);
    }

    #[test]
    fn empty_and_bad_rules() {
        assert_eq!(MigrationRule::parse("").unwrap(), MigrationRule::default());
        assert_eq!(MigrationRule::parse("~").unwrap(), MigrationRule::default());
        for bad in [
            "step: SOMETIMES",
            "threshold: high",
            "- a\n- b",
            "interfaces: 3",
            "key: [",
            "proportion: 1.5",
        ] {
            assert!(MigrationRule::parse(bad).is_err(), "{bad}");
        }
        // Unknown keys are fine.
        assert!(MigrationRule::parse("step: FORCE_INTERFACE\nwhatever: 1").is_ok());
    }

    #[test]
    fn rules_are_read_within_the_bounds_of_every_rule() {
        let deep = format!(
            "step: FORCE_INTERFACE\nx: {}1{}",
            "[".repeat(60),
            "]".repeat(60)
        );
        let e = MigrationRule::parse(&deep).unwrap_err();
        assert!(e.to_string().contains("nested"), "{e}");
        let laughs = format!(
            "a: &a [x, x, x, x, x, x, x, x, x, x]\n{}step: FORCE_INTERFACE\n",
            (0..60)
                .map(|i| format!("b{i}: [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]\n"))
                .collect::<String>()
        );
        assert!(MigrationRule::parse(&laughs).is_err());
        let big = format!("step: FORCE_INTERFACE\nkey: {}\n", "k".repeat(2 << 20));
        assert!(MigrationRule::parse(&big).is_err());
        assert!(
            MigrationRule::parse("step: FORCE_INTERFACE\n---\nstep: FORCE_APPLICATION\n").is_err()
        );
    }
}
