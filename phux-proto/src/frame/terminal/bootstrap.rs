//! BOOTSTRAP_BEGIN, BOOTSTRAP_CHUNK, BOOTSTRAP_READY and BOOTSTRAP_TOMBSTONE: the snapshot
//! that brings a new viewer up to date before live output.

use crate::frame::handshake::OutputMode;
use crate::ids::{BootstrapId, StreamId, TerminalId};

/// How a bootstrap payload is encoded (tag u8).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub enum BootstrapCodec {
    /// Tag 0: synthesized VT v1 (no body).
    SynthesizedVtV1,
    /// Tag 1 with engine version 2, the only one phux 0.8 knows (`01 02`); other versions are
    /// decode errors.
    Native,
}

/// BOOTSTRAP_BEGIN (0x93, S→C). Legal (codec, output_mode) pairs: (Native, Raw),
/// (SynthesizedVtV1, Raw), (SynthesizedVtV1, StateSync); cols and rows are non-zero.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub struct BootstrapBegin {
    /// Field 1.
    pub terminal: TerminalId,
    /// Field 2.
    pub stream: StreamId,
    /// Field 3.
    pub bootstrap: BootstrapId,
    /// Field 4.
    pub codec: BootstrapCodec,
    /// Field 5 (non-zero).
    pub cols: u16,
    /// Field 6 (non-zero).
    pub rows: u16,
    /// Field 7.
    pub output_mode: OutputMode,
    /// Field 8: the seq the bootstrap state corresponds to.
    pub base_seq: u64,
}

#[cfg(feature = "arbitrary")]
impl<'a> arbitrary::Arbitrary<'a> for BootstrapBegin {
    fn arbitrary(u: &mut arbitrary::Unstructured<'a>) -> arbitrary::Result<Self> {
        let codec: BootstrapCodec = u.arbitrary()?;
        let output_mode = match codec {
            BootstrapCodec::Native => OutputMode::Raw,
            BootstrapCodec::SynthesizedVtV1 => u.arbitrary()?,
        };
        Ok(Self {
            terminal: u.arbitrary()?,
            stream: u.arbitrary()?,
            bootstrap: u.arbitrary()?,
            codec,
            cols: u.int_in_range(1..=u16::MAX)?,
            rows: u.int_in_range(1..=u16::MAX)?,
            output_mode,
            base_seq: u.arbitrary()?,
        })
    }
}

/// BOOTSTRAP_CHUNK (0x94, S→C): 1 terminal, 2 stream, 3 bootstrap, 4 chunk_seq, 5 payload.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct BootstrapChunk {
    /// Field 1.
    pub terminal: TerminalId,
    /// Field 2.
    pub stream: StreamId,
    /// Field 3.
    pub bootstrap: BootstrapId,
    /// Field 4: from 0, contiguous.
    pub chunk_seq: u32,
    /// Field 5 (raw; at most the negotiated max_chunk_bytes).
    pub payload: Vec<u8>,
}

/// BOOTSTRAP_READY (0x95, S→C): 1 terminal, 2 stream, 3 bootstrap, 4 history cursor (raw,
/// optional, at most [`BootstrapReady::MAX_HISTORY_CURSOR_LEN`] bytes).
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub struct BootstrapReady {
    /// Field 1.
    pub terminal: TerminalId,
    /// Field 2.
    pub stream: StreamId,
    /// Field 3.
    pub bootstrap: BootstrapId,
    /// Field 4: an opaque cursor for history paging.
    pub history_cursor: Option<Vec<u8>>,
}

impl BootstrapReady {
    /// The longest history cursor: an opaque token, so a few KiB is plenty and a bound keeps
    /// a peer from parking megabytes in per-stream state.
    pub const MAX_HISTORY_CURSOR_LEN: usize = 4096;
}

#[cfg(feature = "arbitrary")]
impl<'a> arbitrary::Arbitrary<'a> for BootstrapReady {
    fn arbitrary(u: &mut arbitrary::Unstructured<'a>) -> arbitrary::Result<Self> {
        let mut history_cursor: Option<Vec<u8>> = u.arbitrary()?;
        if let Some(cursor) = &mut history_cursor {
            cursor.truncate(Self::MAX_HISTORY_CURSOR_LEN);
        }
        Ok(Self {
            terminal: u.arbitrary()?,
            stream: u.arbitrary()?,
            bootstrap: u.arbitrary()?,
            history_cursor,
        })
    }
}

