//! A reusable per-thread text buffer, so that parsing does not allocate a temporary string per
//! URL.

use std::cell::Cell;

/// Buffers that grew beyond this are dropped instead of kept for the next call.
const KEEP_CAPACITY: usize = 64 * 1024;

type Slot = std::thread::LocalKey<Cell<String>>;

thread_local! {
    static SCRATCH: Cell<String> = const { Cell::new(String::new()) };
    static DECODED: Cell<String> = const { Cell::new(String::new()) };
}

/// Runs `f` with an empty buffer (for text derived from a query).
pub(crate) fn with_scratch<R>(f: impl FnOnce(&mut String) -> R) -> R {
    with_slot(&SCRATCH, f)
}

/// Runs `f` with an empty buffer for a decoded URL (a second slot, as parsing the decoded
/// text uses [`with_scratch`]).
pub(crate) fn with_decode_buffer<R>(f: impl FnOnce(&mut String) -> R) -> R {
    with_slot(&DECODED, f)
}

/// The buffer is taken out of the thread-local slot for the call, so a nested call (or a call
/// during thread teardown) just gets a fresh one.
fn with_slot<R>(slot: &'static Slot, f: impl FnOnce(&mut String) -> R) -> R {
    let mut buf = slot.try_with(Cell::take).unwrap_or_default();
    buf.clear();
    let r = f(&mut buf);
    if buf.capacity() <= KEEP_CAPACITY {
        let _ = slot.try_with(|c| c.set(buf));
    }
    r
}
