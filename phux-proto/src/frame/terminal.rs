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
