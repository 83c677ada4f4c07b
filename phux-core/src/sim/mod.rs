//! The simulator: a [`ServerEngine`] wired to simulated PTYs and raw client connections on a
//! virtual clock, with fault injection. Deterministic: the same calls give the same wire log.
//!
//! Used by the engine tests, the fuzzers and the conformance runner's in-process transport.
//!
//! ```
//! use phux_core::sim::Harness;
//! use phux_proto::command::{Command, CommandResult};
//!
//! let mut h = Harness::new();
//! let c = h.connect();
//! h.hello(c);
//! let t = h.spawn(c);
//! let result = h.request(c, Command::AttachTerminal { terminal: t });
//! assert_eq!(result, Some(CommandResult::Ok));
//! ```
//!
//! # Stepping
//!
//! [`Harness::step`] delivers one round of what is due now (engine actions to PTYs and
//! clients, PTY progress back to the engine, due timeouts); when nothing is due it jumps the
//! clock to the earliest wake-up. [`Harness::settle`] delivers everything due without moving
//! the clock; [`Harness::drive`] runs to idle, timers included; [`Harness::advance`] moves
//! the clock by a duration, firing every timer on the way.

mod pty;

use std::collections::{BTreeMap, VecDeque};
use std::fmt::{self, Write as _};
use std::time::Duration;

use phux_proto::command::{ApplyInput, Command, CommandResult, Signal};
use phux_proto::frame::{
    ClientCapabilities, CommandFrame, Hello, HelloOk, ProtocolVersion, SpawnResult, SpawnTerminal,
};
use phux_proto::input::{InputEvent, PasteEvent, PasteTrust};
use phux_proto::{ErrorCode, Frame, GroupId, OperationId, TerminalId};

use crate::framing::FrameDecoder;
use crate::server::{
    ConnId, JobId, LocalTerminal, PeerInfo, ServerAction, ServerConfig, ServerEngine, ServerEvent,
    SpawnSpec, WriteOutcome,
};
use crate::time::Instant;

pub use pty::{ChildMode, DEFAULT_KERNEL_BUFFER, ExitKind, PtyEvent, SimPty, count};

/// How many rounds [`Harness::drive`] and [`Harness::settle`] allow before calling it a
/// livelock.
pub const DEFAULT_STEP_BOUND: usize = 100_000;

/// A transcript-shaped log of everything on the wire and at the PTYs.
#[derive(Clone, Debug, Default)]
pub struct WireLog {
    lines: VecDeque<String>,
    enabled: bool,
    /// Keep at most this many lines (the newest); 0 = unbounded.
    cap: usize,
}

/// The longest line the log keeps (a frame with a big payload is cut).
const MAX_LOG_LINE: usize = 400;

impl WireLog {
    fn new() -> Self {
        Self {
            lines: VecDeque::new(),
            enabled: true,
            cap: 0,
        }
    }

    /// Turns logging on or off (off makes long randomized runs cheaper).
    pub fn set_enabled(&mut self, enabled: bool) {
        self.enabled = enabled;
    }

    /// Keeps only the newest `lines` lines (0 = all).
    pub fn set_cap(&mut self, lines: usize) {
        self.cap = lines;
    }

    /// Appends one line.
    pub fn push(&mut self, line: impl FnOnce() -> String) {
        if !self.enabled {
            return;
        }
        let mut line = line();
        if line.len() > MAX_LOG_LINE {
            let mut cut = MAX_LOG_LINE;
            while !line.is_char_boundary(cut) {
                cut -= 1;
            }
            line.truncate(cut);
            line.push('…');
        }
        self.lines.push_back(line);
        if self.cap > 0 && self.lines.len() > self.cap {
            self.lines.pop_front();
        }
    }

    /// The lines, oldest first.
    pub fn lines(&self) -> impl Iterator<Item = &str> {
        self.lines.iter().map(String::as_str)
    }
}

impl fmt::Display for WireLog {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for line in &self.lines {
            writeln!(f, "{line}")?;
        }
        Ok(())
    }
}

