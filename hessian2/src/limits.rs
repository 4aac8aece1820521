//! Decoder bounds.

/// Bounds the decoder enforces so that hostile input costs bounded time and memory.
///
/// `max_len` caps every single length (string UTF-16 units, binary bytes, list/map elements)
/// and also the total number of values a [`Decoder`](crate::Decoder) may create by expanding
/// shared references (`Q`) into copies, so a small input cannot expand exponentially.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Maximum nesting of lists, maps and objects.
    pub max_depth: usize,
    /// Maximum length of one string/binary/list/map, and of reference expansion (see above).
    pub max_len: usize,
}

impl Limits {
    /// The default bounds: depth 256, lengths 8 MiB (Dubbo's default payload limit).
    pub const DEFAULT: Limits = Limits {
        max_depth: 256,
        max_len: 8 * 1024 * 1024,
    };
}

impl Default for Limits {
    fn default() -> Self {
        Limits::DEFAULT
    }
}
