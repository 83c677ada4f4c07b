//! The `server_engine` fuzz target: an arbitrary schedule against [`ServerEngine`] through a
//! small in-process driver that plays the clients, the PTYs, the writer and the clock.
//!
//! Invariants checked as the schedule runs and at its end:
//! - nothing panics, and every byte the server sends decodes as a frame;
//! - [INPUT.DEDUPE.2] no operation id's job is handed to the writer twice;
//! - [QUEUE.BOUND.1] a connection's queued bytes stay within the output budget plus the
//!   control budget plus one maximal frame, and match what the driver was asked to send;
//! - every COMMAND the server decoded is answered (COMMAND_RESULT or ERROR with its request id)
//!   or its connection closed, once the clock has passed the 5 s completion bound.

use std::collections::{BTreeMap, VecDeque};
use std::time::Duration;

use phux_proto::command::{AcquireMode, ApplyInput, Command};
use phux_proto::frame::{
    ClientCapabilities, CommandFrame, Hello, ProtocolVersion, SpawnTerminal, TerminalSize,
};
use phux_proto::framing::MAX_FRAME_LEN;
use phux_proto::input::{InputEvent, KeyEvent, ModSet, PasteEvent, PasteTrust, PhysicalKey};
use phux_proto::{Frame, GroupId, OperationId, TerminalId};

use crate::framing::FrameDecoder;
use crate::server::{
    COMPLETION_BOUND, ConnId, JobId, LocalTerminal, PeerInfo, ServerAction, ServerConfig,
    ServerEngine, ServerEvent, WriteOutcome,
};
use crate::time::Instant;

/// Connection slots the schedule addresses (`conn % SLOTS`).
const SLOTS: usize = 4;
/// Terminal ids the schedule addresses (`1 + terminal % TERMINALS`).
const TERMINALS: u32 = 4;
/// Operation ids the `Apply` steps draw from, so retries and reuse are common.
const OPERATIONS: u8 = 8;
/// The schedule's clock never passes this, so no dedupe record reaches its 10 min horizon and
/// any second write of an operation id is a bug, not a legitimate re-admission.
const CLOCK_CAP: Duration = Duration::from_mins(9);

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

/// The driver's view of one connection.
struct Client {
    id: ConnId,
    /// Bytes sent that do not form a whole frame yet: mirrors the engine's decoder (the
    /// `frame_decode` target checks that a header walk and `FrameDecoder` agree).
    pending: Vec<u8>,
    /// A framing error fused the stream: the server decodes nothing more from it.
    fused: bool,
    /// The server's bytes as this client reads them.
    inbound: FrameDecoder,
    /// Bytes the engine asked to send and the driver has not reported sent.
    unsent: usize,
    /// Request ids of COMMANDs the server decoded, with multiplicity.
    asked: BTreeMap<u32, usize>,
    /// Request ids answered by COMMAND_RESULT or ERROR, with multiplicity.
    answered: BTreeMap<u32, usize>,
    /// The engine asked for the connection to be closed.
    closed: bool,
}

/// The in-process driver.
struct Driver {
    engine: ServerEngine,
    config: ServerConfig,
    now: Instant,
    clients: [Option<Client>; SLOTS],
    next_conn: u64,
    pending_spawns: Vec<LocalTerminal>,
    /// Per terminal, the jobs handed to the writer and not completed yet.
    writes: BTreeMap<LocalTerminal, VecDeque<JobId>>,
    /// Writes seen since the current step began.
    writes_this_step: usize,
    /// How many jobs each `Apply` operation id had written.
    written_per_op: BTreeMap<u8, usize>,
    /// Closes to report as disconnects once the actions are drained.
    to_disconnect: Vec<ConnId>,
    stats: ServerRunStats,
}

/// What one schedule reached, for judging a corpus's depth.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ServerRunStats {
    /// PTY write jobs handed to the driver.
    pub writes: usize,
    /// Of those, APPLY_INPUT jobs.
    pub apply_writes: usize,
    /// COMMAND_RESULT and ERROR frames with a request id.
    pub answers: usize,
    /// Connections the engine closed.
    pub closes: usize,
    /// The largest per-connection queue seen, in bytes.
    pub largest_queue: usize,
}