/// One raw client connection as the harness sees it.
#[derive(Debug)]
pub struct SimConn {
    /// Its id at the engine.
    pub id: ConnId,
    /// Its name in the log (`c1`, `c2`, ...).
    pub name: String,
    decoder: FrameDecoder,
    inbox: VecDeque<Frame>,
    /// Bytes the server queued that the client has not read yet.
    transport: Vec<u8>,
    reading: bool,
    /// The engine still knows the connection (neither side has closed it).
    open: bool,
    /// The server asked to close it.
    closed_by_server: bool,
    /// Deliver only this many more bytes of the client's sends, then drop the connection.
    drop_after: Option<usize>,
    /// Frames from the server that failed to decode (always a server bug).
    decode_errors: Vec<String>,
    /// The server_id of its HELLO_OK.
    server_id: Option<Vec<u8>>,
}

impl SimConn {
    fn new(id: ConnId) -> Self {
        Self {
            id,
            name: format!("c{}", id.0),
            decoder: FrameDecoder::new(),
            inbox: VecDeque::new(),
            transport: Vec::new(),
            reading: true,
            open: true,
            closed_by_server: false,
            drop_after: None,
            decode_errors: Vec::new(),
            server_id: None,
        }
    }

    /// Whether the connection is still open at the engine.
    pub fn is_open(&self) -> bool {
        self.open
    }

    /// Whether the server closed it (after DETACHED).
    pub fn closed_by_server(&self) -> bool {
        self.closed_by_server
    }

    /// Frames received and not yet taken.
    pub fn inbox(&self) -> impl Iterator<Item = &Frame> {
        self.inbox.iter()
    }

    /// Bytes the server queued that the client has not read (a stalled reader's backlog).
    pub fn unread_bytes(&self) -> usize {
        self.transport.len()
    }

    /// The server_id of the connection's HELLO_OK, once received.
    pub fn server_id(&self) -> Option<&[u8]> {
        self.server_id.as_deref()
    }

    /// Server bytes that did not decode, with the error.
    pub fn decode_errors(&self) -> &[String] {
        &self.decode_errors
    }
}

/// One `Write` action and what became of it.
#[derive(Clone, Debug)]
pub struct WriteRecord {
    /// The server incarnation (1 for the first engine, +1 per restart).
    pub incarnation: u32,
    /// The terminal.
    pub terminal: LocalTerminal,
    /// The job.
    pub job: JobId,
    /// Its bytes.
    pub bytes: Vec<u8>,
    /// When the engine handed it over.
    pub issued_at: Instant,
    /// The completion reported to the engine, and when.
    pub completed: Option<(Instant, WriteOutcome)>,
}

/// The simulated world: one server engine, raw client connections, simulated PTYs, a clock.
pub struct Harness {
    /// The engine under test.
    pub server: ServerEngine,
    /// Every connection ever opened in this harness, by id.
    pub conns: BTreeMap<ConnId, SimConn>,
    /// The current incarnation's PTYs, by terminal id.
    pub ptys: BTreeMap<LocalTerminal, SimPty>,
    /// PTYs of earlier incarnations (their children died with the old server).
    pub retired_ptys: Vec<(u32, LocalTerminal, SimPty)>,
    /// The virtual clock.
    pub now: Instant,
    /// The transcript-shaped wire log, printed when a test panics.
    pub log: WireLog,
    /// What new terminals' children do.
    pub spawn_mode: ChildMode,
    /// Every `Write` action, in order.
    pub writes: Vec<WriteRecord>,
    /// Every action other than `Send`, `SendShared` and `Write`, in order.
    pub actions: Vec<ServerAction>,
    /// Every `SendShared`: the connection and the address of the frame's head, which tells
    /// the frames that shared one encoding apart from those that did not.
    pub shared_sends: Vec<(ConnId, usize)>,
    config: ServerConfig,
    incarnation: u32,
    next_conn: u64,
    next_pid: u32,
    fail_next_spawns: usize,
    hold_spawns: bool,
    held_spawns: Vec<LocalTerminal>,
    shut_down: bool,
    request_counter: u32,
}

impl fmt::Debug for Harness {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Harness")
            .field("now", &self.now)
            .field("incarnation", &self.incarnation)
            .field("conns", &self.conns.len())
            .field("ptys", &self.ptys.len())
            .finish_non_exhaustive()
    }
}

impl Default for Harness {
    fn default() -> Self {
        Self::new()
    }
}

