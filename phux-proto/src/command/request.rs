//! [`Command`]: the request inside COMMAND field 2, its tag table, the small enums its
//! variants carry, and the `tag ‖ body` codec.

use super::apply_input::ApplyInput;
use super::put_file::PutFile;
use crate::event::Asked;
use crate::ids::TerminalId;
use crate::input::InputEvent;
use crate::macros::open_enum;

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
    /// 0x0e: re-exec the server. phux 0.8 gives it no body; beyond phux, the body may carry
    /// one `str`: the path of the binary to exec (absent = the server's own binary).
    Upgrade {
        /// The new binary's path; `None` = the binary the server was started from.
        binary: Option<String>,
    },
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
            Self::Upgrade { .. } => Self::UPGRADE,
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
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
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

// ---- codec ----

use crate::atoms::{Result, Wire, read_asked, unknown, write_asked};
use crate::decode_error::{DecodeError, DecodeErrorKind};
use crate::field::{Put, Reader};

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
            // An empty body is phux 0.8's UPGRADE; a `str` names the binary (ours).
            Self::UPGRADE => Self::Upgrade {
                binary: if r.is_empty() { None } else { Some(r.str()?) },
            },
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
            Self::Upgrade { binary } => {
                if let Some(binary) = binary {
                    out.put_len_bytes(binary.as_bytes());
                }
            }
            Self::Shutdown => {}
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
