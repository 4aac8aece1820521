//! The Hessian 2.0 writer.
//!
//! Byte choices follow Java's `Hessian2Output` exactly wherever Java's choice depends only on
//! the value: the shortest int/long/double/date form, strings counted in UTF-16 units with
//! CESU-8 text and 32768-unit chunks (never splitting a surrogate pair), fixed-length lists
//! (`0x78+n`/`X`, typed `0x70+n`/`V`), `H`/`M` maps, `C` class definitions followed by
//! `0x60+n`/`O` instances, and list/map type names sent once then by index.

use crate::error::Error;
use crate::value::Value;

/// One class definition the stream has sent: `(name, field names)`.
#[derive(Debug, Default)]
struct ClassDef {
    name: String,
    fields: Vec<String>,
}

/// One Hessian 2.0 output stream.
///
/// Class definitions, list/map type names and the reference count persist across `write*`
/// calls, as they do within one Java `Hessian2Output` (one Dubbo2 request or response body).
/// [`Encoder::clear`] starts a new stream and keeps every buffer, so an encoder reused for
/// many messages does not allocate in steady state.
#[derive(Debug, Default)]
pub struct Encoder {
    buf: Vec<u8>,
    /// Class definition slots; the first `n_classes` are live, the rest are kept for reuse.
    classes: Vec<ClassDef>,
    n_classes: usize,
    /// Type-name slots; the first `n_types` are live.
    types: Vec<String>,
    n_types: usize,
    /// Lists, maps and objects begun so far (the next one's reference index).
    refs: u32,
}

impl Encoder {
    /// An empty stream.
    pub fn new() -> Self {
        Self::default()
    }

    /// An empty stream writing into `buf` (cleared first), reusing its capacity.
    pub fn with_buffer(mut buf: Vec<u8>) -> Self {
        buf.clear();
        Encoder {
            buf,
            ..Self::default()
        }
    }

    /// The bytes written so far.
    pub fn as_bytes(&self) -> &[u8] {
        &self.buf
    }

    /// The bytes written, giving up the encoder.
    pub fn into_bytes(self) -> Vec<u8> {
        self.buf
    }

    /// Starts a new stream: drops the bytes, class definitions, type names and references, but
    /// keeps all allocated capacity.
    pub fn clear(&mut self) {
        self.buf.clear();
        self.n_classes = 0;
        self.n_types = 0;
        self.refs = 0;
    }

    /// Number of bytes written so far.
    pub fn len(&self) -> usize {
        self.buf.len()
    }

