//! gRPC status codes, `grpc-message` percent-decoding and the HTTP-status mapping Java's
//! client applies to non-gRPC responses (`TriRpcStatus.httpStatusToGrpcCode`).

use std::borrow::Cow;

/// A gRPC status code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Code {
    /// 0
    Ok,
    /// 1
    Cancelled,
    /// 2
    Unknown,
    /// 3
    InvalidArgument,
    /// 4
    DeadlineExceeded,
    /// 5
    NotFound,
    /// 6
    AlreadyExists,
    /// 7
    PermissionDenied,
    /// 8
    ResourceExhausted,
    /// 9
    FailedPrecondition,
    /// 10
    Aborted,
    /// 11
    OutOfRange,
    /// 12
    Unimplemented,
    /// 13
    Internal,
    /// 14
    Unavailable,
    /// 15
    DataLoss,
    /// 16
    Unauthenticated,
}

const ALL: [Code; 17] = [
    Code::Ok,
    Code::Cancelled,
    Code::Unknown,
    Code::InvalidArgument,
    Code::DeadlineExceeded,
    Code::NotFound,
    Code::AlreadyExists,
    Code::PermissionDenied,
    Code::ResourceExhausted,
    Code::FailedPrecondition,
    Code::Aborted,
    Code::OutOfRange,
    Code::Unimplemented,
    Code::Internal,
    Code::Unavailable,
    Code::DataLoss,
    Code::Unauthenticated,
];

impl Code {
    /// The code for a number; values outside 0..=16 are `Unknown` (as gRPC specifies).
    pub fn from_u32(v: u32) -> Code {
        ALL.get(v as usize).copied().unwrap_or(Code::Unknown)
    }

    /// Parses the `grpc-status` header value; garbage is `Unknown`.
    pub fn from_header(v: &[u8]) -> Code {
        std::str::from_utf8(v)
            .ok()
            .and_then(|s| s.trim().parse::<u32>().ok())
            .map_or(Code::Unknown, Code::from_u32)
    }

    /// The numeric value.
    pub fn as_u32(self) -> u32 {
        ALL.iter().position(|c| *c == self).unwrap_or(2) as u32
    }

    /// The canonical upper-case name, e.g. `UNIMPLEMENTED`.
    pub fn name(self) -> &'static str {
        match self {
            Code::Ok => "OK",
            Code::Cancelled => "CANCELLED",
            Code::Unknown => "UNKNOWN",
            Code::InvalidArgument => "INVALID_ARGUMENT",
            Code::DeadlineExceeded => "DEADLINE_EXCEEDED",
            Code::NotFound => "NOT_FOUND",
            Code::AlreadyExists => "ALREADY_EXISTS",
            Code::PermissionDenied => "PERMISSION_DENIED",
            Code::ResourceExhausted => "RESOURCE_EXHAUSTED",
            Code::FailedPrecondition => "FAILED_PRECONDITION",
            Code::Aborted => "ABORTED",
            Code::OutOfRange => "OUT_OF_RANGE",
            Code::Unimplemented => "UNIMPLEMENTED",
            Code::Internal => "INTERNAL",
            Code::Unavailable => "UNAVAILABLE",
            Code::DataLoss => "DATA_LOSS",
            Code::Unauthenticated => "UNAUTHENTICATED",
        }
    }

    /// The code for an HTTP status of a response that is not gRPC (gRPC's HTTP mapping, as
    /// Java's `TriRpcStatus.httpStatusToGrpcCode`).
    pub fn from_http_status(status: u16) -> Code {
        match status {
            400 | 431 => Code::Internal,
            401 => Code::Unauthenticated,
            403 => Code::PermissionDenied,
            404 => Code::Unimplemented,
            429 | 502 | 503 | 504 => Code::Unavailable,
            _ => Code::Unknown,
        }
    }
}

/// Percent-decodes a `grpc-message` value (invalid UTF-8 is replaced, not rejected).
pub fn decode_message(v: &[u8]) -> String {
    match percent_encoding::percent_decode(v).decode_utf8_lossy() {
        Cow::Borrowed(s) => s.to_owned(),
        Cow::Owned(s) => s,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_round_trip_and_garbage_is_unknown() {
        for (i, c) in ALL.iter().enumerate() {
            assert_eq!(Code::from_u32(i as u32), *c);
            assert_eq!(c.as_u32(), i as u32);
        }
        assert_eq!(Code::from_u32(17), Code::Unknown);
        assert_eq!(Code::from_header(b"12"), Code::Unimplemented);
        assert_eq!(Code::from_header(b"x"), Code::Unknown);
        assert_eq!(Code::from_http_status(404), Code::Unimplemented);
        assert_eq!(Code::from_http_status(503), Code::Unavailable);
    }

    #[test]
    fn message_is_percent_decoded() {
        assert_eq!(decode_message(b"internal%20error"), "internal error");
        assert_eq!(decode_message("caf%C3%A9 %E2%82%AC".as_bytes()), "café €");
        assert_eq!(decode_message(b"bad%ZZ"), "bad%ZZ");
    }
}
