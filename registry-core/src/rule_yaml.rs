//! Bounded YAML for rule documents from the config centre (condition, tag and override rules,
//! migration rules): the one entry point every rule kind reads its text through.
//!
//! A config-centre key can be written by anyone with access to it, and every consumer that
//! watches the key reads the value, at once and again at each start. So the reader is bounded
//! the way Dubbo's SnakeYAML `LoaderOptions` (defaults, as Dubbo 3.3 constructs them in
//! `ConditionRuleParser`, `TagRuleParser`, `ConfigParser` and `MigrationRule`) bounds it, and
//! further where a copying reader needs it:
//!
//! | limit | default | SnakeYAML (Dubbo 3.3) |
//! |---|---|---|
//! | [`YamlLimits::max_bytes`]: text size, checked before parsing | 1 MiB | 3,145,728 code points |
//! | [`YamlLimits::max_depth`]: collections enclosing any node | 50 | `nestingDepthLimit` 50 |
//! | [`YamlLimits::max_collection_aliases`]: aliases of a sequence or mapping | 50 | `maxAliasesForCollections` 50 |
//! | [`YamlLimits::max_cost`]: size of the tree built ([`NODE_COST`] a node plus scalar bytes) | 32 MiB | none (aliases are shared references in Java) |
//!
//! Java shares an aliased node; this tree ([`Yaml`]) holds copies, so an alias costs what it
//! copies and the whole tree is charged against [`YamlLimits::max_cost`]: a "billion laughs"
//! document stops at the alias limit or the cost limit, whichever comes first, after a few
//! megabytes. The reader walks the parser's events with an explicit stack (no recursion, so a
//! deeply nested document cannot overflow a thread's stack) and an aliased copy counts at its
//! full depth.
//!
//! Like SnakeYAML's `load`: one document (a second one is refused), an undefined alias is
//! refused, a duplicate mapping key keeps its first position and takes the last value.
//! Scalars resolve as `yaml-rust2`'s own loader resolves them (YAML 1.2 core schema).
//!
//! ```
//! use registry_core::rule_yaml::{self, Yaml};
//!
//! let doc = rule_yaml::load("force: true\nconditions:\n  - => host = 1.2.3.4\n").unwrap();
//! assert_eq!(doc["force"], Yaml::Boolean(true));
//! let laughs = "a: &a [x, x]\nb: &b [*a, *a]\nc: [*b, *b, *b]\n";
//! assert!(rule_yaml::load(laughs).is_ok());
//! let deep = format!("a:\n  {}x", "- ".repeat(10_000));
//! assert!(rule_yaml::load(&deep).unwrap_err().to_string().contains("nested"));
//! ```

use std::collections::HashMap;

use yaml_rust2::parser::{Event, Parser, Tag};
use yaml_rust2::scanner::TScalarStyle;
use yaml_rust2::yaml::Hash;
pub use yaml_rust2::Yaml;

use crate::error::{Error, Result};

/// What one node costs against [`YamlLimits::max_cost`], besides its scalar bytes: about
/// what a [`Yaml`] value and its place in a list or map take in memory.
pub const NODE_COST: usize = 64;

/// The bounds of [`load_with`] (module docs for the defaults and Java's).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct YamlLimits {
    /// Largest text read, in bytes (checked before parsing).
    pub max_bytes: usize,
    /// Most collections that may enclose a node (the document's top node has none).
    pub max_depth: usize,
    /// Most aliases that may refer to a sequence or a mapping (aliases of scalars are not
    /// counted, as in SnakeYAML; they are charged to the cost).
    pub max_collection_aliases: usize,
    /// Largest tree built: [`NODE_COST`] per node plus the bytes of every scalar, copies
    /// made by aliases included.
    pub max_cost: usize,
}

impl Default for YamlLimits {
    fn default() -> Self {
        YamlLimits {
            max_bytes: 1024 * 1024,
            max_depth: 50,
            max_collection_aliases: 50,
            max_cost: 32 * 1024 * 1024,
        }
    }
}

/// Reads a rule document with the default [`YamlLimits`]: `Ok(None)` for a text with no
/// document (empty, or comments only).
///
/// Errors: [`Error::RuleLimit`] when a limit is passed; [`Error::Malformed`] when the text is
/// not YAML, has more than one document or uses an undefined alias.
pub fn load(text: &str) -> Result<Yaml> {
    load_with(text, &YamlLimits::default())?
        .ok_or_else(|| Error::Malformed("empty YAML document".into()))
}

