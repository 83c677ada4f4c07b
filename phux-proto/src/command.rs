//! COMMAND bodies (`Command`), their outcomes (`CommandResult`, `CommandValue`) and the
//! records those carry. Each body is `tag u8 ‖ positional fields`, bounded by the TLV value.

use crate::error_code::ErrorCode;
use crate::event::Asked;
use crate::ids::{GroupId, OperationId, TerminalId};
use crate::input::InputEvent;
use crate::macros::open_enum;

/// The most events one APPLY_INPUT may carry: the reference's bound, so one acknowledged job
/// stays small enough to write as a single PTY job.
pub const MAX_APPLY_INPUT_EVENTS: usize = 256;

/// The largest APPLY_INPUT command value (tag byte included): the reference's 64 KiB bound,
/// which also caps what the dedupe ledger hashes per operation.
pub const MAX_APPLY_INPUT_LEN: usize = 64 * 1024;

/// The longest PUT_FILE extension: a file-name suffix, never a path.
pub const MAX_PUT_FILE_EXTENSION_LEN: usize = 16;

/// The largest PUT_FILE chunk: 8 MiB, half the frame cap.
pub const MAX_PUT_FILE_CHUNK_LEN: usize = 8 * 1024 * 1024;

/// The largest PUT_FILE upload (`offset + len` of any chunk): 64 MiB, so an upload cannot
/// fill the server's disk through one id.
pub const MAX_PUT_FILE_LEN: u64 = 64 * 1024 * 1024;

/// The deepest window layout tree we decode: far beyond any real split layout, and low enough
/// that the recursive decoder cannot exhaust the stack.
pub const MAX_LAYOUT_DEPTH: usize = 64;

/// A request inside COMMAND field 2.
#[derive(Clone, PartialEq, Eq, Debug)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub enum Command {
    /// 0x01: subscribe to a terminal's output (bootstrap then live output).
    AttachTerminal {
        /// The terminal.
        terminal: TerminalId,
    },
    /// 0x02: unsubscribe (idempotent).
    DetachTerminal {
        /// The terminal.
        terminal: TerminalId,
    },
    /// 0x03: kill one terminal.
    KillTerminal {
        /// The terminal.
        terminal: TerminalId,
    },
    /// 0x05: the server's state snapshot.
    GetState {
        /// What to snapshot (only SERVER exists).
        scope: StateScope,
    },
    /// 0x07: a terminal's screen as JSON.
    GetScreen {
        /// The terminal.
        terminal: TerminalId,
        /// History rows wanted: `None` = none, `Some(0)` = all retained, `Some(n)` = newest n.
        request_scrollback: Option<u32>,
        /// Whether to include styled cells (an optional trailing byte; absent = false).
        cells: bool,
    },
    /// 0x08: fire-and-forget input with an OK reply.
    RouteInput {
        /// The terminal.
        terminal: TerminalId,
        /// The event.
        event: InputEvent,
    },
    /// 0x09: kill several terminals (`u16 count ‖ TerminalId×count`).
    KillTerminals {
        /// The terminals.
        terminals: Vec<TerminalId>,
    },
    /// 0x0c: a terminal's full state as JSON.
    GetTerminalState {
        /// The terminal.
        terminal: TerminalId,
        /// Whether to include history (strict bool).
        include_scrollback: bool,
        /// At most this many history rows.
        max_scrollback_lines: u16,
    },
    /// 0x0d: per-terminal event filter (`u16 count ‖ u8×count`; empty = all).
    SubscribeTerminalEvents {
        /// The terminal.
        terminal: TerminalId,
        /// The event types wanted; unknown values are kept (our rule R5).
        event_types: Vec<TerminalEventType>,
    },
    /// 0x0e: re-exec the server (no body).
    Upgrade,
    /// 0x0f: take the terminal's input lease.
    AcquireInput {
        /// The terminal.
        terminal: TerminalId,
        /// Cooperative or seize.
        mode: AcquireMode,
        /// Lease lifetime; 0 = until released.
        ttl_ms: u32,
    },
    /// 0x10: give the input lease back.
    ReleaseInput {
        /// The terminal.
        terminal: TerminalId,
    },
    /// 0x11: signal the terminal's process group.
    SignalTerminal {
        /// The terminal.
        terminal: TerminalId,
        /// Which signal.
        signal: Signal,
    },
    /// 0x12: an agent's question, as TLV fields to the end of the value.
    ReportAsked {
        /// The terminal.
        terminal: TerminalId,
        /// The question.
        asked: Asked,
    },
    /// 0x13: detach every client (of one session, when given).
    DetachClients {
        /// The session name, if any.
        session: Option<String>,
    },
    /// 0x14: acknowledged, deduplicated input.
    ApplyInput(ApplyInput),
    /// 0x15: one chunk of a file upload.
    PutFile(PutFile),
    /// 0x16: stop the server (no body).
    Shutdown,
    /// 0x17: an agent's coarse state.
    ReportAgentState {
        /// The terminal.
        terminal: TerminalId,
        /// Working, blocked or done.
        state: AgentState,
    },
}

