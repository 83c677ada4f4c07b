//! The in-process transport: our `ServerEngine` driven by a small deterministic driver with a
//! virtual clock, its terminals' children simulated.
//!
//! Two children are simulated. `$ECHO`'s echoes what is written to it (as a PTY's line
//! discipline would) and ends, without an exit status, on INTERRUPT, TERMINATE, KILL or
//! KILL_TERMINAL, like `cat` under the default signal dispositions; its terminal stays
//! canonical, so the canonical-line guard applies. `$PROBE`'s is the real probe's
//! [`ProbeMachine`](crate::probe::ProbeMachine) on a simulated PTY ([`SimProbe`]): every byte a
//! transcript sees from it is what the probe on a real PTY would write. A spawn whose program
//! is an absolute path that does not exist here, or whose working directory does not exist,
//! fails as a real spawn would.
//!
//! The simulated probe process gets what `phux-mio-server` gives a real child: the command as
//! its argument vector, the `cwd` asked for, exactly the `env` given with `TERM` set to the
//! engine's term. This process stands in for the server, so a spawn without `cwd` starts in
//! this process's working directory and one without `env` inherits this process's environment.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::os::unix::ffi::OsStringExt as _;
use std::path::Path;
use std::time::Duration;

use phux_core::Instant;
use phux_core::framing::FrameDecoder;
use phux_core::server::{
    ConnId, LocalTerminal, PeerInfo, ServerAction, ServerConfig, ServerEngine, ServerEvent,
    SpawnSpec, WriteOutcome,
};
use phux_core::writer::{JobId, PortWrite, PtyPort, PtyWriter, Step, Termios};
use phux_proto::Frame;
use phux_proto::command::{Command, Signal};
use phux_proto::frame::CommandFrame;
use phux_proto::ids::OperationId;
use phux_proto::notation::Value;

use super::sim_probe::{Effect, SimProbe, SimProcess};
use super::{ConnKey, Connector, ECHO_COMMAND, Recv, Transport, TransportError, command_list};

/// The in-process server: a fresh engine for every transcript.
#[derive(Clone, Debug, Default)]
pub struct InProcess;

impl Connector for InProcess {
    fn describe(&self) -> String {
        "in-process".to_owned()
    }

    fn open(&self) -> Result<Box<dyn Transport>, TransportError> {
        Ok(Box::new(Sim::new(None)))
    }
}

/// A rule a deliberately broken in-process server gets wrong, to prove the suite notices.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum RuleFlip {
    /// Breaks [INPUT.DEDUPE.2]: the engine answers a retried APPLY_INPUT from its ledger as
    /// it should, and the driver then writes the original job's bytes to the PTY again.
    RewriteRetries,
}

/// Our engine with one rule flipped: see [`RuleFlip`]. Only for showing the suite can fail.
#[derive(Clone, Copy, Debug)]
pub struct BrokenInProcess(pub RuleFlip);

impl Connector for BrokenInProcess {
    fn describe(&self) -> String {
        format!("in-process, broken: {:?}", self.0)
    }

    fn open(&self) -> Result<Box<dyn Transport>, TransportError> {
        Ok(Box::new(Sim::new(Some(self.0))))
    }
}

/// What a [`RuleFlip::RewriteRetries`] server remembers.
#[derive(Debug, Default)]
struct Rewriter {
    decoders: BTreeMap<ConnKey, FrameDecoder>,
    /// The operation of the APPLY_INPUT being handled, until its job's `Write` is seen.
    admitting: Option<OperationId>,
    /// Each operation's terminal and job bytes.
    jobs: BTreeMap<OperationId, (LocalTerminal, Vec<u8>)>,
}

/// The incarnation id of an in-process server: fixed per incarnation, so runs are
/// deterministic; `restart` moves to the next one.
fn sim_server_id(incarnation: u8) -> Vec<u8> {
    format!("phux-conf-sim-{:02}", incarnation % 100).into_bytes()
}

/// A bound on engine round trips per drive, so a livelock is an error rather than a hang.
const MAX_DRIVE_STEPS: usize = 100_000;

/// How long a connection the engine closed may take to read what is queued for it before the
/// driver drops it (our server's driver allows the same: [QUEUE.CONTROL.3]).
const CLOSE_BOUND: Duration = Duration::from_secs(5);

/// The most one PTY read returns here: large output reaches the engine in pieces, as it does
/// from a real PTY, never as one huge frame.
const PTY_READ: usize = 4096;