    /// True when nothing has been written since the last [`Encoder::clear`].
    pub fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }

    /// Lists, maps and objects begun so far: the index a `Q` reference to the next one would use.
    pub fn ref_count(&self) -> u32 {
        self.refs
    }

    /// Appends raw, already encoded Hessian bytes (e.g. a value encoded by another encoder
    /// whose stream tables do not matter).
    pub fn write_raw(&mut self, bytes: &[u8]) {
        self.buf.extend_from_slice(bytes);
    }

    /// Writes any [`Value`]. Fails only for a [`Value::Ref`] to a list/map/object this stream
    /// has not begun.
    pub fn write(&mut self, v: &Value) -> Result<(), Error> {
        match v {
            Value::Null => self.write_null(),
            Value::Bool(b) => self.write_bool(*b),
            Value::Int(i) => self.write_int(*i),
            Value::Long(l) => self.write_long(*l),
            Value::Double(d) => self.write_double(*d),
            Value::Date(ms) => self.write_date(*ms),
            Value::String(s) => self.write_str(s),
            Value::Binary(b) => self.write_binary(b),
            Value::List { type_name, items } => {
                self.write_list_begin(items.len(), type_name.as_deref());
                for item in items {
                    self.write(item)?;
                }
            }
            Value::Map { type_name, entries } => {
                self.write_map_begin(type_name.as_deref());
                for (k, val) in entries {
                    self.write(k)?;
                    self.write(val)?;
                }
                self.write_map_end();
            }
            Value::Object { class, fields } => {
                self.write_object_begin(class, fields.iter().map(|(n, _)| &**n));
                for (_, val) in fields {
                    self.write(val)?;
                }
            }
            Value::Ref(n) => self.write_ref(*n)?,
        }
        Ok(())
    }

    /// `N`.
    pub fn write_null(&mut self) {
        self.buf.push(b'N');
    }

    /// `T` / `F`.
    pub fn write_bool(&mut self, b: bool) {
        self.buf.push(if b { b'T' } else { b'F' });
    }

    /// An int in its shortest form (1, 2, 3 or 5 bytes).
    pub fn write_int(&mut self, v: i32) {
        if (-16..=47).contains(&v) {
            self.buf.push((0x90 + v) as u8);
        } else if (-2048..=2047).contains(&v) {
            self.buf
                .extend_from_slice(&[(0xc8 + (v >> 8)) as u8, v as u8]);
        } else if (-262_144..=262_143).contains(&v) {
            self.buf
                .extend_from_slice(&[(0xd4 + (v >> 16)) as u8, (v >> 8) as u8, v as u8]);
        } else {
            self.buf.push(b'I');
            self.buf.extend_from_slice(&v.to_be_bytes());
        }
    }

    /// A long in its shortest form (1, 2, 3, 5 or 9 bytes).
    pub fn write_long(&mut self, v: i64) {
        if (-8..=15).contains(&v) {
            self.buf.push((0xe0 + v) as u8);
        } else if (-2048..=2047).contains(&v) {
            self.buf
                .extend_from_slice(&[(0xf8 + (v >> 8)) as u8, v as u8]);
        } else if (-262_144..=262_143).contains(&v) {
            self.buf
                .extend_from_slice(&[(0x3c + (v >> 16)) as u8, (v >> 8) as u8, v as u8]);
        } else if i32::try_from(v).is_ok() {
            self.buf.push(b'Y');
            self.buf.extend_from_slice(&(v as i32).to_be_bytes());
        } else {
            self.buf.push(b'L');
            self.buf.extend_from_slice(&v.to_be_bytes());
        }
    }

    /// A double the way Java picks the form: integral values in byte/short range compactly,
    /// values equal to `0.001 * m` for an int `m` as milli-units (`0x5f`), else 8 bytes.
    /// Like Java, `-0.0` is written as `0.0`.
    pub fn write_double(&mut self, v: f64) {
        // `as i32` saturates and maps NaN to 0, exactly like Java's `(int)` cast.
        let iv = v as i32;
        if f64::from(iv) == v {
            if iv == 0 {
                self.buf.push(0x5b);
                return;
            }
            if iv == 1 {
                self.buf.push(0x5c);
                return;
            }
            if (-0x80..0x80).contains(&iv) {
                self.buf.extend_from_slice(&[0x5d, iv as u8]);
                return;
            }
            if (-0x8000..0x8000).contains(&iv) {
                self.buf
                    .extend_from_slice(&[0x5e, (iv >> 8) as u8, iv as u8]);
                return;
            }
        }
        let mills = (v * 1000.0) as i32;
        if 0.001 * f64::from(mills) == v {
            self.buf.push(0x5f);
            self.buf.extend_from_slice(&mills.to_be_bytes());
            return;
        }
        // Java's doubleToLongBits: every NaN becomes the canonical one.
        let bits = if v.is_nan() {
            0x7ff8_0000_0000_0000u64
        } else {
            v.to_bits()
        };
        self.buf.push(b'D');
        self.buf.extend_from_slice(&bits.to_be_bytes());
    }

    /// A `java.util.Date` (milliseconds since the epoch): `K` + minutes when it is a whole
    /// minute that fits an int, else `J` + 8 bytes.
    pub fn write_date(&mut self, ms: i64) {
        if ms % 60_000 == 0 {
            let minutes = ms / 60_000;
            if let Ok(m) = i32::try_from(minutes) {
                self.buf.push(b'K');
                self.buf.extend_from_slice(&m.to_be_bytes());
                return;
            }
        }
        self.buf.push(b'J');
        self.buf.extend_from_slice(&ms.to_be_bytes());
    }

    /// A string: length in UTF-16 units, CESU-8 text (characters above U+FFFF as two 3-byte
    /// surrogates), split into 32768-unit `R` chunks like Java when longer.
    pub fn write_str(&mut self, s: &str) {
        if s.is_ascii() {
            self.write_ascii(s.as_bytes());
            return;
        }
        let mut units = utf16_len(s);
        let mut rest = s;
        while units > 0x8000 {
            let mut taken = 0usize;
            let mut cut = rest.len();
            for (i, c) in rest.char_indices() {
                let cu = c.len_utf16();
                if taken + cu > 0x8000 {
                    cut = i;
                    break;
                }
                taken += cu;
            }
            self.buf
                .extend_from_slice(&[b'R', (taken >> 8) as u8, taken as u8]);
            let (chunk, tail) = rest.split_at(cut);
            self.push_cesu8(chunk);
            rest = tail;
            units -= taken;
        }
        self.write_str_header(units);
        self.push_cesu8(rest);
    }

    /// ASCII fast path: one unit per byte.
    fn write_ascii(&mut self, mut b: &[u8]) {
        while b.len() > 0x8000 {
            let (chunk, tail) = b.split_at(0x8000);
            self.buf.extend_from_slice(&[b'R', 0x80, 0x00]);
            self.buf.extend_from_slice(chunk);
            b = tail;
        }
        self.write_str_header(b.len());
        self.buf.extend_from_slice(b);
    }

    /// The header of the final string chunk of `units` UTF-16 units (at most 0x8000).
    fn write_str_header(&mut self, units: usize) {
        if units <= 31 {
            self.buf.push(units as u8);
        } else if units <= 1023 {
            self.buf
                .extend_from_slice(&[0x30 + (units >> 8) as u8, units as u8]);
        } else {
            self.buf
                .extend_from_slice(&[b'S', (units >> 8) as u8, units as u8]);
        }
    }

    /// Appends `s` as CESU-8: UTF-8 except that 4-byte characters become two 3-byte surrogates.
    fn push_cesu8(&mut self, s: &str) {
        let bytes = s.as_bytes();
        let mut start = 0;
        let mut i = 0;
        while i < bytes.len() {
            if bytes[i] >= 0xf0 {
                self.buf.extend_from_slice(&bytes[start..i]);
                let c = s[i..].chars().next().map_or(0xfffd, u32::from);
                let v = c - 0x1_0000;
                for unit in [0xd800 | (v >> 10), 0xdc00 | (v & 0x3ff)] {
                    self.buf.extend_from_slice(&[
                        0xe0 | (unit >> 12) as u8,
                        0x80 | ((unit >> 6) & 0x3f) as u8,
                        0x80 | (unit & 0x3f) as u8,
                    ]);
                }
                i += 4;
                start = i;
            } else {
                i += 1;
            }
        }
        self.buf.extend_from_slice(&bytes[start..]);
    }

    /// `byte[]`: `0x20+n` up to 15 bytes, `0x34` form up to 1023, else `B` (with 32768-byte
    /// `A` chunks before it when longer).
    pub fn write_binary(&mut self, mut b: &[u8]) {
        while b.len() > 0x8000 {
            let (chunk, tail) = b.split_at(0x8000);
            self.buf.extend_from_slice(&[b'A', 0x80, 0x00]);
            self.buf.extend_from_slice(chunk);
            b = tail;
        }
        let n = b.len();
        if n <= 15 {
            self.buf.push(0x20 + n as u8);
        } else if n <= 1023 {
            self.buf
                .extend_from_slice(&[0x34 + (n >> 8) as u8, n as u8]);
        } else {
            self.buf.extend_from_slice(&[b'B', (n >> 8) as u8, n as u8]);
        }
        self.buf.extend_from_slice(b);
    }

    /// An untyped map of strings (`H` k v ... `Z`), the form of Dubbo attachments.
    pub fn write_map_str<K, V>(&mut self, m: impl IntoIterator<Item = (K, V)>)
    where
        K: AsRef<str>,
        V: AsRef<str>,
    {
        self.write_map_begin(None);
        for (k, v) in m {
            self.write_str(k.as_ref());
            self.write_str(v.as_ref());
        }
        self.write_map_end();
    }

    /// `Q n`: a back-reference to the `n`-th list/map/object begun in this stream.
    pub fn write_ref(&mut self, n: u32) -> Result<(), Error> {
        if n >= self.refs {
            return Err(Error::Invalid {
                offset: self.buf.len(),
                context: "reference",
                detail: format!(
                    "Ref({n}) points past the {} lists/maps/objects written so far",
                    self.refs
                ),
            });
        }
        self.buf.push(b'Q');
        self.write_int(n as i32);
        Ok(())
    }

    /// Begins a fixed-length list of `len` elements (then write exactly `len` values), typed
    /// when `type_name` is given.
    pub fn write_list_begin(&mut self, len: usize, type_name: Option<&str>) {
        self.refs = self.refs.saturating_add(1);
        match type_name {
            Some(t) if len <= 7 => {
                self.buf.push(0x70 + len as u8);
                self.write_type(t);
            }
            Some(t) => {
                self.buf.push(b'V');
                self.write_type(t);
                self.write_int(len_i32(len));
            }
            None if len <= 7 => self.buf.push(0x78 + len as u8),
            None => {
                self.buf.push(b'X');
                self.write_int(len_i32(len));
            }
        }
    }

    /// Begins a map (`H`, or `M` + type when typed); write keys and values, then
    /// [`Encoder::write_map_end`].
    pub fn write_map_begin(&mut self, type_name: Option<&str>) {
        self.refs = self.refs.saturating_add(1);
        match type_name {
            Some(t) => {
                self.buf.push(b'M');
                self.write_type(t);
            }
            None => self.buf.push(b'H'),
        }
    }

    /// Ends a map (`Z`).
    pub fn write_map_end(&mut self) {
        self.buf.push(b'Z');
    }

    /// Begins an object of `class` with the given field names (then write one value per
    /// field, in order). Sends the class definition the first time this stream sees that
    /// class with these fields, then refers to it by index.
    pub fn write_object_begin<'f, I>(&mut self, class: &str, fields: I)
    where
        I: IntoIterator<Item = &'f str>,
        I::IntoIter: Clone,
    {
        self.refs = self.refs.saturating_add(1);
        let fields = fields.into_iter();
        let found = self.classes[..self.n_classes].iter().position(|d| {
            d.name == class && d.fields.iter().map(String::as_str).eq(fields.clone())
        });
        let idx = match found {
            Some(i) => i,
            None => {
                let i = self.n_classes;
                if i == self.classes.len() {
                    self.classes.push(ClassDef::default());
                }
                let def = &mut self.classes[i];
                def.name.clear();
                def.name.push_str(class);
                let mut n = 0;
                for f in fields {
                    if n < def.fields.len() {
                        def.fields[n].clear();
                        def.fields[n].push_str(f);
                    } else {
                        def.fields.push(f.to_owned());
                    }
                    n += 1;
                }
                def.fields.truncate(n);
                self.n_classes += 1;
                self.buf.push(b'C');
                // Re-borrow through an index so the string writer can use `self`.
                let name = std::mem::take(&mut self.classes[i].name);
                self.write_str(&name);
                self.classes[i].name = name;
                self.write_int(len_i32(n));
                let names = std::mem::take(&mut self.classes[i].fields);
                for f in &names {
                    self.write_str(f);
                }
                self.classes[i].fields = names;
                i
            }
        };
        if idx <= 15 {
            self.buf.push(0x60 + idx as u8);
        } else {
            self.buf.push(b'O');
            self.write_int(len_i32(idx));
        }
    }

    /// A list/map type name: the string the first time, then its index.
    fn write_type(&mut self, t: &str) {
        if let Some(i) = self.types[..self.n_types].iter().position(|x| x == t) {
            self.write_int(len_i32(i));
            return;
        }
        if self.n_types == self.types.len() {
            self.types.push(String::new());
        }
        let slot = &mut self.types[self.n_types];
        slot.clear();
        slot.push_str(t);
        self.n_types += 1;
        self.write_str(t);
    }
}

/// A length as Java's int (saturating; longer collections cannot exist in Java).
fn len_i32(n: usize) -> i32 {
    i32::try_from(n).unwrap_or(i32::MAX)
}

/// The length of `s` in UTF-16 code units, as Java's `String.length()`.
pub(crate) fn utf16_len(s: &str) -> usize {
    s.bytes().filter(|b| b & 0xc0 != 0x80).count() + s.bytes().filter(|&b| b >= 0xf0).count()
}