/// The command tag bytes, for dispatch, diagnostics and the text notation.
impl Command {
    /// ATTACH_TERMINAL.
    pub const ATTACH_TERMINAL: u8 = 0x01;
    /// DETACH_TERMINAL.
    pub const DETACH_TERMINAL: u8 = 0x02;
    /// KILL_TERMINAL.
    pub const KILL_TERMINAL: u8 = 0x03;
    /// GET_STATE.
    pub const GET_STATE: u8 = 0x05;
    /// GET_SCREEN.
    pub const GET_SCREEN: u8 = 0x07;
    /// ROUTE_INPUT.
    pub const ROUTE_INPUT: u8 = 0x08;
    /// KILL_TERMINALS.
    pub const KILL_TERMINALS: u8 = 0x09;
    /// GET_TERMINAL_STATE.
    pub const GET_TERMINAL_STATE: u8 = 0x0c;
    /// SUBSCRIBE_TERMINAL_EVENTS.
    pub const SUBSCRIBE_TERMINAL_EVENTS: u8 = 0x0d;
    /// UPGRADE.
    pub const UPGRADE: u8 = 0x0e;
    /// ACQUIRE_INPUT.
    pub const ACQUIRE_INPUT: u8 = 0x0f;
    /// RELEASE_INPUT.
    pub const RELEASE_INPUT: u8 = 0x10;
    /// SIGNAL_TERMINAL.
    pub const SIGNAL_TERMINAL: u8 = 0x11;
    /// REPORT_ASKED.
    pub const REPORT_ASKED: u8 = 0x12;
    /// DETACH_CLIENTS.
    pub const DETACH_CLIENTS: u8 = 0x13;
    /// APPLY_INPUT.
    pub const APPLY_INPUT: u8 = 0x14;
    /// PUT_FILE.
    pub const PUT_FILE: u8 = 0x15;
    /// SHUTDOWN.
    pub const SHUTDOWN: u8 = 0x16;
    /// REPORT_AGENT_STATE.
    pub const REPORT_AGENT_STATE: u8 = 0x17;

    /// The tag byte of this command.
    pub fn tag(&self) -> u8 {
        match self {
            Self::AttachTerminal { .. } => Self::ATTACH_TERMINAL,
            Self::DetachTerminal { .. } => Self::DETACH_TERMINAL,
            Self::KillTerminal { .. } => Self::KILL_TERMINAL,
            Self::GetState { .. } => Self::GET_STATE,
            Self::GetScreen { .. } => Self::GET_SCREEN,
            Self::RouteInput { .. } => Self::ROUTE_INPUT,
            Self::KillTerminals { .. } => Self::KILL_TERMINALS,
            Self::GetTerminalState { .. } => Self::GET_TERMINAL_STATE,
            Self::SubscribeTerminalEvents { .. } => Self::SUBSCRIBE_TERMINAL_EVENTS,
            Self::Upgrade => Self::UPGRADE,
            Self::AcquireInput { .. } => Self::ACQUIRE_INPUT,
            Self::ReleaseInput { .. } => Self::RELEASE_INPUT,
            Self::SignalTerminal { .. } => Self::SIGNAL_TERMINAL,
            Self::ReportAsked { .. } => Self::REPORT_ASKED,
            Self::DetachClients { .. } => Self::DETACH_CLIENTS,
            Self::ApplyInput(_) => Self::APPLY_INPUT,
            Self::PutFile(_) => Self::PUT_FILE,
            Self::Shutdown => Self::SHUTDOWN,
            Self::ReportAgentState { .. } => Self::REPORT_AGENT_STATE,
        }
    }

    /// The upper-case wire name of a command tag, if it is allocated.
    pub fn tag_name(tag: u8) -> Option<&'static str> {
        Some(match tag {
            Self::ATTACH_TERMINAL => "ATTACH_TERMINAL",
            Self::DETACH_TERMINAL => "DETACH_TERMINAL",
            Self::KILL_TERMINAL => "KILL_TERMINAL",
            Self::GET_STATE => "GET_STATE",
            Self::GET_SCREEN => "GET_SCREEN",
            Self::ROUTE_INPUT => "ROUTE_INPUT",
            Self::KILL_TERMINALS => "KILL_TERMINALS",
            Self::GET_TERMINAL_STATE => "GET_TERMINAL_STATE",
            Self::SUBSCRIBE_TERMINAL_EVENTS => "SUBSCRIBE_TERMINAL_EVENTS",
            Self::UPGRADE => "UPGRADE",
            Self::ACQUIRE_INPUT => "ACQUIRE_INPUT",
            Self::RELEASE_INPUT => "RELEASE_INPUT",
            Self::SIGNAL_TERMINAL => "SIGNAL_TERMINAL",
            Self::REPORT_ASKED => "REPORT_ASKED",
            Self::DETACH_CLIENTS => "DETACH_CLIENTS",
            Self::APPLY_INPUT => "APPLY_INPUT",
            Self::PUT_FILE => "PUT_FILE",
            Self::SHUTDOWN => "SHUTDOWN",
            Self::REPORT_AGENT_STATE => "REPORT_AGENT_STATE",
            _ => return None,
        })
    }

    /// The upper-case wire name of this command.
    pub fn name(&self) -> &'static str {
        Self::tag_name(self.tag()).unwrap_or("UNKNOWN")
    }
}