/// Why a bootstrap was abandoned (u8; other values are decode errors).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub enum TombstoneReason {
    /// 0: raw replay overflowed.
    RawReplayOverflow,
    /// 1: a gap in outbound output.
    OutboundGap,
    /// 2: the terminal was resized.
    Resize,
    /// 3: a relay reconnected.
    RelayReconnect,
    /// 4: the client re-attached.
    ExplicitReattach,
    /// 5: the codec failed.
    CodecFailure,
    /// 6: anything else.
    Other,
}

/// BOOTSTRAP_TOMBSTONE (0x97, S→C): 1 terminal, 2 stream, 3 bootstrap, 4 reason,
/// 5 last_valid_seq.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct BootstrapTombstone {
    /// Field 1.
    pub terminal: TerminalId,
    /// Field 2.
    pub stream: StreamId,
    /// Field 3.
    pub bootstrap: BootstrapId,
    /// Field 4.
    pub reason: TombstoneReason,
    /// Field 5: the last seq the client may trust.
    pub last_valid_seq: u64,
}

// ---- codec ----

use super::value::{bootstrap_value, stream_value, u32_value, u64_value};
use crate::atoms::{Result, Wire, pos, unknown};
use crate::decode_error::{DecodeError, DecodeErrorKind};
use crate::field::{Fields, Put, Reader, once, required};
use crate::frame::handshake::{output_mode_byte, read_output_mode_value};

/// The engine version BootstrapCodec::Native carries.
const NATIVE_ENGINE_V2: u8 = 2;

impl Wire for BootstrapCodec {
    fn read(r: &mut Reader<'_>) -> Result<Self> {
        match r.u8()? {
            0 => Ok(Self::SynthesizedVtV1),
            1 => match r.u8()? {
                NATIVE_ENGINE_V2 => Ok(Self::Native),
                v => Err(unknown("NativeEngineVersion", v)),
            },
            tag => Err(unknown("BootstrapCodec", tag)),
        }
    }
    fn write(&self, out: &mut Vec<u8>) {
        match self {
            Self::SynthesizedVtV1 => out.put_u8(0),
            Self::Native => out.put_bytes(&[1, NATIVE_ENGINE_V2]),
        }
    }
}

fn nonzero_u16(v: &[u8]) -> Result<u16> {
    match Reader::new(v).u16()? {
        0 => Err(DecodeError::new(DecodeErrorKind::ZeroId)),
        n => Ok(n),
    }
}

/// Decodes the `1 terminal ‖ 2 stream ‖ 3 bootstrap` prefix every bootstrap frame shares,
/// handing any other field id to `rest`.
fn decode_bootstrap_fields<'a>(
    body: &'a [u8],
    mut rest: impl FnMut(u32, &'a [u8]) -> Result<()>,
) -> Result<(TerminalId, StreamId, BootstrapId)> {
    let mut fields = Fields::new(body);
    let (mut terminal, mut stream, mut bootstrap) = (None, None, None);
    while let Some((id, v)) = fields.next_field()? {
        match id {
            1 => once(&mut terminal, id, "terminal", || pos(v))?,
            2 => once(&mut stream, id, "stream", || stream_value(v))?,
            3 => once(&mut bootstrap, id, "bootstrap", || bootstrap_value(v))?,
            _ => rest(id, v)?,
        }
    }
    Ok((
        required(terminal, "terminal")?,
        required(stream, "stream")?,
        required(bootstrap, "bootstrap")?,
    ))
}

fn encode_bootstrap_prefix(
    out: &mut Vec<u8>,
    terminal: &TerminalId,
    stream: StreamId,
    bootstrap: BootstrapId,
) {
    out.put_field_with(1, |o| terminal.write(o));
    out.put_field(2, &stream.get().to_be_bytes());
    out.put_field(3, &bootstrap.get().to_be_bytes());
}

impl BootstrapBegin {
    pub(crate) fn decode_body(body: &[u8]) -> Result<Self> {
        let (mut codec, mut cols, mut rows, mut mode, mut base) = (None, None, None, None, None);
        let (terminal, stream, bootstrap) = decode_bootstrap_fields(body, |id, v| match id {
            4 => once(&mut codec, id, "codec", || pos(v)),
            5 => once(&mut cols, id, "cols", || nonzero_u16(v)),
            6 => once(&mut rows, id, "rows", || nonzero_u16(v)),
            7 => once(&mut mode, id, "output_mode", || read_output_mode_value(v)),
            8 => once(&mut base, id, "base_seq", || u64_value(v)),
            _ => Ok(()),
        })?;
        let codec = required(codec, "codec")?;
        let output_mode = required(mode, "output_mode")?;
        // [BOOTSTRAP.CODEC.1] A native bootstrap is raw output only.
        if codec == BootstrapCodec::Native && output_mode == OutputMode::StateSync {
            return Err(DecodeError::new(DecodeErrorKind::Invalid {
                what: "native codec with state-sync output",
            })
            .with_field("output_mode"));
        }
        Ok(Self {
            terminal,
            stream,
            bootstrap,
            codec,
            cols: required(cols, "cols")?,
            rows: required(rows, "rows")?,
            output_mode,
            base_seq: required(base, "base_seq")?,
        })
    }
    pub(crate) fn encode_body(&self, out: &mut Vec<u8>) {
        encode_bootstrap_prefix(out, &self.terminal, self.stream, self.bootstrap);
        out.put_field_with(4, |o| self.codec.write(o));
        out.put_field(5, &self.cols.to_be_bytes());
        out.put_field(6, &self.rows.to_be_bytes());
        out.put_field(7, &[output_mode_byte(self.output_mode)]);
        out.put_field(8, &self.base_seq.to_be_bytes());
    }
}

