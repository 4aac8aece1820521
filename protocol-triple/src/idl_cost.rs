//! What decoding a protobuf message into proto3 JSON costs, estimated from its wire bytes
//! before anything is decoded.
//!
//! A protobuf message expands when decoded: an empty sub-message in a repeated field is three
//! bytes on the wire, and a decoded message plus its JSON object take a few hundred bytes.
//! 8 MiB of them would take far more memory than 8 MiB, so IDL-mode results are measured first:
//! [`json_cost`] walks the wire format with the message's descriptor (no allocation) and sums
//! what the decoded message and its JSON form take per message, field, list element and byte of
//! text, the constants below (checked against the allocator in `tests/idl_budget.rs`). The
//! caller refuses a message whose cost passes its memory budget.

use prost_reflect::{Kind, MessageDescriptor};

/// A decoded message with no fields set, and its empty JSON object.
const MESSAGE: usize = 160;
/// What the first set field of a message adds: the first node of its field table and of its
/// JSON object's B-tree.
const FIRST_FIELD: usize = 1280;
/// One set field: its slot in the message and its entry in the JSON object (key and value).
const FIELD: usize = 192;
/// One element of a repeated field or map: its value and its JSON node (64-bit integers become
/// strings).
const ELEMENT: usize = 160;
/// One entry of a map field: its key and value in the decoded map and in the JSON object.
const ENTRY: usize = 320;
/// Nesting deeper than this is not walked further (prost refuses more than 100 levels).
const MAX_DEPTH: usize = 100;

/// An upper estimate of the memory that decoding `bytes` as a `desc` message and printing it as
/// proto3 JSON takes, at most `limit + 1`: the walk stops once it passes `limit`. Malformed
/// input is costed as far as it goes (decoding then reports it).
pub(crate) fn json_cost(desc: &MessageDescriptor, bytes: &[u8], limit: usize) -> usize {
    let mut cost = MESSAGE;
    walk(desc, bytes, 0, false, limit, &mut cost);
    cost.min(limit.saturating_add(1))
}

/// A varint at the front of `b`, and its length.
fn varint(b: &[u8]) -> Option<(u64, usize)> {
    let mut v = 0u64;
    for (i, byte) in b.iter().take(10).enumerate() {
        v |= u64::from(byte & 0x7f) << (7 * i);
        if byte & 0x80 == 0 {
            return Some((v, i + 1));
        }
    }
    None
}

/// The elements of a packed repeated scalar field of `kind` in `len` bytes.
fn packed_elements(kind: &Kind, payload: &[u8]) -> usize {
    match kind {
        Kind::Fixed32 | Kind::Sfixed32 | Kind::Float => payload.len() / 4,
        Kind::Fixed64 | Kind::Sfixed64 | Kind::Double => payload.len() / 8,
        // Varints: one element per byte without the continuation bit.
        _ => payload.iter().filter(|b| **b & 0x80 == 0).count(),
    }
}

/// Adds the cost of the fields in `b` (a `desc` message; a map entry when `entry`: its key and
/// value are the map's element, not a message of their own).
fn walk(
    desc: &MessageDescriptor,
    mut b: &[u8],
    depth: usize,
    entry: bool,
    limit: usize,
    cost: &mut usize,
) {
    if !b.is_empty() && !entry {
        *cost = cost.saturating_add(FIRST_FIELD);
    }
    while !b.is_empty() && *cost <= limit {
        let Some((key, n)) = varint(b) else { return };
        b = &b[n..];
        let (number, wire) = (key >> 3, key & 7);
        let field = u32::try_from(number).ok().and_then(|n| desc.get_field(n));
        let slot = match &field {
            _ if entry => 0,
            Some(f) if f.is_map() => ENTRY,
            Some(f) if f.is_list() => ELEMENT,
            _ => FIELD,
        };
        let len = match wire {
            0 => match varint(b) {
                Some((_, n)) => {
                    b = &b[n..];
                    *cost = cost.saturating_add(slot);
                    continue;
                }
                None => return,
            },
            1 => 8,
            5 => 4,
            2 => match varint(b) {
                Some((len, n)) => {
                    b = &b[n..];
                    usize::try_from(len).unwrap_or(usize::MAX)
                }
                None => return,
            },
            // Group start and end tags: the group's fields are costed where they stand.
            3 | 4 => {
                *cost = cost.saturating_add(slot);
                continue;
            }
            _ => return,
        };
        let Some(payload) = b.get(..len) else { return };
        b = &b[len..];
        *cost = cost.saturating_add(slot);
        if wire != 2 {
            continue;
        }
        let Some(f) = field else {
            // Unknown fields are kept as bytes.
            *cost = cost.saturating_add(len);
            continue;
        };
        match f.kind() {
            Kind::Message(m) if f.is_map() => {
                if depth < MAX_DEPTH {
                    walk(&m, payload, depth + 1, true, limit, cost);
                }
            }
            Kind::Message(m) => {
                *cost = cost.saturating_add(MESSAGE);
                if depth < MAX_DEPTH {
                    walk(&m, payload, depth + 1, false, limit, cost);
                }
            }
            // The decoded string and its JSON copy.
            Kind::String => *cost = cost.saturating_add(len.saturating_mul(2)),
            // The bytes and their base64 text (which may grow to twice its length as it is
            // written).
            Kind::Bytes => {
                let text = len.div_ceil(3).saturating_mul(8);
                *cost = cost.saturating_add(len.saturating_add(text))
            }
            scalar => {
                let n = packed_elements(&scalar, payload);
                *cost = cost.saturating_add(n.saturating_mul(ELEMENT));
            }
        }
    }
}
