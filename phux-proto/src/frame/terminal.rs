//! Terminal lifecycle, output and bootstrap frames.

use crate::frame::handshake::OutputMode;
use crate::ids::{BootstrapId, GroupId, StreamId, TerminalId};

/// A size in cells: `cols u16 ‖ rows u16`.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct TerminalSize {
    /// Columns.
    pub cols: u16,
    /// Rows.
    pub rows: u16,
}

/// SPAWN_TERMINAL (0x22, C→S). Fields 1 and 2 are always written; the rest are omitted when
/// `None`.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct SpawnTerminal {
    /// Field 1: correlates TERMINAL_SPAWNED (absent = 0).
    pub request_id: u32,
    /// Field 2: the group (absent = 0; the reference server accepts only 1).
    pub group: GroupId,
    /// Field 3: argv (`u32 count ‖ str×count`); `None` = the default shell.
    pub command: Option<Vec<String>>,
    /// Field 4: working directory (raw UTF-8).
    pub cwd: Option<String>,
    /// Field 5: the whole environment; `None` = inherit, `Some([])` = empty.
    pub env: Option<Vec<(String, String)>>,
    /// Field 6: `TERM` (raw UTF-8).
    pub term: Option<String>,
    /// Field 7: the satellite host to spawn on (raw UTF-8); `None` = local.
    pub satellite: Option<String>,
    /// Field 8: the terminal this one belongs to.
    pub owner_terminal: Option<TerminalId>,
    /// Field 9: opaque agent session bytes (raw).
    pub agent_session: Option<Vec<u8>>,
    /// Field 10: the initial size (0 on an axis = server default).
    pub initial_size: Option<TerminalSize>,
}

impl SpawnTerminal {
    /// A spawn of the default shell in `group` with every optional field absent.
    pub fn new(request_id: u32, group: GroupId) -> Self {
        Self {
            request_id,
            group,
            command: None,
            cwd: None,
            env: None,
            term: None,
            satellite: None,
            owner_terminal: None,
            agent_session: None,
            initial_size: None,
        }
    }
}

/// TERMINAL_RESIZE (0x23, C→S): field 1 terminal, fields 2/3 cols/rows (absent = 0).
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct TerminalResize {
    /// The terminal.
    pub terminal: TerminalId,
    /// The new size.
    pub size: TerminalSize,
}

/// TERMINAL_CLOSED (0xa1, S→C): field 1 terminal, field 2 exit status (4 raw bytes, omitted
/// when the child died by a signal or its status is unknown).
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct TerminalClosed {
    /// The terminal.
    pub terminal: TerminalId,
    /// `_exit(n)`'s `n`, if the child exited with one.
    pub exit_status: Option<i32>,
}

/// TERMINAL_SPAWNED (0xa2, S→C): field 1 request_id (absent = 0), field 2 result.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct TerminalSpawned {
    /// The SPAWN_TERMINAL's request id.
    pub request_id: u32,
    /// The new terminal, or why there is none.
    pub result: SpawnResult,
}

/// A spawn outcome: `00 ‖ TerminalId` or `01 ‖ SpawnError`.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub enum SpawnResult {
    /// The terminal exists.
    Ok(TerminalId),
    /// It does not.
    Err(SpawnError),
}

/// Why a spawn failed (tag u8; other tags are decode errors).
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub enum SpawnError {
    /// Tag 0: no such group.
    GroupNotFound,
    /// Tag 1: the spawn itself failed, with a reason.
    SpawnFailed(String),
    /// Tag 2: satellite routing is not available here.
    UnsupportedSatelliteRoute,
    /// Tag 3: the satellite cannot be reached, with a reason.
    SatelliteUnreachable(String),
}

/// TERMINAL_OUTPUT (0x90, S→C): 1 terminal, 2 seq, 3 bytes (raw), 4 stream, 5 bootstrap.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct TerminalOutput {
    /// The terminal.
    pub terminal: TerminalId,
    /// Contiguous per (terminal, stream, bootstrap); the first live seq is `base_seq + 1`.
    pub seq: u64,
    /// The output bytes.
    pub bytes: Vec<u8>,
    /// The stream.
    pub stream: StreamId,
    /// The bootstrap this output follows.
    pub bootstrap: BootstrapId,
}

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

