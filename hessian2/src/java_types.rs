//! Java type names: `--types` entries to `Class.getName()` form, JVM descriptors, and the
//! Hessian type names Java uses for arrays.
//!
//! Dubbo2 sends the parameter types of a call as one concatenated JVM descriptor
//! (`Ljava/lang/String;ILjava/util/List;`); Triple's wrapper sends each type in
//! `Class.getName()` form (`java.lang.String`, `int`, `[Ljava.lang.String;`). Both start from the
//! user's `--types` entries, which may be written the Java-source way (`String`, `int[]`,
//! `java.util.List`) or already in either JVM form.

/// The JVM descriptor letter of a primitive type name, if it is one.
fn primitive_code(t: &str) -> Option<char> {
    Some(match t {
        "boolean" => 'Z',
        "byte" => 'B',
        "char" => 'C',
        "short" => 'S',
        "int" => 'I',
        "long" => 'J',
        "float" => 'F',
        "double" => 'D',
        "void" => 'V',
        _ => return None,
    })
}

/// The primitive type name of a JVM descriptor letter.
fn primitive_name(c: u8) -> Option<&'static str> {
    Some(match c {
        b'Z' => "boolean",
        b'B' => "byte",
        b'C' => "char",
        b'S' => "short",
        b'I' => "int",
        b'J' => "long",
        b'F' => "float",
        b'D' => "double",
        b'V' => "void",
        _ => return None,
    })
}

/// Expands the simple names of common `java.lang`/`java.util` types (`String` →
/// `java.lang.String`, `List` → `java.util.List`, ...); anything else is returned unchanged.
fn expand_short(t: &str) -> &str {
    match t {
        "String" => "java.lang.String",
        "Object" => "java.lang.Object",
        "Integer" => "java.lang.Integer",
        "Long" => "java.lang.Long",
        "Double" => "java.lang.Double",
        "Float" => "java.lang.Float",
        "Short" => "java.lang.Short",
        "Byte" => "java.lang.Byte",
        "Boolean" => "java.lang.Boolean",
        "Character" => "java.lang.Character",
        "Number" => "java.lang.Number",
        "List" => "java.util.List",
        "Map" => "java.util.Map",
        "Set" => "java.util.Set",
        "Collection" => "java.util.Collection",
        "Date" => "java.util.Date",
        "BigDecimal" => "java.math.BigDecimal",
        "BigInteger" => "java.math.BigInteger",
        _ => t,
    }
}

/// Java's `Class.getName()` form of a `--types` entry.
///
/// `int` → `int`; `String` → `java.lang.String`; `java.util.List` → `java.util.List`;
/// `int[]` → `[I`; `String[][]` → `[[Ljava.lang.String;`; forms already in `getName()` or
/// descriptor style (`[I`, `[Ljava/lang/String;`) are normalised to `getName()` style.
pub fn java_class_name(t: &str) -> String {
    let t = t.trim();
    if t.starts_with('[') {
        return t.replace('/', ".");
    }
    let mut base = t;
    let mut dims = 0;
    while let Some(b) = base.strip_suffix("[]") {
        base = b.trim_end();
        dims += 1;
    }
    let base = expand_short(base);
    if dims == 0 {
        return base.replace('/', ".");
    }
    let mut out = String::with_capacity(dims + base.len() + 2);
    for _ in 0..dims {
        out.push('[');
    }
    match primitive_code(base) {
        Some(c) => out.push(c),
        None => {
            out.push('L');
            out.push_str(&base.replace('/', "."));
            out.push(';');
        }
    }
    out
}

/// Appends the JVM descriptor of one type (any form accepted by [`java_class_name`]).
fn push_descriptor(out: &mut String, t: &str) {
    let name = java_class_name(t);
    if name.starts_with('[') {
        out.push_str(&name.replace('.', "/"));
    } else if let Some(c) = primitive_code(&name) {
        out.push(c);
    } else {
        out.push('L');
        out.push_str(&name.replace('.', "/"));
        out.push(';');
    }
}