/// APPLY_INPUT (0x14): `operation_id[16] ‖ TerminalId ‖ u16 count ‖ InputEvent×count`.
///
/// Decoding enforces count ≤ [`MAX_APPLY_INPUT_EVENTS`] and the whole command value ≤
/// [`MAX_APPLY_INPUT_LEN`]; a count of 0 decodes (the server refuses it with INVALID_COMMAND).
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub struct ApplyInput {
    /// The client-chosen, non-zero operation id (the dedupe key).
    pub operation_id: OperationId,
    /// The terminal.
    pub terminal: TerminalId,
    /// The events, written to the PTY as one job.
    pub events: Vec<InputEvent>,
}

/// PUT_FILE (0x15): `upload_id[16] ‖ TerminalId ‖ extension str ‖ offset u64 ‖ data bytes ‖
/// final u8 ‖ sha256 presence u8 ‖ [32 bytes]`.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub struct PutFile {
    /// The upload's id.
    pub upload_id: [u8; 16],
    /// The terminal the file is for.
    pub terminal: TerminalId,
    /// The file-name extension (at most [`MAX_PUT_FILE_EXTENSION_LEN`] bytes).
    pub extension: String,
    /// Where this chunk starts.
    pub offset: u64,
    /// This chunk (at most [`MAX_PUT_FILE_CHUNK_LEN`]; `offset + len ≤ MAX_PUT_FILE_LEN`).
    pub data: Vec<u8>,
    /// Whether this is the last chunk (strict bool).
    pub is_final: bool,
    /// The whole file's SHA-256, on the final chunk.
    pub sha256: Option<[u8; 32]>,
}

/// GET_STATE's scope (u8; only SERVER exists, other values are decode errors).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub enum StateScope {
    /// 0: the whole server.
    #[default]
    Server,
}

/// ACQUIRE_INPUT's mode (u8; other values are decode errors).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub enum AcquireMode {
    /// 0: fail with INPUT_LEASE_HELD if another client holds the lease.
    Cooperative,
    /// 1: take the lease from any holder.
    Seize,
}

/// SIGNAL_TERMINAL's signal (u8; other values are decode errors).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub enum Signal {
    /// 0: SIGINT.
    Interrupt,
    /// 1: SIGSTOP.
    Freeze,
    /// 2: SIGCONT.
    Resume,
    /// 3: SIGTERM.
    Terminate,
    /// 4: SIGKILL.
    Kill,
}

/// REPORT_AGENT_STATE's state (u8; other values are decode errors).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub enum AgentState {
    /// 0.
    Working,
    /// 1.
    Blocked,
    /// 2.
    Done,
}

open_enum! {
    /// A per-terminal event type (u8) in SUBSCRIBE_TERMINAL_EVENTS. Open (our rule R5): unknown
    /// values are kept and re-encoded; the filter ignores them.
    pub struct TerminalEventType(u8);
    /// Shell state changed.
    SHELL_STATE_CHANGED = 0,
    /// A command started.
    COMMAND_STARTED = 1,
    /// A command ended.
    COMMAND_ENDED = 2,
    /// Output arrived (the server maps `idle` here).
    OUTPUT_RECEIVED = 3,
    /// A prompt is ready.
    PROMPT_READY = 4,
    /// The grid changed (`dirty`).
    GRID_CHANGED = 5,
    /// The working directory changed.
    CWD_CHANGED = 6,
}

/// The outcome inside COMMAND_RESULT field 2 (tag u8).
#[derive(Clone, PartialEq, Eq, Debug)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub enum CommandResult {
    /// 0x00: done, nothing to return.
    Ok,
    /// 0x01: done, with a value.
    OkWith(CommandValue),
    /// 0x02: refused or failed: `code u16 ‖ message str`.
    Error {
        /// The code; unknown codes are kept (our rule R5).
        code: ErrorCode,
        /// Human-readable text.
        message: String,
    },
}

/// A command's returned value (tag u8).
#[derive(Clone, PartialEq, Eq, Debug)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub enum CommandValue {
    /// 0x00.
    TerminalId(TerminalId),
    /// 0x01.
    GroupId(GroupId),
    /// 0x02: GET_STATE's snapshot.
    State(SessionSnapshot),
    /// 0x03: a JSON document (GET_SCREEN, GET_TERMINAL_STATE).
    Json(String),
    /// 0x04.
    Bytes(Vec<u8>),
    /// 0x05: PUT_FILE progress: `next_offset u64 ‖ optional<str> path`.
    FileUpload {
        /// The next offset the server expects.
        next_offset: u64,
        /// Where the file landed, once complete.
        path: Option<String>,
    },
}

