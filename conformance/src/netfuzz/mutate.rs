//! Field-level mutations of an encoded frame: wrong tags, duplicate or missing fields,
//! non-canonical varints, truncation, huge lengths. Each is a value (so a session that holds
//! it replays exactly) applied to the frame's canonical bytes when the session runs.

use phux_proto::framing::{HEADER_LEN, MAX_FRAME_LEN};

use super::rng::Rng;

/// One change to an encoded frame. `field` is a field's index, taken modulo the frame's
/// field count; `permille` a position or length as a fraction of the body.
#[allow(missing_docs)] // The fields are what each variant's line says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Mutation {
    /// Replace the frame type byte.
    FrameType(u8),
    /// Replace the first byte of a field's value (a COMMAND's tag, an enum, a presence byte).
    ValueTag { field: u8, value: u8 },
    /// Replace a field's id.
    FieldId { field: u8, id: u8 },
    /// Replace a field's wire type.
    WireType { field: u8, wire_type: u8 },
    /// Write a field twice.
    Duplicate { field: u8 },
    /// Leave a field out.
    Drop { field: u8 },
    /// Re-encode a field's length varint with `extra` needless continuation bytes.
    LongVarint { field: u8, extra: u8 },
    /// Declare a field longer than what follows.
    HugeFieldLength { field: u8, len: u64 },
    /// Cut the body to `permille`/1000 of its length, fixing the header's length.
    Truncate { permille: u16 },
    /// Write this header length (0, over the cap, or a little off the truth).
    HeaderLength(u32),
    /// XOR one body byte.
    Flip { permille: u16, xor: u8 },
}

/// Where one TLV field lies in a frame body.
#[derive(Clone, Copy, Debug)]
pub(crate) struct FieldSpan {
    start: usize,
    wire_type_at: usize,
    len_at: usize,
    value_at: usize,
    end: usize,
}

impl FieldSpan {
    /// The field's value bytes.
    pub(crate) fn value<'a>(&self, body: &'a [u8]) -> &'a [u8] {
        &body[self.value_at..self.end]
    }

    /// The field's id, as a lenient decoder reads it.
    pub(crate) fn id(&self, body: &[u8]) -> Option<u64> {
        varint(&body[self.start..]).map(|(id, _)| id)
    }
}

/// A LEB128 varint at the front of `buf`: its value and length (at most 10 bytes).
fn varint(buf: &[u8]) -> Option<(u64, usize)> {
    let mut value = 0u64;
    for (i, b) in buf.iter().take(10).enumerate() {
        value |= u64::from(b & 0x7f) << (7 * i);
        if b & 0x80 == 0 {
            return Some((value, i + 1));
        }
    }
    None
}

fn put_varint(out: &mut Vec<u8>, mut value: u64) {
    loop {
        let b = (value & 0x7f) as u8;
        value >>= 7;
        if value == 0 {
            out.push(b);
            return;
        }
        out.push(b | 0x80);
    }
}

/// Splits a body into TLV fields, loosely (any wire type, lengths checked against the body);
/// `None` when it is not a sequence of whole fields.
pub(crate) fn fields(body: &[u8]) -> Option<Vec<FieldSpan>> {
    let mut out = Vec::new();
    let mut at = 0;
    while at < body.len() {
        let (_, id_len) = varint(&body[at..])?;
        let wire_type_at = at + id_len;
        let len_at = wire_type_at + 1;
        let (len, len_len) = varint(body.get(len_at..)?)?;
        let value_at = len_at + len_len;
        let end = value_at.checked_add(usize::try_from(len).ok()?)?;
        if end > body.len() {
            return None;
        }
        out.push(FieldSpan {
            start: at,
            wire_type_at,
            len_at,
            value_at,
            end,
        });
        at = end;
    }
    Some(out)
}

impl Mutation {
    /// A random mutation.
    pub fn random(rng: &mut Rng) -> Self {
        let field = rng.below(8) as u8;
        match rng.below(11) {
            0 => Self::FrameType(rng.next_u64() as u8),
            1 => Self::ValueTag {
                field,
                value: rng.next_u64() as u8,
            },
            2 => Self::FieldId {
                field,
                id: rng.below(20) as u8,
            },
            3 => Self::WireType {
                field,
                wire_type: rng.below(8) as u8,
            },
            4 => Self::Duplicate { field },
            5 => Self::Drop { field },
            6 => Self::LongVarint {
                field,
                extra: 1 + rng.below(8) as u8,
            },
            7 => Self::HugeFieldLength {
                field,
                len: [0xffff_ffff, u64::MAX >> 1, 1 << 24, 1 << 31][rng.below(4) as usize],
            },
            8 => Self::Truncate {
                permille: rng.below(1000) as u16,
            },
            9 => Self::HeaderLength([0, MAX_FRAME_LEN + 1, u32::MAX, 1][rng.below(4) as usize]),
            _ => Self::Flip {
                permille: rng.below(1000) as u16,
                xor: 1 + rng.below(255) as u8,
            },
        }
    }

