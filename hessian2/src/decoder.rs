//! The Hessian 2.0 reader.
//!
//! Reads every form Java's `Hessian2Input` reads. Class definitions (`C`), list/map type names
//! and the reference table (`Q`) persist across reads, as within one Dubbo2 body. Class, field
//! and type names are kept once per definition and shared ([`Arc<str>`]) by every value that
//! uses them. A `Q` to a finished list/map/object is expanded into a copy by decoding the
//! referenced bytes again (nothing is cloned or kept for values that are never referenced); a
//! `Q` to one still being read (a cycle) becomes [`Value::Ref`] with the index the copy has in
//! the decoded output, so encoding the result again writes a valid stream. Every length and the nesting depth are
//! checked against [`Limits`], and re-reading for references counts against
//! [`Limits::max_len`] too, so no input can make it panic, recurse without bound or expand
//! exponentially.
//!
//! Memory: every allocation made for the returned values (value slots as their vectors grow,
//! string and binary bytes, names and the stream's tables, and the JSON form built by
//! [`Decoder::read_json`]) is charged, before it is made, to the decoder's budget
//! ([`Limits::memory_budget`] of the input length); past it decoding fails with
//! [`Error::OverBudget`]. Re-read references are charged like any other value.

use std::collections::BTreeMap;
use std::mem::size_of;
use std::sync::Arc;

use crate::error::Error;
use crate::limits::Limits;
use crate::small_stack::SmallStack;
use crate::to_json::{json_entry_cost, json_object_cost, JSON_MAP, JSON_NODE};
use crate::value::Value;

/// At most this many elements are reserved ahead of reading them.
const PREALLOC_MAX: usize = 1024;
/// Reference-table and nesting entries kept without allocating (a typical body needs a few).
const INLINE_TABLE: usize = 16;
/// What one shared name costs besides its bytes: its slot and the `Arc`'s counts.
const NAME_COST: usize = size_of::<Arc<str>>() + 2 * size_of::<usize>();
/// What one entry of an attachment map costs besides its strings' bytes (two `String`s and
/// their share of a B-tree node).
const MAP_STR_ENTRY: usize = 2 * size_of::<String>() + 16;

/// What a `Q` reference points at.
enum RefTarget {
    /// A list/map/object still being read (a cycle): its output index.
    Active(u32),
    /// A finished one: its offset and stream index.
    Finished { offset: usize, index: u32 },
}

/// One class definition read from the stream.
#[derive(Debug)]
struct ClassDef {
    name: Arc<str>,
    fields: Vec<Arc<str>>,
    /// What an instance's JSON object costs besides its field values.
    json_cost: usize,
}

/// One Hessian 2.0 input stream over a byte slice.
#[derive(Debug)]
pub struct Decoder<'a> {
    buf: &'a [u8],
    pos: usize,
    limits: Limits,
    types: Vec<Arc<str>>,
    classes: Vec<ClassDef>,
    /// Offset of the first byte of each list/map/object, in stream order.
    refs: SmallStack<usize, INLINE_TABLE>,
    /// Lists/maps/objects being read: (stream index, output index).
    active: SmallStack<(u32, u32), INLINE_TABLE>,
    /// Lists/maps/objects produced so far (the next one's output index).
    out_count: u32,
    /// Replaying a referenced value: the stream index the next list/map/object has.
    replay_next: Option<u32>,
    /// Bytes re-read for reference expansion so far.
    expanded: usize,
    depth: usize,
    /// Bytes of memory the values may take ([`Limits::memory_budget`] of the input).
    budget: usize,
    /// Bytes charged so far.
    used: usize,
    /// Reused buffer for decoding names before they are shared.
    scratch: String,
    /// Reading for [`Decoder::read_json`]: the JSON form is charged too.
    json: bool,
}

/// The kind of a string chunk header.
fn is_string_tag(t: u8) -> bool {
    matches!(t, 0x00..=0x1f | 0x30..=0x33 | b'S' | b'R')
}

impl<'a> Decoder<'a> {
    /// A stream over `buf` with [`Limits::default`].
    pub fn new(buf: &'a [u8]) -> Self {
        Self::with_limits(buf, Limits::default())
    }

    /// A stream over `buf` with the given limits.
    pub fn with_limits(buf: &'a [u8], limits: Limits) -> Self {
        Decoder {
            buf,
            pos: 0,
            limits,
            types: Vec::new(),
            classes: Vec::new(),
            refs: SmallStack::new(),
            active: SmallStack::new(),
            out_count: 0,
            replay_next: None,
            expanded: 0,
            depth: 0,
            budget: limits.memory_budget(buf.len()),
            used: 0,
            scratch: String::new(),
            json: false,
        }
    }

