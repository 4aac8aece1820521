//! Java parameter types for JSON arguments (protocol-neutral: Dubbo2 and Triple use it).
//!
//! Without explicit types an argument's type is inferred as the issue specifies: string →
//! `java.lang.String`, integer → `long`, other number → `double`, boolean → `boolean`, array →
//! `java.util.List`, object → its `"class"` or `java.util.Map`, null → `java.lang.Object`.

use std::borrow::Cow;

use serde_json::Value;

/// The inferred Java type of one JSON argument.
pub fn infer_java_type(v: &Value) -> Cow<'_, str> {
    match v {
        Value::Null => Cow::Borrowed("java.lang.Object"),
        Value::Bool(_) => Cow::Borrowed("boolean"),
        Value::Number(n) if n.is_i64() || n.is_u64() => Cow::Borrowed("long"),
        Value::Number(_) => Cow::Borrowed("double"),
        Value::String(_) => Cow::Borrowed("java.lang.String"),
        Value::Array(_) => Cow::Borrowed("java.util.List"),
        Value::Object(m) => match m.get("class") {
            Some(Value::String(c)) if !c.is_empty() => Cow::Borrowed(c.as_str()),
            _ => Cow::Borrowed("java.util.Map"),
        },
    }
}

/// The inferred types of all arguments.
pub fn infer_java_types(args: &[Value]) -> Vec<String> {
    args.iter()
        .map(|a| infer_java_type(a).into_owned())
        .collect()
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn inference_follows_the_issue() {
        let args = [
            json!("s"),
            json!(1),
            json!(1.5),
            json!(true),
            json!([1]),
            json!({"a": 1}),
            json!({"class": "com.x.User", "name": "u"}),
            json!(null),
        ];
        assert_eq!(
            infer_java_types(&args),
            [
                "java.lang.String",
                "long",
                "double",
                "boolean",
                "java.util.List",
                "java.util.Map",
                "com.x.User",
                "java.lang.Object"
            ]
        );
    }
}
