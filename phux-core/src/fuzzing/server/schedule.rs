//! The `server_engine` schedule: what the clients, the PTYs, the writer and the clock do, and
//! the small vocabularies (slots, terminals, operations, payloads) its steps draw from.

use std::time::Duration;

use phux_proto::input::{InputEvent, KeyEvent, ModSet, PasteEvent, PasteTrust, PhysicalKey};
use phux_proto::{Frame, OperationId};

use crate::server::{LocalTerminal, ServerConfig};

/// Connection slots the schedule addresses (`conn % SLOTS`).
pub(super) const SLOTS: usize = 4;
/// Terminal ids the schedule addresses (`1 + terminal % TERMINALS`).
pub(super) const TERMINALS: u32 = 4;
/// Operation ids the `Apply` steps draw from, so retries and reuse are common.
pub(super) const OPERATIONS: u8 = 8;
/// The schedule's clock never passes this, so no dedupe record reaches its 10 min horizon and
/// any second write of an operation id is a bug, not a legitimate re-admission.
pub(super) const CLOCK_CAP: Duration = Duration::from_mins(9);

/// One schedule: what the clients, the PTYs, the writer and the clock do, in order.
#[derive(Clone, Debug, arbitrary::Arbitrary)]
pub struct ServerSchedule {
    /// Unless a multiple of 4: start from a live server (see [`prelude`]) so most schedules
    /// attack the deep states rather than rediscovering the handshake.
    pub prelude: u8,
    /// The steps.
    pub steps: Vec<ServerStep>,
}

/// Two local clients past HELLO, two running terminals, client 0 attached to terminal 1 and
/// client 1 to terminal 2.
pub fn prelude() -> Vec<ServerStep> {
    vec![
        ServerStep::Connect { conn: 0, kind: 0 },
        ServerStep::Hello { conn: 0 },
        ServerStep::Connect { conn: 1, kind: 0 },
        ServerStep::Hello { conn: 1 },
        ServerStep::Spawn {
            conn: 0,
            request_id: 1,
        },
        ServerStep::Spawn {
            conn: 1,
            request_id: 1,
        },
        ServerStep::SpawnDone { which: 0, ok: true },
        ServerStep::SpawnDone { which: 0, ok: true },
        ServerStep::Attach {
            conn: 0,
            terminal: 0,
            request_id: 2,
        },
        ServerStep::Attach {
            conn: 1,
            terminal: 1,
            request_id: 2,
        },
    ]
}

/// One step. Slots, terminals and operations are small numbers reduced modulo their ranges.
#[derive(Clone, Debug, arbitrary::Arbitrary)]
pub enum ServerStep {
    /// A peer connects to an empty slot: local, remote, or with foreign credentials.
    Connect {
        /// Slot.
        conn: u8,
        /// 0 local, 1 remote, 2 foreign.
        kind: u8,
    },
    /// The peer goes away.
    Disconnect {
        /// Slot.
        conn: u8,
    },
    /// A valid HELLO.
    Hello {
        /// Slot.
        conn: u8,
    },
    /// A valid SPAWN_TERMINAL in group 1.
    Spawn {
        /// Slot.
        conn: u8,
        /// Its request id.
        request_id: u32,
    },
    /// ATTACH_TERMINAL.
    Attach {
        /// Slot.
        conn: u8,
        /// Terminal.
        terminal: u8,
        /// Its request id.
        request_id: u32,
    },
    /// APPLY_INPUT with one of a few operation ids, each with a few payload variants (so
    /// retries, id reuse with another payload, a bad count and an unsafe paste all happen).
    Apply {
        /// Slot.
        conn: u8,
        /// Operation id (`% OPERATIONS`).
        op: u8,
        /// Payload variant.
        variant: u8,
        /// Terminal.
        terminal: u8,
        /// Its request id.
        request_id: u32,
    },
    /// ACQUIRE_INPUT.
    Acquire {
        /// Slot.
        conn: u8,
        /// Terminal.
        terminal: u8,
        /// Seize instead of cooperative.
        seize: bool,
        /// Lease lifetime.
        ttl_ms: u16,
        /// Its request id.
        request_id: u32,
    },
    /// Any frame, encoded.
    Frame {
        /// Slot.
        conn: u8,
        /// The frame.
        frame: Frame,
    },
    /// Raw bytes.
    Bytes {
        /// Slot.
        conn: u8,
        /// The bytes.
        bytes: Vec<u8>,
    },
    /// The transport took this many of the connection's queued bytes.
    Sent {
        /// Slot.
        conn: u8,
        /// Bytes (clamped to what is queued; `u16::MAX` means all of it).
        bytes: u16,
    },
    /// A pending spawn finished.
    SpawnDone {
        /// Which pending spawn (`% pending`).
        which: u8,
        /// Succeeded or failed.
        ok: bool,
    },
    /// The terminal's program wrote output.
    PtyOutput {
        /// Terminal.
        terminal: u8,
        /// The bytes.
        bytes: Vec<u8>,
    },
    /// A burst of output (`1 + chunks % 24` chunks of 4 KiB), past the 64 KiB output budget.
    PtyFlood {
        /// Terminal.
        terminal: u8,
        /// How many chunks.
        chunks: u8,
    },
    /// Many PINGs in one read (`16 × (1 + count % 80)`), past the 16 KiB control budget.
    PingFlood {
        /// Slot.
        conn: u8,
        /// How many, in sixteens.
        count: u8,
    },
    /// The writer finished the terminal's oldest pending job.
    WriteDone {
        /// Terminal.
        terminal: u8,
        /// 0 written, 1 not written, 2 unknown, 3 canonical refusal.
        outcome: u8,
    },
    /// A completion for a job id the engine may not know (a duplicate or a driver bug).
    StaleWriteDone {
        /// Terminal.
        terminal: u8,
        /// The job id.
        job: u64,
    },
    /// The terminal's child exited.
    ChildExited {
        /// Terminal.
        terminal: u8,
        /// Exit status; `None` = killed by a signal.
        status: Option<i32>,
    },
    /// The clock moves forward.
    Advance {
        /// Milliseconds.
        ms: u16,
    },
    /// A (possibly spurious) timeout.
    Timeout,
    /// SIGTERM.
    ShutdownRequested,
}

