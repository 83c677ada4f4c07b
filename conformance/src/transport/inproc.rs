//! The in-process transport: our `ServerEngine` in the simulator's [`Harness`] on a virtual
//! clock, its terminals' children simulated.
//!
//! The harness is the driver (its one `perform(ServerAction)`, its PTYs, its close bound);
//! this module adds what is the transport's: connection keys and [`Recv`], the children a
//! spawn gets, and the [`RuleFlip`] mutant. Two children are simulated. `$ECHO`'s is `cat` on
//! a cooked terminal ([`TtyCat`]): the line discipline echoes what is written to it, and it
//! ends, without an exit status, on INTERRUPT, TERMINATE, KILL or KILL_TERMINAL, like `cat`
//! under the default signal dispositions; its terminal stays canonical, so the
//! canonical-line guard applies. `$PROBE`'s is the real probe's
//! [`ProbeMachine`](crate::probe::ProbeMachine) as a child model ([`SimProbe`]): every byte a
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
use phux_core::server::{ConnId, LocalTerminal, ServerConfig, SpawnSpec};
use phux_core::sim::{
    CLOSE_BOUND, ChildIo, ChildModel, Harness, PTY_READ, Received, SOCKET_BUFFER, SimConn,
    server_id_for,
};
use phux_core::writer::Termios;
use phux_proto::Frame;
use phux_proto::command::{Command, Signal};
use phux_proto::frame::CommandFrame;
use phux_proto::ids::OperationId;
use phux_proto::notation::Value;

use super::sim_probe::{SimProbe, SimProcess};
use super::{ConnKey, Connector, ECHO_COMMAND, Recv, Transport, TransportError, command_list};

/// The in-process server: a fresh engine for every transcript.
#[derive(Clone, Debug, Default)]
pub struct InProcess;

impl Connector for InProcess {
    fn kind(&self) -> &'static str {
        "in-process"
    }

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
    fn kind(&self) -> &'static str {
        "in-process"
    }

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
    /// Each operation's terminal and job bytes.
    jobs: BTreeMap<OperationId, (LocalTerminal, Vec<u8>)>,
}

/// The program name `$PROBE` names in process; `<it> probe` runs the simulated probe.
pub(crate) const SIM_PROBE_PROGRAM: &str = "phux-conformance";

/// Whether `command` runs the probe (`phux-conformance probe [...]`).
fn is_probe(command: &[String]) -> bool {
    command.first().is_some_and(|p| p == SIM_PROBE_PROGRAM)
        && command.get(1).is_some_and(|a| a == "probe")
}

/// The child a spawn of `spec` gets: the probe for the probe's command, `cat` otherwise, or
/// the failure a real spawn would meet.
fn spawn_child(spec: &SpawnSpec) -> Result<Box<dyn ChildModel>, String> {
    if let Some(message) = spawn_failure(spec) {
        return Err(message);
    }
    if is_probe(&spec.command) {
        let probe = SimProbe::new(sim_process(spec), spec.cols, spec.rows);
        return Ok(Box::new(probe));
    }
    Ok(Box::new(TtyCat))
}

/// `cat` in a cooked terminal: the line discipline echoes every byte written, `cat` reads it
/// (and what it writes back is left out, as the echo already shows the input).
#[derive(Clone, Copy, Debug)]
struct TtyCat;

impl ChildModel for TtyCat {
    fn on_start(&mut self, _now: Instant, _pid: u32, io: &mut ChildIo<'_>) {
        io.set_termios(Termios::COOKED);
    }

    /// The default dispositions: SIGINT and SIGTERM end it as SIGKILL does.
    fn fatal_signals(&self) -> &'static [Signal] {
        &[Signal::Interrupt, Signal::Terminate, Signal::Kill]
    }

    fn on_receive(&mut self, _now: Instant, byte: u8, io: &mut ChildIo<'_>) -> Received {
        io.write(&[byte]);
        Received::Queue(byte)
    }

    fn on_input(&mut self, _now: Instant, _bytes: &[u8], _io: &mut ChildIo<'_>) {}
}

/// One transcript's server: the harness, and the rule flip if any.
struct Sim {
    h: Harness,
    /// Set only for a [`BrokenInProcess`] server.
    rewriter: Option<Rewriter>,
    /// While the server's turns are held ([`Transport::hold_turns`]), what each connection
    /// sent, in the order the connections first sent: on release each is one read, handed to
    /// the engine in that order, as by a loop that found them all ready at once.
    held: Option<Vec<(ConnId, Vec<u8>)>>,
}

impl Sim {
    fn new(flip: Option<RuleFlip>) -> Self {
        // [SERVER.FAIR.1] Frames are handled a bounded budget at a time (the engine's default,
        // as over a socket), the rest when the harness comes back for them.
        let mut h = Harness::with_config(ServerConfig::new(server_id_for(1)));
        // The runner keeps its own wire log of what it sends and reads.
        h.log.set_enabled(false);
        h.set_raw_reads(true);
        h.set_close_bound(Some(CLOSE_BOUND));
        h.set_pty_read(Some(PTY_READ));
        h.set_socket_buffer(Some(SOCKET_BUFFER));
        h.set_spawner(spawn_child);
        Self {
            h,
            rewriter: flip.map(|RuleFlip::RewriteRetries| Rewriter::default()),
            held: None,
        }
    }