#[derive(Debug, Default)]
struct SimConn {
    /// Bytes the engine sent that the runner has not taken yet.
    pending: Vec<u8>,
    /// The engine asked to close, or the client disconnected.
    closed: bool,
    /// The client stopped reading: the engine's bytes wait in `unsent` and are not reported
    /// sent until it reads again.
    paused: bool,
    /// What the engine sent while the client was not reading (the driver's write queue).
    unsent: Vec<u8>,
    /// The engine closed the connection with bytes unsent: they may still be read until then.
    closing_at: Option<Instant>,
}

/// The program name `$PROBE` names in process; `<it> probe` runs the simulated probe.
pub(crate) const SIM_PROBE_PROGRAM: &str = "phux-conformance";

#[derive(Debug)]
enum SimChild {
    /// `cat` in a cooked terminal: echoes its input.
    Echo {
        alive: bool,
        /// The real server's writer, over a PTY that takes every byte.
        writer: PtyWriter,
    },
    /// The probe on a simulated PTY.
    Probe(Box<SimProbe>),
}

/// `cat`'s PTY, as the writer sees it: a cooked line discipline that takes every byte,
/// which `cat` echoes.
#[derive(Default)]
struct Cat {
    echo: Vec<u8>,
}

impl PtyPort for Cat {
    fn termios(&mut self) -> Option<Termios> {
        Some(Termios::COOKED)
    }

    fn write(&mut self, bytes: &[u8]) -> PortWrite {
        self.echo.extend_from_slice(bytes);
        PortWrite::Accepted(bytes.len())
    }
}

/// Whether `command` runs the probe (`phux-conformance probe [...]`).
fn is_probe(command: &[String]) -> bool {
    command.first().is_some_and(|p| p == SIM_PROBE_PROGRAM)
        && command.get(1).is_some_and(|a| a == "probe")
}

struct Sim {
    engine: ServerEngine,
    /// 1 at first, one more at every restart.
    incarnation: u8,
    now: Instant,
    conns: BTreeMap<ConnKey, SimConn>,
    children: BTreeMap<LocalTerminal, SimChild>,
    next_conn: ConnKey,
    /// Set only for a [`BrokenInProcess`] server.
    rewriter: Option<Rewriter>,
}

impl Sim {
    fn new(flip: Option<RuleFlip>) -> Self {
        Self {
            rewriter: flip.map(|RuleFlip::RewriteRetries| Rewriter::default()),
            engine: ServerEngine::new(ServerConfig::new(sim_server_id(1))),
            incarnation: 1,
            now: Instant::ZERO,
            conns: BTreeMap::new(),
            children: BTreeMap::new(),
            next_conn: 1,
        }
    }

    fn handle(&mut self, event: ServerEvent<'_>) {
        self.engine.handle(self.now, event);
    }

    /// Carries out actions until the engine has nothing more to say.
    fn drive(&mut self) -> Result<(), TransportError> {
        for _ in 0..MAX_DRIVE_STEPS {
            let Some(action) = self.engine.poll_action() else {
                return Ok(());
            };
            self.perform(action);
        }
        Err(TransportError::Unsupported(
            "the engine did not settle (livelock?)".into(),
        ))
    }

    /// Delivers a connection's bytes, or holds them while its client is paused.
    fn send(&mut self, conn: ConnId, bytes: &[u8]) {
        match self.conns.get_mut(&key(conn)) {
            Some(c) if !c.closed && c.paused => {
                // Nothing takes them: the engine must see its queue stay full.
                c.unsent.extend_from_slice(bytes);
                return;
            }
            Some(c) if !c.closed => c.pending.extend_from_slice(bytes),
            _ => {}
        }
        self.handle(ServerEvent::Sent {
            conn,
            bytes: bytes.len(),
        });
    }