impl BootstrapChunk {
    pub(crate) fn decode_body(body: &[u8]) -> Result<Self> {
        let (mut chunk_seq, mut payload) = (None, None);
        let (terminal, stream, bootstrap) = decode_bootstrap_fields(body, |id, v| match id {
            4 => once(&mut chunk_seq, id, "chunk_seq", || u32_value(v)),
            5 => once(&mut payload, id, "payload", || Ok(v)),
            _ => Ok(()),
        })?;
        Ok(Self {
            terminal,
            stream,
            bootstrap,
            chunk_seq: required(chunk_seq, "chunk_seq")?,
            payload: required(payload, "payload")?.to_vec(),
        })
    }
    pub(crate) fn encode_body(&self, out: &mut Vec<u8>) {
        out.reserve(self.payload.len() + 48);
        encode_bootstrap_prefix(out, &self.terminal, self.stream, self.bootstrap);
        out.put_field(4, &self.chunk_seq.to_be_bytes());
        out.put_field(5, &self.payload);
    }
}

impl BootstrapReady {
    pub(crate) fn decode_body(body: &[u8]) -> Result<Self> {
        let mut cursor = None;
        let (terminal, stream, bootstrap) = decode_bootstrap_fields(body, |id, v| match id {
            4 => once(&mut cursor, id, "history_cursor", || {
                // [BOOTSTRAP.READY.1] The history cursor is at most 4096 bytes.
                if v.len() > Self::MAX_HISTORY_CURSOR_LEN {
                    return Err(DecodeError::new(DecodeErrorKind::LimitExceeded {
                        what: "history_cursor length",
                        limit: Self::MAX_HISTORY_CURSOR_LEN as u64,
                        actual: v.len() as u64,
                    }));
                }
                Ok(v.to_vec())
            }),
            _ => Ok(()),
        })?;
        Ok(Self {
            terminal,
            stream,
            bootstrap,
            history_cursor: cursor,
        })
    }
    pub(crate) fn encode_body(&self, out: &mut Vec<u8>) {
        encode_bootstrap_prefix(out, &self.terminal, self.stream, self.bootstrap);
        if let Some(cursor) = &self.history_cursor {
            out.put_field(4, cursor);
        }
    }
}

fn tombstone_reason(v: &[u8]) -> Result<TombstoneReason> {
    Ok(match Reader::new(v).u8()? {
        0 => TombstoneReason::RawReplayOverflow,
        1 => TombstoneReason::OutboundGap,
        2 => TombstoneReason::Resize,
        3 => TombstoneReason::RelayReconnect,
        4 => TombstoneReason::ExplicitReattach,
        5 => TombstoneReason::CodecFailure,
        6 => TombstoneReason::Other,
        v => return Err(unknown("TombstoneReason", v)),
    })
}

impl BootstrapTombstone {
    pub(crate) fn decode_body(body: &[u8]) -> Result<Self> {
        let (mut reason, mut last) = (None, None);
        let (terminal, stream, bootstrap) = decode_bootstrap_fields(body, |id, v| match id {
            4 => once(&mut reason, id, "reason", || tombstone_reason(v)),
            5 => once(&mut last, id, "last_valid_seq", || u64_value(v)),
            _ => Ok(()),
        })?;
        Ok(Self {
            terminal,
            stream,
            bootstrap,
            reason: required(reason, "reason")?,
            last_valid_seq: required(last, "last_valid_seq")?,
        })
    }
    pub(crate) fn encode_body(&self, out: &mut Vec<u8>) {
        encode_bootstrap_prefix(out, &self.terminal, self.stream, self.bootstrap);
        out.put_field(4, &[self.reason as u8]);
        out.put_field(5, &self.last_valid_seq.to_be_bytes());
    }
}
