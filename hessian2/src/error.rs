//! The crate's one error type.

/// Everything that can go wrong while reading or writing Hessian 2.0.
///
/// The `Display` form says what was wrong and, for decoding, at which byte offset of the
/// input. It never contains decoded values (they may be secrets such as tokens).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The input ended in the middle of a value.
    #[error("hessian2: input ends at offset {offset} inside {context}")]
    Eof {
        /// Offset of the end of the input.
        offset: usize,
        /// What was being read.
        context: &'static str,
    },
    /// A byte that cannot start the expected kind of value.
    #[error("hessian2: unexpected byte 0x{tag:02x} at offset {offset} (expected {expected})")]
    UnexpectedTag {
        /// The byte found.
        tag: u8,
        /// Its offset.
        offset: usize,
        /// What was expected there.
        expected: &'static str,
    },
    /// Structurally wrong data: bad UTF-8, a reference or class index out of range, a
    /// negative length, ...
    #[error("hessian2: invalid {context} at offset {offset}: {detail}")]
    Invalid {
        /// Offset of the offending value.
        offset: usize,
        /// What was being read.
        context: &'static str,
        /// What is wrong with it.
        detail: String,
    },
    /// Nesting deeper than [`Limits::max_depth`](crate::Limits::max_depth).
    #[error("hessian2: nesting deeper than {limit} at offset {offset}")]
    TooDeep {
        /// Offset where the limit was hit.
        offset: usize,
        /// The limit.
        limit: usize,
    },
    /// A length (string units, bytes, elements, expanded references) over
    /// [`Limits::max_len`](crate::Limits::max_len).
    #[error("hessian2: {context} of length {len} exceeds the limit {limit} at offset {offset}")]
    TooLong {
        /// Offset where the limit was hit.
        offset: usize,
        /// What was too long.
        context: &'static str,
        /// The length seen (or reached).
        len: usize,
        /// The limit.
        limit: usize,
    },
    /// The decoded values (and their JSON form) would take more memory than the decoder's
    /// budget ([`Limits::memory_budget`](crate::Limits::memory_budget)).
    #[error(
        "hessian2: decoding needs more than the memory budget of {limit} bytes for {input} bytes of input (at offset {offset})"
    )]
    OverBudget {
        /// Offset where the budget ran out.
        offset: usize,
        /// The input length the budget was computed from.
        input: usize,
        /// The budget.
        limit: usize,
    },
    /// A JSON value that cannot be sent as the requested Java type.
    #[error("hessian2: cannot send JSON {found} as Java type `{java_type}`: {detail}")]
    Json {
        /// The Java type asked for (or `inferred`).
        java_type: String,
        /// The kind of JSON value found (`string`, `number`, `object`, ...).
        found: &'static str,
        /// Why not.
        detail: String,
    },
}

impl Error {
    /// Always false: bad bytes or bad arguments do not get better by retrying.
    pub fn is_retryable(&self) -> bool {
        false
    }

    /// True when the input simply ended early (a truncated body).
    pub fn is_eof(&self) -> bool {
        matches!(self, Error::Eof { .. })
    }

    /// True when a [`Limits`](crate::Limits) bound was hit.
    pub fn is_limit(&self) -> bool {
        matches!(
            self,
            Error::TooDeep { .. } | Error::TooLong { .. } | Error::OverBudget { .. }
        )
    }
}
