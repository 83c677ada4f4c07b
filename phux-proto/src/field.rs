//! Field primitives: the TLV envelope (varint id, wire type 4, varint length) and the
//! positional leaves inside a field value (big-endian integers, u32-prefixed str/bytes,
//! strict bools and presence bytes). Canonical on encode, strict on decode.

use crate::decode_error::{DecodeError, DecodeErrorKind};

/// The only TLV wire type phux 0.8 writes: length-delimited bytes.
pub const WIRE_TYPE_BYTES: u8 = 4;

/// The longest LEB128 varint: ten 7-bit groups cover 64 bits.
const MAX_VARINT_LEN: usize = 10;

type Result<T> = std::result::Result<T, DecodeError>;

fn eof() -> DecodeError {
    DecodeError::new(DecodeErrorKind::UnexpectedEof)
}

/// A positional reader over one bounded value. Every read checks the remaining length
/// first, so a declared length can never make it allocate or slice past its input.
#[derive(Clone, Copy, Debug)]
pub struct Reader<'a> {
    buf: &'a [u8],
}

impl<'a> Reader<'a> {
    /// A reader over `buf`.
    pub fn new(buf: &'a [u8]) -> Self {
        Self { buf }
    }

    /// Bytes not yet read.
    pub fn remaining(&self) -> usize {
        self.buf.len()
    }

    /// Whether everything has been read.
    pub fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }

    /// The next `n` bytes.
    pub fn take(&mut self, n: usize) -> Result<&'a [u8]> {
        if n > self.buf.len() {
            return Err(eof());
        }
        let (head, tail) = self.buf.split_at(n);
        self.buf = tail;
        Ok(head)
    }

    /// Everything not yet read.
    pub fn rest(&mut self) -> &'a [u8] {
        std::mem::take(&mut self.buf)
    }

    /// A sub-reader over the next `len` bytes (a length-prefixed value).
    pub fn sub(&mut self, len: usize) -> Result<Self> {
        self.take(len).map(Self::new)
    }

    /// Fails with `TrailingBytes` unless everything has been read.
    pub fn expect_end(&self) -> Result<()> {
        if self.buf.is_empty() {
            Ok(())
        } else {
            Err(DecodeError::new(DecodeErrorKind::TrailingBytes {
                extra: self.buf.len(),
            }))
        }
    }

    /// `N` bytes as an array.
    pub fn array<const N: usize>(&mut self) -> Result<[u8; N]> {
        let bytes = self.take(N)?;
        let mut out = [0; N];
        out.copy_from_slice(bytes);
        Ok(out)
    }

    /// A u8.
    pub fn u8(&mut self) -> Result<u8> {
        Ok(self.array::<1>()?[0])
    }

    /// A big-endian u16.
    pub fn u16(&mut self) -> Result<u16> {
        self.array().map(u16::from_be_bytes)
    }

    /// A big-endian u32.
    pub fn u32(&mut self) -> Result<u32> {
        self.array().map(u32::from_be_bytes)
    }

    /// A big-endian u64.
    pub fn u64(&mut self) -> Result<u64> {
        self.array().map(u64::from_be_bytes)
    }

    /// A big-endian two's-complement i32.
    pub fn i32(&mut self) -> Result<i32> {
        self.array().map(i32::from_be_bytes)
    }

    /// A big-endian two's-complement i64.
    pub fn i64(&mut self) -> Result<i64> {
        self.array().map(i64::from_be_bytes)
    }

    /// A big-endian IEEE-754 f32 (bit pattern kept).
    pub fn f32(&mut self) -> Result<f32> {
        self.u32().map(f32::from_bits)
    }

    /// A big-endian IEEE-754 f64 (bit pattern kept).
    pub fn f64(&mut self) -> Result<f64> {
        self.u64().map(f64::from_bits)
    }

    /// A strict bool: `00` or `01` (our rule R6).
    pub fn bool(&mut self) -> Result<bool> {
        // [FIELD.BOOL.1] A bool byte is 0 or 1; anything else is MALFORMED_MESSAGE.
        match self.u8()? {
            0 => Ok(false),
            1 => Ok(true),
            value => Err(DecodeError::new(DecodeErrorKind::InvalidBool { value })),
        }
    }

    /// A positional optional: a strict presence byte, then the value if present.
    pub fn optional<T>(&mut self, read: impl FnOnce(&mut Self) -> Result<T>) -> Result<Option<T>> {
        if self.bool()? {
            read(self).map(Some)
        } else {
            Ok(None)
        }
    }

    /// A u32-length-prefixed byte string, borrowed.
    pub fn bytes_ref(&mut self) -> Result<&'a [u8]> {
        let len = self.u32()? as usize;
        self.take(len)
    }

    /// A u32-length-prefixed byte string.
    pub fn bytes(&mut self) -> Result<Vec<u8>> {
        self.bytes_ref().map(<[u8]>::to_vec)
    }

    /// A u32-length-prefixed UTF-8 string.
    pub fn str(&mut self) -> Result<String> {
        let bytes = self.bytes_ref()?;
        utf8(bytes)
    }

    /// An unsigned LEB128 varint in its shortest form (our rule R1), at most 64 bits.
    pub fn varint(&mut self) -> Result<u64> {
        let mut value: u64 = 0;
        for i in 0..MAX_VARINT_LEN {
            let byte = self.u8()?;
            let group = u64::from(byte & 0x7f);
            // [VARINT.LIMIT.1] The tenth group may only carry bit 63.
            if i == MAX_VARINT_LEN - 1 && group > 1 {
                return Err(DecodeError::new(DecodeErrorKind::VarintOverflow));
            }
            value |= group << (7 * i);
            if byte & 0x80 == 0 {
                // [VARINT.CANON.1] A multi-byte varint whose last group is zero is not in its
                // shortest form.
                if i > 0 && byte == 0 {
                    return Err(DecodeError::new(DecodeErrorKind::NonCanonicalVarint));
                }
                return Ok(value);
            }
        }
        Err(DecodeError::new(DecodeErrorKind::VarintOverflow))
    }

    /// Up to `max` elements' worth of capacity for a list of `count` elements each at least
    /// `min_len` bytes on the wire: never more than the remaining input could hold.
    pub fn capacity_for(&self, count: usize, min_len: usize) -> usize {
        count.min(self.buf.len() / min_len.max(1))
    }
}

