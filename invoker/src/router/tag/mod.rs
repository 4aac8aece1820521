//! The tag router (`TagStateRouter`, routers.md R4): the request tag (`dubbo.tag`
//! attachment, else the consumer's `dubbo.tag`) selects providers by a dynamic tag rule
//! (addresses or v3.0 `match` conditions) or by their static `dubbo.tag`, falling back to
//! untagged providers unless forced.

use std::sync::Arc;

use registry_core::Url;
use rustc_hash::FxHashMap;

use crate::keys::{FORCE_TAG_KEY, TAG_KEY};
use crate::router::bits::Bits;
use crate::router::condition::Dialect;
use crate::router::fields::TargetFields;
use crate::router::rule_doc::{load_rule, tag_doc, TagDoc};
use crate::router::sample::RouteCall;
use crate::router::target::Target;
use crate::router::RouterError;
use registry_core::ip::{self as address, address_matches};
use registry_core::rule_yaml::Yaml;

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
        Self::from_yaml(&load_rule(raw)?)
    }

    /// [`TagRule::parse`] of a document already read with [`load_rule`].
    ///
    /// Errors: as [`TagRule::parse`].
    pub fn from_yaml(map: &Yaml) -> Result<TagRule, RouterError> {
        let doc = tag_doc(map)?;
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
                by_name.insert(t.name.clone(), addrs);
            }
        }
        // Java's getAddresses() is the union over tagnameToAddresses: a later tag of the same
        // name replaces the earlier one's addresses there, so they tag nothing any more.
        for t in &self.doc.tags {
            for a in by_name.get(&t.name).into_iter().flatten() {
                add_all(a, &mut all);
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
        self.select_name_by_level(tag, force_use_tag)
            .and_then(|n| self.by_name.get(n))
            .map(Vec::as_slice)
    }

    /// The tag name (a key of `by_name`) [`ResolvedTags::select_by_level`] reads.
    pub(crate) fn select_name_by_level<'t>(
        &self,
        tag: &'t str,
        force_use_tag: bool,
    ) -> Option<&'t str> {
        if force_use_tag || !tag.contains('|') {
            return self.by_name.contains_key(tag).then_some(tag);
        }
        let mut end = tag.len();
        loop {
            let t = &tag[..end];
            if self.by_name.get(t).is_some_and(|a| !a.is_empty()) {
                return Some(t);
            }
            match t.rfind('|') {
                Some(i) => end = i,
                None => return None,
            }
        }
    }
}

/// What the tag router reads about the providers: their static tag and which tag groups
/// (address lists of the resolved rule) they are in. The reference view matches addresses
/// on every call; the directory's precomputed view ([`TagMasks`]) answers with bit tests.
pub(crate) trait TagView {
    /// The static tag of provider `i`.
    fn static_tag(&self, i: u32) -> Option<&str>;
    /// True when provider `i` matches an address of any tag of the rule (`rule.all`).
    fn in_any_group(&self, i: u32) -> bool;
    /// The test "provider `i` matches an address of tag `name`" (`name` is a key of
    /// `rule.by_name`).
    fn group<'a>(&'a self, rule: &'a ResolvedTags, name: &'a str) -> impl Fn(u32) -> bool + 'a;
}

/// The reference view: addresses matched against the target URLs.
struct Direct<'a> {
    targets: &'a [Target],
    rule: Option<&'a ResolvedTags>,
}

impl TagView for Direct<'_> {
    fn static_tag(&self, i: u32) -> Option<&str> {
        self.targets[i as usize].tag.as_deref()
    }

    fn in_any_group(&self, i: u32) -> bool {
        self.rule
            .is_some_and(|r| any_match(&r.all, &self.targets[i as usize]))
    }

    fn group<'a>(&'a self, rule: &'a ResolvedTags, name: &'a str) -> impl Fn(u32) -> bool + 'a {
        let addrs: &[String] = rule.by_name.get(name).map_or(&[], Vec::as_slice);
        move |i| any_match(addrs, &self.targets[i as usize])
    }
}

