//! Result mergers for multi-group references (Dubbo's `MergerFactory` and `Merger`): what
//! [`crate::cluster::mergeable`] uses to combine the answers of every group when a method has
//! a `merger`.
//!
//! - [`Merger`]: Dubbo's `Merger` SPI over JSON values. The built-ins (`builtin.rs`) are
//!   registered under Dubbo's extension names `list`, `set`, `map`, `boolean`, `byte`, `char`,
//!   `short`, `int`, `long`, `float`, `double`; `ArrayMerger` is the
//!   fallback for any other array type, as in `MergerFactory`.
//! - [`MergerRegistry::merger_for_type`]: `MergerFactory.getMerger(returnType)`: the merger
//!   whose type argument is exactly the declared return type (extension names in sorted order,
//!   the first registered for a type wins), else `ArrayMerger` for arrays, else none. So
//!   `java.util.List` has a merger and `java.util.ArrayList` has none.
//! - [`MethodMerger`]: `merger=.name` calls `returnType.name(returnType)` on the
//!   first result with each other result. Built-in: the methods the JSON value model can
//!   express (`Map.putAll`, `Collection.addAll/removeAll/retainAll/containsAll`,
//!   `String.concat`, and `String` predicates without side effects). User classes register
//!   theirs ([`MergerRegistry::register_method_merger`]).
//!
//! Java class names are compared after [`java_class`]: generics dropped, `java.lang`/`java.util`
//! simple names completed (`List<String>` is `java.util.List`).

pub(crate) mod builtin;
pub(crate) mod method;

use std::fmt;
use std::sync::{Arc, OnceLock};

use parking_lot::RwLock;
use serde_json::Value;

pub use self::method::MethodMerger;
use crate::rpc::{RpcError, RpcErrorCode};

/// Merges the results of several groups (Dubbo's `Merger<T>`).
pub trait Merger: Send + Sync + fmt::Debug {
    /// Merges `items` (in merge order; JSON `null` = a null result). An empty slice is
    /// Dubbo's `merge()` / `merge(null)`.
    fn merge(&self, items: &[Value]) -> Result<Value, RpcError>;
}

/// A Java exception that is not an `RpcException`, as an [`RpcError`] (code 0) carrying the
/// class name.
pub(crate) fn java_error(class: &str, message: impl Into<String>) -> RpcError {
    RpcError {
        code: RpcErrorCode::Unknown,
        message: message.into(),
        exception_class: Some(class.to_owned()),
    }
}

/// One registered merger.
#[derive(Debug, Clone)]
pub struct MergerEntry {
    /// The extension name (`merger=<name>`).
    pub name: String,
    /// The implementing class (built-ins: Dubbo's class simple name, e.g. `ListMerger`; user
    /// mergers: their extension name).
    pub class: String,
    /// The type argument (normalized Java class name), e.g. `java.util.List`, `long[]`.
    pub java_type: String,
    /// The merger.
    pub merger: Arc<dyn Merger>,
}

#[derive(Clone)]
struct MethodEntry {
    java_type: String,
    method: String,
    merger: Arc<dyn MethodMerger>,
}

/// Named mergers and method mergers (Dubbo's `Merger` extensions plus `MergerFactory`).
pub struct MergerRegistry {
    /// Sorted by name.
    mergers: RwLock<Vec<MergerEntry>>,
    methods: RwLock<Vec<MethodEntry>>,
}

impl fmt::Debug for MergerRegistry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MergerRegistry")
            .field("mergers", &self.extension_names())
            .field("method_mergers", &self.methods.read().len())
            .finish()
    }
}

impl Default for MergerRegistry {
    fn default() -> Self {
        MergerRegistry::new()
    }
}