pub(super) fn config() -> ServerConfig {
    let mut config = ServerConfig::new(vec![0x5a; 16]);
    // Small budgets and limits so the fuzzer reaches them.
    config.default_size = (40, 12);
    config.scrollback_lines = 32;
    config.output_budget = 64 * 1024;
    config.control_budget = 16 * 1024;
    config.max_jobs_per_terminal = 8;
    config.max_terminals = 4;
    config
}

pub(super) fn op_id(op: u8) -> OperationId {
    let n = 0x7068_7578_0000_0000_0000_0000_0000_0000_u128 + u128::from(op % OPERATIONS) + 1;
    OperationId::from_u128(n).unwrap_or_else(|| unreachable!("non-zero"))
}

/// The events of payload `variant` of operation `op`.
pub(super) fn apply_events(op: u8, variant: u8) -> Vec<InputEvent> {
    let tag = format!("op{}v{}", op % OPERATIONS, variant % 5);
    match variant % 5 {
        0 | 1 => vec![InputEvent::Paste(PasteEvent {
            trust: PasteTrust::Trusted,
            data: tag.into_bytes(),
        })],
        2 => vec![InputEvent::Key(KeyEvent {
            text: Some(tag),
            ..KeyEvent::press(PhysicalKey::KEY_A, ModSet::NONE)
        })],
        // [INPUT.APPLY.3] No events: refused before any binding.
        3 => Vec::new(),
        // [INPUT.PASTE.SAFE.5] An untrusted paste with a LF: refused, nothing written.
        _ => vec![InputEvent::Paste(PasteEvent {
            trust: PasteTrust::Untrusted,
            data: format!("{tag}\n").into_bytes(),
        })],
    }
}

/// The whole frames at the start of `stream` that decode, how many bytes they and any
/// undecodable whole frames use, and whether a framing error ends the stream.
pub(super) fn walk(stream: &[u8]) -> (Vec<Frame>, usize, bool) {
    let mut frames = Vec::new();
    let mut used = 0;
    loop {
        let rest = &stream[used..];
        match phux_proto::framing::parse_header(rest) {
            Ok(None) => return (frames, used, false),
            Err(_) => return (frames, stream.len(), true),
            Ok(Some(h)) => {
                let Some(bytes) = rest.get(..h.frame_len()) else {
                    return (frames, used, false);
                };
                used += h.frame_len();
                match Frame::decode(bytes) {
                    Ok(frame) => frames.push(frame),
                    Err(e) if e.is_framing() => return (frames, stream.len(), true),
                    Err(_) => {}
                }
            }
        }
    }
}

pub(super) fn terminal(t: u8) -> LocalTerminal {
    LocalTerminal(1 + u32::from(t) % TERMINALS)
}

pub(super) fn slot(conn: u8) -> usize {
    usize::from(conn) % SLOTS
}
