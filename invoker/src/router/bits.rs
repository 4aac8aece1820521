//! [`Bits`]: a fixed-size bit set over provider indices (which providers a compiled
//! condition or tag group matches).

/// One bit per provider index.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct Bits {
    words: Box<[u64]>,
}

impl Bits {
    /// The set of the indices in `0..n` for which `f` holds.
    pub(crate) fn from_fn(n: usize, mut f: impl FnMut(usize) -> bool) -> Bits {
        let mut words = vec![0u64; n.div_ceil(64)];
        for i in 0..n {
            if f(i) {
                if let Some(w) = words.get_mut(i / 64) {
                    *w |= 1 << (i % 64);
                }
            }
        }
        Bits {
            words: words.into_boxed_slice(),
        }
    }

    /// True when index `i` is in the set (false outside the range).
    #[inline]
    pub(crate) fn get(&self, i: u32) -> bool {
        let i = i as usize;
        self.words
            .get(i / 64)
            .is_some_and(|w| w & (1 << (i % 64)) != 0)
    }
}

#[cfg(test)]
mod tests {
    use super::Bits;

    #[test]
    fn from_fn_and_get() {
        let b = Bits::from_fn(130, |i| i % 3 == 0);
        for i in 0..140u32 {
            assert_eq!(b.get(i), i < 130 && i % 3 == 0, "{i}");
        }
        assert!(!Bits::default().get(0));
    }
}