/// A resolved tag rule's groups over one provider list, as bit sets (plus the static
/// tags): the tag router's view for the directory's precomputed routing.
#[derive(Debug, Clone, Default)]
pub(crate) struct TagMasks {
    all: Bits,
    by_name: FxHashMap<String, Bits>,
    static_tags: Arc<[Option<Box<str>>]>,
}

impl TagMasks {
    /// The groups of `rule` (if any) over `targets` (addresses parsed through `fields`).
    pub(crate) fn new(
        rule: Option<&ResolvedTags>,
        targets: &[Target],
        fields: &TargetFields,
    ) -> TagMasks {
        let static_tags = fields.static_tags(targets);
        let Some(rule) = rule else {
            return TagMasks {
                static_tags,
                ..TagMasks::default()
            };
        };
        let hosts = fields.hosts(targets);
        let mask = |addrs: &[String]| {
            let pats: Vec<address::AddressPattern<'_>> = addrs
                .iter()
                .map(|a| address::AddressPattern::new(a))
                .collect();
            Bits::from_fn(hosts.len(), |i| {
                hosts
                    .get(i)
                    .is_some_and(|h| pats.iter().any(|p| p.matches(h)))
            })
        };
        TagMasks {
            all: mask(&rule.all),
            by_name: rule
                .by_name
                .iter()
                .map(|(k, v)| (k.clone(), mask(v)))
                .collect(),
            static_tags,
        }
    }
}

impl TagView for TagMasks {
    fn static_tag(&self, i: u32) -> Option<&str> {
        self.static_tags.get(i as usize).and_then(|t| t.as_deref())
    }

    fn in_any_group(&self, i: u32) -> bool {
        self.all.get(i)
    }

    fn group<'a>(&'a self, _rule: &'a ResolvedTags, name: &'a str) -> impl Fn(u32) -> bool + 'a {
        let bits = self.by_name.get(name);
        move |i| bits.is_some_and(|b| b.get(i))
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
    route_in(
        &Direct { targets, rule },
        rule,
        input,
        tag,
        force_use_tag,
        dialect,
    );
}

/// [`route`] through a view of the providers.
pub(crate) fn route_in(
    view: &impl TagView,
    rule: Option<&ResolvedTags>,
    input: &mut Vec<u32>,
    tag: Option<&str>,
    force_use_tag: bool,
    dialect: Dialect,
) {
    if input.is_empty() {
        return;
    }
    let static_tag = |i: &u32| view.static_tag(*i);
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
            input.retain(|&i| !view.in_any_group(i));
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
    let group = match dialect {
        Dialect::V3 => rule.select_name_by_level(tag, force_use_tag),
        Dialect::V27 => rule
            .by_name
            .get(tag)
            .is_some_and(|a| !a.is_empty())
            .then_some(tag),
    };
    let result: Vec<u32> = match group {
        Some(name) => {
            let in_group = view.group(rule, name);
            let r: Vec<u32> = input.iter().copied().filter(|&i| in_group(i)).collect();
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
    input.retain(|&i| !view.in_any_group(i) && static_tag(&i).is_none());
}

#[cfg(test)]
mod differential_cases {
    use registry_core::Url;

    use super::*;

    #[test]
    fn a_repeated_tag_name_replaces_the_earlier_addresses() {
        // Found by the differential tests against TagStateRouter: Java's getAddresses() is the
        // union over tagnameToAddresses, where the second `gray` replaced the first.
        let rule = TagRule::parse(
            "configVersion: v3.0\nkey: prov\nscope: application\ntags:\n  - name: gray\n    addresses: [10.0.0.*:20880]\n  - name: gray\n    addresses: [10.0.0.2:20881]\n",
        )
        .unwrap();
        let targets = vec![Target::from_url(
            Url::parse("dubbo://10.0.0.1:20880/S?interface=S").unwrap(),
        )];
        let resolved = rule.resolve(&targets);
        assert_eq!(resolved.all, vec!["10.0.0.2:20881".to_owned()]);
        let mut idx = vec![0];
        route(
            Some(&resolved),
            &targets,
            &mut idx,
            None,
            false,
            Dialect::V3,
        );
        assert_eq!(idx, vec![0]);
    }
}