/// BELL (0xb0, S→C): field 1 terminal.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct Bell {
    /// The terminal that rang.
    pub terminal: TerminalId,
}

// ---- codec ----

use crate::atoms::{Result, Wire, unknown};
use crate::decode_error::{DecodeError, DecodeErrorKind};
use crate::field::{Fields, Put, Reader, WIRE_TYPE_BYTES, once, required, utf8};
use crate::frame::handshake::{output_mode_byte, read_output_mode_value};
use crate::frame::input::pos;
use crate::frame_type::FrameType;
use crate::framing::{LENGTH_LEN, encode_framed, split_frame};

fn u32_value(v: &[u8]) -> Result<u32> {
    Reader::new(v).u32()
}

fn u64_value(v: &[u8]) -> Result<u64> {
    Reader::new(v).u64()
}

fn stream_value(v: &[u8]) -> Result<StreamId> {
    // [ID.STREAM.1] Stream ids are non-zero.
    StreamId::new(u64_value(v)?).ok_or_else(|| DecodeError::new(DecodeErrorKind::ZeroId))
}

fn bootstrap_value(v: &[u8]) -> Result<BootstrapId> {
    // [ID.STREAM.1] Bootstrap ids are non-zero.
    BootstrapId::new(u64_value(v)?).ok_or_else(|| DecodeError::new(DecodeErrorKind::ZeroId))
}

fn str_list(r: &mut Reader<'_>) -> Result<Vec<String>> {
    let count = r.u32()? as usize;
    // Each str is at least its 4-byte length, so the input bounds the capacity.
    let mut list = Vec::with_capacity(r.capacity_for(count, 4));
    for _ in 0..count {
        list.push(r.str()?);
    }
    Ok(list)
}

fn env_list(r: &mut Reader<'_>) -> Result<Vec<(String, String)>> {
    let count = r.u32()? as usize;
    let mut list = Vec::with_capacity(r.capacity_for(count, 8));
    for _ in 0..count {
        list.push((r.str()?, r.str()?));
    }
    Ok(list)
}

impl Wire for TerminalSize {
    fn read(r: &mut Reader<'_>) -> Result<Self> {
        Ok(Self {
            cols: r.u16()?,
            rows: r.u16()?,
        })
    }
    fn write(&self, out: &mut Vec<u8>) {
        out.put_u16(self.cols);
        out.put_u16(self.rows);
    }
}

impl SpawnTerminal {
    pub(crate) fn decode_body(body: &[u8]) -> Result<Self> {
        let mut fields = Fields::new(body);
        let (mut request_id, mut group, mut command, mut cwd, mut env) =
            (None, None, None, None, None);
        let (mut term, mut satellite, mut owner, mut agent, mut size) =
            (None, None, None, None, None);
        while let Some((id, v)) = fields.next_field()? {
            match id {
                1 => once(&mut request_id, id, "request_id", || u32_value(v))?,
                2 => once(&mut group, id, "group", || u32_value(v).map(GroupId))?,
                3 => once(&mut command, id, "command", || {
                    str_list(&mut Reader::new(v))
                })?,
                4 => once(&mut cwd, id, "cwd", || utf8(v))?,
                5 => once(&mut env, id, "env", || env_list(&mut Reader::new(v)))?,
                6 => once(&mut term, id, "term", || utf8(v))?,
                7 => once(&mut satellite, id, "satellite", || utf8(v))?,
                8 => once(&mut owner, id, "owner_terminal", || pos(v))?,
                9 => once(&mut agent, id, "agent_session", || Ok(v.to_vec()))?,
                10 => once(&mut size, id, "initial_size", || pos(v))?,
                _ => {}
            }
        }
        Ok(Self {
            request_id: request_id.unwrap_or(0),
            group: group.unwrap_or(GroupId(0)),
            command,
            cwd,
            env,
            term,
            satellite,
            owner_terminal: owner,
            agent_session: agent,
            initial_size: size,
        })
    }
    pub(crate) fn encode_body(&self, out: &mut Vec<u8>) {
        out.put_field(1, &self.request_id.to_be_bytes());
        out.put_field(2, &self.group.0.to_be_bytes());
        if let Some(command) = &self.command {
            out.put_field_with(3, |o| {
                o.put_u32(command.len() as u32);
                for arg in command {
                    o.put_len_bytes(arg.as_bytes());
                }
            });
        }
        if let Some(cwd) = &self.cwd {
            out.put_field(4, cwd.as_bytes());
        }
        if let Some(env) = &self.env {
            out.put_field_with(5, |o| {
                o.put_u32(env.len() as u32);
                for (k, v) in env {
                    o.put_len_bytes(k.as_bytes());
                    o.put_len_bytes(v.as_bytes());
                }
            });
        }
        if let Some(term) = &self.term {
            out.put_field(6, term.as_bytes());
        }
        if let Some(satellite) = &self.satellite {
            out.put_field(7, satellite.as_bytes());
        }
        if let Some(owner) = &self.owner_terminal {
            out.put_field_with(8, |o| owner.write(o));
        }
        if let Some(agent) = &self.agent_session {
            out.put_field(9, agent);
        }
        if let Some(size) = &self.initial_size {
            out.put_field_with(10, |o| size.write(o));
        }
    }
}