impl MergerRegistry {
    /// A registry holding the built-in mergers and method mergers.
    pub fn new() -> Self {
        let r = MergerRegistry {
            mergers: RwLock::new(Vec::new()),
            methods: RwLock::new(Vec::new()),
        };
        for (name, class, ty, m) in builtin::builtins() {
            r.insert(MergerEntry {
                name: name.to_owned(),
                class: class.to_owned(),
                java_type: ty.to_owned(),
                merger: m,
            });
        }
        for (ty, name, m) in method::builtins() {
            r.register_method_merger(ty, name, m);
        }
        r
    }

    /// The process-wide registry used when a cluster is built without one.
    pub fn global() -> Arc<MergerRegistry> {
        static GLOBAL: OnceLock<Arc<MergerRegistry>> = OnceLock::new();
        GLOBAL
            .get_or_init(|| Arc::new(MergerRegistry::new()))
            .clone()
    }

    fn insert(&self, e: MergerEntry) {
        let mut v = self.mergers.write();
        v.retain(|x| x.name != e.name);
        let at = v.partition_point(|x| x.name < e.name);
        v.insert(at, e);
    }

    /// Registers a user merger as extension `name` for the Java type `java_type` (its type
    /// argument, e.g. `java.lang.Integer`). Replaces an extension of the same name.
    pub fn register_merger(&self, name: &str, java_type: &str, merger: Arc<dyn Merger>) {
        self.insert(MergerEntry {
            name: name.to_owned(),
            class: name.to_owned(),
            java_type: java_class(java_type),
            merger,
        });
    }

    /// Registers the method `method` of class `java_type` for `merger=.method`. Replaces a
    /// previous registration of the same pair.
    pub fn register_method_merger(
        &self,
        java_type: &str,
        method: &str,
        merger: Arc<dyn MethodMerger>,
    ) {
        let java_type = java_class(java_type);
        let mut v = self.methods.write();
        v.retain(|e| !(e.java_type == java_type && e.method == method));
        v.push(MethodEntry {
            java_type,
            method: method.to_owned(),
            merger,
        });
    }

    /// The extension names, sorted.
    pub fn extension_names(&self) -> Vec<String> {
        self.mergers.read().iter().map(|e| e.name.clone()).collect()
    }

    /// The extension named `name` (`merger=<name>`); Java's `IllegalStateException` "No such
    /// extension ..." when unknown.
    pub fn by_name(&self, name: &str) -> Result<MergerEntry, RpcError> {
        self.mergers
            .read()
            .iter()
            .find(|e| e.name == name)
            .cloned()
            .ok_or_else(|| {
                java_error(
                    "java.lang.IllegalStateException",
                    format!("No such extension org.apache.dubbo.rpc.cluster.Merger by name {name}"),
                )
            })
    }

    /// `MergerFactory.getMerger(returnType)`: the first extension (by name) whose type is
    /// exactly `return_type`, else `ArrayMerger` for an array type, else `None`.
    /// `None` as the type is Java's `IllegalArgumentException("returnType is null")`.
    pub fn merger_for_type(
        &self,
        return_type: Option<&str>,
    ) -> Result<Option<MergerEntry>, RpcError> {
        let Some(rt) = return_type else {
            return Err(java_error(
                "java.lang.IllegalArgumentException",
                "returnType is null",
            ));
        };
        let ty = java_class(rt);
        if let Some(e) = self.mergers.read().iter().find(|e| e.java_type == ty) {
            return Ok(Some(e.clone()));
        }
        if ty.ends_with("[]") {
            return Ok(Some(MergerEntry {
                name: String::new(),
                class: "ArrayMerger".to_owned(),
                java_type: ty,
                merger: Arc::new(builtin::ArrayMerger),
            }));
        }
        Ok(None)
    }

    /// The method merger for `merger=.method` on `return_type`; `None` when the class has no
    /// such method taking exactly its own type.
    pub fn method_merger(&self, return_type: &str, method: &str) -> Option<Arc<dyn MethodMerger>> {
        let ty = java_class(return_type);
        self.methods
            .read()
            .iter()
            .find(|e| e.java_type == ty && e.method == method)
            .map(|e| e.merger.clone())
    }
}