impl Drop for Harness {
    fn drop(&mut self) {
        if std::thread::panicking() && self.log.enabled {
            eprintln!("---- wire log ----\n{}---- end of wire log ----", self.log);
        }
    }
}

/// The server_id of incarnation `n`: 16 bytes, distinct per incarnation.
pub fn server_id_for(incarnation: u32) -> Vec<u8> {
    let mut id = vec![0x5e; 12];
    id.extend_from_slice(&incarnation.to_be_bytes());
    id
}

/// A HELLO for version 0.8.0 with the reference client's capabilities.
pub fn hello_frame() -> Frame {
    Frame::Hello(Hello {
        client_name: "sim".into(),
        version: ProtocolVersion::CURRENT,
        capabilities: ClientCapabilities::default(),
    })
}

/// A COMMAND frame.
pub fn command_frame(request_id: u32, command: Command) -> Frame {
    Frame::Command(CommandFrame {
        request_id,
        command,
    })
}

impl Harness {
    /// A harness with a default-configured engine (incarnation 1) and `Echo` children.
    pub fn new() -> Self {
        Self::with_config(ServerConfig::new(server_id_for(1)))
    }

    /// A harness whose engine uses `config` (its `server_id` is kept for incarnation 1).
    pub fn with_config(config: ServerConfig) -> Self {
        Self {
            server: ServerEngine::new(config.clone()),
            conns: BTreeMap::new(),
            ptys: BTreeMap::new(),
            retired_ptys: Vec::new(),
            now: Instant::ZERO,
            log: WireLog::new(),
            spawn_mode: ChildMode::Echo,
            writes: Vec::new(),
            actions: Vec::new(),
            shared_sends: Vec::new(),
            config,
            incarnation: 1,
            next_conn: 1,
            next_pid: 1000,
            fail_next_spawns: 0,
            hold_spawns: false,
            held_spawns: Vec::new(),
            shut_down: false,
            request_counter: 0,
        }
    }

    /// The current server incarnation (1, then +1 per [`Harness::restart_server`]).
    pub fn incarnation(&self) -> u32 {
        self.incarnation
    }

    /// Whether the engine asked the driver to stop (`ServerAction::Shutdown`).
    pub fn is_shut_down(&self) -> bool {
        self.shut_down
    }

    // ---- connections ----------------------------------------------------------------------

    /// Opens a connection from an authorized local peer.
    pub fn connect(&mut self) -> ConnId {
        self.connect_with(PeerInfo::local())
    }

    /// Opens a connection from a peer the driver describes as `peer`.
    pub fn connect_with(&mut self, peer: PeerInfo) -> ConnId {
        let id = ConnId(self.next_conn);
        self.next_conn += 1;
        let conn = SimConn::new(id);
        let name = conn.name.clone();
        self.conns.insert(id, conn);
        self.log.push(|| format!("{name} connect {peer:?}"));
        self.server
            .handle(self.now, ServerEvent::Connected { conn: id, peer });
        id
    }

    fn conn_mut(&mut self, c: ConnId) -> &mut SimConn {
        match self.conns.get_mut(&c) {
            Some(conn) => conn,
            None => panic!("harness misuse: unknown connection {c:?}"),
        }
    }

    /// The connection's client-side state.
    pub fn conn(&self, c: ConnId) -> &SimConn {
        match self.conns.get(&c) {
            Some(conn) => conn,
            None => panic!("harness misuse: unknown connection {c:?}"),
        }
    }

    /// The client sends one frame (encoded canonically).
    pub fn send(&mut self, c: ConnId, frame: &Frame) {
        let name = self.conn(c).name.clone();
        self.log.push(|| format!("{name} > {frame:?}"));
        let bytes = frame.to_bytes();
        self.deliver_client_bytes(c, &bytes);
    }

    /// The client sends raw bytes (malformed input, split frames).
    pub fn send_raw(&mut self, c: ConnId, bytes: &[u8]) {
        let name = self.conn(c).name.clone();
        self.log.push(|| format!("{name} > raw {}", hex(bytes)));
        self.deliver_client_bytes(c, bytes);
    }