impl TerminalResize {
    pub(crate) fn decode_body(body: &[u8]) -> Result<Self> {
        let mut fields = Fields::new(body);
        let (mut terminal, mut cols, mut rows) = (None, None, None);
        while let Some((id, v)) = fields.next_field()? {
            match id {
                1 => once(&mut terminal, id, "terminal", || pos(v))?,
                2 => once(&mut cols, id, "cols", || Reader::new(v).u16())?,
                3 => once(&mut rows, id, "rows", || Reader::new(v).u16())?,
                _ => {}
            }
        }
        Ok(Self {
            terminal: required(terminal, "terminal")?,
            size: TerminalSize {
                cols: cols.unwrap_or(0),
                rows: rows.unwrap_or(0),
            },
        })
    }
    pub(crate) fn encode_body(&self, out: &mut Vec<u8>) {
        out.put_field_with(1, |o| self.terminal.write(o));
        out.put_field(2, &self.size.cols.to_be_bytes());
        out.put_field(3, &self.size.rows.to_be_bytes());
    }
}

impl TerminalClosed {
    pub(crate) fn decode_body(body: &[u8]) -> Result<Self> {
        let mut fields = Fields::new(body);
        let (mut terminal, mut exit_status) = (None, None);
        while let Some((id, v)) = fields.next_field()? {
            match id {
                1 => once(&mut terminal, id, "terminal", || pos(v))?,
                2 => once(&mut exit_status, id, "exit_status", || Reader::new(v).i32())?,
                _ => {}
            }
        }
        Ok(Self {
            terminal: required(terminal, "terminal")?,
            exit_status,
        })
    }
    pub(crate) fn encode_body(&self, out: &mut Vec<u8>) {
        out.put_field_with(1, |o| self.terminal.write(o));
        if let Some(status) = self.exit_status {
            out.put_field(2, &status.to_be_bytes());
        }
    }
}

impl Wire for SpawnError {
    fn read(r: &mut Reader<'_>) -> Result<Self> {
        match r.u8()? {
            0 => Ok(Self::GroupNotFound),
            1 => Ok(Self::SpawnFailed(r.str()?)),
            2 => Ok(Self::UnsupportedSatelliteRoute),
            3 => Ok(Self::SatelliteUnreachable(r.str()?)),
            tag => Err(unknown("SpawnError", tag)),
        }
    }
    fn write(&self, out: &mut Vec<u8>) {
        match self {
            Self::GroupNotFound => out.put_u8(0),
            Self::SpawnFailed(s) => {
                out.put_u8(1);
                out.put_len_bytes(s.as_bytes());
            }
            Self::UnsupportedSatelliteRoute => out.put_u8(2),
            Self::SatelliteUnreachable(s) => {
                out.put_u8(3);
                out.put_len_bytes(s.as_bytes());
            }
        }
    }
}

impl Wire for SpawnResult {
    fn read(r: &mut Reader<'_>) -> Result<Self> {
        match r.u8()? {
            0 => Ok(Self::Ok(TerminalId::read(r)?)),
            1 => Ok(Self::Err(SpawnError::read(r)?)),
            tag => Err(unknown("SpawnResult", tag)),
        }
    }
    fn write(&self, out: &mut Vec<u8>) {
        match self {
            Self::Ok(id) => {
                out.put_u8(0);
                id.write(out);
            }
            Self::Err(e) => {
                out.put_u8(1);
                e.write(out);
            }
        }
    }
}