/// True for a character SnakeYAML reads (`StreamReader.isPrintable`).
fn is_yaml_printable(c: char) -> bool {
    matches!(c, '\t' | '\n' | '\r' | ' '..='~' | '\u{85}' | '\u{A0}'..='\u{D7FF}' | '\u{E000}'..='\u{FFFD}')
        || c >= '\u{10000}'
}

/// Reads a rule document within `limits` (see [`load`]).
///
/// Errors: as [`load`]; a text without a document is `Ok(None)`.
pub fn load_with(text: &str, limits: &YamlLimits) -> Result<Option<Yaml>> {
    if text.len() > limits.max_bytes {
        return Err(Error::RuleLimit(format!(
            "the document has {} bytes, more than the limit of {}",
            text.len(),
            limits.max_bytes
        )));
    }
    // SnakeYAML (Dubbo's reader) refuses the whole text when it holds a character outside
    // YAML's printable set: controls other than tab, line feed and carriage return; DEL; C1
    // controls but NEL; U+FFFE/U+FFFF.
    if let Some(c) = text.chars().find(|c| !is_yaml_printable(*c)) {
        return Err(Error::Malformed(format!(
            "special character U+{:04X} is not allowed",
            u32::from(c)
        )));
    }
    let mut b = Builder {
        limits,
        stack: Vec::new(),
        anchors: HashMap::new(),
        collection_aliases: 0,
        cost: 0,
        doc: None,
    };
    let mut parser = Parser::new_from_str(text);
    let mut documents = 0usize;
    loop {
        let (event, mark) = parser
            .next_token()
            .map_err(|e| Error::Malformed(format!("YAML: {e}")))?;
        let at = || format!("line {} column {}", mark.line(), mark.col() + 1);
        match event {
            Event::StreamEnd => break,
            Event::Nothing | Event::StreamStart | Event::DocumentEnd => {}
            Event::DocumentStart => {
                documents += 1;
                if documents > 1 {
                    return Err(Error::Malformed(format!(
                        "YAML: expected a single document, found another at {}",
                        at()
                    )));
                }
            }
            Event::Alias(id) => {
                let Some(anchor) = b.anchors.get(&id) else {
                    return Err(Error::Malformed(format!(
                        "YAML: undefined alias at {}",
                        at()
                    )));
                };
                let (node, height, cost) = (anchor.node.clone(), anchor.height, anchor.cost);
                if matches!(node, Yaml::Array(_) | Yaml::Hash(_)) {
                    b.collection_aliases += 1;
                    if b.collection_aliases > limits.max_collection_aliases {
                        return Err(Error::RuleLimit(format!(
                            "more than {} aliases of collections (at {})",
                            limits.max_collection_aliases,
                            at()
                        )));
                    }
                }
                b.check_depth(height, &at)?;
                b.charge(cost, &at)?;
                b.insert(node, 0, height, cost, &at)?;
            }
            Event::Scalar(value, style, anchor, tag) => {
                b.check_depth(0, &at)?;
                let cost = NODE_COST + value.len();
                b.charge(cost, &at)?;
                b.insert(resolve_scalar(value, style, tag), anchor, 0, cost, &at)?;
            }
            Event::SequenceStart(anchor, _) | Event::MappingStart(anchor, _) => {
                b.check_depth(0, &at)?;
                b.charge(NODE_COST, &at)?;
                let node = if matches!(event, Event::SequenceStart(..)) {
                    Yaml::Array(Vec::new())
                } else {
                    Yaml::Hash(Hash::new())
                };
                b.stack.push(Open {
                    node,
                    anchor,
                    key: None,
                    height: 0,
                    cost: NODE_COST,
                });
            }
            Event::SequenceEnd | Event::MappingEnd => {
                let Some(open) = b.stack.pop() else {
                    return Err(Error::Malformed(format!(
                        "YAML: unbalanced collection end at {}",
                        at()
                    )));
                };
                if open.key.is_some() {
                    return Err(Error::Malformed(format!(
                        "YAML: a mapping key without a value at {}",
                        at()
                    )));
                }
                b.insert(open.node, open.anchor, open.height, open.cost, &at)?;
            }
        }
    }
    Ok(b.doc)
}

/// A collection being read.
struct Open {
    node: Yaml,
    anchor: usize,
    /// A mapping's key waiting for its value.
    key: Option<Yaml>,
    /// Levels below it so far.
    height: usize,
    /// Its cost so far (itself and its children).
    cost: usize,
}

/// An anchored node, with what a copy of it costs.
struct Anchored {
    node: Yaml,
    height: usize,
    cost: usize,
}