    fn deliver_client_bytes(&mut self, c: ConnId, bytes: &[u8]) {
        let conn = self.conn_mut(c);
        if !conn.open {
            return;
        }
        let (deliver, drop_now) = match conn.drop_after {
            Some(n) if n <= bytes.len() => (&bytes[..n], true),
            Some(n) => {
                conn.drop_after = Some(n - bytes.len());
                (bytes, false)
            }
            None => (bytes, false),
        };
        if !deliver.is_empty() {
            self.server.handle(
                self.now,
                ServerEvent::Received {
                    conn: c,
                    bytes: deliver,
                },
            );
        }
        if drop_now {
            let name = self.conn(c).name.clone();
            let n = deliver.len();
            self.log
                .push(|| format!("{name} dropped after {n} bytes of a send"));
            self.disconnect(c);
        }
    }

    /// Drops the connection after the next `n` bytes the client sends (0 = at the next send).
    pub fn drop_after(&mut self, c: ConnId, n: usize) {
        self.conn_mut(c).drop_after = Some(n);
    }

    /// The client side closes the connection (or the transport breaks).
    pub fn disconnect(&mut self, c: ConnId) {
        let conn = self.conn_mut(c);
        if !conn.open {
            return;
        }
        conn.open = false;
        conn.drop_after = None;
        let name = conn.name.clone();
        self.log.push(|| format!("{name} disconnect"));
        self.server
            .handle(self.now, ServerEvent::Disconnected { conn: c });
    }

    /// The client stops reading: the server's bytes pile up and no `Sent` is reported.
    pub fn stall_reader(&mut self, c: ConnId) {
        self.conn_mut(c).reading = false;
    }

    /// The client reads again: its backlog is delivered (and reported `Sent` while open).
    pub fn resume_reader(&mut self, c: ConnId) {
        self.conn_mut(c).reading = true;
        self.flush_conn(c);
    }

    /// The client reads `n` bytes of its backlog without resuming.
    pub fn read_some(&mut self, c: ConnId, n: usize) {
        self.read_bytes(c, n);
    }

    fn flush_conn(&mut self, c: ConnId) {
        let len = self.conn(c).transport.len();
        self.read_bytes(c, len);
    }

    fn read_bytes(&mut self, c: ConnId, n: usize) {
        let conn = self.conn_mut(c);
        let n = n.min(conn.transport.len());
        if n == 0 {
            return;
        }
        let bytes: Vec<u8> = conn.transport.drain(..n).collect();
        conn.decoder.push(&bytes);
        let open = conn.open;
        let mut lines = Vec::new();
        loop {
            match conn.decoder.poll_frame() {
                Ok(Some(frame)) => {
                    if let Frame::HelloOk(ok) = &frame {
                        conn.server_id = Some(ok.server_id.clone());
                    }
                    lines.push(format!("{} < {frame:?}", conn.name));
                    conn.inbox.push_back(frame);
                }
                Ok(None) => break,
                Err(err) => {
                    lines.push(format!("{} < !undecodable: {err}", conn.name));
                    conn.decode_errors.push(err.to_string());
                    if conn.decoder.is_failed() {
                        break;
                    }
                }
            }
        }
        for line in lines {
            self.log.push(|| line);
        }
        if open {
            self.server
                .handle(self.now, ServerEvent::Sent { conn: c, bytes: n });
        }
    }

    /// SUBSCRIBE_EVENTS with server scope, delivered.
    pub fn subscribe_all(&mut self, c: ConnId) {
        self.send(
            c,
            &Frame::SubscribeEvents(phux_proto::frame::SubscribeEvents { terminal: None }),
        );
        self.settle();
    }

    /// Takes every frame the client has received.
    pub fn recv(&mut self, c: ConnId) -> Vec<Frame> {
        self.conn_mut(c).inbox.drain(..).collect()
    }

    /// Settles, then takes every frame the client has received.
    pub fn settle_recv(&mut self, c: ConnId) -> Vec<Frame> {
        self.settle();
        self.recv(c)
    }

    /// Sends HELLO, settles, and returns the HELLO_OK (panics otherwise). Other frames stay
    /// in the inbox.
    pub fn hello(&mut self, c: ConnId) -> HelloOk {
        self.send(c, &hello_frame());
        self.settle();
        let conn = self.conn_mut(c);
        let pos = conn
            .inbox
            .iter()
            .position(|f| matches!(f, Frame::HelloOk(_)));
        match pos.and_then(|p| conn.inbox.remove(p)) {
            Some(Frame::HelloOk(ok)) => ok,
            _ => panic!("no HELLO_OK for {}: {:?}", conn.name, conn.inbox),
        }
    }