    fn perform(&mut self, action: ServerAction) {
        match action {
            ServerAction::Send { conn, bytes } => self.send(conn, &bytes),
            ServerAction::SendShared { conn, frame } => {
                self.send(conn, &frame.to_vec());
            }
            ServerAction::Close { conn } => {
                if let Some(c) = self.conns.get_mut(&key(conn)) {
                    if !c.closed && !c.unsent.is_empty() {
                        // Flushed while the client reads, dropped at the bound if it does not.
                        c.closing_at.get_or_insert(self.now + CLOSE_BOUND);
                        return;
                    }
                    c.closed = true;
                }
                self.handle(ServerEvent::Disconnected { conn });
            }
            ServerAction::Spawn { terminal, spec } => {
                if let Some(message) = spawn_failure(&spec) {
                    self.handle(ServerEvent::SpawnFailed { terminal, message });
                } else {
                    let pid = 10_000 + terminal.0;
                    let probe = is_probe(&spec.command);
                    if !probe {
                        self.children.insert(
                            terminal,
                            SimChild::Echo {
                                alive: true,
                                writer: PtyWriter::new(),
                            },
                        );
                    }
                    self.handle(ServerEvent::Spawned { terminal, pid });
                    if probe {
                        let process = sim_process(&spec);
                        let child = SimProbe::spawn(self.now, pid, process, spec.cols, spec.rows);
                        self.children
                            .insert(terminal, SimChild::Probe(Box::new(child)));
                        self.effects(terminal);
                    }
                }
            }
            ServerAction::Write {
                terminal,
                job,
                bytes,
            } => {
                if let Some(r) = &mut self.rewriter
                    && let Some(op) = r.admitting.take()
                {
                    r.jobs.insert(op, (terminal, bytes.clone()));
                }
                if let Some(SimChild::Probe(p)) = self.children.get_mut(&terminal) {
                    p.write(self.now, job, bytes);
                    self.effects(terminal);
                    return;
                }
                let mut cat = Cat::default();
                let outcome = match self.children.get_mut(&terminal) {
                    Some(SimChild::Echo {
                        alive: true,
                        writer,
                    }) => {
                        writer.push(job, bytes);
                        match writer.step(&mut cat) {
                            Step::Done(_, outcome) => outcome,
                            Step::Blocked | Step::Idle => WriteOutcome::Unknown,
                        }
                    }
                    _ => WriteOutcome::NotWritten,
                };
                let bytes = cat.echo;
                let echo = outcome == WriteOutcome::Written && !bytes.is_empty();
                self.handle(ServerEvent::WriteDone {
                    terminal,
                    job,
                    outcome,
                });
                if echo {
                    self.handle(ServerEvent::PtyOutput {
                        terminal,
                        bytes: &bytes,
                    });
                }
            }
            ServerAction::Resize {
                terminal,
                cols,
                rows,
            } => {
                if let Some(SimChild::Probe(p)) = self.children.get_mut(&terminal) {
                    p.resize(self.now, cols, rows);
                    self.effects(terminal);
                }
            }
            ServerAction::Shutdown => {}
            ServerAction::Signal { terminal, signal } => {
                if let Some(SimChild::Probe(p)) = self.children.get_mut(&terminal) {
                    p.signal(self.now, signal);
                    self.effects(terminal);
                    return;
                }
                match signal {
                    Signal::Interrupt | Signal::Terminate | Signal::Kill => self.exit(terminal),
                    // A stopped `cat` still has its input echoed by the line discipline.
                    Signal::Freeze | Signal::Resume => {}
                }
            }
            ServerAction::Kill { terminal } => {
                if let Some(SimChild::Probe(p)) = self.children.get_mut(&terminal) {
                    p.kill();
                    self.effects(terminal);
                    return;
                }
                self.exit(terminal);
            }
        }
    }

    /// Hands what a probe terminal did to the engine, in order.
    fn effects(&mut self, terminal: LocalTerminal) {
        let Some(SimChild::Probe(p)) = self.children.get_mut(&terminal) else {
            return;
        };
        for effect in p.take_effects() {
            match effect {
                Effect::Output(bytes) => {
                    for bytes in bytes.chunks(PTY_READ) {
                        self.handle(ServerEvent::PtyOutput { terminal, bytes });
                    }
                }
                Effect::WriteDone(job, outcome) => self.handle(ServerEvent::WriteDone {
                    terminal,
                    job,
                    outcome,
                }),
                Effect::Exited(exit_status) => self.handle(ServerEvent::ChildExited {
                    terminal,
                    exit_status,
                }),
            }
        }
    }

    /// The earliest wake-up of the engine, of every probe's stall timer and of every close
    /// bound.
    fn next_wake(&self) -> Option<Instant> {
        let probes = self.children.values().filter_map(|c| match c {
            SimChild::Probe(p) => p.poll_timeout(),
            SimChild::Echo { .. } => None,
        });
        let closes = self.conns.values().filter_map(|c| c.closing_at);
        self.engine
            .poll_timeout()
            .into_iter()
            .chain(probes)
            .chain(closes)
            .min()
    }