impl TerminalSpawned {
    pub(crate) fn decode_body(body: &[u8]) -> Result<Self> {
        let mut fields = Fields::new(body);
        let (mut request_id, mut result) = (None, None);
        while let Some((id, v)) = fields.next_field()? {
            match id {
                1 => once(&mut request_id, id, "request_id", || u32_value(v))?,
                2 => once(&mut result, id, "result", || pos(v))?,
                _ => {}
            }
        }
        Ok(Self {
            request_id: request_id.unwrap_or(0),
            result: required(result, "result")?,
        })
    }
    pub(crate) fn encode_body(&self, out: &mut Vec<u8>) {
        out.put_field(1, &self.request_id.to_be_bytes());
        out.put_field_with(2, |o| self.result.write(o));
    }
}

impl TerminalOutput {
    pub(crate) fn decode_body(body: &[u8]) -> Result<Self> {
        TerminalOutputView::decode_body(body).map(TerminalOutputView::into_owned)
    }
    pub(crate) fn encode_body(&self, out: &mut Vec<u8>) {
        self.borrowed().encode_body(out);
    }

    /// The same frame with its bytes borrowed.
    pub fn borrowed(&self) -> TerminalOutputRef<'_> {
        TerminalOutputRef {
            terminal: &self.terminal,
            seq: self.seq,
            bytes: &self.bytes,
            stream: self.stream,
            bootstrap: self.bootstrap,
        }
    }
}

/// A TERMINAL_OUTPUT whose bytes are borrowed: a server fanning one chunk of output out to
/// many viewers encodes it for each without first copying the chunk into an owned frame.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct TerminalOutputRef<'a> {
    /// The terminal.
    pub terminal: &'a TerminalId,
    /// See [`TerminalOutput::seq`].
    pub seq: u64,
    /// The output bytes.
    pub bytes: &'a [u8],
    /// The stream.
    pub stream: StreamId,
    /// The bootstrap this output follows.
    pub bootstrap: BootstrapId,
}

impl TerminalOutputRef<'_> {
    /// Appends the whole frame: byte for byte what [`Frame::TerminalOutput`] encodes.
    ///
    /// [`Frame::TerminalOutput`]: super::Frame::TerminalOutput
    pub fn encode(&self, out: &mut Vec<u8>) {
        encode_framed(out, FrameType::TERMINAL_OUTPUT, |out| {
            self.encode_body(out);
        });
    }

    /// Appends the frame up to and including its bytes: everything but the stream and
    /// bootstrap, which come last. Every viewer of one chunk gets the same head, so a server
    /// encodes it once and sends each viewer the head followed by its own [`Self::tail`].
    /// The length prefix already counts that tail.
    pub fn encode_head(&self, out: &mut Vec<u8>) {
        let start = out.len();
        encode_framed(out, FrameType::TERMINAL_OUTPUT, |out| {
            self.encode_shared_fields(out);
        });
        let length = (out.len() - start - LENGTH_LEN + TerminalOutputTail::LEN) as u32;
        out[start..start + LENGTH_LEN].copy_from_slice(&length.to_be_bytes());
    }

    /// The frame's last bytes, after [`Self::encode_head`]: the stream and bootstrap fields.
    pub fn tail(&self) -> TerminalOutputTail {
        TerminalOutputTail::new(self.stream, self.bootstrap)
    }

    fn encode_body(&self, out: &mut Vec<u8>) {
        self.encode_shared_fields(out);
        out.extend_from_slice(self.tail().as_bytes());
    }

    fn encode_shared_fields(&self, out: &mut Vec<u8>) {
        out.reserve(self.bytes.len() + 48);
        out.put_field_with(1, |o| self.terminal.write(o));
        out.put_field(2, &self.seq.to_be_bytes());
        out.put_field(3, self.bytes);
    }
}

/// The end of a TERMINAL_OUTPUT: fields 4 (stream) and 5 (bootstrap), the only part that
/// differs between the viewers of one chunk. Fixed-size, so a server keeps one per viewer
/// without allocating.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct TerminalOutputTail([u8; 2 * U64_FIELD_LEN]);