    /// Runs the server's turns until it is idle at this instant, unless they are held.
    fn settle(&mut self) {
        if self.held.is_none() {
            self.h.settle();
        }
    }

    fn is_open(&self, conn: ConnKey) -> bool {
        self.h
            .conns
            .get(&conn_id(conn))
            .is_some_and(SimConn::is_open)
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
    // A real spawn of an empty argument vector has no program to execute.
    let Some(program) = spec.command.first() else {
        return Some("an empty argument vector names no program".to_owned());
    };
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

impl Sim {
    /// An UPGRADE the engine accepted is carried out as a driver would, once the engine is
    /// quiet: its state crosses into a new engine through an image (see
    /// `Harness::upgrade_in_place`). Until then it waits, as a real driver's does.
    fn carry_out_upgrade(&mut self) {
        if self.h.upgrade_asked() {
            // Not quiet yet (a write still in progress): tried again at the next turn.
            let _ = self.h.upgrade_in_place();
        }
    }
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

    fn can_upgrade(&self) -> bool {
        true
    }

    /// A fresh engine with the next server id, as after a crash: connections end (what they
    /// did not take yet is lost), and the terminals' children go with the old server (their
    /// PTYs closed with it). Time goes on.
    fn restart(&mut self) -> Result<(), TransportError> {
        self.h.restart_server();
        let conns: Vec<ConnId> = self.h.conns.keys().copied().collect();
        for c in conns {
            self.h.take_received(c);
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
        let c = self.h.connect();
        self.settle();
        Ok(c.0 as ConnKey)
    }

    fn hold_turns(&mut self, held: bool) {
        if held {
            self.held.get_or_insert_default();
            return;
        }
        for (c, bytes) in self.held.take().unwrap_or_default() {
            self.h.send_raw(c, &bytes);
        }
        self.settle();
    }

    fn same_turn(&self) -> bool {
        true
    }

    fn send(&mut self, conn: ConnKey, bytes: &[u8]) -> Result<(), TransportError> {
        if !self.is_open(conn) {
            // Like writing to a socket the server has closed: the bytes go nowhere.
            return Ok(());
        }
        let c = conn_id(conn);
        if let Some(held) = &mut self.held {
            match held.iter_mut().find(|(held_conn, _)| *held_conn == c) {
                Some((_, pending)) => pending.extend_from_slice(bytes),
                None => held.push((c, bytes.to_vec())),
            }
            return Ok(());
        }
        let ops = self.rewriter.as_mut().map(|r| r.apply_inputs(conn, bytes));
        let Some(ops) = ops else {
            self.h.send_raw(c, bytes);
            self.h.settle();
            return Ok(());
        };
        // The broken server: a retry of a known operation is written again after the engine
        // (correctly) answered it from the ledger.
        let retries: Vec<(LocalTerminal, Vec<u8>)> = ops
            .iter()
            .filter_map(|op| self.rewriter.as_ref()?.jobs.get(op).cloned())
            .collect();
        let before = self.h.writes.len();
        self.h.send_raw(c, bytes);
        self.h.settle();
        // The first job written for these bytes is the last APPLY_INPUT's.
        if let (Some(op), Some(w), Some(r)) = (
            ops.last(),
            self.h.writes.get(before),
            self.rewriter.as_mut(),
        ) {
            r.jobs.insert(*op, (w.terminal, w.bytes.clone()));
        }
        for (terminal, bytes) in retries {
            self.h.write_unasked(terminal, bytes);
        }
        self.h.settle();
        Ok(())
    }

    fn recv(&mut self, conn: ConnKey, _wait: Duration) -> Result<Recv, TransportError> {
        self.h.settle();
        self.carry_out_upgrade();
        let c = conn_id(conn);
        if !self.h.conns.contains_key(&c) {
            return Ok(Recv::Closed);
        }
        let bytes = self.h.take_received(c);
        if !bytes.is_empty() {
            return Ok(Recv::Bytes(bytes));
        }
        Ok(if self.is_open(conn) {
            Recv::Nothing
        } else {
            Recv::Closed
        })
    }

    fn disconnect(&mut self, conn: ConnKey) {
        if self.is_open(conn) {
            self.h.disconnect(conn_id(conn));
            self.h.settle();
        }
    }

    fn set_reading(&mut self, conn: ConnKey, reading: bool) -> Result<(), TransportError> {
        let c = conn_id(conn);
        if !self.h.conns.contains_key(&c) {
            return Ok(());
        }
        if !reading {
            self.h.stall_reader(c);
        } else if self.is_open(conn) {
            // The client reads everything queued at once.
            self.h.resume_reader(c);
            self.h.settle();
        }
        Ok(())
    }

    fn advance(&mut self, by: Duration) {
        self.h.advance(by);
        self.carry_out_upgrade();
    }
}