    /// Applies the mutation to one encoded frame (header and body).
    pub fn apply(&self, frame: &[u8]) -> Vec<u8> {
        if frame.len() < HEADER_LEN {
            return frame.to_vec();
        }
        let frame_type = frame[4];
        let body = &frame[HEADER_LEN..];
        let spans = fields(body).unwrap_or_default();
        let pick = |i: u8| -> Option<FieldSpan> {
            (!spans.is_empty()).then(|| spans[usize::from(i) % spans.len()])
        };
        let new_body: Vec<u8> = match *self {
            Self::FrameType(t) => return reframe(t, body),
            Self::HeaderLength(len) => {
                let mut out = len.to_be_bytes().to_vec();
                out.extend_from_slice(&frame[4..]);
                return out;
            }
            Self::Truncate { permille } => {
                let keep = body.len() * usize::from(permille) / 1000;
                body[..keep].to_vec()
            }
            Self::Flip { permille, xor } => {
                let mut b = body.to_vec();
                if !b.is_empty() {
                    let at = (b.len() - 1) * usize::from(permille) / 1000;
                    b[at] ^= xor;
                }
                b
            }
            Self::ValueTag { field, value } => {
                let mut b = body.to_vec();
                if let Some(f) = pick(field).filter(|f| f.value_at < f.end) {
                    b[f.value_at] = value;
                }
                b
            }
            Self::FieldId { field, id } => match pick(field) {
                Some(f) => splice(body, f.start, f.wire_type_at, &[id]),
                None => body.to_vec(),
            },
            Self::WireType { field, wire_type } => {
                let mut b = body.to_vec();
                if let Some(f) = pick(field) {
                    b[f.wire_type_at] = wire_type;
                }
                b
            }
            Self::Duplicate { field } => match pick(field) {
                Some(f) => splice(body, f.end, f.end, &body[f.start..f.end]),
                None => body.to_vec(),
            },
            Self::Drop { field } => match pick(field) {
                Some(f) => splice(body, f.start, f.end, &[]),
                None => body.to_vec(),
            },
            Self::LongVarint { field, extra } => match pick(field) {
                Some(f) => {
                    let len = (f.end - f.value_at) as u64;
                    let mut v = Vec::new();
                    put_varint(&mut v, len);
                    // Set the continuation bit on the last group and pad with zero groups.
                    if let Some(last) = v.last_mut() {
                        *last |= 0x80;
                    }
                    v.extend(std::iter::repeat_n(0x80, usize::from(extra) - 1));
                    v.push(0x00);
                    splice(body, f.len_at, f.value_at, &v)
                }
                None => body.to_vec(),
            },
            Self::HugeFieldLength { field, len } => match pick(field) {
                Some(f) => {
                    let mut v = Vec::new();
                    put_varint(&mut v, len);
                    splice(body, f.len_at, f.value_at, &v)
                }
                None => body.to_vec(),
            },
        };
        reframe(frame_type, &new_body)
    }
}

/// `body` with `range` replaced by `with`.
fn splice(body: &[u8], from: usize, to: usize, with: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(body.len() + with.len());
    out.extend_from_slice(&body[..from]);
    out.extend_from_slice(with);
    out.extend_from_slice(&body[to..]);
    out
}

/// A frame of type `frame_type` around `body`, with a true header length.
pub(crate) fn reframe(frame_type: u8, body: &[u8]) -> Vec<u8> {
    let len = u32::try_from(body.len() + 1).unwrap_or(u32::MAX);
    let mut out = len.to_be_bytes().to_vec();
    out.push(frame_type);
    out.extend_from_slice(body);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use phux_proto::Frame;

    fn kill() -> Vec<u8> {
        "COMMAND{request_id=3 command=KILL_TERMINAL{terminal=local:42}}"
            .parse::<Frame>()
            .unwrap()
            .to_bytes()
    }

    #[test]
    fn fields_split_a_command() {
        let f = kill();
        let spans = fields(&f[HEADER_LEN..]).unwrap();
        assert_eq!(spans.len(), 2);
        assert_eq!(spans[1].value(&f[HEADER_LEN..])[0], 0x03);
    }

    #[test]
    fn mutations_keep_a_true_header_unless_they_change_it() {
        let f = kill();
        let dup = Mutation::Duplicate { field: 0 }.apply(&f);
        assert_eq!(dup.len(), f.len() + 7);
        assert!(Frame::decode(&dup).is_err(), "a duplicate field is refused");
        let long = Mutation::LongVarint { field: 1, extra: 2 }.apply(&f);
        assert_eq!(long.len(), f.len() + 2);
        assert_eq!(
            u32::from_be_bytes(long[..4].try_into().unwrap()) as usize,
            long.len() - 4
        );
        let cut = Mutation::Truncate { permille: 500 }.apply(&f);
        assert!(cut.len() < f.len());
        assert_eq!(&Mutation::HeaderLength(0).apply(&f)[..4], &[0, 0, 0, 0]);
    }
}