    /// Tells the engine and every probe that time has come to `self.now`.
    fn fire_timers(&mut self) -> Result<(), TransportError> {
        self.handle(ServerEvent::Timeout);
        self.drive()?;
        let lapsed: Vec<ConnKey> = self
            .conns
            .iter()
            .filter(|(_, c)| c.closing_at.is_some_and(|at| at <= self.now))
            .map(|(k, _)| *k)
            .collect();
        for k in lapsed {
            // The client did not read in time: what is still queued is dropped with it.
            if let Some(c) = self.conns.get_mut(&k) {
                c.closing_at = None;
                c.unsent.clear();
                c.closed = true;
            }
            self.handle(ServerEvent::Disconnected { conn: conn_id(k) });
            self.drive()?;
        }
        let due: Vec<LocalTerminal> = self
            .children
            .iter()
            .filter_map(|(t, c)| match c {
                SimChild::Probe(p) if p.poll_timeout().is_some_and(|at| at <= self.now) => Some(*t),
                _ => None,
            })
            .collect();
        for terminal in due {
            if let Some(SimChild::Probe(p)) = self.children.get_mut(&terminal) {
                p.handle_timeout(self.now);
            }
            self.effects(terminal);
            self.drive()?;
        }
        Ok(())
    }

    fn exit(&mut self, terminal: LocalTerminal) {
        if let Some(SimChild::Echo { alive, .. }) = self.children.get_mut(&terminal)
            && *alive
        {
            *alive = false;
            self.handle(ServerEvent::ChildExited {
                terminal,
                exit_status: None,
            });
        }
    }
}

impl Rewriter {
    /// The operation ids of the APPLY_INPUTs in these client bytes.
    fn apply_inputs(&mut self, conn: ConnKey, bytes: &[u8]) -> Vec<OperationId> {
        let decoder = self.decoders.entry(conn).or_default();
        decoder.push(bytes);
        let mut ops = Vec::new();
        while let Ok(Some(frame)) = decoder.poll_frame() {
            if let Frame::Command(CommandFrame {
                command: Command::ApplyInput(apply),
                ..
            }) = frame
            {
                ops.push(apply.operation_id);
            }
        }
        ops
    }
}

/// Why a real spawn of `spec` would fail on this machine, if it would.
fn spawn_failure(spec: &SpawnSpec) -> Option<String> {
    let program = spec.command.first()?;
    if program.starts_with('/') && !Path::new(program).exists() {
        return Some(format!("{program}: no such file or directory"));
    }
    if let Some(cwd) = &spec.cwd
        && !Path::new(cwd).is_dir()
    {
        return Some(format!("{cwd}: no such directory"));
    }
    None
}

/// The argument vector, working directory and environment a real server would start `spec`'s
/// child with, this process standing in for the server.
fn sim_process(spec: &SpawnSpec) -> SimProcess {
    let cwd = match &spec.cwd {
        Some(dir) => Some(dir.as_bytes().to_vec()),
        None => std::env::current_dir()
            .ok()
            .map(|d| d.into_os_string().into_vec()),
    };
    // A map, as an environment holds each name once: the last of duplicates wins, and TERM
    // is set over whatever the list or the inherited environment had.
    let mut env: BTreeMap<Vec<u8>, Vec<u8>> = match &spec.env {
        Some(vars) => vars
            .iter()
            .map(|(k, v)| (k.as_bytes().to_vec(), v.as_bytes().to_vec()))
            .collect(),
        None => std::env::vars_os()
            .map(|(k, v)| (OsString::into_vec(k), OsString::into_vec(v)))
            .collect(),
    };
    env.insert(b"TERM".to_vec(), spec.term.as_bytes().to_vec());
    SimProcess {
        argv: spec.command.iter().map(|a| a.as_bytes().to_vec()).collect(),
        cwd,
        environ: env
            .into_iter()
            .map(|(mut entry, value)| {
                entry.push(b'=');
                entry.extend(value);
                entry
            })
            .collect(),
    }
}

fn key(conn: ConnId) -> ConnKey {
    conn.0 as ConnKey
}

fn conn_id(key: ConnKey) -> ConnId {
    ConnId(key as u64)
}

impl Transport for Sim {
    fn virtual_time(&self) -> bool {
        true
    }

    fn max_connections(&self) -> Option<usize> {
        None
    }

    fn can_restart(&self) -> bool {
        true
    }

    /// A fresh engine with the next server id, as after a crash: connections end, and the
    /// terminals' children go with the old server (their PTYs closed with it). Time goes on.
    fn restart(&mut self) -> Result<(), TransportError> {
        self.incarnation = self.incarnation.wrapping_add(1);
        self.engine = ServerEngine::new(ServerConfig::new(sim_server_id(self.incarnation)));
        self.children.clear();
        for c in self.conns.values_mut() {
            c.closed = true;
            c.pending.clear();
        }
        if let Some(r) = &mut self.rewriter {
            *r = Rewriter::default();
        }
        Ok(())
    }