/// The Java type to merge by when the invocation declares none: its value's shape (object →
/// `java.util.Map`, array → `java.util.List`, string → `java.lang.String`).
pub fn type_of_value(v: &Value) -> Option<&'static str> {
    match v {
        Value::Object(_) => Some("java.util.Map"),
        Value::Array(_) => Some("java.util.List"),
        Value::String(_) => Some("java.lang.String"),
        _ => None,
    }
}

const JAVA_LANG: &[&str] = &[
    "String",
    "Integer",
    "Long",
    "Short",
    "Byte",
    "Character",
    "Boolean",
    "Double",
    "Float",
    "Object",
    "Number",
    "Void",
    "Iterable",
    "CharSequence",
];
const JAVA_UTIL: &[&str] = &[
    "List",
    "Set",
    "Map",
    "Collection",
    "ArrayList",
    "LinkedList",
    "HashMap",
    "HashSet",
    "LinkedHashSet",
    "LinkedHashMap",
    "TreeSet",
    "TreeMap",
    "SortedSet",
    "SortedMap",
    "Queue",
    "Deque",
    "NavigableSet",
    "NavigableMap",
];

/// A Java type name in the form classes are compared in: whitespace and generics dropped,
/// `java.lang`/`java.util` simple names completed, arrays as `<component>[]`
/// (`List<String>` → `java.util.List`, `String[]` → `java.lang.String[]`, `long[]` stays).
pub fn java_class(name: &str) -> String {
    let name: String = name.chars().filter(|c| !c.is_whitespace()).collect();
    let mut dims = 0;
    let mut base = name.as_str();
    while let Some(b) = base.strip_suffix("[]") {
        dims += 1;
        base = b;
    }
    let raw = match base.find('<') {
        Some(i) => &base[..i],
        None => base,
    };
    let mut out = if JAVA_LANG.contains(&raw) {
        format!("java.lang.{raw}")
    } else if JAVA_UTIL.contains(&raw) {
        format!("java.util.{raw}")
    } else {
        raw.to_owned()
    };
    for _ in 0..dims {
        out.push_str("[]");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn java_class_normalizes() {
        assert_eq!(java_class("java.util.List<String>"), "java.util.List");
        assert_eq!(java_class("List"), "java.util.List");
        assert_eq!(java_class("String[]"), "java.lang.String[]");
        assert_eq!(java_class("long[]"), "long[]");
        assert_eq!(java_class("Map<String, List<Integer>>"), "java.util.Map");
        assert_eq!(java_class("com.foo.Menu"), "com.foo.Menu");
    }

    #[test]
    fn factory_rules() {
        let r = MergerRegistry::new();
        let class = |t: &str| r.merger_for_type(Some(t)).ok().flatten().map(|e| e.class);
        assert_eq!(
            class("java.util.List<String>").as_deref(),
            Some("ListMerger")
        );
        assert_eq!(class("java.util.ArrayList"), None);
        assert_eq!(class("java.util.Collection"), None);
        assert_eq!(class("long[]").as_deref(), Some("LongArrayMerger"));
        assert_eq!(class("Long[]").as_deref(), Some("ArrayMerger"));
        assert_eq!(class("int"), None);
        assert!(r.merger_for_type(None).is_err());
        #[derive(Debug)]
        struct First;
        impl Merger for First {
            fn merge(&self, items: &[Value]) -> Result<Value, RpcError> {
                Ok(items.first().cloned().unwrap_or(Value::Null))
            }
        }
        r.register_merger("intsum", "Integer", Arc::new(First));
        r.register_merger("intany", "java.lang.Integer", Arc::new(First));
        assert_eq!(class("java.lang.Integer").as_deref(), Some("intany"));
        assert!(r.by_name("nosuch").is_err());
        assert_eq!(
            r.by_name("list").map(|e| e.class).ok().as_deref(),
            Some("ListMerger")
        );
    }
}