/// Bytes as UTF-8, copied once.
pub(crate) fn utf8(bytes: &[u8]) -> Result<String> {
    std::str::from_utf8(bytes)
        .map(str::to_owned)
        .map_err(|_| DecodeError::new(DecodeErrorKind::InvalidUtf8))
}

/// Iterates the TLV fields of a message body: `id varint ‖ wire type ‖ len varint ‖ value`.
#[derive(Debug)]
pub(crate) struct Fields<'a> {
    r: Reader<'a>,
}

impl<'a> Fields<'a> {
    pub(crate) fn new(body: &'a [u8]) -> Self {
        Self {
            r: Reader::new(body),
        }
    }

    /// The next field's id and value, `None` at the end of the body.
    pub(crate) fn next_field(&mut self) -> Result<Option<(u32, &'a [u8])>> {
        if self.r.is_empty() {
            return Ok(None);
        }
        let id = self.r.varint()?;
        // [VARINT.LIMIT.1] A field id fits in u32.
        let id =
            u32::try_from(id).map_err(|_| DecodeError::new(DecodeErrorKind::VarintOverflow))?;
        // [FIELD.TLV.2] The wire type is 4 (length-delimited); we reject others (rule R2).
        let wire_type = self.r.u8()?;
        if wire_type != WIRE_TYPE_BYTES {
            return Err(DecodeError::new(DecodeErrorKind::WireType {
                found: wire_type,
            }));
        }
        let len = self.r.varint()?;
        // [FIELD.TLV.3] A field's value lies inside the body.
        let len = usize::try_from(len).map_err(|_| eof())?;
        let value = self.r.take(len)?;
        Ok(Some((id, value)))
    }
}