    fn vars(&self) -> Vec<(String, Value)> {
        vec![
            ("ECHO".to_owned(), command_list(&[ECHO_COMMAND])),
            (
                "PROBE".to_owned(),
                command_list(&[SIM_PROBE_PROGRAM, "probe"]),
            ),
        ]
    }

    fn connect(&mut self) -> Result<ConnKey, TransportError> {
        let key = self.next_conn;
        self.next_conn += 1;
        self.conns.insert(key, SimConn::default());
        self.handle(ServerEvent::Connected {
            conn: conn_id(key),
            peer: PeerInfo::local(),
        });
        self.drive()?;
        Ok(key)
    }

    fn send(&mut self, conn: ConnKey, bytes: &[u8]) -> Result<(), TransportError> {
        if self.conns.get(&conn).is_none_or(|c| c.closed) {
            // Like writing to a socket the server has closed: the bytes go nowhere.
            return Ok(());
        }
        let ops = self.rewriter.as_mut().map(|r| r.apply_inputs(conn, bytes));
        let Some(ops) = ops else {
            self.handle(ServerEvent::Received {
                conn: conn_id(conn),
                bytes,
            });
            return self.drive();
        };
        // The broken server: a retry of a known operation is written again after the engine
        // (correctly) answered it from the ledger.
        let known = |sim: &Self, op: &OperationId| {
            sim.rewriter.as_ref().and_then(|r| r.jobs.get(op).cloned())
        };
        let retries: Vec<(LocalTerminal, Vec<u8>)> =
            ops.iter().filter_map(|op| known(self, op)).collect();
        if let Some(r) = &mut self.rewriter {
            r.admitting = ops.last().copied();
        }
        self.handle(ServerEvent::Received {
            conn: conn_id(conn),
            bytes,
        });
        self.drive()?;
        for (terminal, bytes) in retries {
            self.perform(ServerAction::Write {
                terminal,
                // A job the engine never made: its completion is ignored.
                job: JobId(u64::MAX),
                bytes,
            });
        }
        self.drive()
    }

    fn recv(&mut self, conn: ConnKey, _wait: Duration) -> Result<Recv, TransportError> {
        self.drive()?;
        let Some(c) = self.conns.get_mut(&conn) else {
            return Ok(Recv::Closed);
        };
        if !c.pending.is_empty() {
            return Ok(Recv::Bytes(std::mem::take(&mut c.pending)));
        }
        Ok(if c.closed {
            Recv::Closed
        } else {
            Recv::Nothing
        })
    }

    fn disconnect(&mut self, conn: ConnKey) {
        if let Some(c) = self.conns.get_mut(&conn)
            && !c.closed
        {
            c.closed = true;
            c.unsent.clear();
            c.closing_at = None;
            self.handle(ServerEvent::Disconnected {
                conn: conn_id(conn),
            });
            let _ = self.drive();
        }
    }

    fn set_reading(&mut self, conn: ConnKey, reading: bool) -> Result<(), TransportError> {
        let Some(c) = self.conns.get_mut(&conn) else {
            return Ok(());
        };
        c.paused = !reading;
        if !reading || c.closed {
            return Ok(());
        }
        // The client reads everything queued at once.
        let unsent = std::mem::take(&mut c.unsent);
        c.pending.extend_from_slice(&unsent);
        let closing = c.closing_at.take().is_some();
        if closing {
            c.closed = true;
        }
        if !unsent.is_empty() {
            self.handle(ServerEvent::Sent {
                conn: conn_id(conn),
                bytes: unsent.len(),
            });
        }
        if closing {
            self.handle(ServerEvent::Disconnected {
                conn: conn_id(conn),
            });
        }
        self.drive()
    }

    fn advance(&mut self, by: Duration) {
        let target = self.now + by;
        // Visit every wake-up on the way, in order, so timers fire at their own instants.
        for _ in 0..MAX_DRIVE_STEPS {
            match self.next_wake() {
                Some(at) if at <= target => {
                    self.now = self.now.max(at);
                    if self.fire_timers().is_err() {
                        break;
                    }
                    if self.next_wake() == Some(at) {
                        // A timer that does not move would spin: let time jump past it.
                        break;
                    }
                }
                _ => break,
            }
        }
        self.now = target;
        let _ = self.fire_timers();
    }
}