impl TerminalOutputTail {
    /// Its length: two fields of a one-byte id, the wire type, a one-byte length and a u64.
    pub const LEN: usize = 2 * U64_FIELD_LEN;

    /// The tail for one viewer's stream and bootstrap.
    pub fn new(stream: StreamId, bootstrap: BootstrapId) -> Self {
        let mut tail = [0; Self::LEN];
        let (stream_field, bootstrap_field) = tail.split_at_mut(U64_FIELD_LEN);
        u64_field(stream_field, 4, stream.get());
        u64_field(bootstrap_field, 5, bootstrap.get());
        Self(tail)
    }

    /// The encoded fields.
    pub fn as_bytes(&self) -> &[u8] {
        &self.0
    }
}

/// A field with a one-byte id holding a big-endian u64.
const U64_FIELD_LEN: usize = 3 + 8;

/// Writes a field with a one-byte id (< 0x80, so its varint is itself) holding `v`: what
/// [`Put::put_field`] writes for it.
fn u64_field(out: &mut [u8], id: u8, v: u64) {
    let (header, value) = out.split_at_mut(3);
    header.copy_from_slice(&[id, WIRE_TYPE_BYTES, 8]);
    value.copy_from_slice(&v.to_be_bytes());
}

/// A TERMINAL_OUTPUT decoded without copying its bytes: a client that hands output straight
/// to its own screen, or only looks for something in it, needs no owned frame per chunk.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct TerminalOutputView<'a> {
    /// The terminal.
    pub terminal: TerminalId,
    /// See [`TerminalOutput::seq`].
    pub seq: u64,
    /// The output bytes, borrowed from the frame.
    pub bytes: &'a [u8],
    /// The stream.
    pub stream: StreamId,
    /// The bootstrap this output follows.
    pub bootstrap: BootstrapId,
}

impl<'a> TerminalOutputView<'a> {
    /// Decodes one whole frame, checked as [`Frame::decode`] checks it, if it is a
    /// TERMINAL_OUTPUT; `Ok(None)` for a well-framed frame of any other type.
    ///
    /// [`Frame::decode`]: super::Frame::decode
    pub fn decode(frame: &'a [u8]) -> Result<Option<Self>> {
        let (frame_type, body) = split_frame(frame)?;
        if frame_type != FrameType::TERMINAL_OUTPUT {
            return Ok(None);
        }
        Self::decode_body(body)
            .map(Some)
            .map_err(|e| e.with_frame(frame_type))
    }

    fn decode_body(body: &'a [u8]) -> Result<Self> {
        let mut fields = Fields::new(body);
        let (mut terminal, mut seq, mut bytes, mut stream, mut bootstrap) =
            (None, None, None, None, None);
        while let Some((id, v)) = fields.next_field()? {
            match id {
                1 => once(&mut terminal, id, "terminal", || pos(v))?,
                2 => once(&mut seq, id, "seq", || u64_value(v))?,
                3 => once(&mut bytes, id, "bytes", || Ok(v))?,
                4 => once(&mut stream, id, "stream", || stream_value(v))?,
                5 => once(&mut bootstrap, id, "bootstrap", || bootstrap_value(v))?,
                _ => {}
            }
        }
        Ok(Self {
            terminal: required(terminal, "terminal")?,
            seq: required(seq, "seq")?,
            bytes: required(bytes, "bytes")?,
            stream: required(stream, "stream")?,
            bootstrap: required(bootstrap, "bootstrap")?,
        })
    }

    /// The owned frame, its bytes copied.
    pub fn into_owned(self) -> TerminalOutput {
        TerminalOutput {
            terminal: self.terminal,
            seq: self.seq,
            bytes: self.bytes.to_vec(),
            stream: self.stream,
            bootstrap: self.bootstrap,
        }
    }
}

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

impl Bell {
    pub(crate) fn decode_body(body: &[u8]) -> Result<Self> {
        let mut fields = Fields::new(body);
        let mut terminal = None;
        while let Some((id, v)) = fields.next_field()? {
            if id == 1 {
                once(&mut terminal, id, "terminal", || pos(v))?;
            }
        }
        Ok(Self {
            terminal: required(terminal, "terminal")?,
        })
    }
    pub(crate) fn encode_body(&self, out: &mut Vec<u8>) {
        out.put_field_with(1, |o| self.terminal.write(o));
    }
}
