//! Decoder bounds.

/// Bounds the decoder enforces so that hostile input costs bounded time and memory.
///
/// - `max_depth` caps the nesting of lists, maps and objects (the decoder recurses per level);
/// - `max_len` caps every single length (string UTF-16 units, binary bytes, list/map elements)
///   and also the bytes a [`Decoder`](crate::Decoder) may re-read to expand shared references
///   (`Q`) into copies, so a small input cannot expand exponentially;
/// - the **memory budget** caps everything one decoder allocates for the values it returns:
///   value slots, string and binary bytes, the class-definition and type tables, and the JSON
///   form of what [`Decoder::read_json`](crate::Decoder::read_json) converts. It is
///   `max(min_memory, memory_per_byte × input length)`, so a body of a few bytes that defines
///   one long name and then refers to it a million times is refused once its values would
///   take more than a small multiple of its size, whatever shape it has.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Maximum nesting of lists, maps and objects.
    pub max_depth: usize,
    /// Maximum length of one string/binary/list/map, and of reference expansion (see above).
    pub max_len: usize,
    /// Bytes of memory the decoded values may take per byte of input.
    pub memory_per_byte: usize,
    /// Bytes of memory the decoded values may take whatever the input size (the budget of
    /// small inputs).
    pub min_memory: usize,
}

impl Limits {
    /// The default bounds: depth 256, lengths 8 MiB (Dubbo's default payload limit), and a
    /// memory budget of 16 bytes per input byte, at least 32 MiB (an 8 MiB body may take
    /// 128 MiB as values and JSON; typical Java objects take 5-10 bytes per input byte as
    /// values and about as much again as JSON).
    pub const DEFAULT: Limits = Limits {
        max_depth: 256,
        max_len: 8 * 1024 * 1024,
        memory_per_byte: 16,
        min_memory: 32 * 1024 * 1024,
    };

    /// The memory budget of a decoder over `input_len` bytes.
    pub fn memory_budget(&self, input_len: usize) -> usize {
        self.min_memory
            .max(self.memory_per_byte.saturating_mul(input_len))
    }
}

impl Default for Limits {
    fn default() -> Self {
        Limits::DEFAULT
    }
}

#[cfg(test)]
mod tests {
    use super::Limits;

    #[test]
    fn budget_grows_with_the_input_above_the_floor() {
        let l = Limits::DEFAULT;
        assert_eq!(l.memory_budget(0), 32 << 20);
        assert_eq!(l.memory_budget(1 << 20), 32 << 20);
        assert_eq!(l.memory_budget(8 << 20), 128 << 20);
        assert_eq!(
            Limits {
                memory_per_byte: usize::MAX,
                ..l
            }
            .memory_budget(2),
            usize::MAX
        );
    }
}