    /// Connects and completes the handshake.
    pub fn client(&mut self) -> ConnId {
        let c = self.connect();
        self.hello(c);
        c
    }

    /// Sends a COMMAND and settles; returns its COMMAND_RESULT (removed from the inbox; the
    /// other frames stay) or `None` when none came yet. Request ids count up per harness.
    pub fn request(&mut self, c: ConnId, command: Command) -> Option<CommandResult> {
        let rid = self.next_request_id();
        self.send(c, &command_frame(rid, command));
        self.settle();
        self.take_result(c, rid)
    }

    /// A fresh request id (never 0, unique within this harness).
    pub fn next_request_id(&mut self) -> u32 {
        self.request_counter = self.request_counter.wrapping_add(1).max(1);
        self.request_counter
    }

    /// Removes and returns the COMMAND_RESULT for `request_id` from the inbox, if there.
    pub fn take_result(&mut self, c: ConnId, request_id: u32) -> Option<CommandResult> {
        let conn = self.conn_mut(c);
        let pos = conn
            .inbox
            .iter()
            .position(|f| matches!(f, Frame::CommandResult(r) if r.request_id == request_id))?;
        match conn.inbox.remove(pos) {
            Some(Frame::CommandResult(r)) => Some(r.result),
            _ => None,
        }
    }

    /// Spawns a terminal with the default spec; returns its id (panics on failure). The
    /// TERMINAL_SPAWNED is removed from the inbox.
    pub fn spawn(&mut self, c: ConnId) -> TerminalId {
        self.spawn_with(c, SpawnTerminal::new(0, GroupId(1)))
    }

    /// Spawns with `spawn` (its request id is replaced); returns the terminal id.
    pub fn spawn_with(&mut self, c: ConnId, mut spawn: SpawnTerminal) -> TerminalId {
        let rid = self.next_request_id();
        spawn.request_id = rid;
        self.send(c, &Frame::SpawnTerminal(spawn));
        self.settle();
        let conn = self.conn_mut(c);
        let pos = conn
            .inbox
            .iter()
            .position(|f| matches!(f, Frame::TerminalSpawned(s) if s.request_id == rid));
        match pos.and_then(|p| conn.inbox.remove(p)) {
            Some(Frame::TerminalSpawned(s)) => match s.result {
                SpawnResult::Ok(t) => t,
                SpawnResult::Err(e) => panic!("spawn failed: {e:?}"),
            },
            _ => panic!("no TERMINAL_SPAWNED for {}: {:?}", conn.name, conn.inbox),
        }
    }

    /// The next `n` spawns fail (`SpawnFailed`).
    pub fn fail_next_spawns(&mut self, n: usize) {
        self.fail_next_spawns = n;
    }

    /// While set, `Spawn` actions are held and not answered until
    /// [`Harness::release_spawns`].
    pub fn hold_spawns(&mut self, hold: bool) {
        self.hold_spawns = hold;
    }

    /// Answers every held `Spawn` with `Spawned`.
    pub fn release_spawns(&mut self) {
        let held = std::mem::take(&mut self.held_spawns);
        for terminal in held {
            self.start_pty(terminal);
        }
    }

    // ---- PTYs -----------------------------------------------------------------------------

    /// The current incarnation's PTY for a terminal id (panics if none).
    pub fn pty(&mut self, terminal: &TerminalId) -> &mut SimPty {
        let t = LocalTerminal(terminal.local().unwrap_or(0));
        match self.ptys.get_mut(&t) {
            Some(p) => p,
            None => panic!("harness misuse: no PTY for {terminal:?}"),
        }
    }

    /// The `Write` records of one terminal in this incarnation.
    pub fn writes_to(&self, terminal: &TerminalId) -> Vec<&WriteRecord> {
        let t = LocalTerminal(terminal.local().unwrap_or(0));
        self.writes
            .iter()
            .filter(|w| w.incarnation == self.incarnation && w.terminal == t)
            .collect()
    }