/// The concatenated JVM descriptor of a parameter list, as Dubbo2 sends it in the request
/// body: `["String", "int", "java.util.List"]` → `Ljava/lang/String;ILjava/util/List;`.
/// No types give the empty string.
pub fn java_descriptor(types: &[&str]) -> String {
    let mut out = String::new();
    for t in types {
        push_descriptor(&mut out, t);
    }
    out
}

/// The type name Java Hessian writes for a list holding an array of the given Java type
/// (`Class.getName()` form, see [`java_class_name`]), or `None` if it is not an array:
/// `[I` → `[int`, `[Ljava.lang.String;` → `[string`, `[Ljava.lang.Object;` → `[object`,
/// `[Lcom.example.User;` → `[com.example.User`, `[[I` → `[[int`.
pub fn hessian_array_type(class_name: &str) -> Option<String> {
    let rest = class_name.strip_prefix('[')?;
    let mut out = String::from("[");
    let comp = rest.as_bytes();
    match comp.first()? {
        b'[' => out.push_str(&hessian_array_type(rest)?),
        b'L' => {
            let name = rest.get(1..rest.len().checked_sub(1)?)?;
            if !rest.ends_with(';') {
                return None;
            }
            out.push_str(match name {
                "java.lang.String" => "string",
                "java.lang.Object" => "object",
                "java.util.Date" => "date",
                other => other,
            });
        }
        &c if comp.len() == 1 => out.push_str(primitive_name(c)?),
        _ => return None,
    }
    Some(out)
}

/// True for the Java primitive type names (`int`, `long`, ...).
pub fn is_primitive(t: &str) -> bool {
    primitive_code(t).is_some()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn class_names() {
        assert_eq!(java_class_name("int"), "int");
        assert_eq!(java_class_name("String"), "java.lang.String");
        assert_eq!(java_class_name("java.util.List"), "java.util.List");
        assert_eq!(java_class_name("int[]"), "[I");
        assert_eq!(java_class_name("String[][]"), "[[Ljava.lang.String;");
        assert_eq!(java_class_name("com.foo.User[]"), "[Lcom.foo.User;");
        assert_eq!(
            java_class_name("[Ljava/lang/String;"),
            "[Ljava.lang.String;"
        );
        assert_eq!(java_class_name(" long "), "long");
    }

    #[test]
    fn descriptors() {
        assert_eq!(
            java_descriptor(&["java.lang.String", "int", "java.util.List"]),
            "Ljava/lang/String;ILjava/util/List;"
        );
        assert_eq!(java_descriptor(&[]), "");
        assert_eq!(
            java_descriptor(&[
                "java.lang.String",
                "[Ljava.lang.String;",
                "[Ljava.lang.Object;"
            ]),
            "Ljava/lang/String;[Ljava/lang/String;[Ljava/lang/Object;"
        );
        assert_eq!(
            java_descriptor(&["byte[]", "boolean", "double", "long"]),
            "[BZDJ"
        );
        assert_eq!(java_descriptor(&["Object"]), "Ljava/lang/Object;");
    }

    #[test]
    fn array_types() {
        assert_eq!(hessian_array_type("[I").as_deref(), Some("[int"));
        assert_eq!(
            hessian_array_type("[Ljava.lang.String;").as_deref(),
            Some("[string")
        );
        assert_eq!(
            hessian_array_type("[Ljava.lang.Object;").as_deref(),
            Some("[object")
        );
        assert_eq!(
            hessian_array_type("[Lcom.x.U;").as_deref(),
            Some("[com.x.U")
        );
        assert_eq!(hessian_array_type("[[J").as_deref(), Some("[[long"));
        assert_eq!(hessian_array_type("java.util.List"), None);
        assert_eq!(hessian_array_type("[Lbroken"), None);
        assert_eq!(hessian_array_type("["), None);
    }
}
