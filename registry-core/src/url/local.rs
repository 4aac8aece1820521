//! The part of a URL that is not shared with other providers: the host and the volatile
//! parameters (`ipv6`, `pid`, `timestamp`), kept in one inline buffer so that a parsed URL costs
//! one allocation besides its `Arc`.

/// Parameter keys whose values differ between processes of one service; they are kept out of
/// the shared table. Sorted.
pub(crate) const VOLATILE_KEYS: [&str; 3] = ["ipv6", "pid", "timestamp"];

/// Index of `key` in [`VOLATILE_KEYS`].
pub(crate) fn volatile_index(key: &str) -> Option<usize> {
    // A `match` compiles to a length switch plus one comparison.
    match key {
        "ipv6" => Some(0),
        "pid" => Some(1),
        "timestamp" => Some(2),
        _ => None,
    }
}

/// Slot of the host; volatile value `i` is slot `i + 1`.
const HOST: usize = 0;
const SLOTS: usize = 1 + VOLATILE_KEYS.len();
/// `present` bits of the volatile slots.
const VOLATILE_BITS: u8 = 0b1110;

/// Host and volatile values in a single buffer: slot `i` is `text[ends[i-1]..ends[i]]` when bit
/// `i` of `present` is set.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Local {
    text: Box<str>,
    ends: [u32; SLOTS],
    present: u8,
}

impl Local {
    /// The buffer for `host` and the volatile values (in [`VOLATILE_KEYS`] order).
    pub(crate) fn new(host: Option<&str>, volatile: [Option<&str>; 3]) -> Self {
        let slots = [host, volatile[0], volatile[1], volatile[2]];
        let len = slots.iter().flatten().map(|s| s.len()).sum();
        let mut text = String::with_capacity(len);
        let mut l = Local::default();
        for (i, s) in slots.iter().enumerate() {
            if let Some(s) = s {
                text.push_str(s);
                l.present |= 1 << i;
            }
            l.ends[i] = u32::try_from(text.len()).unwrap_or(u32::MAX);
        }
        l.text = text.into_boxed_str();
        l
    }

    /// The same buffer with another host.
    pub(crate) fn with_host(&self, host: Option<&str>) -> Self {
        Local::new(host, [0, 1, 2].map(|i| self.volatile(i)))
    }

    fn slot(&self, i: usize) -> Option<&str> {
        if self.present & (1 << i) == 0 {
            return None;
        }
        let start = match i.checked_sub(1) {
            Some(p) => *self.ends.get(p)? as usize,
            None => 0,
        };
        self.text.get(start..*self.ends.get(i)? as usize)
    }

    /// The host.
    pub(crate) fn host(&self) -> Option<&str> {
        self.slot(HOST)
    }

    /// The value of `VOLATILE_KEYS[i]`.
    pub(crate) fn volatile(&self, i: usize) -> Option<&str> {
        self.slot(i + 1)
    }

    /// The value of a volatile key.
    pub(crate) fn get(&self, key: &str) -> Option<&str> {
        volatile_index(key).and_then(|i| self.volatile(i))
    }

    /// Number of volatile parameters present.
    pub(crate) fn volatile_len(&self) -> usize {
        (self.present & VOLATILE_BITS).count_ones() as usize
    }

    /// Same volatile keys, same values except that the `timestamp` value is ignored (the host is
    /// not compared).
    pub(crate) fn volatile_eq_ignoring_timestamp(&self, o: &Local) -> bool {
        self.present & VOLATILE_BITS == o.present & VOLATILE_BITS
            && (0..VOLATILE_KEYS.len())
                .all(|i| VOLATILE_KEYS[i] == "timestamp" || self.volatile(i) == o.volatile(i))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_round_trip() {
        let l = Local::new(Some("10.0.0.1"), [None, Some("42"), Some("")]);
        assert_eq!(l.host(), Some("10.0.0.1"));
        assert_eq!(
            (l.get("ipv6"), l.get("pid"), l.get("timestamp")),
            (None, Some("42"), Some(""))
        );
        assert_eq!(l.volatile_len(), 2);
        let m = l.with_host(None);
        assert_eq!((m.host(), m.get("pid")), (None, Some("42")));
        assert!(l.volatile_eq_ignoring_timestamp(&m));
        let n = Local::new(None, [None, Some("43"), Some("")]);
        assert!(!m.volatile_eq_ignoring_timestamp(&n));
    }
}