/// Stores a field's decoded value in its slot, refusing a second occurrence (our rule R3) and
/// naming the field in any error.
pub(crate) fn once<T>(
    slot: &mut Option<T>,
    id: u32,
    name: &'static str,
    decode: impl FnOnce() -> Result<T>,
) -> Result<()> {
    // [FIELD.DUP.1] A known field appears at most once.
    if slot.is_some() {
        return Err(DecodeError::new(DecodeErrorKind::DuplicateField { id }).with_field(name));
    }
    *slot = Some(decode().map_err(|e| e.with_field(name))?);
    Ok(())
}

/// A required field's value, or `MissingField` naming it.
pub(crate) fn required<T>(slot: Option<T>, name: &'static str) -> Result<T> {
    slot.ok_or_else(|| DecodeError::new(DecodeErrorKind::MissingField).with_field(name))
}

/// Writing primitives on a byte vector (infallible; canonical).
pub(crate) trait Put {
    fn put_u8(&mut self, v: u8);
    fn put_u16(&mut self, v: u16);
    fn put_u32(&mut self, v: u32);
    fn put_u64(&mut self, v: u64);
    fn put_i32(&mut self, v: i32);
    fn put_i64(&mut self, v: i64);
    fn put_bool(&mut self, v: bool);
    fn put_bytes(&mut self, v: &[u8]);
    fn put_varint(&mut self, v: u64);
    fn put_len_bytes(&mut self, v: &[u8]);
    fn put_optional<T>(&mut self, v: Option<T>, put: impl FnOnce(&mut Self, T));
    fn put_field(&mut self, id: u32, value: &[u8]);
    fn put_field_with(&mut self, id: u32, write: impl FnOnce(&mut Self));
}

/// The length of `v` as a varint.
#[cfg(test)]
fn varint_len(v: u64) -> usize {
    (64 - (v | 1).leading_zeros() as usize).div_ceil(7)
}