fn config() -> ServerConfig {
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

fn op_id(op: u8) -> OperationId {
    let n = 0x7068_7578_0000_0000_0000_0000_0000_0000_u128 + u128::from(op % OPERATIONS) + 1;
    OperationId::from_u128(n).unwrap_or_else(|| unreachable!("non-zero"))
}

/// The events of payload `variant` of operation `op`.
fn apply_events(op: u8, variant: u8) -> Vec<InputEvent> {
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
        // [INPUT.PASTE.SAFE.1] An untrusted paste with a LF: refused, nothing written.
        _ => vec![InputEvent::Paste(PasteEvent {
            trust: PasteTrust::Untrusted,
            data: format!("{tag}\n").into_bytes(),
        })],
    }
}

/// The whole frames at the start of `stream` that decode, how many bytes they and any
/// undecodable whole frames use, and whether a framing error ends the stream.
fn walk(stream: &[u8]) -> (Vec<Frame>, usize, bool) {
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

fn terminal(t: u8) -> LocalTerminal {
    LocalTerminal(1 + u32::from(t) % TERMINALS)
}

fn slot(conn: u8) -> usize {
    usize::from(conn) % SLOTS
}

impl Driver {
    fn new() -> Self {
        let config = config();
        Self {
            engine: ServerEngine::new(config.clone()),
            config,
            now: Instant::ZERO,
            clients: [None, None, None, None],
            next_conn: 1,
            pending_spawns: Vec::new(),
            writes: BTreeMap::new(),
            writes_this_step: 0,
            written_per_op: BTreeMap::new(),
            to_disconnect: Vec::new(),
            stats: ServerRunStats::default(),
        }
    }

    fn handle(&mut self, event: ServerEvent<'_>) {
        self.engine.handle(self.now, event);
        self.drain();
    }

    /// Carries out every action; reports disconnects for closed connections afterwards.
    fn drain(&mut self) {
        loop {
            while let Some(action) = self.engine.poll_action() {
                self.perform(action);
            }
            let Some(id) = self.to_disconnect.pop() else {
                return;
            };
            if let Some(slot) = self.slot_of(id) {
                self.clients[slot] = None;
            }
            self.engine
                .handle(self.now, ServerEvent::Disconnected { conn: id });
        }
    }

    fn slot_of(&self, id: ConnId) -> Option<usize> {
        self.clients
            .iter()
            .position(|c| c.as_ref().is_some_and(|c| c.id == id))
    }

    /// Hands a connection's client the bytes the engine sent it.
    fn deliver(&mut self, conn: ConnId, bytes: &[u8]) {
        let Some(client) = self.slot_of(conn).and_then(|s| self.clients[s].as_mut()) else {
            panic!("Send for a connection the driver does not have: {conn:?}");
        };
        assert!(!client.closed, "Send after Close on {conn:?}");
        client.unsent += bytes.len();
        client.inbound.push(bytes);
        loop {
            match client.inbound.poll_frame() {
                Ok(None) => break,
                Ok(Some(Frame::CommandResult(r))) => {
                    *client.answered.entry(r.request_id).or_default() += 1;
                    self.stats.answers += 1;
                }
                Ok(Some(Frame::Error(e))) => {
                    if let Some(rid) = e.request_id {
                        *client.answered.entry(rid).or_default() += 1;
                        self.stats.answers += 1;
                    }
                }
                Ok(Some(_)) => {}
                Err(e) => panic!("the server sent bytes that do not decode: {e}"),
            }
        }
    }

    fn perform(&mut self, action: ServerAction) {
        match action {
            ServerAction::Send { conn, bytes } => self.deliver(conn, &bytes),
            ServerAction::SendShared { conn, frame } => {
                self.deliver(conn, &frame.to_vec());
                self.engine.reclaim_shared(frame.head);
            }
            ServerAction::Close { conn } => {
                if let Some(client) = self.slot_of(conn).and_then(|s| self.clients[s].as_mut()) {
                    client.closed = true;
                    self.to_disconnect.push(conn);
                    self.stats.closes += 1;
                }
            }
            ServerAction::Spawn { terminal, spec } => {
                assert!(!spec.command.is_empty(), "spawn with an empty command");
                assert!(spec.cols >= 1 && spec.rows >= 1, "spawn with a zero size");
                self.pending_spawns.push(terminal);
            }
            ServerAction::Write { terminal, job, .. } => {
                let jobs = self.writes.entry(terminal).or_default();
                assert!(!jobs.contains(&job), "job {job:?} written twice");
                jobs.push_back(job);
                self.writes_this_step += 1;
                self.stats.writes += 1;
            }
            ServerAction::Resize { cols, rows, .. } => {
                assert!(cols >= 1 && rows >= 1, "resize to zero");
            }
            ServerAction::Signal { .. } | ServerAction::Kill { .. } | ServerAction::Shutdown => {}
        }
    }

    /// Client bytes, mirrored to learn which COMMANDs the server decodes.
    fn receive(&mut self, conn: u8, bytes: &[u8]) {
        let Some(client) = self.clients[slot(conn)].as_mut() else {
            return;
        };
        if client.closed {
            return;
        }
        let id = client.id;
        let mut stream = client.pending.clone();
        stream.extend_from_slice(bytes);
        let (frames, used, fused) = if client.fused {
            (Vec::new(), stream.len(), true)
        } else {
            walk(&stream)
        };
        client.pending = if fused {
            Vec::new()
        } else {
            stream.split_off(used)
        };
        client.fused = fused;
        for frame in frames {
            if let Frame::Command(c) = frame {
                *client.asked.entry(c.request_id).or_default() += 1;
            }
        }
        self.handle(ServerEvent::Received { conn: id, bytes });
    }

    fn send_frame(&mut self, conn: u8, frame: &Frame) {
        self.receive(conn, &frame.to_bytes());
    }

    fn command(&mut self, conn: u8, request_id: u32, command: Command) {
        self.send_frame(
            conn,
            &Frame::Command(CommandFrame {
                request_id,
                command,
            }),
        );
    }

    fn step(&mut self, step: &ServerStep) {
        self.writes_this_step = 0;
        match step {
            ServerStep::Connect { conn, kind } => {
                let s = slot(*conn);
                if self.clients[s].is_some() {
                    return;
                }
                let id = ConnId(self.next_conn);
                self.next_conn += 1;
                self.clients[s] = Some(Client {
                    id,
                    pending: Vec::new(),
                    fused: false,
                    inbound: FrameDecoder::new(),
                    unsent: 0,
                    asked: BTreeMap::new(),
                    answered: BTreeMap::new(),
                    closed: false,
                });
                let peer = match kind % 3 {
                    0 => PeerInfo::local(),
                    1 => PeerInfo::remote(),
                    _ => PeerInfo::foreign(),
                };
                self.handle(ServerEvent::Connected { conn: id, peer });
            }
            ServerStep::Disconnect { conn } => {
                if let Some(client) = self.clients[slot(*conn)].take() {
                    self.handle(ServerEvent::Disconnected { conn: client.id });
                }
            }
            ServerStep::Hello { conn } => self.send_frame(
                *conn,
                &Frame::Hello(Hello {
                    client_name: "fuzz".to_owned(),
                    version: ProtocolVersion::CURRENT,
                    capabilities: ClientCapabilities::default(),
                }),
            ),
            ServerStep::Spawn { conn, request_id } => {
                let mut spawn = SpawnTerminal::new(*request_id, GroupId(1));
                spawn.initial_size = Some(TerminalSize { cols: 20, rows: 6 });
                self.send_frame(*conn, &Frame::SpawnTerminal(spawn));
            }
            ServerStep::Attach {
                conn,
                terminal: t,
                request_id,
            } => self.command(
                *conn,
                *request_id,
                Command::AttachTerminal {
                    terminal: TerminalId::from(terminal(*t)),
                },
            ),
            ServerStep::Apply {
                conn,
                op,
                variant,
                terminal: t,
                request_id,
            } => {
                let apply = ApplyInput {
                    operation_id: op_id(*op),
                    terminal: TerminalId::from(terminal(*t)),
                    events: apply_events(*op, *variant),
                };
                // One frame per Received, so every write this step is this operation's job.
                self.command(*conn, *request_id, Command::ApplyInput(apply));
                assert!(self.writes_this_step <= 1, "one APPLY_INPUT, several jobs");
                let written = self.written_per_op.entry(op % OPERATIONS).or_default();
                *written += self.writes_this_step;
                self.stats.apply_writes += self.writes_this_step;
                // [INPUT.DEDUPE.2] A known operation id never writes again.
                assert!(*written <= 1, "operation {op} written {written} times");
            }
            ServerStep::Acquire {
                conn,
                terminal: t,
                seize,
                ttl_ms,
                request_id,
            } => self.command(
                *conn,
                *request_id,
                Command::AcquireInput {
                    terminal: TerminalId::from(terminal(*t)),
                    mode: if *seize {
                        AcquireMode::Seize
                    } else {
                        AcquireMode::Cooperative
                    },
                    ttl_ms: u32::from(*ttl_ms),
                },
            ),
            ServerStep::Frame { conn, frame } => self.send_frame(*conn, frame),
            ServerStep::Bytes { conn, bytes } => self.receive(*conn, bytes),
            ServerStep::Sent { conn, bytes } => {
                let Some(client) = self.clients[slot(*conn)].as_mut() else {
                    return;
                };
                let n = if *bytes == u16::MAX {
                    client.unsent
                } else {
                    usize::from(*bytes).min(client.unsent)
                };
                client.unsent -= n;
                let id = client.id;
                self.handle(ServerEvent::Sent { conn: id, bytes: n });
            }
            ServerStep::SpawnDone { which, ok } => {
                if self.pending_spawns.is_empty() {
                    return;
                }
                let i = usize::from(*which) % self.pending_spawns.len();
                let terminal = self.pending_spawns.remove(i);
                if *ok {
                    self.handle(ServerEvent::Spawned {
                        terminal,
                        pid: 1000 + terminal.0,
                    });
                } else {
                    self.handle(ServerEvent::SpawnFailed {
                        terminal,
                        message: "fuzz".to_owned(),
                    });
                }
            }
            ServerStep::PtyOutput { terminal: t, bytes } => self.handle(ServerEvent::PtyOutput {
                terminal: terminal(*t),
                bytes,
            }),
            ServerStep::PtyFlood {
                terminal: t,
                chunks,
            } => {
                let chunk: Vec<u8> = b"y\r\n".iter().copied().cycle().take(4096).collect();
                for _ in 0..=chunks % 24 {
                    self.handle(ServerEvent::PtyOutput {
                        terminal: terminal(*t),
                        bytes: &chunk,
                    });
                    self.check_bounds();
                }
            }
            ServerStep::PingFlood { conn, count } => {
                let mut bytes = Vec::new();
                for nonce in 0..16 * (1 + u64::from(*count % 80)) {
                    Frame::Ping(phux_proto::frame::Ping { nonce }).encode(&mut bytes);
                }
                self.receive(*conn, &bytes);
            }
            ServerStep::WriteDone {
                terminal: t,
                outcome,
            } => {
                let t = terminal(*t);
                let Some(job) = self.writes.get_mut(&t).and_then(VecDeque::pop_front) else {
                    return;
                };
                let outcome = match outcome % 4 {
                    0 => WriteOutcome::Written,
                    1 => WriteOutcome::NotWritten,
                    2 => WriteOutcome::Unknown,
                    _ => WriteOutcome::CanonicalRefused { limit: 4095 },
                };
                self.handle(ServerEvent::WriteDone {
                    terminal: t,
                    job,
                    outcome,
                });
            }
            ServerStep::StaleWriteDone { terminal: t, job } => {
                self.handle(ServerEvent::WriteDone {
                    terminal: terminal(*t),
                    job: JobId(*job),
                    outcome: WriteOutcome::Written,
                });
            }
            ServerStep::ChildExited {
                terminal: t,
                status,
            } => {
                let t = terminal(*t);
                // The writer gives up on a dead child's jobs (the engine resolves them).
                self.writes.remove(&t);
                self.handle(ServerEvent::ChildExited {
                    terminal: t,
                    exit_status: *status,
                });
            }
            ServerStep::Advance { ms } => {
                let to = self.now + Duration::from_millis(u64::from(*ms));
                if to.as_micros() <= CLOCK_CAP.as_micros() as u64 {
                    self.now = to;
                }
                if self.engine.poll_timeout().is_some_and(|at| at <= self.now) {
                    self.handle(ServerEvent::Timeout);
                }
            }
            ServerStep::Timeout => self.handle(ServerEvent::Timeout),
            ServerStep::ShutdownRequested => self.handle(ServerEvent::ShutdownRequested),
        }
    }

    /// [QUEUE.BOUND.1] and the driver's and engine's books agreeing, after every step.
    fn check_bounds(&mut self) {
        let bound = self.config.output_budget + self.config.control_budget + MAX_FRAME_LEN as usize;
        let open = self.clients.iter().flatten().count();
        assert_eq!(self.engine.connection_count(), open, "connection count");
        for client in self.clients.iter().flatten() {
            let queued = self.engine.queued_bytes(client.id);
            assert_eq!(
                queued,
                Some(client.unsent),
                "queued bytes of {:?}",
                client.id
            );
            let queued = client.unsent;
            assert!(queued <= bound, "{queued} bytes queued for {:?}", client.id);
            self.stats.largest_queue = self.stats.largest_queue.max(queued);
        }
    }

    /// The end: past the completion bound, every decoded COMMAND has its answer.
    fn finish(&mut self) {
        self.now += COMPLETION_BOUND + Duration::from_secs(1);
        self.handle(ServerEvent::Timeout);
        let mut rounds = 0;
        while self.engine.poll_timeout().is_some_and(|at| at <= self.now) {
            rounds += 1;
            assert!(rounds < 64, "poll_timeout stays in the past");
            self.handle(ServerEvent::Timeout);
        }
        self.check_bounds();
        for client in self.clients.iter().flatten() {
            if client.closed {
                continue;
            }
            for (rid, &asked) in &client.asked {
                let answered = client.answered.get(rid).copied().unwrap_or(0);
                assert!(
                    answered >= asked,
                    "{:?}: request {rid} asked {asked} times, answered {answered}",
                    client.id
                );
            }
        }
    }
}

/// Runs one schedule; panics when an invariant fails. Returns what it reached.
pub fn run_server(schedule: &ServerSchedule) -> ServerRunStats {
    let mut driver = Driver::new();
    let prelude = if schedule.prelude.is_multiple_of(4) {
        Vec::new()
    } else {
        prelude()
    };
    for step in prelude.iter().chain(&schedule.steps) {
        driver.step(step);
        driver.check_bounds();
    }
    driver.finish();
    driver.stats
}

#[cfg(test)]
mod tests {
    use super::*;

    fn apply(op: u8, variant: u8, request_id: u32) -> ServerStep {
        ServerStep::Apply {
            conn: 0,
            op,
            variant,
            terminal: 0,
            request_id,
        }
    }

    /// The driver reaches the acknowledged-input path: a job is written once, its retries
    /// are answered from the ledger, another payload under the id is refused, and a job
    /// never completed is answered unknown after the bound.
    #[test]
    fn driver_reaches_apply_input_and_checks_dedupe() {
        let mut d = Driver::new();
        for step in [
            ServerStep::Connect { conn: 0, kind: 0 },
            ServerStep::Hello { conn: 0 },
            ServerStep::Spawn {
                conn: 0,
                request_id: 1,
            },
            ServerStep::SpawnDone { which: 0, ok: true },
            apply(1, 0, 10),
            ServerStep::WriteDone {
                terminal: 0,
                outcome: 0,
            },
            apply(1, 0, 11),
            apply(1, 1, 12),
            apply(2, 0, 13),
        ] {
            d.step(&step);
            d.check_bounds();
        }
        assert_eq!(d.written_per_op.get(&1), Some(&1));
        assert_eq!(d.written_per_op.get(&2), Some(&1));
        let client = d.clients[0].as_ref().unwrap();
        assert_eq!(client.asked.len(), 4);
        // Op 2's job is still with the writer: its answer waits for the completion bound.
        assert_eq!(client.answered.get(&13), None);
        for rid in [10, 11, 12] {
            assert_eq!(client.answered.get(&rid), Some(&1), "request {rid}");
        }
        d.finish();
        assert_eq!(d.clients[0].as_ref().unwrap().answered.get(&13), Some(&1));
    }

    /// [QUEUE.OUTPUT.1] [QUEUE.CONTROL.2] Floods reach both budgets and the queue stays bounded:
    /// a reader that never reads is tombstoned (output) and detached (control).
    #[test]
    fn floods_reach_the_budgets_and_stay_bounded() {
        let mut steps = prelude();
        steps.push(ServerStep::PtyFlood {
            terminal: 0,
            chunks: 23,
        });
        steps.push(ServerStep::PingFlood { conn: 1, count: 79 });
        let stats = run_server(&ServerSchedule { prelude: 0, steps });
        let config = config();
        assert!(stats.largest_queue > config.control_budget, "{stats:?}");
        assert!(stats.largest_queue <= config.output_budget + config.control_budget + 4096 + 64);
        // The PING flood overflows the control budget: that client is detached.
        assert!(stats.closes >= 1, "{stats:?}");
    }

    /// The end-of-schedule check fails when a decoded command goes unanswered.
    #[test]
    #[should_panic(expected = "asked 1 times, answered 0")]
    fn an_unanswered_command_is_caught() {
        let mut d = Driver::new();
        d.step(&ServerStep::Connect { conn: 0, kind: 0 });
        d.step(&ServerStep::Hello { conn: 0 });
        // Pretend the server decoded a command it never saw.
        if let Some(client) = d.clients[0].as_mut() {
            client.asked.insert(99, 1);
        }
        d.finish();
    }
}