/// GET_STATE's reply (our rule R21): `u32 count ‖ SessionInfo×count ‖ u32 count ‖
/// WindowInfo×count ‖ u32 count ‖ TerminalInfo×count ‖ focused_session u32 ‖ focused_window
/// u32 ‖ focused_pane TerminalId`.
#[derive(Clone, PartialEq, Eq, Debug)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct SessionSnapshot {
    /// Sessions (we send none).
    pub sessions: Vec<SessionInfo>,
    /// Windows (we send none).
    pub windows: Vec<WindowInfo>,
    /// Every live terminal.
    pub terminals: Vec<TerminalInfo>,
    /// The focused session (0).
    pub focused_session: u32,
    /// The focused window (0).
    pub focused_window: u32,
    /// The focused pane (LOCAL 0).
    pub focused_pane: TerminalId,
}

/// One session in a snapshot: `id u32 ‖ name str ‖ active_window optional<u32> ‖ created_at
/// i64 ‖ window_count u16 ‖ attached_client_count u16`.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct SessionInfo {
    /// Session id.
    pub id: u32,
    /// Session name.
    pub name: String,
    /// Active window, if any.
    pub active_window: Option<u32>,
    /// Creation time (seconds since the Unix epoch).
    pub created_at: i64,
    /// Windows in the session.
    pub window_count: u16,
    /// Clients attached.
    pub attached_client_count: u16,
}

/// One window in a snapshot: `id u32 ‖ session_id u32 ‖ index u16 ‖ name str ‖ active_pane
/// optional<TerminalId> ‖ layout optional<LayoutNode>`.
#[derive(Clone, PartialEq, Eq, Debug)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct WindowInfo {
    /// Window id.
    pub id: u32,
    /// Owning session.
    pub session_id: u32,
    /// Position in the session.
    pub index: u16,
    /// Window name.
    pub name: String,
    /// Active pane, if any.
    pub active_pane: Option<TerminalId>,
    /// Split layout, if any.
    pub layout: Option<LayoutNode>,
}

/// A split direction (u8; other values are decode errors).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub enum SplitDirection {
    /// 0.
    Horizontal,
    /// 1.
    Vertical,
}

/// A window layout tree: `00 ‖ TerminalId` (leaf) or `01 ‖ dir u8 ‖ ratio f32 ‖ left ‖
/// right`. At most [`MAX_LAYOUT_DEPTH`] deep. Equality compares the ratio's bit pattern.
#[derive(Clone, Debug)]
pub enum LayoutNode {
    /// A pane.
    Leaf(TerminalId),
    /// A split of two subtrees.
    Split {
        /// Which way.
        direction: SplitDirection,
        /// The left/top share.
        ratio: f32,
        /// Left or top.
        left: Box<Self>,
        /// Right or bottom.
        right: Box<Self>,
    },
}

impl PartialEq for LayoutNode {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (Self::Leaf(a), Self::Leaf(b)) => a == b,
            (
                Self::Split {
                    direction: d1,
                    ratio: r1,
                    left: l1,
                    right: g1,
                },
                Self::Split {
                    direction: d2,
                    ratio: r2,
                    left: l2,
                    right: g2,
                },
            ) => d1 == d2 && r1.to_bits() == r2.to_bits() && l1 == l2 && g1 == g2,
            _ => false,
        }
    }
}

impl Eq for LayoutNode {}

impl LayoutNode {
    /// The tree's depth (a leaf is 1).
    pub fn depth(&self) -> usize {
        match self {
            Self::Leaf(_) => 1,
            Self::Split { left, right, .. } => 1 + left.depth().max(right.depth()),
        }
    }
}

#[cfg(feature = "arbitrary")]
impl LayoutNode {
    fn arbitrary_depth(
        u: &mut arbitrary::Unstructured<'_>,
        depth: usize,
    ) -> arbitrary::Result<Self> {
        if depth >= MAX_LAYOUT_DEPTH || !u.arbitrary::<bool>()? {
            return Ok(Self::Leaf(u.arbitrary()?));
        }
        Ok(Self::Split {
            direction: u.arbitrary()?,
            ratio: u.arbitrary()?,
            left: Box::new(Self::arbitrary_depth(u, depth + 1)?),
            right: Box::new(Self::arbitrary_depth(u, depth + 1)?),
        })
    }
}

#[cfg(feature = "arbitrary")]
impl<'a> arbitrary::Arbitrary<'a> for LayoutNode {
    fn arbitrary(u: &mut arbitrary::Unstructured<'a>) -> arbitrary::Result<Self> {
        Self::arbitrary_depth(u, 1)
    }
}

/// One terminal in a snapshot: `TerminalId ‖ window_id u32 ‖ cols u16 ‖ rows u16 ‖ title
/// optional<str> ‖ cwd optional<str>`.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct TerminalInfo {
    /// The terminal.
    pub terminal: TerminalId,
    /// Its window (0: we have none).
    pub window_id: u32,
    /// Columns.
    pub cols: u16,
    /// Rows.
    pub rows: u16,
    /// OSC title, when set.
    pub title: Option<String>,
    /// Working directory, when known.
    pub cwd: Option<String>,
}

/// The encoded length of a TerminalId.
pub(crate) fn terminal_id_len(id: &TerminalId) -> usize {
    match id {
        TerminalId::Local(_) => 5,
        TerminalId::Satellite { host, .. } => 1 + 4 + host.len() + 4,
    }
}

