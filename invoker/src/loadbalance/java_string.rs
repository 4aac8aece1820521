//! Java's `String.valueOf(Object)` for call arguments carried as JSON (the consistent-hash
//! key is built from it).

use std::io::{self, Write};

use serde_json::Value;

/// Writes Java's `String.valueOf(arg)` of a JSON argument to `out`, without allocating for
/// scalars:
///
/// - string → itself; `null` → `null`; booleans → `true`/`false`;
/// - integers → decimal; other numbers → `Double.toString` (`1.0`, `0.001`, `1.0E7`,
///   `1.5E-5`, shortest round-trip digits as in JDK 19+);
/// - arrays → a `java.util.List`'s `[a, b]` (a Java array argument prints an identity hash,
///   which nothing can reproduce);
/// - objects → compact JSON (Java prints a map as `{k=v}` in hash order).
pub fn write_java_string_value(out: &mut impl Write, v: &Value) -> io::Result<()> {
    match v {
        Value::String(s) => out.write_all(s.as_bytes()),
        Value::Null => out.write_all(b"null"),
        Value::Bool(b) => out.write_all(if *b { b"true" } else { b"false" }),
        Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                write!(out, "{i}")
            } else if let Some(u) = n.as_u64() {
                write!(out, "{u}")
            } else {
                write_java_double(out, n.as_f64().unwrap_or(f64::NAN))
            }
        }
        Value::Array(items) => {
            // A JSON array is a `java.util.List` (AbstractCollection.toString).
            out.write_all(b"[")?;
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.write_all(b", ")?;
                }
                write_java_string_value(out, item)?;
            }
            out.write_all(b"]")
        }
        Value::Object(_) => serde_json::to_writer(out, v).map_err(io::Error::other),
    }
}

/// `String.valueOf(arg)` as an owned string (for tools and tests; the balancer itself hashes
/// without building it).
pub fn java_string_value(v: &Value) -> String {
    let mut buf = Vec::new();
    // Writing to a Vec cannot fail.
    let _ = write_java_string_value(&mut buf, v);
    String::from_utf8(buf).unwrap_or_default()
}

/// A small stack buffer for number formatting.
struct StackBuf {
    buf: [u8; 64],
    len: usize,
}

impl Write for StackBuf {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        let end = self.len + data.len();
        if end > self.buf.len() {
            return Err(io::Error::other("number too long"));
        }
        self.buf[self.len..end].copy_from_slice(data);
        self.len = end;
        Ok(data.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Java's `Double.toString(d)`.
fn write_java_double(out: &mut impl Write, d: f64) -> io::Result<()> {
    if d.is_nan() {
        return out.write_all(b"NaN");
    }
    if d.is_infinite() {
        return out.write_all(if d > 0.0 { b"Infinity" } else { b"-Infinity" });
    }
    if d == 0.0 {
        return out.write_all(if d.is_sign_negative() {
            b"-0.0"
        } else {
            b"0.0"
        });
    }
    let a = d.abs();
    let mut b = StackBuf {
        buf: [0; 64],
        len: 0,
    };
    if (1e-3..1e7).contains(&a) {
        write!(b, "{d}")?;
        let s = &b.buf[..b.len];
        out.write_all(s)?;
        if !s.contains(&b'.') {
            out.write_all(b".0")?;
        }
        return Ok(());
    }
    write!(b, "{d:e}")?;
    let s = &b.buf[..b.len];
    let e = s.iter().position(|&c| c == b'e').unwrap_or(s.len());
    let (mantissa, exp) = (&s[..e], s.get(e + 1..).unwrap_or(b"0"));
    out.write_all(mantissa)?;
    if !mantissa.contains(&b'.') {
        out.write_all(b".0")?;
    }
    out.write_all(b"E")?;
    out.write_all(exp)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn java_rendering() {
        let cases = [
            (json!("abc"), "abc"),
            (json!(null), "null"),
            (json!(true), "true"),
            (json!(42), "42"),
            (json!(-7), "-7"),
            (json!(u64::MAX), "18446744073709551615"),
            (json!(1.0), "1.0"),
            (json!(0.5), "0.5"),
            (json!(123.456), "123.456"),
            (json!(0.001), "0.001"),
            (json!(0.0001), "1.0E-4"),
            (json!(1.5e-5), "1.5E-5"),
            (json!(1e7), "1.0E7"),
            (json!(12345678.9), "1.23456789E7"),
            (json!(-2.5), "-2.5"),
            (json!([1, "a"]), "[1, a]"),
            (json!([]), "[]"),
            (json!([null, [2.5, "x"]]), "[null, [2.5, x]]"),
        ];
        for (v, want) in cases {
            assert_eq!(java_string_value(&v), want, "{v}");
        }
    }
}
