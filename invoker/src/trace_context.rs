//! W3C Trace Context (`traceparent`, `tracestate`) as Dubbo carries it: Java 3.3's
//! `dubbo-tracing` (micrometer over OpenTelemetry, `W3CTraceContextPropagator`) and
//! dubbo-go's otel filter put both into the call's attachments under these lower-case keys;
//! Dubbo2 sends them in the request's attachment map, Triple as HTTP/2 headers.
//!
//! [`TraceParent`] is the `traceparent` value: version `00`, a 16-byte trace id, the 8-byte id
//! of the caller's span, and the flags (`01` = sampled).

use std::fmt;

/// The attachment key of the trace parent.
pub const TRACEPARENT: &str = "traceparent";
/// The attachment key of the vendor trace state.
pub const TRACESTATE: &str = "tracestate";

/// A `traceparent` value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TraceParent {
    /// The trace id (never all zeros).
    pub trace_id: [u8; 16],
    /// The id of the span that makes the call (never all zeros).
    pub span_id: [u8; 8],
    /// Trace flags; bit 0 = sampled.
    pub flags: u8,
}

fn random_nonzero<const N: usize>() -> [u8; N] {
    loop {
        let mut b = [0u8; N];
        for chunk in b.chunks_mut(8) {
            let r = fastrand::u64(..).to_be_bytes();
            chunk.copy_from_slice(&r[..chunk.len()]);
        }
        if b.iter().any(|&x| x != 0) {
            return b;
        }
    }
}

fn hex_digit(c: u8) -> Option<u8> {
    match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        _ => None,
    }
}

fn parse_hex<const N: usize>(s: &str) -> Option<[u8; N]> {
    let b = s.as_bytes();
    if b.len() != 2 * N {
        return None;
    }
    let mut out = [0u8; N];
    for (i, o) in out.iter_mut().enumerate() {
        *o = hex_digit(b[2 * i])? << 4 | hex_digit(b[2 * i + 1])?;
    }
    Some(out)
}

fn write_hex(f: &mut fmt::Formatter<'_>, b: &[u8]) -> fmt::Result {
    for x in b {
        write!(f, "{x:02x}")?;
    }
    Ok(())
}

impl TraceParent {
    /// A new trace: random trace and span ids, `sampled` as asked.
    pub fn generate(sampled: bool) -> Self {
        TraceParent {
            trace_id: random_nonzero(),
            span_id: random_nonzero(),
            flags: u8::from(sampled),
        }
    }

    /// A span of the same trace made by this one (a new span id, the same flags).
    pub fn child(&self) -> Self {
        TraceParent {
            span_id: random_nonzero(),
            ..*self
        }
    }

    /// Parses a version-00 value (lower-case hex, as the specification requires); `None`
    /// for anything else, including all-zero ids.
    pub fn parse(s: &str) -> Option<Self> {
        let mut parts = s.trim().split('-');
        let (v, t, p, f) = (parts.next()?, parts.next()?, parts.next()?, parts.next()?);
        if v != "00" || parts.next().is_some() {
            return None;
        }
        let trace_id: [u8; 16] = parse_hex(t)?;
        let span_id: [u8; 8] = parse_hex(p)?;
        let [flags] = parse_hex::<1>(f)?;
        if trace_id == [0; 16] || span_id == [0; 8] {
            return None;
        }
        Some(TraceParent {
            trace_id,
            span_id,
            flags,
        })
    }

    /// True when the caller sampled the trace.
    pub fn is_sampled(&self) -> bool {
        self.flags & 1 == 1
    }

    /// The trace id as 32 lower-case hex digits (as Java's `TraceContext#traceId`).
    pub fn trace_id_hex(&self) -> String {
        HexId(&self.trace_id).to_string()
    }

    /// The span id as 16 lower-case hex digits.
    pub fn span_id_hex(&self) -> String {
        HexId(&self.span_id).to_string()
    }
}

struct HexId<'a>(&'a [u8]);

impl fmt::Display for HexId<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_hex(f, self.0)
    }
}

impl fmt::Display for TraceParent {
    /// `00-<trace id>-<span id>-<flags>`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("00-")?;
        write_hex(f, &self.trace_id)?;
        f.write_str("-")?;
        write_hex(f, &self.span_id)?;
        write!(f, "-{:02x}", self.flags)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_refuses_bad_values() {
        let t = TraceParent::generate(true);
        let s = t.to_string();
        assert_eq!(s.len(), 55);
        assert_eq!(TraceParent::parse(&s), Some(t));
        assert!(t.is_sampled());
        assert_eq!(&s[3..35], t.trace_id_hex());
        let c = t.child();
        assert_eq!(c.trace_id, t.trace_id);
        assert_ne!(c.span_id, t.span_id);
        let known = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
        let p = TraceParent::parse(known).unwrap();
        assert_eq!(p.to_string(), known);
        for bad in [
            "",
            "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-x",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-zz",
        ] {
            assert_eq!(TraceParent::parse(bad), None, "{bad}");
        }
    }
}