/// The encoded length of an InputEvent, tag byte included.
pub(crate) fn input_event_len(event: &InputEvent) -> usize {
    1 + match event {
        InputEvent::Key(key) => {
            13 + 1
                + key.text.as_ref().map_or(0, |t| 4 + t.len())
                + 1
                + if key.unshifted_codepoint.is_some() {
                    4
                } else {
                    0
                }
        }
        InputEvent::Mouse(_) => 26,
        InputEvent::Focus(_) => 1,
        InputEvent::Paste(paste) => 1 + 4 + paste.data.len(),
    }
}

impl ApplyInput {
    /// The length of the encoded command value, tag byte included (what
    /// [`MAX_APPLY_INPUT_LEN`] bounds).
    pub fn value_len(&self) -> usize {
        1 + 16
            + terminal_id_len(&self.terminal)
            + 2
            + self.events.iter().map(input_event_len).sum::<usize>()
    }
}

#[cfg(feature = "arbitrary")]
impl<'a> arbitrary::Arbitrary<'a> for ApplyInput {
    fn arbitrary(u: &mut arbitrary::Unstructured<'a>) -> arbitrary::Result<Self> {
        let mut value = Self {
            operation_id: u.arbitrary()?,
            terminal: u.arbitrary()?,
            events: Vec::new(),
        };
        let mut len = value.value_len();
        for event in u.arbitrary_iter::<InputEvent>()? {
            let event = event?;
            let event_len = input_event_len(&event);
            if value.events.len() == MAX_APPLY_INPUT_EVENTS || len + event_len > MAX_APPLY_INPUT_LEN
            {
                break;
            }
            len += event_len;
            value.events.push(event);
        }
        Ok(value)
    }
}

#[cfg(feature = "arbitrary")]
impl<'a> arbitrary::Arbitrary<'a> for PutFile {
    fn arbitrary(u: &mut arbitrary::Unstructured<'a>) -> arbitrary::Result<Self> {
        let mut extension: String = u.arbitrary()?;
        while extension.len() > MAX_PUT_FILE_EXTENSION_LEN {
            extension.pop();
        }
        let mut data: Vec<u8> = u.arbitrary()?;
        data.truncate(MAX_PUT_FILE_CHUNK_LEN);
        let offset = u.int_in_range(0..=MAX_PUT_FILE_LEN - data.len() as u64)?;
        Ok(Self {
            upload_id: u.arbitrary()?,
            terminal: u.arbitrary()?,
            extension,
            offset,
            data,
            is_final: u.arbitrary()?,
            sha256: u.arbitrary()?,
        })
    }
}

// ---- codec ----

use crate::atoms::{Result, Wire, read_asked, unknown, write_asked};
use crate::decode_error::{DecodeError, DecodeErrorKind};
use crate::field::{Put, Reader};

fn limit(what: &'static str, limit: usize, actual: usize) -> DecodeError {
    DecodeError::new(DecodeErrorKind::LimitExceeded {
        what,
        limit: limit as u64,
        actual: actual as u64,
    })
}