    /// The memory budget of this stream in bytes (see [`Limits::memory_budget`]).
    pub fn memory_budget(&self) -> usize {
        self.budget
    }

    /// Bytes of memory charged to the budget so far: what the values read so far (and their
    /// JSON forms, for [`Decoder::read_json`]) were allowed to allocate.
    pub fn memory_used(&self) -> usize {
        self.used
    }

    /// Offset of the next byte to read.
    pub fn position(&self) -> usize {
        self.pos
    }

    /// True when every byte has been read.
    pub fn is_empty(&self) -> bool {
        self.pos >= self.buf.len()
    }

    /// The bytes not read yet.
    pub fn remaining(&self) -> &'a [u8] {
        self.buf.get(self.pos..).unwrap_or_default()
    }

    /// The next byte without consuming it.
    pub fn peek(&self) -> Option<u8> {
        self.buf.get(self.pos).copied()
    }

    /// True when the next value is `null` (`N`).
    pub fn peek_null(&self) -> bool {
        self.peek() == Some(b'N')
    }

    /// Reads one value of any kind.
    pub fn read(&mut self) -> Result<Value, Error> {
        self.depth = 0;
        self.active.clear();
        self.value()
    }

    /// Reads one value and converts it to JSON (see [`Value::to_json`]): references are
    /// expanded, cycles cut (a back-reference to an ancestor becomes `null`). The JSON form is
    /// charged to the memory budget too, before it is built.
    pub fn read_json(&mut self) -> Result<serde_json::Value, Error> {
        self.json = true;
        let v = self.read();
        self.json = false;
        Ok(v?.into_json())
    }

    /// Reads a string (not `null`).
    pub fn read_str(&mut self) -> Result<String, Error> {
        let tag = self.string_tag()?;
        self.string(tag)
    }

    /// Reads a string or `null`.
    pub fn read_opt_str(&mut self) -> Result<Option<String>, Error> {
        if self.peek_null() {
            self.pos += 1;
            return Ok(None);
        }
        self.read_str().map(Some)
    }

    /// Reads `null` (`N`).
    pub fn read_null(&mut self) -> Result<(), Error> {
        let start = self.pos;
        match self.byte("null")? {
            b'N' => Ok(()),
            tag => Err(Error::UnexpectedTag {
                tag,
                offset: start,
                expected: "null",
            }),
        }
    }

    /// Reads a boolean.
    pub fn read_bool(&mut self) -> Result<bool, Error> {
        let start = self.pos;
        match self.byte("boolean")? {
            b'T' => Ok(true),
            b'F' => Ok(false),
            tag => Err(Error::UnexpectedTag {
                tag,
                offset: start,
                expected: "a boolean",
            }),
        }
    }

    /// Reads an int (any int form, or a long form whose value fits, as Java's `readInt`).
    pub fn read_int(&mut self) -> Result<i32, Error> {
        let start = self.pos;
        let v = self.read_long()?;
        i32::try_from(v).map_err(|_| Error::Invalid {
            offset: start,
            context: "int",
            detail: "long value out of int range".into(),
        })
    }

    /// Reads a long (any int or long form).
    pub fn read_long(&mut self) -> Result<i64, Error> {
        let start = self.pos;
        let tag = self.byte("integer")?;
        self.integer(tag, start)
    }

    /// Reads a double (any double form; int and long forms are converted, as Java does).
    pub fn read_double(&mut self) -> Result<f64, Error> {
        let start = self.pos;
        match self.value_at_depth()? {
            Value::Double(d) => Ok(d),
            Value::Int(i) => Ok(f64::from(i)),
            Value::Long(l) => Ok(l as f64),
            _ => Err(Error::UnexpectedTag {
                tag: self.buf.get(start).copied().unwrap_or(0),
                offset: start,
                expected: "a double",
            }),
        }
    }

    /// Reads an untyped or typed map as strings, the form of Dubbo attachments. `null` gives
    /// an empty map; non-string keys and values are kept in their string form (numbers and
    /// booleans as Java prints them, dates as epoch millis, others as JSON text); entries
    /// whose value is `null` are dropped.
    pub fn read_map_str(&mut self) -> Result<BTreeMap<String, String>, Error> {
        let start = self.pos;
        let mut out = BTreeMap::new();
        match self.peek() {
            Some(b'N') => {
                self.pos += 1;
                return Ok(out);
            }
            Some(b'H' | b'M') => {}
            Some(tag) => {
                return Err(Error::UnexpectedTag {
                    tag,
                    offset: start,
                    expected: "a map",
                });
            }
            None => {
                return Err(Error::Eof {
                    offset: start,
                    context: "map",
                })
            }
        }
        // The map's entries go straight into `out` (no intermediate `Value::Map`), with the
        // bookkeeping `map` does: the type table, the reference table, the depth.
        self.depth = 0;
        self.active.clear();
        let tag = self.byte("map")?;
        if tag == b'M' {
            self.type_name()?;
        }
        self.begin(start)?;
        let mut n = 0usize;
        loop {
            match self.peek() {
                Some(b'Z') => {
                    self.pos += 1;
                    break;
                }
                Some(_) => {
                    n += 1;
                    self.check_len(n, "map", start)?;
                    let at = self.pos;
                    let k = self.value()?;
                    let v = self.value()?;
                    if !matches!(v, Value::Null) {
                        let k = self.string_form(k, at)?;
                        let v = self.string_form(v, at)?;
                        self.charge(MAP_STR_ENTRY, at)?;
                        out.insert(k, v);
                    }
                }
                None => return Err(self.eof("map")),
            }
        }
        self.end();
        Ok(out)
    }

    // ----- internals -----

    /// Charges `bytes` to the memory budget (before they are allocated); a charge that would
    /// pass it is refused and not counted.
    #[inline]
    fn charge(&mut self, bytes: usize, offset: usize) -> Result<(), Error> {
        let used = self.used.saturating_add(bytes);
        if used > self.budget {
            return Err(self.over_budget(offset));
        }
        self.used = used;
        Ok(())
    }

    #[cold]
    #[inline(never)]
    fn over_budget(&self, offset: usize) -> Error {
        Error::OverBudget {
            offset,
            input: self.buf.len(),
            limit: self.budget,
        }
    }

    /// Pushes onto `v`, charging the growth of its capacity first (doubling, at least 4).
    fn push_charged<T>(&mut self, v: &mut Vec<T>, item: T, at: usize) -> Result<(), Error> {
        if v.len() == v.capacity() {
            let grow = v.capacity().max(4);
            self.charge(grow.saturating_mul(size_of::<T>()), at)?;
            v.reserve_exact(grow);
        }
        v.push(item);
        Ok(())
    }

    /// Makes room for `bytes` more bytes in `out`, charging the growth of its capacity first.
    fn reserve_charged(&mut self, out: &mut Vec<u8>, bytes: usize, at: usize) -> Result<(), Error> {
        let need = out.len().saturating_add(bytes);
        if need > out.capacity() {
            let cap = need.max(out.capacity().saturating_mul(2));
            self.charge(cap - out.capacity(), at)?;
            out.reserve_exact(cap - out.len());
        }
        Ok(())
    }

    /// A string that names a class or a field, shared.
    fn read_name(&mut self) -> Result<Arc<str>, Error> {
        let tag = self.string_tag()?;
        self.shared_name(tag)
    }

    /// The tag of the string that must come next.
    fn string_tag(&mut self) -> Result<u8, Error> {
        let start = self.pos;
        let tag = self.byte("string")?;
        if !is_string_tag(tag) {
            return Err(Error::UnexpectedTag {
                tag,
                offset: start,
                expected: "a string",
            });
        }
        Ok(tag)
    }

    /// The string form of an attachment key or value (strings as they are, anything else as
    /// its JSON text), charged.
    fn string_form(&mut self, v: Value, at: usize) -> Result<String, Error> {
        match v {
            Value::String(s) => Ok(s),
            other => {
                let cost = other
                    .json_cost(false)
                    .saturating_add(other.json_text_bound());
                self.charge(cost, at)?;
                Ok(match other.to_json() {
                    serde_json::Value::String(s) => s,
                    j => j.to_string(),
                })
            }
        }
    }

    fn eof(&self, context: &'static str) -> Error {
        Error::Eof {
            offset: self.buf.len(),
            context,
        }
    }

    fn byte(&mut self, context: &'static str) -> Result<u8, Error> {
        match self.buf.get(self.pos) {
            Some(&b) => {
                self.pos += 1;
                Ok(b)
            }
            None => Err(self.eof(context)),
        }
    }

    fn take(&mut self, n: usize, context: &'static str) -> Result<&'a [u8], Error> {
        let end = self.pos.checked_add(n).filter(|&e| e <= self.buf.len());
        match end {
            Some(e) => {
                let s = &self.buf[self.pos..e];
                self.pos = e;
                Ok(s)
            }
            None => Err(self.eof(context)),
        }
    }

    fn array<const N: usize>(&mut self, context: &'static str) -> Result<[u8; N], Error> {
        let s = self.take(N, context)?;
        let mut a = [0u8; N];
        a.copy_from_slice(s);
        Ok(a)
    }

    fn u16(&mut self, context: &'static str) -> Result<usize, Error> {
        Ok(usize::from(u16::from_be_bytes(self.array(context)?)))
    }

    /// An int/long after its tag (any int or long form).
    fn integer(&mut self, tag: u8, start: usize) -> Result<i64, Error> {
        let t = i64::from(tag);
        Ok(match tag {
            0x80..=0xbf => t - 0x90,
            0xc0..=0xcf => ((t - 0xc8) << 8) | i64::from(self.byte("int")?),
            0xd0..=0xd7 => ((t - 0xd4) << 16) | self.u16("int")? as i64,
            b'I' | b'Y' => i64::from(i32::from_be_bytes(self.array("int")?)),
            0xd8..=0xef => t - 0xe0,
            0xf0..=0xff => ((t - 0xf8) << 8) | i64::from(self.byte("long")?),
            0x38..=0x3f => ((t - 0x3c) << 16) | self.u16("long")? as i64,
            b'L' => i64::from_be_bytes(self.array("long")?),
            _ => {
                return Err(Error::UnexpectedTag {
                    tag,
                    offset: start,
                    expected: "an integer",
                })
            }
        })
    }

    /// A non-negative int used as a length, count or index.
    fn index(&mut self, context: &'static str) -> Result<usize, Error> {
        let start = self.pos;
        let tag = self.byte(context)?;
        let v = self.integer(tag, start)?;
        usize::try_from(v)
            .ok()
            .filter(|_| v <= i64::from(i32::MAX))
            .ok_or_else(|| Error::Invalid {
                offset: start,
                context,
                detail: format!("negative or too large ({v})"),
            })
    }

    fn check_len(&self, len: usize, context: &'static str, start: usize) -> Result<(), Error> {
        if len > self.limits.max_len {
            return Err(Error::TooLong {
                offset: start,
                context,
                len,
                limit: self.limits.max_len,
            });
        }
        Ok(())
    }

    /// A value read below the current one (depth kept).
    fn value_at_depth(&mut self) -> Result<Value, Error> {
        self.value()
    }

    /// One value. This function, [`Decoder::list`], [`Decoder::map`] and [`Decoder::object`]
    /// are the recursion, so they stay small: scalars and headers are read by functions of
    /// their own (each level of nesting costs their frames only, which matters for
    /// `max_depth` levels on a 2 MiB thread stack in an unoptimized build). When the value is
    /// read for its JSON form, each value's own JSON node is charged as it is made.
    fn value(&mut self) -> Result<Value, Error> {
        let (tag, start) = self.value_tag()?;
        if self.json {
            // The value's own JSON node; maps, objects and binaries charge the rest of theirs.
            self.charge(JSON_NODE, start)?;
        }
        match tag {
            0x70..=0x7f | b'V' | b'X' | b'U' | b'W' => self.list(tag, start),
            b'H' | b'M' => self.map(tag, start),
            b'O' | 0x60..=0x6f => self.object(tag, start),
            b'Q' => self.reference(start),
            _ => self.scalar(tag, start),
        }
    }

    /// The tag of the next value and its offset, after any class definitions before it.
    #[inline]
    fn value_tag(&mut self) -> Result<(u8, usize), Error> {
        let start = self.pos;
        match self.buf.get(start) {
            Some(&tag) if tag != b'C' => {
                self.pos += 1;
                Ok((tag, start))
            }
            _ => self.value_tag_after_defs(),
        }
    }

    /// [`Decoder::value_tag`] when class definitions come first (or the input ended).
    #[inline(never)]
    fn value_tag_after_defs(&mut self) -> Result<(u8, usize), Error> {
        let mut start = self.pos;
        let mut tag = self.byte("value")?;
        // Class definitions precede the value they are for (a loop, not recursion: a long run
        // of definitions must not grow the stack).
        while tag == b'C' {
            self.class_def()?;
            start = self.pos;
            tag = self.byte("value")?;
        }
        Ok((tag, start))
    }

    /// A value that holds no other values.
    fn scalar(&mut self, tag: u8, start: usize) -> Result<Value, Error> {
        Ok(match tag {
            b'N' => Value::Null,
            b'T' => Value::Bool(true),
            b'F' => Value::Bool(false),
            0x80..=0xd7 | b'I' => Value::Int(self.integer(tag, start)? as i32),
            0xd8..=0xff | 0x38..=0x3f | b'Y' | b'L' => Value::Long(self.integer(tag, start)?),
            0x5b => Value::Double(0.0),
            0x5c => Value::Double(1.0),
            0x5d => Value::Double(f64::from(self.byte("double")? as i8)),
            0x5e => Value::Double(f64::from(i16::from_be_bytes(self.array("double")?))),
            0x5f => Value::Double(0.001 * f64::from(i32::from_be_bytes(self.array("double")?))),
            b'D' => Value::Double(f64::from_bits(u64::from_be_bytes(self.array("double")?))),
            b'J' => Value::Date(i64::from_be_bytes(self.array("date")?)),
            b'K' => Value::Date(i64::from(i32::from_be_bytes(self.array("date")?)) * 60_000),
            t if is_string_tag(t) => Value::String(self.string(t)?),
            0x20..=0x2f | 0x34..=0x37 | b'B' | b'A' => {
                let b = self.binary(tag)?;
                if self.json {
                    // Its base64 text.
                    self.charge(b.len().div_ceil(3).saturating_mul(4), start)?;
                }
                Value::Binary(b)
            }
            _ => {
                return Err(Error::UnexpectedTag {
                    tag,
                    offset: start,
                    expected: "a value",
                })
            }
        })
    }

    /// Enters a list/map/object that starts at `start`.
    fn begin(&mut self, start: usize) -> Result<(), Error> {
        if self.depth >= self.limits.max_depth {
            return Err(Error::TooDeep {
                offset: start,
                limit: self.limits.max_depth,
            });
        }
        self.depth += 1;
        let sidx = match self.replay_next.as_mut() {
            Some(n) => {
                let s = *n;
                *n = n.saturating_add(1);
                s
            }
            None => {
                if self.refs.len() >= INLINE_TABLE {
                    // The spilled table doubles as it grows: twice the entry, amortized.
                    self.charge(2 * size_of::<usize>(), start)?;
                }
                self.refs.push(start);
                u32::try_from(self.refs.len() - 1).unwrap_or(u32::MAX)
            }
        };
        let oidx = self.out_count;
        self.out_count = self.out_count.saturating_add(1);
        self.active.push((sidx, oidx));
        Ok(())
    }

    fn end(&mut self) {
        self.depth -= 1;
        self.active.pop();
    }

    /// A list/map type name: a string (added to the type table) or an index into it; either
    /// way one shared name.
    fn type_name(&mut self) -> Result<Arc<str>, Error> {
        let start = self.pos;
        match self.peek() {
            Some(t) if is_string_tag(t) => {
                self.pos += 1;
                let name = self.shared_name(t)?;
                if self.replay_next.is_none() {
                    let mut types = std::mem::take(&mut self.types);
                    let r = self.push_charged(&mut types, name.clone(), start);
                    self.types = types;
                    r?;
                }
                Ok(name)
            }
            Some(_) => {
                let i = self.index("type reference")?;
                self.types.get(i).cloned().ok_or_else(|| Error::Invalid {
                    offset: start,
                    context: "type reference",
                    detail: format!("index {i} but {} types defined", self.types.len()),
                })
            }
            None => Err(self.eof("type name")),
        }
    }

    fn list(&mut self, tag: u8, start: usize) -> Result<Value, Error> {
        let (type_name, len, mut items) = self.list_head(tag, start)?;
        match len {
            Some(n) => {
                for _ in 0..n {
                    let v = self.value()?;
                    self.push_charged(&mut items, v, start)?;
                }
            }
            None => {
                while self.more("list")? {
                    self.check_len(items.len() + 1, "list", start)?;
                    let v = self.value()?;
                    self.push_charged(&mut items, v, start)?;
                }
            }
        }
        self.end();
        Ok(Value::List { type_name, items })
    }

    /// A list's type and length, entered, with its first slots reserved (and charged).
    #[inline(never)]
    #[allow(clippy::type_complexity)]
    fn list_head(
        &mut self,
        tag: u8,
        start: usize,
    ) -> Result<(Option<Arc<str>>, Option<usize>, Vec<Value>), Error> {
        let type_name = match tag {
            0x70..=0x77 | b'V' | b'U' => Some(self.type_name()?),
            _ => None,
        };
        let len = match tag {
            0x70..=0x77 => Some(usize::from(tag - 0x70)),
            0x78..=0x7f => Some(usize::from(tag - 0x78)),
            b'V' | b'X' => Some(self.index("list length")?),
            _ => None,
        };
        self.begin(start)?;
        let mut items = Vec::new();
        if let Some(n) = len {
            self.check_len(n, "list", start)?;
            if n > self.buf.len() - self.pos {
                return Err(self.eof("list"));
            }
            // Grow as elements arrive: a claimed length costs nothing until it is backed by
            // data.
            let first = n.min(PREALLOC_MAX);
            self.charge(first.saturating_mul(size_of::<Value>()), start)?;
            items.reserve_exact(first);
        }
        Ok((type_name, len, items))
    }

    /// True when another element of a `Z`-terminated list or map follows; consumes the `Z`.
    fn more(&mut self, context: &'static str) -> Result<bool, Error> {
        match self.peek() {
            Some(b'Z') => {
                self.pos += 1;
                Ok(false)
            }
            Some(_) => Ok(true),
            None => Err(self.eof(context)),
        }
    }

    fn map(&mut self, tag: u8, start: usize) -> Result<Value, Error> {
        let type_name = self.map_head(tag, start)?;
        let mut entries = Vec::new();
        while self.more("map")? {
            self.check_len(entries.len() + 1, "map", start)?;
            let k = self.value()?;
            let v = self.value()?;
            if self.json {
                self.charge(json_entry_cost(&k), start)?;
            }
            self.push_charged(&mut entries, (k, v), start)?;
        }
        self.end();
        if self.json {
            self.charge(JSON_MAP, start)?;
        }
        Ok(Value::Map { type_name, entries })
    }

    /// A map's type, entered.
    #[inline(never)]
    fn map_head(&mut self, tag: u8, start: usize) -> Result<Option<Arc<str>>, Error> {
        let type_name = if tag == b'M' {
            Some(self.type_name()?)
        } else {
            None
        };
        self.begin(start)?;
        Ok(type_name)
    }

    fn class_def(&mut self) -> Result<(), Error> {
        let start = self.pos;
        let name = self.read_name()?;
        let n = self.index("class field count")?;
        self.check_len(n, "class definition", start)?;
        // Every field name takes at least one byte: the slots are backed by the input.
        if n > self.buf.len() - self.pos {
            return Err(self.eof("class definition"));
        }
        self.charge(n.saturating_mul(size_of::<Arc<str>>()), start)?;
        let mut fields = Vec::with_capacity(n);
        for _ in 0..n {
            fields.push(self.read_name()?);
        }
        if self.replay_next.is_none() {
            let mut classes = std::mem::take(&mut self.classes);
            let json_cost = json_object_cost(&name, &fields);
            let def = ClassDef {
                name,
                fields,
                json_cost,
            };
            let r = self.push_charged(&mut classes, def, start);
            self.classes = classes;
            r?;
        }
        Ok(())
    }

    fn object(&mut self, tag: u8, start: usize) -> Result<Value, Error> {
        let (idx, class, mut fields) = self.object_head(tag, start)?;
        for i in 0..fields.capacity() {
            let v = self.value()?;
            let name = self.field_name(idx, i);
            fields.push((name, v));
        }
        self.end();
        Ok(Value::Object { class, fields })
    }

    /// An object's class definition index and shared class name, entered, with its field slots
    /// allocated (and charged; exactly as many as the class has fields).
    #[inline(never)]
    #[allow(clippy::type_complexity)]
    fn object_head(
        &mut self,
        tag: u8,
        start: usize,
    ) -> Result<(usize, Arc<str>, Vec<(Arc<str>, Value)>), Error> {
        let idx = match tag {
            0x60..=0x6f => usize::from(tag - 0x60),
            _ => self.index("object definition")?,
        };
        let Some(def) = self.classes.get(idx) else {
            return Err(Error::Invalid {
                offset: start,
                context: "object",
                detail: format!("class definition {idx} but {} defined", self.classes.len()),
            });
        };
        // The instance shares the definition's names: reference counts, no copies.
        let class = def.name.clone();
        let n = def.fields.len();
        let json_cost = if self.json { def.json_cost } else { 0 };
        // Every field value takes at least one byte: the slots are backed by the input.
        if n > self.buf.len() - self.pos {
            return Err(self.eof("object"));
        }
        self.begin(start)?;
        self.charge(
            n.saturating_mul(size_of::<(Arc<str>, Value)>())
                .saturating_add(json_cost),
            start,
        )?;
        Ok((idx, class, Vec::with_capacity(n)))
    }

    /// The shared name of field `i` of class definition `idx`.
    fn field_name(&self, idx: usize, i: usize) -> Arc<str> {
        match self.classes.get(idx).and_then(|d| d.fields.get(i)) {
            Some(name) => name.clone(),
            None => Arc::from(""),
        }
    }

    fn reference(&mut self, start: usize) -> Result<Value, Error> {
        let (target, n32) = match self.reference_head(start)? {
            RefTarget::Active(out) => return Ok(Value::Ref(out)),
            RefTarget::Finished { offset, index } => (offset, index),
        };
        // A finished value: decode its bytes again as a copy.
        let resume = self.pos;
        let saved = self.replay_next.replace(n32);
        self.pos = target;
        let r = self.value();
        self.replay_end(start, target, resume, saved)?;
        r
    }

    /// What a `Q` refers to.
    #[inline(never)]
    fn reference_head(&mut self, start: usize) -> Result<RefTarget, Error> {
        let n = self.index("reference")?;
        if n >= self.refs.len() {
            return Err(Error::Invalid {
                offset: start,
                context: "reference",
                detail: format!(
                    "index {n} but {} lists/maps/objects so far",
                    self.refs.len()
                ),
            });
        }
        let n32 = u32::try_from(n).unwrap_or(u32::MAX);
        if let Some((_, out)) = self.active.iter_rev().find(|(s, _)| *s == n32) {
            return Ok(RefTarget::Active(out));
        }
        match self.refs.get(n) {
            Some(offset) => Ok(RefTarget::Finished { offset, index: n32 }),
            None => Err(self.eof("reference")),
        }
    }

    /// Back from re-reading a referenced value: the stream position and replay state restored,
    /// the bytes re-read counted against [`Limits::max_len`].
    #[inline(never)]
    fn replay_end(
        &mut self,
        start: usize,
        target: usize,
        resume: usize,
        saved: Option<u32>,
    ) -> Result<(), Error> {
        let span = self.pos.saturating_sub(target);
        self.pos = resume;
        self.replay_next = saved;
        self.expanded = self.expanded.saturating_add(span);
        if self.expanded > self.limits.max_len {
            return Err(Error::TooLong {
                offset: start,
                context: "reference expansion",
                len: self.expanded,
                limit: self.limits.max_len,
            });
        }
        Ok(())
    }

    /// A string after its first chunk tag.
    fn string(&mut self, tag: u8) -> Result<String, Error> {
        let mut out = String::new();
        self.string_into(tag, &mut out)?;
        Ok(out)
    }

    /// A string after its first chunk tag, as a shared name: decoded into the reused scratch
    /// buffer, then copied once into the name.
    fn shared_name(&mut self, tag: u8) -> Result<Arc<str>, Error> {
        let start = self.pos - 1;
        let mut buf = std::mem::take(&mut self.scratch);
        buf.clear();
        let r = self.string_into(tag, &mut buf);
        let name = r.and_then(|()| {
            self.charge(NAME_COST.saturating_add(buf.len()), start)?;
            Ok(Arc::from(buf.as_str()))
        });
        self.scratch = buf;
        name
    }

    /// A string after its first chunk tag, appended to `out`.
    fn string_into(&mut self, mut tag: u8, out: &mut String) -> Result<(), Error> {
        let start = self.pos - 1;
        let mut total = 0usize;
        let mut high: Option<u32> = None;
        loop {
            let (units, last) = match tag {
                0x00..=0x1f => (usize::from(tag), true),
                0x30..=0x33 => (
                    (usize::from(tag - 0x30) << 8) | usize::from(self.byte("string")?),
                    true,
                ),
                b'S' => (self.u16("string")?, true),
                b'R' => (self.u16("string")?, false),
                _ => {
                    return Err(Error::UnexpectedTag {
                        tag,
                        offset: self.pos - 1,
                        expected: "a string chunk",
                    })
                }
            };
            total += units;
            self.check_len(total, "string", start)?;
            self.chunk(units, out, &mut high, start)?;
            if last {
                break;
            }
            tag = self.byte("string")?;
        }
        if high.is_some() {
            self.grow_str(out, 3, start)?;
            out.push(char::REPLACEMENT_CHARACTER);
        }
        Ok(())
    }

    /// Makes room in `out` for `bytes` more bytes, charging the growth of its capacity first.
    fn grow_str(&mut self, out: &mut String, bytes: usize, at: usize) -> Result<(), Error> {
        let need = out.len().saturating_add(bytes);
        if need > out.capacity() {
            let cap = need.max(out.capacity().saturating_mul(2));
            self.charge(cap - out.capacity(), at)?;
            out.reserve_exact(cap - out.len());
        }
        Ok(())
    }

    /// `units` UTF-16 units of CESU-8 (or UTF-8) text appended to `out`. An unpaired surrogate
    /// becomes U+FFFD (a Rust string cannot hold it).
    fn chunk(
        &mut self,
        units: usize,
        out: &mut String,
        high: &mut Option<u32>,
        start: usize,
    ) -> Result<(), Error> {
        if units > self.buf.len() - self.pos {
            return Err(self.eof("string"));
        }
        // Fast path: plain ASCII, one byte per unit.
        let rest = &self.buf[self.pos..];
        if high.is_none() && rest[..units].is_ascii() {
            self.grow_str(out, units, start)?;
            // ASCII is valid UTF-8.
            out.push_str(std::str::from_utf8(&rest[..units]).unwrap_or_default());
            self.pos += units;
            return Ok(());
        }
        // At most three bytes per unit, and a replacement for a pending lone surrogate.
        self.grow_str(out, units.saturating_mul(3).saturating_add(3), start)?;
        let mut left = units;
        while left > 0 {
            let at = self.pos;
            let b0 = u32::from(self.byte("string")?);
            let (cp, width) = if b0 < 0x80 {
                (b0, 1)
            } else if b0 & 0xe0 == 0xc0 {
                (((b0 & 0x1f) << 6) | self.cont()?, 1)
            } else if b0 & 0xf0 == 0xe0 {
                let c1 = self.cont()?;
                let c2 = self.cont()?;
                (((b0 & 0x0f) << 12) | (c1 << 6) | c2, 1)
            } else if b0 & 0xf8 == 0xf0 && left >= 2 {
                let c1 = self.cont()?;
                let c2 = self.cont()?;
                let c3 = self.cont()?;
                (((b0 & 0x07) << 18) | (c1 << 12) | (c2 << 6) | c3, 2)
            } else {
                return Err(Error::Invalid {
                    offset: at,
                    context: "string",
                    detail: format!("byte 0x{b0:02x} cannot start a character"),
                });
            };
            left -= width;
            if let Some(h) = high.take() {
                if (0xdc00..=0xdfff).contains(&cp) {
                    let c = 0x1_0000 + ((h - 0xd800) << 10) + (cp - 0xdc00);
                    out.push(char::from_u32(c).unwrap_or(char::REPLACEMENT_CHARACTER));
                    continue;
                }
                out.push(char::REPLACEMENT_CHARACTER);
            }
            if (0xd800..=0xdbff).contains(&cp) {
                *high = Some(cp);
            } else {
                out.push(char::from_u32(cp).unwrap_or(char::REPLACEMENT_CHARACTER));
            }
        }
        Ok(())
    }

    /// A UTF-8 continuation byte's six bits.
    fn cont(&mut self) -> Result<u32, Error> {
        let at = self.pos;
        let b = self.byte("string")?;
        if b & 0xc0 != 0x80 {
            return Err(Error::Invalid {
                offset: at,
                context: "string",
                detail: format!("byte 0x{b:02x} is not a UTF-8 continuation byte"),
            });
        }
        Ok(u32::from(b & 0x3f))
    }

    /// Binary data after its first chunk tag.
    fn binary(&mut self, mut tag: u8) -> Result<Vec<u8>, Error> {
        let start = self.pos - 1;
        let mut out = Vec::new();
        loop {
            let (n, last) = match tag {
                0x20..=0x2f => (usize::from(tag - 0x20), true),
                0x34..=0x37 => (
                    (usize::from(tag - 0x34) << 8) | usize::from(self.byte("binary")?),
                    true,
                ),
                b'B' => (self.u16("binary")?, true),
                b'A' => (self.u16("binary")?, false),
                _ => {
                    return Err(Error::UnexpectedTag {
                        tag,
                        offset: self.pos - 1,
                        expected: "a binary chunk",
                    })
                }
            };
            self.check_len(out.len() + n, "binary", start)?;
            if n > self.buf.len() - self.pos {
                return Err(self.eof("binary"));
            }
            self.reserve_charged(&mut out, n, start)?;
            out.extend_from_slice(self.take(n, "binary")?);
            if last {
                break;
            }
            tag = self.byte("binary")?;
        }
        Ok(out)
    }
}