    /// Replaces the engine with a fresh one (a new server_id, an empty ledger, no
    /// terminals). Every open connection is dropped; the old children die with the server.
    pub fn restart_server(&mut self) {
        self.incarnation += 1;
        let n = self.incarnation;
        self.log
            .push(|| format!("# server restart: incarnation {n}"));
        for conn in self.conns.values_mut() {
            if conn.open {
                conn.open = false;
                conn.closed_by_server = true;
            }
        }
        for (t, pty) in std::mem::take(&mut self.ptys) {
            self.retired_ptys.push((self.incarnation - 1, t, pty));
        }
        let mut config = self.config.clone();
        config.server_id = server_id_for(n);
        self.server = ServerEngine::new(config);
        self.shut_down = false;
    }

    // ---- time and stepping ----------------------------------------------------------------

    fn next_wakeup(&self) -> Option<Instant> {
        let ptys = self.ptys.values().filter_map(SimPty::poll_timeout);
        self.server.poll_timeout().into_iter().chain(ptys).min()
    }

    /// Delivers one round of what is due now; when nothing is, jumps the clock to the
    /// earliest wake-up and fires it. `false` when idle (nothing due and no wake-up).
    pub fn step(&mut self) -> bool {
        if self.step_now() {
            return true;
        }
        let Some(at) = self.next_wakeup() else {
            return false;
        };
        self.jump_to(at);
        self.server.handle(self.now, ServerEvent::Timeout);
        true
    }

    /// One round at the current instant; `true` if anything happened.
    fn step_now(&mut self) -> bool {
        let mut progressed = false;
        while let Some(action) = self.server.poll_action() {
            progressed = true;
            self.perform(action);
        }
        let terminals: Vec<LocalTerminal> = self.ptys.keys().copied().collect();
        for t in terminals {
            let events = match self.ptys.get_mut(&t) {
                Some(pty) => pty.poll(self.now),
                None => continue,
            };
            for event in events {
                progressed = true;
                self.report_pty_event(t, event);
            }
        }
        if self.server.poll_timeout().is_some_and(|at| at <= self.now) {
            progressed = true;
            self.server.handle(self.now, ServerEvent::Timeout);
        }
        progressed
    }

    fn jump_to(&mut self, at: Instant) {
        if at > self.now {
            let dt = at.saturating_duration_since(self.now);
            self.log.push(|| format!("~ {}", fmt_duration(dt)));
            self.now = at;
        }
    }

    /// Delivers everything due at the current instant, without moving the clock.
    pub fn settle(&mut self) {
        for _ in 0..DEFAULT_STEP_BOUND {
            if !self.step_now() {
                return;
            }
        }
        panic!(
            "livelock: still busy after {DEFAULT_STEP_BOUND} rounds at {:?}",
            self.now
        );
    }

    /// Runs to idle, firing timers (the clock jumps).
    pub fn drive(&mut self) {
        self.drive_bounded(DEFAULT_STEP_BOUND);
    }

    /// Runs to idle in at most `steps` steps; panics (livelock) otherwise.
    pub fn drive_bounded(&mut self, steps: usize) {
        for _ in 0..steps {
            if !self.step() {
                return;
            }
        }
        panic!("livelock: not idle after {steps} steps at {:?}", self.now);
    }

    /// Moves the clock forward by `d`, firing every timer due on the way in order.
    pub fn advance(&mut self, d: Duration) {
        let target = self.now + d;
        self.settle();
        while let Some(at) = self.next_wakeup().filter(|at| *at <= target) {
            self.jump_to(at);
            self.server.handle(self.now, ServerEvent::Timeout);
            self.settle();
        }
        self.jump_to(target);
        self.settle();
    }

    // ---- performing actions ---------------------------------------------------------------

    /// Queues what `append` adds on the connection's transport, handed over at once while
    /// its client reads.
    fn deliver(&mut self, conn: ConnId, append: impl FnOnce(&mut Vec<u8>)) {
        let Some(c) = self.conns.get_mut(&conn) else {
            return;
        };
        append(&mut c.transport);
        if c.reading {
            self.flush_conn(conn);
        }
    }

