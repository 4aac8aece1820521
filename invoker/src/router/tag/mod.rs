//! The tag router (`TagStateRouter`, routers.md R4): the request tag (`dubbo.tag`
//! attachment, else the consumer's `dubbo.tag`) selects providers by a dynamic tag rule
//! (addresses or v3.0 `match` conditions) or by their static `dubbo.tag`, falling back to
//! untagged providers unless forced.

pub mod address;

use registry_core::Url;
use rustc_hash::FxHashMap;

use self::address::address_matches;
use crate::router::condition::Dialect;
use crate::router::rule_doc::{parse_tag_doc, TagDoc};
use crate::router::sample::RouteCall;
use crate::router::target::Target;
use crate::router::RouterError;

/// The tag key on providers, consumers and attachments.
pub const TAG_KEY: &str = "dubbo.tag";
/// The force-tag key (attachment, else consumer URL).
pub const FORCE_TAG_KEY: &str = "dubbo.force.tag";

/// A parsed tag rule (before its `match` tags are resolved against providers).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TagRule {
    doc: TagDoc,
}

impl TagRule {
    /// Parses a tag rule.
    ///
    /// Errors: malformed YAML or fields; a rule with no tags ([`RouterError::Empty`]).
    pub fn parse(raw: &str) -> Result<TagRule, RouterError> {
        let doc = parse_tag_doc(raw)?;
        if !doc.common.valid {
            return Err(RouterError::Empty("a tag rule needs tags".into()));
        }
        Ok(TagRule { doc })
    }

    /// The document.
    pub fn doc(&self) -> &TagDoc {
        &self.doc
    }

    /// Resolves the addresses of each tag against the current providers (Java's
    /// `TagRouterRule#init`): listed addresses as given; for a tag without addresses, the
    /// `host:port` of every provider on which all its `match` conditions hold (raw params).
    pub fn resolve(&self, targets: &[Target]) -> ResolvedTags {
        let mut by_name: FxHashMap<String, Vec<String>> = FxHashMap::default();
        let mut all: Vec<String> = Vec::new();
        let add_all = |a: &str, all: &mut Vec<String>| {
            if !all.iter().any(|x| x == a) {
                all.push(a.to_owned());
            }
        };
        for t in &self.doc.tags {
            if let Some(addrs) = t.addresses.as_ref().filter(|a| !a.is_empty()) {
                by_name.insert(t.name.clone(), addrs.clone());
                for a in addrs {
                    add_all(a, &mut all);
                }
            }
        }
        for t in &self.doc.tags {
            if t.addresses.as_ref().is_some_and(|a| !a.is_empty()) || t.matches.is_empty() {
                continue;
            }
            let mut addrs: Vec<String> = Vec::new();
            for target in targets {
                let ok = t
                    .matches
                    .iter()
                    .all(|(k, m)| m.is_match(target.raw.param(k)));
                if ok {
                    if let Some(a) = target.raw.address() {
                        addrs.push(a);
                    }
                }
            }
            if !addrs.is_empty() {
                for a in &addrs {
                    add_all(a, &mut all);
                }
                by_name.insert(t.name.clone(), addrs);
            }
        }
        ResolvedTags {
            force: self.doc.common.force,
            enabled: self.doc.common.enabled,
            names: self.doc.tags.iter().map(|t| t.name.clone()).collect(),
            by_name,
            all,
        }
    }
}

/// A tag rule with its addresses resolved for one provider list.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ResolvedTags {
    /// `force` of the rule.
    pub force: bool,
    /// `enabled` of the rule.
    pub enabled: bool,
    /// Every tag name of the rule.
    pub names: Vec<String>,
    /// Tag name → address patterns.
    pub by_name: FxHashMap<String, Vec<String>>,
    /// Every address of every tag (Java's `getAddresses`).
    pub all: Vec<String>,
}