struct Builder<'a> {
    limits: &'a YamlLimits,
    stack: Vec<Open>,
    anchors: HashMap<usize, Anchored>,
    collection_aliases: usize,
    cost: usize,
    doc: Option<Yaml>,
}

impl Builder<'_> {
    /// A node `height` levels tall may be placed under the open collections.
    fn check_depth(&self, height: usize, at: &dyn Fn() -> String) -> Result<()> {
        if self.stack.len() + height > self.limits.max_depth {
            return Err(Error::RuleLimit(format!(
                "collections nested more than {} levels deep (at {})",
                self.limits.max_depth,
                at()
            )));
        }
        Ok(())
    }

    fn charge(&mut self, cost: usize, at: &dyn Fn() -> String) -> Result<()> {
        self.cost = self.cost.saturating_add(cost);
        if self.cost > self.limits.max_cost {
            return Err(Error::RuleLimit(format!(
                "the document expands to more than {} bytes (at {})",
                self.limits.max_cost,
                at()
            )));
        }
        Ok(())
    }

    /// Places a finished node into the open collection (or as the document).
    fn insert(
        &mut self,
        node: Yaml,
        anchor: usize,
        height: usize,
        cost: usize,
        at: &dyn Fn() -> String,
    ) -> Result<()> {
        if anchor > 0 {
            // The kept copy is memory too.
            self.charge(cost, at)?;
            self.anchors.insert(
                anchor,
                Anchored {
                    node: node.clone(),
                    height,
                    cost,
                },
            );
        }
        let Some(parent) = self.stack.last_mut() else {
            self.doc = Some(node);
            return Ok(());
        };
        parent.height = parent.height.max(height + 1);
        parent.cost = parent.cost.saturating_add(cost);
        match &mut parent.node {
            Yaml::Array(items) => items.push(node),
            Yaml::Hash(map) => match parent.key.take() {
                None => parent.key = Some(node),
                Some(key) => {
                    // SnakeYAML (allowDuplicateKeys=true): the last value wins, the entry
                    // keeps its first position.
                    if let Some(v) = map.get_mut(&key) {
                        *v = node;
                    } else {
                        map.insert(key, node);
                    }
                }
            },
            _ => {}
        }
        Ok(())
    }
}

/// A scalar as `yaml-rust2`'s `YamlLoader` resolves it (quoted: a string; a plain scalar
/// with a core-schema tag: that type; otherwise the core schema's guess).
fn resolve_scalar(value: String, style: TScalarStyle, tag: Option<Tag>) -> Yaml {
    if style != TScalarStyle::Plain {
        return Yaml::String(value);
    }
    let Some(Tag { handle, suffix }) = tag else {
        return Yaml::from_str(&value);
    };
    if handle != "tag:yaml.org,2002:" {
        return Yaml::String(value);
    }
    match suffix.as_str() {
        "bool" => match value.as_str() {
            "true" | "True" | "TRUE" => Yaml::Boolean(true),
            "false" | "False" | "FALSE" => Yaml::Boolean(false),
            _ => Yaml::BadValue,
        },
        "int" => value.parse::<i64>().map_or(Yaml::BadValue, Yaml::Integer),
        "float" => {
            if is_core_float(&value) {
                Yaml::Real(value)
            } else {
                Yaml::BadValue
            }
        }
        "null" => match value.as_str() {
            "~" | "null" => Yaml::Null,
            _ => Yaml::BadValue,
        },
        _ => Yaml::String(value),
    }
}