impl Put for Vec<u8> {
    fn put_u8(&mut self, v: u8) {
        self.push(v);
    }
    fn put_u16(&mut self, v: u16) {
        self.extend_from_slice(&v.to_be_bytes());
    }
    fn put_u32(&mut self, v: u32) {
        self.extend_from_slice(&v.to_be_bytes());
    }
    fn put_u64(&mut self, v: u64) {
        self.extend_from_slice(&v.to_be_bytes());
    }
    fn put_i32(&mut self, v: i32) {
        self.extend_from_slice(&v.to_be_bytes());
    }
    fn put_i64(&mut self, v: i64) {
        self.extend_from_slice(&v.to_be_bytes());
    }
    fn put_bool(&mut self, v: bool) {
        self.push(u8::from(v));
    }
    fn put_bytes(&mut self, v: &[u8]) {
        self.extend_from_slice(v);
    }
    fn put_varint(&mut self, mut v: u64) {
        while v >= 0x80 {
            self.push((v as u8) | 0x80);
            v >>= 7;
        }
        self.push(v as u8);
    }
    /// A u32 length prefix then the bytes. Lengths past u32 cannot fit a 16 MiB frame, so
    /// callers never pass them.
    fn put_len_bytes(&mut self, v: &[u8]) {
        self.put_u32(v.len() as u32);
        self.extend_from_slice(v);
    }
    fn put_optional<T>(&mut self, v: Option<T>, put: impl FnOnce(&mut Self, T)) {
        match v {
            None => self.push(0),
            Some(v) => {
                self.push(1);
                put(self, v);
            }
        }
    }
    fn put_field(&mut self, id: u32, value: &[u8]) {
        self.put_varint(u64::from(id));
        self.push(WIRE_TYPE_BYTES);
        self.put_varint(value.len() as u64);
        self.extend_from_slice(value);
    }
    /// Writes a field whose value length is not known up front: room for a one-byte length
    /// is reserved, and the value is shifted only if its length needs more.
    fn put_field_with(&mut self, id: u32, write: impl FnOnce(&mut Self)) {
        self.put_varint(u64::from(id));
        self.push(WIRE_TYPE_BYTES);
        let len_at = self.len();
        self.push(0);
        write(self);
        let len = self.len() - len_at - 1;
        if len < 0x80 {
            self[len_at] = len as u8;
        } else {
            // A frame is at most 16 MiB, so a length is at most 4 varint bytes.
            let mut header = [0u8; MAX_VARINT_LEN];
            let mut n = 0;
            let mut v = len as u64;
            while v >= 0x80 {
                header[n] = (v as u8) | 0x80;
                v >>= 7;
                n += 1;
            }
            header[n] = v as u8;
            self.splice(len_at..=len_at, header[..=n].iter().copied());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn varint_of(bytes: &[u8]) -> Result<u64> {
        Reader::new(bytes).varint()
    }

    // [VARINT.CANON.1]
    #[test]
    fn varints_are_canonical_both_ways() {
        for (value, bytes) in [
            (1u64, &[0x01][..]),
            (127, &[0x7f]),
            (128, &[0x80, 0x01]),
            (250, &[0xfa, 0x01]),
            (300, &[0xac, 0x02]),
            (
                u64::MAX,
                &[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01],
            ),
        ] {
            let mut out = Vec::new();
            out.put_varint(value);
            assert_eq!(out, bytes);
            assert_eq!(varint_of(bytes), Ok(value));
            assert_eq!(varint_len(value), bytes.len());
        }
        assert_eq!(
            varint_of(&[0x81, 0x00]).unwrap_err().kind(),
            DecodeErrorKind::NonCanonicalVarint
        );
        assert_eq!(
            varint_of(&[0x80, 0x80, 0x00]).unwrap_err().kind(),
            DecodeErrorKind::NonCanonicalVarint
        );
        assert_eq!(
            varint_of(&[0xff; 10]).unwrap_err().kind(),
            DecodeErrorKind::VarintOverflow
        );
        assert_eq!(
            varint_of(&[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02])
                .unwrap_err()
                .kind(),
            DecodeErrorKind::VarintOverflow
        );
        assert_eq!(
            varint_of(&[0x80]).unwrap_err().kind(),
            DecodeErrorKind::UnexpectedEof
        );
    }

    // [FIELD.BOOL.1]
    #[test]
    fn bools_and_presence_bytes_are_strict() {
        assert_eq!(Reader::new(&[1]).bool(), Ok(true));
        assert_eq!(
            Reader::new(&[2]).bool().unwrap_err().kind(),
            DecodeErrorKind::InvalidBool { value: 2 }
        );
        assert_eq!(
            Reader::new(&[2, 0, 0])
                .optional(Reader::u16)
                .unwrap_err()
                .kind(),
            DecodeErrorKind::InvalidBool { value: 2 }
        );
    }

    #[test]
    fn declared_lengths_are_checked_before_reading() {
        let mut r = Reader::new(&[0xff, 0xff, 0xff, 0xff, b'a']);
        assert_eq!(
            r.bytes().unwrap_err().kind(),
            DecodeErrorKind::UnexpectedEof
        );
        assert_eq!(
            Reader::new(&[0, 0, 0, 2, 0xff, 0xfe])
                .str()
                .unwrap_err()
                .kind(),
            DecodeErrorKind::InvalidUtf8
        );
    }

    #[test]
    fn long_field_values_get_a_wider_length() {
        for len in [0usize, 1, 127, 128, 300, 20_000] {
            let value = vec![0xab; len];
            let mut direct = Vec::new();
            direct.put_field(7, &value);
            let mut shifted = Vec::new();
            shifted.put_field_with(7, |out| out.extend_from_slice(&value));
            assert_eq!(direct, shifted, "len {len}");
            let mut fields = Fields::new(&direct);
            assert_eq!(fields.next_field(), Ok(Some((7, &value[..]))));
            assert_eq!(fields.next_field(), Ok(None));
        }
    }

    // [FIELD.TLV.2]
    #[test]
    fn wire_type_other_than_four_is_refused() {
        let mut fields = Fields::new(&[0x01, 0x00, 0x01, 0xaa]);
        assert_eq!(
            fields.next_field().unwrap_err().kind(),
            DecodeErrorKind::WireType { found: 0 }
        );
    }
}
