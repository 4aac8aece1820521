//! A stack that keeps its first `N` elements inline: the decoder's reference and active-value
//! tables, which hold a handful of entries for a typical body, cost no allocation then.

/// A `Vec`-like stack of `Copy` values; the first `N` live inline, the rest spill to the heap.
#[derive(Debug, Clone)]
pub(crate) struct SmallStack<T: Copy + Default, const N: usize> {
    inline: [T; N],
    len: usize,
    spill: Vec<T>,
}

impl<T: Copy + Default, const N: usize> SmallStack<T, N> {
    /// An empty stack (no allocation).
    pub(crate) fn new() -> Self {
        SmallStack {
            inline: [T::default(); N],
            len: 0,
            spill: Vec::new(),
        }
    }

    /// Number of elements.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Appends `v`.
    pub(crate) fn push(&mut self, v: T) {
        if self.len < N {
            self.inline[self.len] = v;
        } else {
            self.spill.push(v);
        }
        self.len += 1;
    }

    /// Removes the last element.
    pub(crate) fn pop(&mut self) -> Option<T> {
        if self.len == 0 {
            return None;
        }
        self.len -= 1;
        if self.len < N {
            Some(self.inline[self.len])
        } else {
            self.spill.pop()
        }
    }

    /// Removes every element (the spill keeps its capacity).
    pub(crate) fn clear(&mut self) {
        self.len = 0;
        self.spill.clear();
    }

    /// The element at `i`.
    pub(crate) fn get(&self, i: usize) -> Option<T> {
        if i >= self.len {
            None
        } else if i < N {
            Some(self.inline[i])
        } else {
            self.spill.get(i - N).copied()
        }
    }

    /// The elements from the last to the first.
    pub(crate) fn iter_rev(&self) -> impl Iterator<Item = T> + '_ {
        (0..self.len).rev().filter_map(move |i| self.get(i))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::SmallStack;

    #[test]
    fn behaves_like_a_vec_across_the_inline_boundary() {
        let mut s: SmallStack<u32, 2> = SmallStack::new();
        let mut v = Vec::new();
        for i in 0..5 {
            s.push(i);
            v.push(i);
            assert_eq!(s.len(), v.len());
        }
        assert_eq!(s.iter_rev().collect::<Vec<_>>(), vec![4, 3, 2, 1, 0]);
        assert_eq!((s.get(1), s.get(3), s.get(5)), (Some(1), Some(3), None));
        for _ in 0..6 {
            assert_eq!(s.pop(), v.pop());
        }
        s.push(9);
        s.clear();
        assert_eq!((s.len(), s.pop()), (0, None));
    }
}