/// A float of the YAML 1.2 core schema: `.inf`/`.nan` in their spellings, or a number with
/// at least one digit that Rust reads as `f64`.
fn is_core_float(v: &str) -> bool {
    matches!(
        v,
        ".inf"
            | ".Inf"
            | ".INF"
            | "+.inf"
            | "+.Inf"
            | "+.INF"
            | "-.inf"
            | "-.Inf"
            | "-.INF"
            | ".nan"
            | ".NaN"
            | ".NAN"
    ) || (v.bytes().any(|b| b.is_ascii_digit()) && v.parse::<f64>().is_ok())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use yaml_rust2::YamlLoader;

    fn limits() -> YamlLimits {
        YamlLimits::default()
    }

    #[test]
    fn reads_what_yaml_rust2_reads() {
        for text in [
            "a: 1\nb: [x, 'y', \"z\", 1.5, true, ~, null]\nc: {d: e}\n",
            "configVersion: v3.0\nforce: yes\nconditions:\n  - method = a => host = 1\n",
            "a: !!int 7\nb: !!str 7\nc: !!bool true\nd: !!float 1.5\ne: !!null ~\nf: !custom x\n",
            "list:\n  - &x {k: v}\n  - *x\n  - &s scalar\n  - *s\n",
            "? [a, b]\n: complex key\n",
        ] {
            let ours = load(text).unwrap();
            let theirs = YamlLoader::load_from_str(text).unwrap().remove(0);
            assert_eq!(ours, theirs, "{text}");
        }
        assert_eq!(load_with("", &limits()).unwrap(), None);
        assert_eq!(load_with("# only a comment\n", &limits()).unwrap(), None);
    }

    #[test]
    fn like_snakeyaml() {
        // Duplicate keys: the last value, the first position.
        let y = load("a: 1\nb: 2\na: 3\n").unwrap();
        let keys: Vec<_> = y.as_hash().unwrap().keys().cloned().collect();
        assert_eq!(keys, [Yaml::String("a".into()), Yaml::String("b".into())]);
        assert_eq!(y["a"], Yaml::Integer(3));
        // One document only; undefined aliases refused.
        assert!(matches!(
            load("a: 1\n---\nb: 2\n"),
            Err(Error::Malformed(_))
        ));
        assert!(matches!(load("a: *nothing\n"), Err(Error::Malformed(_))));
        assert!(matches!(load("a: [\n"), Err(Error::Malformed(_))));
    }

    /// SnakeYAML's `nestingDepthLimit` 50: a node may have 50 enclosing collections.
    #[test]
    fn depth_limit_matches_snakeyaml() {
        let nested = |n: usize| format!("{}x{}", "[".repeat(n), "]".repeat(n));
        assert!(load(&nested(50)).is_ok());
        let e = load(&nested(51)).unwrap_err();
        assert!(matches!(e, Error::RuleLimit(_)), "{e}");
        assert!(load(&format!("{}[]{}", "[".repeat(50), "]".repeat(50))).is_ok());
        // Block sequences, 10,000 deep: refused without recursing.
        let deep = format!("a:\n  {}x\n", "- ".repeat(10_000));
        assert!(matches!(load(&deep), Err(Error::RuleLimit(_))));
        // An alias counts at its full depth.
        let anchor = format!("a: &a {}x{}\n", "[".repeat(40), "]".repeat(40));
        assert!(load(&format!(
            "{anchor}b: {}*a{}\n",
            "[".repeat(9),
            "]".repeat(9)
        ))
        .is_ok());
        let e = load(&format!(
            "{anchor}b: {}*a{}\n",
            "[".repeat(11),
            "]".repeat(11)
        ));
        assert!(matches!(e, Err(Error::RuleLimit(_))), "{e:?}");
    }

    #[test]
    fn alias_limit_matches_snakeyaml() {
        let doc = |n: usize| {
            let mut s = String::from("a: &a [x]\nb:\n");
            for _ in 0..n {
                s.push_str("  - *a\n");
            }
            s
        };
        assert!(load(&doc(50)).is_ok());
        let e = load(&doc(51)).unwrap_err();
        assert!(e.to_string().contains("aliases"), "{e}");
        // Aliases of scalars are not counted.
        let mut s = String::from("a: &a x\nb:\n");
        for _ in 0..500 {
            s.push_str("  - *a\n");
        }
        assert!(load(&s).is_ok());
    }

    #[test]
    fn copies_are_charged() {
        // A 100 KB scalar aliased 400 times would copy 40 MB.
        let mut s = format!("a: &a {}\nb:\n", "x".repeat(100_000));
        for _ in 0..400 {
            s.push_str("  - *a\n");
        }
        let e = load(&s).unwrap_err();
        assert!(e.to_string().contains("expands"), "{e}");
        // Billion laughs: stops at the alias limit, tiny.
        let mut s = String::from("l0: &l0 [lol,lol,lol,lol,lol,lol,lol,lol,lol]\n");
        for i in 1..=9 {
            let p = i - 1;
            s.push_str(&format!(
                "l{i}: &l{i} [{}]\n",
                vec![format!("*l{p}"); 9].join(",")
            ));
        }
        let e = load(&s).unwrap_err();
        assert!(matches!(e, Error::RuleLimit(_)), "{e}");
    }

    #[test]
    fn size_is_checked_first() {
        let small = YamlLimits {
            max_bytes: 8,
            ..limits()
        };
        assert!(load_with("a: 1234\n", &small).is_ok());
        let e = load_with("a: 12345\n", &small).unwrap_err();
        assert!(e.to_string().contains("9 bytes"), "{e}");
    }
}
