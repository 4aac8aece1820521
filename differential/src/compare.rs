//! Comparing answers: JSON equality, where an exception on both sides is equal whatever its
//! class and message (Java's exception types have no counterpart in our error enums; which
//! inputs fail is what must agree).

use serde_json::Value;

/// The JSON form of "this failed": `{"error": {"class": .., "message": ..}}`.
pub fn error(class: &str, message: impl std::fmt::Display) -> Value {
    serde_json::json!({"error": {"class": class, "message": message.to_string()}})
}

/// Whether `v` is an error answer.
pub fn is_error(v: &Value) -> bool {
    matches!(v, Value::Object(m) if m.len() == 1 && m.contains_key("error"))
}

/// Whether Java's answer and ours agree.
pub fn same(java: &Value, rust: &Value) -> bool {
    if is_error(java) && is_error(rust) {
        return true;
    }
    match (java, rust) {
        (Value::Object(a), Value::Object(b)) => {
            a.len() == b.len() && a.iter().all(|(k, x)| b.get(k).is_some_and(|y| same(x, y)))
        }
        (Value::Array(a), Value::Array(b)) => {
            a.len() == b.len() && a.iter().zip(b).all(|(x, y)| same(x, y))
        }
        (Value::Number(a), Value::Number(b)) => match (a.as_i64(), b.as_i64()) {
            (Some(x), Some(y)) => x == y,
            _ => a.to_string() == b.to_string() || within_one_ulp(a.as_f64(), b.as_f64()),
        },
        _ => java == rust,
    }
}

/// Doubles printed as decimal text by Java's JSON writer can be one unit in the last place
/// away from the value (JDK 17's and fastjson2's printing is not always the shortest
/// round-trip form): equal within one ulp. Exact comparisons use bit patterns instead (Hessian).
fn within_one_ulp(a: Option<f64>, b: Option<f64>) -> bool {
    let (Some(a), Some(b)) = (a, b) else {
        return false;
    };
    a == b
        || (a.is_finite()
            && b.is_finite()
            && a.signum() == b.signum()
            && a.to_bits().abs_diff(b.to_bits()) <= 1)
}

/// The first path where the two answers differ, for reports.
pub fn first_difference(java: &Value, rust: &Value) -> String {
    fn walk(path: &mut String, java: &Value, rust: &Value) -> Option<String> {
        if same(java, rust) {
            return None;
        }
        match (java, rust) {
            (Value::Object(a), Value::Object(b)) if !is_error(java) && !is_error(rust) => {
                for (k, x) in a {
                    let Some(y) = b.get(k) else {
                        return Some(format!("{path}.{k}: java {x}, rust has none"));
                    };
                    let len = path.len();
                    path.push('.');
                    path.push_str(k);
                    if let Some(d) = walk(path, x, y) {
                        return Some(d);
                    }
                    path.truncate(len);
                }
                b.iter()
                    .find(|(k, _)| !a.contains_key(*k))
                    .map(|(k, v)| format!("{path}.{k}: java has none, rust {v}"))
            }
            (Value::Array(a), Value::Array(b)) if a.len() == b.len() => {
                for (i, (x, y)) in a.iter().zip(b).enumerate() {
                    let len = path.len();
                    path.push_str(&format!("[{i}]"));
                    if let Some(d) = walk(path, x, y) {
                        return Some(d);
                    }
                    path.truncate(len);
                }
                None
            }
            _ => Some(format!(
                "{}: java {java}, rust {rust}",
                if path.is_empty() { "." } else { path }
            )),
        }
    }
    walk(&mut String::new(), java, rust).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn errors_are_equal_whatever_their_text() {
        assert!(same(&error("java.lang.X", "a"), &error("rust", "b")));
        assert!(!same(&error("java.lang.X", "a"), &json!(1)));
    }

    #[test]
    fn numbers_compare_by_value_and_doubles_within_one_ulp() {
        assert!(same(&json!(1), &json!(1)));
        assert!(same(&json!(1.0), &json!(1.0)));
        assert!(!same(&json!(1), &json!(2)));
        let a = 1.0000000200408772e20f64;
        let b = f64::from_bits(a.to_bits() + 1);
        assert!(same(&json!(a), &json!(b)));
        let c = f64::from_bits(a.to_bits() + 2);
        assert!(!same(&json!(a), &json!(c)));
    }

    #[test]
    fn first_difference_names_the_path() {
        let j = json!({"a": [1, {"b": "x"}], "c": 1});
        let r = json!({"a": [1, {"b": "y"}], "c": 1});
        assert_eq!(first_difference(&j, &r), ".a[1].b: java \"x\", rust \"y\"");
        assert_eq!(
            first_difference(&json!({"a": 1}), &json!({})),
            ".a: java 1, rust has none"
        );
        assert_eq!(first_difference(&j, &j), "");
    }
}