    fn perform(&mut self, action: ServerAction) {
        match action {
            ServerAction::Send { conn, bytes } => {
                self.deliver(conn, |transport| transport.extend_from_slice(&bytes));
                self.server.reclaim(bytes);
            }
            ServerAction::SendShared { conn, frame } => {
                self.shared_sends
                    .push((conn, std::sync::Arc::as_ptr(&frame.head) as usize));
                self.deliver(conn, |transport| frame.append_to(transport));
                self.server.reclaim_shared(frame.head);
            }
            ServerAction::Close { conn } => {
                let Some(c) = self.conns.get_mut(&conn) else {
                    return;
                };
                if !c.open {
                    return;
                }
                c.closed_by_server = true;
                let name = c.name.clone();
                if c.reading {
                    self.flush_conn(conn);
                }
                self.log.push(|| format!("{name} closed by server"));
                if let Some(c) = self.conns.get_mut(&conn) {
                    c.open = false;
                }
                self.server
                    .handle(self.now, ServerEvent::Disconnected { conn });
            }
            ServerAction::Spawn { terminal, spec } => {
                self.log_spawn(terminal, &spec);
                self.actions.push(ServerAction::Spawn { terminal, spec });
                if self.fail_next_spawns > 0 {
                    self.fail_next_spawns -= 1;
                    self.server.handle(
                        self.now,
                        ServerEvent::SpawnFailed {
                            terminal,
                            message: "simulated spawn failure".into(),
                        },
                    );
                } else if self.hold_spawns {
                    self.held_spawns.push(terminal);
                } else {
                    self.start_pty(terminal);
                }
            }
            ServerAction::Write {
                terminal,
                job,
                bytes,
            } => {
                self.log.push(|| {
                    format!(
                        "pty{terminal} < write {job:?} {} bytes {:?}",
                        bytes.len(),
                        String::from_utf8_lossy(&bytes)
                    )
                });
                self.writes.push(WriteRecord {
                    incarnation: self.incarnation,
                    terminal,
                    job,
                    bytes: bytes.clone(),
                    issued_at: self.now,
                    completed: None,
                });
                match self.ptys.get_mut(&terminal) {
                    Some(pty) if !pty.is_gone() => pty.write(job, bytes),
                    _ => self.report_pty_event(
                        terminal,
                        PtyEvent::WriteDone {
                            job,
                            outcome: WriteOutcome::NotWritten,
                        },
                    ),
                }
            }
            ServerAction::Signal { terminal, signal } => {
                self.log
                    .push(|| format!("pty{terminal} < signal {signal:?}"));
                if let Some(pty) = self.ptys.get_mut(&terminal) {
                    pty.signal(signal);
                }
                self.actions.push(ServerAction::Signal { terminal, signal });
            }
            ServerAction::Kill { terminal } => {
                self.log.push(|| format!("pty{terminal} < kill"));
                if let Some(pty) = self.ptys.get_mut(&terminal) {
                    pty.kill(Signal::Kill);
                }
                self.actions.push(ServerAction::Kill { terminal });
            }
            ServerAction::Shutdown => {
                self.log.push(|| "# server shutdown".to_owned());
                self.shut_down = true;
                self.actions.push(ServerAction::Shutdown);
            }
            other @ ServerAction::Resize { .. } => {
                self.log.push(|| format!("# action {other:?}"));
                self.actions.push(other);
            }
        }
    }

    fn log_spawn(&mut self, terminal: LocalTerminal, spec: &SpawnSpec) {
        self.log.push(|| {
            format!(
                "pty{terminal} spawn {:?} {}x{}",
                spec.command, spec.cols, spec.rows
            )
        });
    }

    fn start_pty(&mut self, terminal: LocalTerminal) {
        let pid = self.next_pid;
        self.next_pid += 1;
        self.ptys
            .insert(terminal, SimPty::new(self.spawn_mode, pid));
        self.server
            .handle(self.now, ServerEvent::Spawned { terminal, pid });
    }

