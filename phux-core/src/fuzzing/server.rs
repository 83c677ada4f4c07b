//! The `server_engine` fuzz target: an arbitrary schedule against [`ServerEngine`] in the
//! simulator's [`Harness`], with the fuzzer deciding what a driver would learn from the world.
//!
//! The harness performs every action (its one `perform(ServerAction)`); the schedule decides
//! the outcomes, through the harness's knobs: every client is a stalled reader whose `Sent`
//! reports the schedule makes ([`Harness::read_some`]), spawns are held and each answered OK
//! or failed by the schedule ([`Harness::release_spawn`]), and writes are scripted, each job
//! completed with the outcome the schedule picks ([`Harness::complete_write`]). What a broken
//! or racing driver might report — output, exits and completions for any terminal, stale job
//! ids, spurious timeouts — goes straight to the engine, as such a driver would send it.
//!
//! Invariants checked as the schedule runs and at its end:
//! - nothing panics, and every byte the server queues decodes as a frame;
//! - no `Send` goes to a connection after it closed, nor to one the driver does not have;
//! - [INPUT.DEDUPE.2] no operation id's job is handed to the writer twice;
//! - [QUEUE.BOUND.1] a connection's queued bytes stay within the output budget plus the
//!   control budget plus one maximal frame, and match what the driver was asked to send;
//! - every COMMAND the server decoded is answered (COMMAND_RESULT or ERROR with its request id)
//!   or its connection closed, once the clock has passed the 5 s completion bound.
//!
//! [`ServerEngine`]: crate::server::ServerEngine

mod schedule;

use std::collections::BTreeMap;
use std::time::Duration;

use phux_proto::command::{AcquireMode, ApplyInput, Command};
use phux_proto::frame::{
    ClientCapabilities, CommandFrame, Hello, ProtocolVersion, SpawnTerminal, TerminalSize,
};
use phux_proto::framing::MAX_FRAME_LEN;
use phux_proto::{Frame, GroupId, TerminalId};

use schedule::{CLOCK_CAP, OPERATIONS, SLOTS, apply_events, config, op_id, slot, terminal, walk};
pub use schedule::{ServerSchedule, ServerStep, prelude};

use crate::framing::FrameDecoder;
use crate::server::{
    COMPLETION_BOUND, ConnId, JobId, PeerInfo, ServerAction, ServerConfig, ServerEvent,
    WriteOutcome,
};
use crate::sim::{Harness, PTY_READ};
use crate::writer::LINUX_CANONICAL_LIMIT;

/// The driver's view of one connection.
struct Client {
    id: ConnId,
    /// Bytes sent that do not form a whole frame yet: mirrors the engine's decoder (the
    /// `frame_decode` target checks that a header walk and `FrameDecoder` agree).
    pending: Vec<u8>,
    /// A framing error fused the stream: the server decodes nothing more from it.
    fused: bool,
    /// The server's bytes as they are queued for this client.
    inbound: FrameDecoder,
    /// How many of the connection's queued bytes `inbound` has seen.
    observed: usize,
    /// Request ids of COMMANDs the server decoded, with multiplicity.
    asked: BTreeMap<u32, usize>,
    /// Request ids answered by COMMAND_RESULT or ERROR, with multiplicity.
    answered: BTreeMap<u32, usize>,
}

/// The harness and what the schedule's checks remember.
struct Driver {
    h: Harness,
    config: ServerConfig,
    clients: [Option<Client>; SLOTS],
    /// How many of the harness's `writes` and `actions` records are checked.
    writes_seen: usize,
    actions_seen: usize,
    /// Writes seen since the current step began.
    writes_this_step: usize,
    /// How many jobs each `Apply` operation id had written.
    written_per_op: BTreeMap<u8, usize>,
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

impl Driver {
    fn new() -> Self {
        let config = config();
        let mut h = Harness::with_config(config.clone());
        h.log.set_enabled(false);
        h.hold_spawns(true);
        h.set_scripted_writes(true);
        Self {
            h,
            config,
            clients: [None, None, None, None],
            writes_seen: 0,
            actions_seen: 0,
            writes_this_step: 0,
            written_per_op: BTreeMap::new(),
            stats: ServerRunStats::default(),
        }
    }

    /// Hands the engine an event a driver learned from the world, then performs what it asks.
    fn handle(&mut self, event: ServerEvent<'_>) {
        self.h.server.handle(self.h.now, event);
        self.settle();
    }

    /// The harness performs every action; then the new ones are checked.
    fn settle(&mut self) {
        self.h.settle();
        self.observe();
    }