impl Command {
    /// Decodes a whole command value (`tag ‖ body`); trailing bytes are skipped (rule R4).
    pub(crate) fn decode_value(value: &[u8]) -> Result<Self> {
        let mut r = Reader::new(value);
        let tag = r.u8()?;
        let r = &mut r;
        Ok(match tag {
            Self::ATTACH_TERMINAL => Self::AttachTerminal {
                terminal: TerminalId::read(r)?,
            },
            Self::DETACH_TERMINAL => Self::DetachTerminal {
                terminal: TerminalId::read(r)?,
            },
            Self::KILL_TERMINAL => Self::KillTerminal {
                terminal: TerminalId::read(r)?,
            },
            Self::GET_STATE => Self::GetState {
                scope: match r.u8()? {
                    0 => StateScope::Server,
                    v => return Err(unknown("StateScope", v)),
                },
            },
            Self::GET_SCREEN => Self::GetScreen {
                terminal: TerminalId::read(r)?,
                request_scrollback: r.optional(Reader::u32)?,
                // [SCREEN.GET.1] The cells byte is optional trailing data: absent = false.
                cells: if r.is_empty() { false } else { r.bool()? },
            },
            Self::ROUTE_INPUT => Self::RouteInput {
                terminal: TerminalId::read(r)?,
                event: InputEvent::read(r)?,
            },
            Self::KILL_TERMINALS => {
                let count = usize::from(r.u16()?);
                let mut terminals = Vec::with_capacity(r.capacity_for(count, 5));
                for _ in 0..count {
                    terminals.push(TerminalId::read(r)?);
                }
                Self::KillTerminals { terminals }
            }
            Self::GET_TERMINAL_STATE => Self::GetTerminalState {
                terminal: TerminalId::read(r)?,
                include_scrollback: r.bool()?,
                max_scrollback_lines: r.u16()?,
            },
            Self::SUBSCRIBE_TERMINAL_EVENTS => {
                let terminal = TerminalId::read(r)?;
                let count = usize::from(r.u16()?);
                // [SUBSCRIBE.TERMINAL.3] Unknown event types are kept (rule R5).
                let event_types = r
                    .take(count)?
                    .iter()
                    .copied()
                    .map(TerminalEventType)
                    .collect();
                Self::SubscribeTerminalEvents {
                    terminal,
                    event_types,
                }
            }
            Self::UPGRADE => Self::Upgrade,
            Self::ACQUIRE_INPUT => Self::AcquireInput {
                terminal: TerminalId::read(r)?,
                mode: match r.u8()? {
                    0 => AcquireMode::Cooperative,
                    1 => AcquireMode::Seize,
                    v => return Err(unknown("AcquireMode", v)),
                },
                ttl_ms: r.u32()?,
            },
            Self::RELEASE_INPUT => Self::ReleaseInput {
                terminal: TerminalId::read(r)?,
            },
            Self::SIGNAL_TERMINAL => Self::SignalTerminal {
                terminal: TerminalId::read(r)?,
                signal: match r.u8()? {
                    0 => Signal::Interrupt,
                    1 => Signal::Freeze,
                    2 => Signal::Resume,
                    3 => Signal::Terminate,
                    4 => Signal::Kill,
                    v => return Err(unknown("Signal", v)),
                },
            },
            Self::REPORT_ASKED => Self::ReportAsked {
                terminal: TerminalId::read(r)?,
                asked: read_asked(r.rest())?,
            },
            Self::DETACH_CLIENTS => Self::DetachClients {
                session: r.optional(Reader::str)?,
            },
            Self::APPLY_INPUT => Self::ApplyInput(ApplyInput::read_body(value.len(), r)?),
            Self::PUT_FILE => Self::PutFile(PutFile::read_body(r)?),
            Self::SHUTDOWN => Self::Shutdown,
            Self::REPORT_AGENT_STATE => Self::ReportAgentState {
                terminal: TerminalId::read(r)?,
                state: match r.u8()? {
                    0 => AgentState::Working,
                    1 => AgentState::Blocked,
                    2 => AgentState::Done,
                    v => return Err(unknown("AgentState", v)),
                },
            },
            // [ERROR.COMMAND.1] Unallocated and retired tags are INVALID_COMMAND (rule R7).
            tag => return Err(DecodeError::new(DecodeErrorKind::UnknownCommand { tag })),
        })
    }

    /// Writes the command value (`tag ‖ body`).
    pub(crate) fn encode_value(&self, out: &mut Vec<u8>) {
        out.put_u8(self.tag());
        match self {
            Self::AttachTerminal { terminal }
            | Self::DetachTerminal { terminal }
            | Self::KillTerminal { terminal }
            | Self::ReleaseInput { terminal } => terminal.write(out),
            Self::GetState { scope } => out.put_u8(match scope {
                StateScope::Server => 0,
            }),
            Self::GetScreen {
                terminal,
                request_scrollback,
                cells,
            } => {
                terminal.write(out);
                out.put_optional(*request_scrollback, Put::put_u32);
                out.put_bool(*cells);
            }
            Self::RouteInput { terminal, event } => {
                terminal.write(out);
                event.write(out);
            }
            Self::KillTerminals { terminals } => {
                out.put_u16(terminals.len() as u16);
                for t in terminals {
                    t.write(out);
                }
            }
            Self::GetTerminalState {
                terminal,
                include_scrollback,
                max_scrollback_lines,
            } => {
                terminal.write(out);
                out.put_bool(*include_scrollback);
                out.put_u16(*max_scrollback_lines);
            }
            Self::SubscribeTerminalEvents {
                terminal,
                event_types,
            } => {
                terminal.write(out);
                out.put_u16(event_types.len() as u16);
                out.extend(event_types.iter().map(|t| t.0));
            }
            Self::Upgrade | Self::Shutdown => {}
            Self::AcquireInput {
                terminal,
                mode,
                ttl_ms,
            } => {
                terminal.write(out);
                out.put_u8(match mode {
                    AcquireMode::Cooperative => 0,
                    AcquireMode::Seize => 1,
                });
                out.put_u32(*ttl_ms);
            }
            Self::SignalTerminal { terminal, signal } => {
                terminal.write(out);
                out.put_u8(*signal as u8);
            }
            Self::ReportAsked { terminal, asked } => {
                terminal.write(out);
                write_asked(asked, out);
            }
            Self::DetachClients { session } => {
                out.put_optional(session.as_deref(), |o, s| o.put_len_bytes(s.as_bytes()));
            }
            Self::ApplyInput(apply) => apply.write_body(out),
            Self::PutFile(put) => put.write_body(out),
            Self::ReportAgentState { terminal, state } => {
                terminal.write(out);
                out.put_u8(*state as u8);
            }
        }
    }
}