    fn report_pty_event(&mut self, terminal: LocalTerminal, event: PtyEvent) {
        match event {
            PtyEvent::WriteDone { job, outcome } => {
                self.log
                    .push(|| format!("pty{terminal} > done {job:?} {outcome:?}"));
                let now = self.now;
                let incarnation = self.incarnation;
                if let Some(w) = self
                    .writes
                    .iter_mut()
                    .rev()
                    .find(|w| w.incarnation == incarnation && w.job == job)
                {
                    w.completed = Some((now, outcome));
                }
                self.server.handle(
                    self.now,
                    ServerEvent::WriteDone {
                        terminal,
                        job,
                        outcome,
                    },
                );
            }
            PtyEvent::Output(bytes) => {
                self.log.push(|| {
                    format!(
                        "pty{terminal} > output {:?}",
                        String::from_utf8_lossy(&bytes)
                    )
                });
                self.server.handle(
                    self.now,
                    ServerEvent::PtyOutput {
                        terminal,
                        bytes: &bytes,
                    },
                );
            }
            PtyEvent::Exited(kind) => {
                self.log.push(|| format!("pty{terminal} > exited {kind:?}"));
                self.server.handle(
                    self.now,
                    ServerEvent::ChildExited {
                        terminal,
                        exit_status: kind.exit_status(),
                    },
                );
            }
        }
    }
}

/// A trusted paste of `data`.
pub fn paste(data: &[u8]) -> InputEvent {
    InputEvent::Paste(PasteEvent {
        trust: PasteTrust::Trusted,
        data: data.to_vec(),
    })
}

/// An untrusted paste of `data`.
pub fn untrusted_paste(data: &[u8]) -> InputEvent {
    InputEvent::Paste(PasteEvent {
        trust: PasteTrust::Untrusted,
        data: data.to_vec(),
    })
}

/// APPLY_INPUT with operation id `op` (non-zero) to `terminal`.
pub fn apply_input(op: u128, terminal: &TerminalId, events: Vec<InputEvent>) -> Command {
    let Some(operation_id) = OperationId::from_u128(op) else {
        panic!("harness misuse: operation id 0")
    };
    Command::ApplyInput(ApplyInput {
        operation_id,
        terminal: terminal.clone(),
        events,
    })
}

/// The error code of a command result, `None` for OK.
pub fn error_code(result: &CommandResult) -> Option<ErrorCode> {
    match result {
        CommandResult::Error { code, .. } => Some(*code),
        _ => None,
    }
}

/// The EVENT frames among `frames`, as (terminal, event).
pub fn events(frames: &[Frame]) -> Vec<(Option<TerminalId>, phux_proto::event::AgentEvent)> {
    frames
        .iter()
        .filter_map(|f| match f {
            Frame::Event(e) => Some((e.terminal.clone(), e.event.clone())),
            _ => None,
        })
        .collect()
}

/// The JSON document of an `OK_WITH(JSON)` result. A test helper: panics on anything else.
pub fn expect_json(result: Option<CommandResult>) -> serde_json::Value {
    match result {
        Some(CommandResult::OkWith(phux_proto::command::CommandValue::Json(s))) => {
            serde_json::from_str(&s).unwrap_or_else(|e| panic!("bad JSON {s:?}: {e}"))
        }
        other => panic!("expected JSON, got {other:?}"),
    }
}

fn hex(bytes: &[u8]) -> String {
    let mut s = String::with_capacity(bytes.len() * 3);
    for (i, b) in bytes.iter().enumerate() {
        if i > 0 {
            s.push(' ');
        }
        let _ = write!(s, "{b:02x}");
    }
    s
}

fn fmt_duration(d: Duration) -> String {
    if d.subsec_micros().is_multiple_of(1000) {
        format!("{}ms", d.as_millis())
    } else {
        format!("{}us", d.as_micros())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn handshake_and_echo_through_the_harness() {
        let mut h = Harness::new();
        let c = h.client();
        let t = h.spawn(c);
        assert_eq!(
            h.request(
                c,
                Command::AttachTerminal {
                    terminal: t.clone()
                }
            ),
            Some(CommandResult::Ok)
        );
        h.recv(c);
        h.pty(&t).script(b"hi");
        h.settle();
        let got = h.recv(c);
        assert!(
            got.iter()
                .any(|f| matches!(f, Frame::TerminalOutput(o) if o.bytes == b"hi")),
            "{got:?}"
        );
        assert!(h.log.lines().any(|l| l.starts_with("c1 > Hello")));
    }

    #[test]
    fn restart_gives_a_new_server_id_and_drops_connections() {
        let mut h = Harness::new();
        let c = h.client();
        h.restart_server();
        assert!(!h.conn(c).is_open());
        let d = h.connect();
        let ok = h.hello(d);
        assert_eq!(ok.server_id, server_id_for(2));
        assert_eq!(h.conn(c).server_id(), Some(&server_id_for(1)[..]));
    }
}