impl ResolvedTags {
    /// `selectAddressByTagLevel`: an exact lookup when forced or without `|`; otherwise
    /// `a|b|c`, `a|b`, `a`, the first non-empty. `None`: the tag is not in the rule.
    pub fn select_by_level(&self, tag: &str, force_use_tag: bool) -> Option<&[String]> {
        if force_use_tag || !tag.contains('|') {
            return self.by_name.get(tag).map(Vec::as_slice);
        }
        let mut end = tag.len();
        loop {
            let t = &tag[..end];
            if let Some(a) = self.by_name.get(t).filter(|a| !a.is_empty()) {
                return Some(a);
            }
            match t.rfind('|') {
                Some(i) => end = i,
                None => return None,
            }
        }
    }
}

fn any_match(addresses: &[String], t: &Target) -> bool {
    let host = t.raw.host().unwrap_or("");
    addresses
        .iter()
        .any(|a| address_matches(a, host, t.raw.port()))
}

/// The request tag and force flag of a call.
pub fn request_tag<'a>(consumer: &'a Url, call: &RouteCall<'a>) -> (Option<&'a str>, bool) {
    let tag = call
        .attachment(TAG_KEY)
        .filter(|t| !t.is_empty())
        .or_else(|| consumer.param(TAG_KEY))
        .filter(|t| !t.is_empty());
    let force = call
        .attachment(FORCE_TAG_KEY)
        .filter(|t| !t.is_empty())
        .or_else(|| consumer.param(FORCE_TAG_KEY))
        .is_some_and(|v| v.eq_ignore_ascii_case("true"));
    (tag, force)
}

/// Routes `input` by tag. `rule` is the current resolved rule (absent, disabled or invalid
/// = static tags only).
pub fn route(
    rule: Option<&ResolvedTags>,
    targets: &[Target],
    input: &mut Vec<u32>,
    tag: Option<&str>,
    force_use_tag: bool,
    dialect: Dialect,
) {
    if input.is_empty() {
        return;
    }
    let static_tag = |i: &u32| targets[*i as usize].tag.as_deref();
    let untagged = |input: &mut Vec<u32>| input.retain(|i| static_tag(i).is_none());
    let Some(rule) = rule.filter(|r| r.enabled) else {
        // filterUsingStaticTag
        match tag {
            Some(tag) => {
                let any = input.iter().any(|i| static_tag(i) == Some(tag));
                if any {
                    input.retain(|i| static_tag(i) == Some(tag));
                } else if force_use_tag {
                    input.clear();
                } else {
                    untagged(input);
                }
            }
            None => untagged(input),
        }
        return;
    };
    let Some(tag) = tag else {
        if !rule.all.is_empty() {
            input.retain(|&i| !any_match(&rule.all, &targets[i as usize]));
            if input.is_empty() {
                return;
            }
        }
        match dialect {
            Dialect::V3 => untagged(input),
            Dialect::V27 => {
                input.retain(|i| static_tag(i).is_none_or(|t| !rule.names.iter().any(|n| n == t)))
            }
        }
        return;
    };
    let addresses = match dialect {
        Dialect::V3 => rule.select_by_level(tag, force_use_tag),
        Dialect::V27 => rule
            .by_name
            .get(tag)
            .map(Vec::as_slice)
            .filter(|a| !a.is_empty()),
    };
    let result: Vec<u32> = match addresses {
        Some(addrs) => {
            let r: Vec<u32> = input
                .iter()
                .copied()
                .filter(|&i| any_match(addrs, &targets[i as usize]))
                .collect();
            if !r.is_empty() || rule.force {
                *input = r;
                return;
            }
            r
        }
        None => input
            .iter()
            .copied()
            .filter(|i| static_tag(i) == Some(tag))
            .collect(),
    };
    if !result.is_empty() || force_use_tag {
        *input = result;
        return;
    }
    // FAILOVER: outside every dynamic group and without a static tag.
    input.retain(|&i| {
        let t = &targets[i as usize];
        !any_match(&rule.all, t) && t.tag.is_none()
    });
}