impl ApplyInput {
    fn read_body(value_len: usize, r: &mut Reader<'_>) -> Result<Self> {
        // [INPUT.APPLY.1] The whole command value is at most 64 KiB.
        if value_len > MAX_APPLY_INPUT_LEN {
            return Err(limit("APPLY_INPUT length", MAX_APPLY_INPUT_LEN, value_len));
        }
        // [INPUT.APPLY.2] The operation id is not all-zero.
        let operation_id = OperationId::new(r.array()?)
            .ok_or_else(|| DecodeError::new(DecodeErrorKind::ZeroOperationId))?;
        let terminal = TerminalId::read(r)?;
        let count = usize::from(r.u16()?);
        // [INPUT.APPLY.3] At most 256 events; 0 decodes (the server refuses it later).
        if count > MAX_APPLY_INPUT_EVENTS {
            return Err(limit("APPLY_INPUT events", MAX_APPLY_INPUT_EVENTS, count));
        }
        let mut events = Vec::with_capacity(r.capacity_for(count, 2));
        for _ in 0..count {
            events.push(InputEvent::read(r)?);
        }
        Ok(Self {
            operation_id,
            terminal,
            events,
        })
    }

    pub(crate) fn write_body(&self, out: &mut Vec<u8>) {
        out.put_bytes(&self.operation_id.bytes());
        self.terminal.write(out);
        out.put_u16(self.events.len() as u16);
        for e in &self.events {
            e.write(out);
        }
    }
}

impl PutFile {
    fn read_body(r: &mut Reader<'_>) -> Result<Self> {
        let upload_id = r.array()?;
        let terminal = TerminalId::read(r)?;
        let extension = r.str()?;
        if extension.len() > MAX_PUT_FILE_EXTENSION_LEN {
            return Err(limit(
                "PUT_FILE extension length",
                MAX_PUT_FILE_EXTENSION_LEN,
                extension.len(),
            ));
        }
        let offset = r.u64()?;
        let data = r.bytes_ref()?;
        if data.len() > MAX_PUT_FILE_CHUNK_LEN {
            return Err(limit(
                "PUT_FILE chunk length",
                MAX_PUT_FILE_CHUNK_LEN,
                data.len(),
            ));
        }
        let end = offset.saturating_add(data.len() as u64);
        if end > MAX_PUT_FILE_LEN {
            return Err(DecodeError::new(DecodeErrorKind::LimitExceeded {
                what: "PUT_FILE end offset",
                limit: MAX_PUT_FILE_LEN,
                actual: end,
            }));
        }
        Ok(Self {
            upload_id,
            terminal,
            extension,
            offset,
            data: data.to_vec(),
            is_final: r.bool()?,
            sha256: r.optional(Reader::array)?,
        })
    }

    fn write_body(&self, out: &mut Vec<u8>) {
        out.put_bytes(&self.upload_id);
        self.terminal.write(out);
        out.put_len_bytes(self.extension.as_bytes());
        out.put_u64(self.offset);
        out.put_len_bytes(&self.data);
        out.put_bool(self.is_final);
        out.put_optional(self.sha256.as_ref(), |o, s| o.put_bytes(s));
    }
}

impl Wire for CommandResult {
    fn read(r: &mut Reader<'_>) -> Result<Self> {
        match r.u8()? {
            0 => Ok(Self::Ok),
            1 => Ok(Self::OkWith(CommandValue::read(r)?)),
            2 => Ok(Self::Error {
                code: ErrorCode(r.u16()?),
                message: r.str()?,
            }),
            tag => Err(unknown("CommandResult", tag)),
        }
    }
    fn write(&self, out: &mut Vec<u8>) {
        match self {
            Self::Ok => out.put_u8(0),
            Self::OkWith(value) => {
                out.put_u8(1);
                value.write(out);
            }
            Self::Error { code, message } => {
                out.put_u8(2);
                out.put_u16(code.0);
                out.put_len_bytes(message.as_bytes());
            }
        }
    }
}

impl Wire for CommandValue {
    fn read(r: &mut Reader<'_>) -> Result<Self> {
        match r.u8()? {
            0 => Ok(Self::TerminalId(TerminalId::read(r)?)),
            1 => Ok(Self::GroupId(GroupId(r.u32()?))),
            2 => Ok(Self::State(SessionSnapshot::read(r)?)),
            3 => Ok(Self::Json(r.str()?)),
            4 => Ok(Self::Bytes(r.bytes()?)),
            5 => Ok(Self::FileUpload {
                next_offset: r.u64()?,
                path: r.optional(Reader::str)?,
            }),
            tag => Err(unknown("CommandValue", tag)),
        }
    }
    fn write(&self, out: &mut Vec<u8>) {
        match self {
            Self::TerminalId(id) => {
                out.put_u8(0);
                id.write(out);
            }
            Self::GroupId(id) => {
                out.put_u8(1);
                out.put_u32(id.0);
            }
            Self::State(snapshot) => {
                out.put_u8(2);
                snapshot.write(out);
            }
            Self::Json(s) => {
                out.put_u8(3);
                out.put_len_bytes(s.as_bytes());
            }
            Self::Bytes(b) => {
                out.put_u8(4);
                out.put_len_bytes(b);
            }
            Self::FileUpload { next_offset, path } => {
                out.put_u8(5);
                out.put_u64(*next_offset);
                out.put_optional(path.as_deref(), |o, p| o.put_len_bytes(p.as_bytes()));
            }
        }
    }
}