    /// Checks what the harness performed since the last call: the bytes queued for each
    /// client, the writes, spawns and resizes; frees the slots of connections that ended.
    fn observe(&mut self) {
        assert_eq!(
            self.h.stray_sends(),
            0,
            "Send after Close or to no connection"
        );
        for client in self.clients.iter_mut().flatten() {
            let conn = self.h.conn(client.id);
            let new = conn.queued_total() - client.observed;
            client.observed = conn.queued_total();
            let unread = conn.unread();
            client.inbound.push(&unread[unread.len() - new..]);
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
        for w in &self.h.writes[self.writes_seen..] {
            let pending = self.h.ptys.get(&w.terminal).map_or(0, |p| {
                p.pending_jobs().iter().filter(|j| **j == w.job).count()
            });
            assert!(pending <= 1, "job {:?} written twice", w.job);
            self.writes_this_step += 1;
            self.stats.writes += 1;
        }
        self.writes_seen = self.h.writes.len();
        for action in &self.h.actions[self.actions_seen..] {
            match action {
                ServerAction::Spawn { spec, .. } => {
                    assert!(!spec.command.is_empty(), "spawn with an empty command");
                    assert!(spec.cols >= 1 && spec.rows >= 1, "spawn with a zero size");
                }
                ServerAction::Resize { cols, rows, .. } => {
                    assert!(*cols >= 1 && *rows >= 1, "resize to zero");
                }
                _ => {}
            }
        }
        self.actions_seen = self.h.actions.len();
        for s in &mut self.clients {
            if s.as_ref().is_some_and(|c| !self.h.conn(c.id).is_open()) {
                *s = None;
                self.stats.closes += 1;
            }
        }
    }

    /// Client bytes, mirrored to learn which COMMANDs the server decodes.
    fn receive(&mut self, conn: u8, bytes: &[u8]) {
        let Some(client) = self.clients[slot(conn)].as_mut() else {
            return;
        };
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
        self.h.send_raw(id, bytes);
        self.settle();
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
                let peer = match kind % 3 {
                    0 => PeerInfo::local(),
                    1 => PeerInfo::remote(),
                    _ => PeerInfo::foreign(),
                };
                let id = self.h.connect_with(peer);
                // The client reads only when the schedule says (`Sent`).
                self.h.stall_reader(id);
                self.clients[s] = Some(Client {
                    id,
                    pending: Vec::new(),
                    fused: false,
                    inbound: FrameDecoder::new(),
                    observed: 0,
                    asked: BTreeMap::new(),
                    answered: BTreeMap::new(),
                });
                self.settle();
            }
            ServerStep::Disconnect { conn } => {
                if let Some(client) = self.clients[slot(*conn)].take() {
                    self.h.disconnect(client.id);
                    self.settle();
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
                let Some(client) = self.clients[slot(*conn)].as_ref() else {
                    return;
                };
                let id = client.id;
                let unsent = self.h.conn(id).unread_bytes();
                let n = if *bytes == u16::MAX {
                    unsent
                } else {
                    usize::from(*bytes).min(unsent)
                };
                self.h.read_some(id, n);
                self.settle();
            }
            ServerStep::SpawnDone { which, ok } => {
                let held = self.h.held_spawns();
                if held == 0 {
                    return;
                }
                self.h.release_spawn(usize::from(*which) % held, *ok);
                self.settle();
            }
            ServerStep::PtyOutput { terminal: t, bytes } => self.handle(ServerEvent::PtyOutput {
                terminal: terminal(*t),
                bytes,
            }),
            ServerStep::PtyFlood {
                terminal: t,
                chunks,
            } => {
                let chunk: Vec<u8> = b"y\r\n".iter().copied().cycle().take(PTY_READ).collect();
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
                let outcome = match outcome % 4 {
                    0 => WriteOutcome::Written,
                    1 => WriteOutcome::NotWritten,
                    2 => WriteOutcome::Unknown,
                    _ => WriteOutcome::CanonicalRefused {
                        limit: u32::try_from(LINUX_CANONICAL_LIMIT).unwrap_or(u32::MAX),
                    },
                };
                // The oldest job of the terminal, if one waits.
                if self.h.complete_write(terminal(*t), outcome).is_some() {
                    self.settle();
                }
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
                if let Some(pty) = self.h.ptys.get_mut(&t) {
                    pty.forget_scripted();
                }
                self.handle(ServerEvent::ChildExited {
                    terminal: t,
                    exit_status: *status,
                });
            }
            ServerStep::Advance { ms } => {
                let to = self.h.now + Duration::from_millis(u64::from(*ms));
                if to.as_micros() <= CLOCK_CAP.as_micros() as u64 {
                    self.h.now = to;
                }
                // The harness fires the engine's timeout if it is due.
                self.settle();
            }
            ServerStep::Timeout => self.handle(ServerEvent::Timeout),
            ServerStep::ShutdownRequested => self.handle(ServerEvent::ShutdownRequested),
        }
    }

    /// [QUEUE.BOUND.1] and the driver's and engine's books agreeing, after every step.
    fn check_bounds(&mut self) {
        let bound = self.config.output_budget + self.config.control_budget + MAX_FRAME_LEN as usize;
        let open = self.clients.iter().flatten().count();
        assert_eq!(self.h.server.connection_count(), open, "connection count");
        for client in self.clients.iter().flatten() {
            let unsent = self.h.conn(client.id).unread_bytes();
            let queued = self.h.server.queued_bytes(client.id);
            assert_eq!(queued, Some(unsent), "queued bytes of {:?}", client.id);
            let queued = unsent;
            assert!(queued <= bound, "{queued} bytes queued for {:?}", client.id);
            self.stats.largest_queue = self.stats.largest_queue.max(queued);
        }
    }

    /// The end: past the completion bound, every decoded COMMAND has its answer.
    fn finish(&mut self) {
        // A driver reports every upgrade it was asked for, done or failed ([SERVER.UPGRADE.3]);
        // this one carries none out. Until then, input waits for it unanswered.
        if self.h.upgrade_asked() {
            self.h.fail_upgrade("the fuzz harness does not exec");
            self.observe();
        }
        self.h.now += COMPLETION_BOUND + Duration::from_secs(1);
        self.handle(ServerEvent::Timeout);
        let mut rounds = 0;
        while self
            .h
            .server
            .poll_timeout()
            .is_some_and(|at| at <= self.h.now)
        {
            rounds += 1;
            assert!(rounds < 64, "poll_timeout stays in the past");
            self.handle(ServerEvent::Timeout);
        }
        self.check_bounds();
        for client in self.clients.iter().flatten() {
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