/// A u32-counted list; capacity bounded by what the input could hold.
fn read_list<T>(
    r: &mut Reader<'_>,
    min_len: usize,
    read: impl Fn(&mut Reader<'_>) -> Result<T>,
) -> Result<Vec<T>> {
    let count = r.u32()? as usize;
    let mut list = Vec::with_capacity(r.capacity_for(count, min_len));
    for _ in 0..count {
        list.push(read(r)?);
    }
    Ok(list)
}

fn write_list<T>(out: &mut Vec<u8>, list: &[T], write: impl Fn(&T, &mut Vec<u8>)) {
    out.put_u32(list.len() as u32);
    for item in list {
        write(item, out);
    }
}

impl Wire for SessionSnapshot {
    fn read(r: &mut Reader<'_>) -> Result<Self> {
        Ok(Self {
            sessions: read_list(r, 21, SessionInfo::read)?,
            windows: read_list(r, 16, WindowInfo::read)?,
            terminals: read_list(r, 15, TerminalInfo::read)?,
            focused_session: r.u32()?,
            focused_window: r.u32()?,
            focused_pane: TerminalId::read(r)?,
        })
    }
    fn write(&self, out: &mut Vec<u8>) {
        write_list(out, &self.sessions, SessionInfo::write);
        write_list(out, &self.windows, WindowInfo::write);
        write_list(out, &self.terminals, TerminalInfo::write);
        out.put_u32(self.focused_session);
        out.put_u32(self.focused_window);
        self.focused_pane.write(out);
    }
}

impl Wire for SessionInfo {
    fn read(r: &mut Reader<'_>) -> Result<Self> {
        Ok(Self {
            id: r.u32()?,
            name: r.str()?,
            active_window: r.optional(Reader::u32)?,
            created_at: r.i64()?,
            window_count: r.u16()?,
            attached_client_count: r.u16()?,
        })
    }
    fn write(&self, out: &mut Vec<u8>) {
        out.put_u32(self.id);
        out.put_len_bytes(self.name.as_bytes());
        out.put_optional(self.active_window, Put::put_u32);
        out.put_i64(self.created_at);
        out.put_u16(self.window_count);
        out.put_u16(self.attached_client_count);
    }
}

impl Wire for WindowInfo {
    fn read(r: &mut Reader<'_>) -> Result<Self> {
        Ok(Self {
            id: r.u32()?,
            session_id: r.u32()?,
            index: r.u16()?,
            name: r.str()?,
            active_pane: r.optional(TerminalId::read)?,
            layout: r.optional(|r| LayoutNode::read_depth(r, 1))?,
        })
    }
    fn write(&self, out: &mut Vec<u8>) {
        out.put_u32(self.id);
        out.put_u32(self.session_id);
        out.put_u16(self.index);
        out.put_len_bytes(self.name.as_bytes());
        out.put_optional(self.active_pane.as_ref(), |o, t| t.write(o));
        out.put_optional(self.layout.as_ref(), |o, l| l.write(o));
    }
}

impl LayoutNode {
    fn read_depth(r: &mut Reader<'_>, depth: usize) -> Result<Self> {
        // [FIELD.LIMIT.1] Layout trees are bounded so decoding cannot exhaust the stack.
        if depth > MAX_LAYOUT_DEPTH {
            return Err(limit("layout depth", MAX_LAYOUT_DEPTH, depth));
        }
        match r.u8()? {
            0 => Ok(Self::Leaf(TerminalId::read(r)?)),
            1 => Ok(Self::Split {
                direction: match r.u8()? {
                    0 => SplitDirection::Horizontal,
                    1 => SplitDirection::Vertical,
                    v => return Err(unknown("SplitDirection", v)),
                },
                ratio: r.f32()?,
                left: Box::new(Self::read_depth(r, depth + 1)?),
                right: Box::new(Self::read_depth(r, depth + 1)?),
            }),
            tag => Err(unknown("LayoutNode", tag)),
        }
    }

    fn write(&self, out: &mut Vec<u8>) {
        match self {
            Self::Leaf(id) => {
                out.put_u8(0);
                id.write(out);
            }
            Self::Split {
                direction,
                ratio,
                left,
                right,
            } => {
                out.put_u8(1);
                out.put_u8(*direction as u8);
                out.put_u32(ratio.to_bits());
                left.write(out);
                right.write(out);
            }
        }
    }
}

impl Wire for TerminalInfo {
    fn read(r: &mut Reader<'_>) -> Result<Self> {
        Ok(Self {
            terminal: TerminalId::read(r)?,
            window_id: r.u32()?,
            cols: r.u16()?,
            rows: r.u16()?,
            title: r.optional(Reader::str)?,
            cwd: r.optional(Reader::str)?,
        })
    }
    fn write(&self, out: &mut Vec<u8>) {
        self.terminal.write(out);
        out.put_u32(self.window_id);
        out.put_u16(self.cols);
        out.put_u16(self.rows);
        out.put_optional(self.title.as_deref(), |o, s| o.put_len_bytes(s.as_bytes()));
        out.put_optional(self.cwd.as_deref(), |o, s| o.put_len_bytes(s.as_bytes()));
    }
}
