//! `ServerEngine`: the whole phux server protocol, sans-IO.
//!
//! The engine owns every rule — framing, the handshake, commands, subscriptions, leases,
//! acknowledged input, bounded outbound queues — and no I/O. A driver (the mio server, the
//! simulator harness, the conformance runner, a fuzzer) reports what happened and performs
//! what the engine asks for.
//!
//! # Driving it
//!
//! After every [`ServerEngine::handle`], drain [`ServerEngine::poll_action`] until `None`,
//! then read [`ServerEngine::poll_timeout`] and call `handle(now, ServerEvent::Timeout)` no
//! later than that. Spurious timeouts are harmless.
//!
//! ```no_run
//! use phux_core::server::{ConnId, PeerInfo, ServerAction, ServerConfig, ServerEngine, ServerEvent};
//! use phux_core::Instant;
//!
//! let mut engine = ServerEngine::new(ServerConfig::new(vec![7; 16]));
//! let conn = ConnId(1);
//! let now = Instant::ZERO;
//! engine.handle(now, ServerEvent::Connected { conn, peer: PeerInfo::local() });
//! engine.handle(now, ServerEvent::Received { conn, bytes: &[0, 0, 0, 1, 0x03] });
//! while let Some(action) = engine.poll_action() {
//!     match action {
//!         ServerAction::Send { conn, bytes } => { /* write bytes to the connection */ }
//!         ServerAction::SendShared { conn, frame } => { /* write frame.head, then frame.tail */ }
//!         ServerAction::Close { conn } => { /* flush, then close */ }
//!         _ => { /* spawn, write to a PTY, resize, signal, kill, shut down */ }
//!     }
//! }
//! let _wake_at = engine.poll_timeout();
//! ```
//!
//! Every frame a connection receives is the engine's output; the driver never builds or
//! parses one. A write to a PTY is answered only by the driver's completion report
//! ([`ServerEvent::WriteDone`]): the engine never assumes an outcome.

mod commands;
mod conn;
mod input;
mod terminal;

use std::collections::{BTreeMap, VecDeque};
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use phux_proto::command::{CommandResult, Signal};
use phux_proto::frame::{
    BootstrapProfile, DetachReason, Detached, ErrorFrame, HelloOk, LayerSet, ProtocolVersion,
    ServerCapabilities, ServerFeatures, TerminalOutputTail,
};
use phux_proto::ids::{BootstrapId, StreamId};
use phux_proto::{ClientId, ErrorCode, Frame, TerminalId};

use crate::lane::AckLane;
use crate::lease::LeaseTable;
use crate::ledger::OperationLedger;
use crate::time::Instant;

use conn::{Budget, Conn, Phase};
use terminal::Terminal;

pub use crate::writer::{JobId, WriteOutcome};

/// A connection, as the driver names it. The driver picks the values; they must be unique
/// among open connections.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Debug)]
pub struct ConnId(pub u64);

/// A terminal of this server, as the engine and its driver name it: the `N` of the wire's
/// `local:N`. Like every terminal id it means something only within one server incarnation.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Debug)]
pub struct LocalTerminal(pub u32);

impl LocalTerminal {
    /// The local terminal a wire id names, if it names one of this server's.
    pub fn of(id: &TerminalId) -> Option<Self> {
        id.local().map(Self)
    }
}

impl From<LocalTerminal> for TerminalId {
    fn from(terminal: LocalTerminal) -> Self {
        Self::Local(terminal.0)
    }
}

impl fmt::Display for LocalTerminal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "local:{}", self.0)
    }
}

/// What the driver knows about a peer when it connects.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct PeerInfo {
    /// Whether the peer is on the server's local Unix socket (SHUTDOWN is accepted only there).
    pub local_socket: bool,
    /// Whether the peer's credentials passed the driver's check (same uid as the server).
    pub authorized: bool,
}

impl PeerInfo {
    /// An authorized peer on the local socket.
    pub fn local() -> Self {
        Self {
            local_socket: true,
            authorized: true,
        }
    }

    /// An authorized peer on any other transport (stdio over SSH, say).
    pub fn remote() -> Self {
        Self {
            local_socket: false,
            authorized: true,
        }
    }

    /// A peer on the local socket whose uid differs from the server's.
    pub fn foreign() -> Self {
        Self {
            local_socket: true,
            authorized: false,
        }
    }
}

/// Server-wide settings.
#[derive(Clone, Debug)]
pub struct ServerConfig {
    /// This incarnation's id (HELLO_OK field 5): 16 random bytes from the driver's OS RNG.
    pub server_id: Vec<u8>,
    /// Size for terminals spawned without one.
    pub default_size: (u16, u16),
    /// History rows each terminal retains for GET_SCREEN and scrollback.
    pub scrollback_lines: usize,
    /// Unsent output bytes (TERMINAL_OUTPUT, bootstrap) a connection may have queued; past
    /// it the stream is tombstoned, and bootstrapped again once below half of it.
    pub output_budget: usize,
    /// Unsent control bytes (results, events, ...) a connection may have queued; past it the
    /// connection is detached.
    pub control_budget: usize,
    /// Write jobs queued for one terminal's PTY and not yet completed.
    pub max_jobs_per_terminal: usize,
    /// The most terminals alive at once.
    pub max_terminals: usize,
    /// The program a SPAWN_TERMINAL without a command runs.
    pub default_command: Vec<String>,
}

impl ServerConfig {
    /// Defaults for everything but the incarnation id.
    pub fn new(server_id: Vec<u8>) -> Self {
        Self {
            server_id,
            default_size: (80, 24),
            scrollback_lines: 2000,
            output_budget: 4 * 1024 * 1024,
            control_budget: 1024 * 1024,
            max_jobs_per_terminal: 1024,
            max_terminals: 4096,
            default_command: vec!["/bin/sh".to_owned()],
        }
    }
}

/// What a new terminal should run.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct SpawnSpec {
    /// Program and arguments (never empty).
    pub command: Vec<String>,
    /// Working directory; `None` = the server's.
    pub cwd: Option<String>,
    /// Environment; `None` = inherit the server's. `TERM` is set from `term` either way.
    pub env: Option<Vec<(String, String)>>,
    /// The `TERM` value: the `term` field, else the `TERM` in `env`, else `xterm-256color`.
    pub term: String,
    /// Initial columns.
    pub cols: u16,
    /// Initial rows.
    pub rows: u16,
}

/// What happened, as the driver reports it.
#[derive(Debug)]
pub enum ServerEvent<'a> {
    /// A peer connected.
    Connected {
        /// The new connection.
        conn: ConnId,
        /// What the driver knows about the peer.
        peer: PeerInfo,
    },
    /// Bytes arrived on a connection.
    Received {
        /// The connection.
        conn: ConnId,
        /// The bytes, in stream order.
        bytes: &'a [u8],
    },
    /// The driver handed this many of a connection's queued bytes to the transport.
    Sent {
        /// The connection.
        conn: ConnId,
        /// How many bytes left the queue.
        bytes: usize,
    },
    /// The connection is gone (peer closed, error, or after a `Close` action).
    Disconnected {
        /// The connection.
        conn: ConnId,
    },
    /// A `Spawn` action succeeded.
    Spawned {
        /// The terminal the action named.
        terminal: LocalTerminal,
        /// The child's process id.
        pid: u32,
    },
    /// A `Spawn` action failed.
    SpawnFailed {
        /// The terminal the action named.
        terminal: LocalTerminal,
        /// Why, for the spawner.
        message: String,
    },
    /// The terminal's program wrote output.
    PtyOutput {
        /// The terminal.
        terminal: LocalTerminal,
        /// The bytes read from the PTY master.
        bytes: &'a [u8],
    },
    /// A `Write` action finished.
    WriteDone {
        /// The terminal.
        terminal: LocalTerminal,
        /// The job the action named.
        job: JobId,
        /// What happened to its bytes.
        outcome: WriteOutcome,
    },
    /// The terminal's child exited and its remaining output has been reported.
    ChildExited {
        /// The terminal.
        terminal: LocalTerminal,
        /// `_exit` status, or `None` when killed by a signal.
        exit_status: Option<i32>,
    },
    /// The driver was asked to stop (SIGTERM, SIGINT).
    ShutdownRequested,
    /// A wake-up at or after [`ServerEngine::poll_timeout`].
    Timeout,
}

/// What the engine asks the driver to do, in order.
#[derive(Clone, PartialEq, Eq, Debug)]
pub enum ServerAction {
    /// Queue bytes (whole frames) on a connection.
    Send {
        /// The connection.
        conn: ConnId,
        /// Encoded frames.
        bytes: Vec<u8>,
    },
    /// Queue one frame whose head other connections are sent too: a chunk of output fanned
    /// out to several viewers is encoded once, not once per viewer. After any earlier `Send`.
    SendShared {
        /// The connection.
        conn: ConnId,
        /// The frame.
        frame: SharedFrame,
    },
    /// Flush what is queued for the connection, then close it.
    Close {
        /// The connection.
        conn: ConnId,
    },
    /// Start a terminal; answer with `Spawned` or `SpawnFailed`.
    Spawn {
        /// The id the engine gave it.
        terminal: LocalTerminal,
        /// What to run.
        spec: SpawnSpec,
    },
    /// Queue one job's bytes on the terminal's [`crate::writer::PtyWriter`], after every
    /// earlier job for it, and report its outcome with `WriteDone`.
    Write {
        /// The terminal.
        terminal: LocalTerminal,
        /// Echo it in `WriteDone`.
        job: JobId,
        /// The bytes, in order, as one job.
        bytes: Vec<u8>,
    },
    /// Set the PTY's window size.
    Resize {
        /// The terminal.
        terminal: LocalTerminal,
        /// Columns (≥ 1).
        cols: u16,
        /// Rows (≥ 1).
        rows: u16,
    },
    /// Send a signal to the terminal's process group.
    Signal {
        /// The terminal.
        terminal: LocalTerminal,
        /// Which signal.
        signal: Signal,
    },
    /// Close the PTY master, kill the process group and reap the child; report `ChildExited`.
    Kill {
        /// The terminal.
        terminal: LocalTerminal,
    },
    /// Every connection has been told; stop once the queued bytes are flushed.
    Shutdown,
}

/// A TERMINAL_OUTPUT frame sent to several viewers: the head (everything through the output
/// bytes) is one buffer all of them share; the tail (stream and bootstrap) is this viewer's.
/// Its bytes are `head` followed by `tail`.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct SharedFrame {
    /// The frame through its output bytes, the same for every viewer of the chunk. Give it
    /// back with [`ServerEngine::reclaim_shared`] once written.
    pub head: Arc<Vec<u8>>,
    /// This viewer's stream and bootstrap fields.
    pub tail: TerminalOutputTail,
}

impl SharedFrame {
    /// The frame's length in bytes.
    pub fn len(&self) -> usize {
        self.head.len() + TerminalOutputTail::LEN
    }

    /// Never: a frame has at least its header.
    pub fn is_empty(&self) -> bool {
        false
    }

    /// Appends the frame's bytes, for a driver that keeps one buffer per connection.
    pub fn append_to(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.head);
        out.extend_from_slice(self.tail.as_bytes());
    }

    /// The frame's bytes in a buffer of their own.
    pub fn to_vec(&self) -> Vec<u8> {
        let mut bytes = Vec::with_capacity(self.len());
        self.append_to(&mut bytes);
        bytes
    }
}

/// The phux server protocol engine.
#[derive(Debug)]
pub struct ServerEngine {
    config: ServerConfig,
    conns: BTreeMap<ConnId, Conn>,
    terminals: BTreeMap<LocalTerminal, Terminal>,
    ledger: OperationLedger,
    leases: LeaseTable,
    lane: AckLane,
    actions: VecDeque<ServerAction>,
    next_client: u32,
    next_terminal: u32,
    next_stream: u64,
    next_job: u64,
    shutting_down: bool,
    /// Emptied `Send` buffers the driver gave back ([`Self::reclaim`]), reused for new sends.
    spare: Vec<Vec<u8>>,
    /// Shared frame heads whose every copy was written ([`Self::reclaim_shared`]).
    spare_heads: Vec<Arc<Vec<u8>>>,
    /// The viewers of the terminal whose output is being fanned out, kept between reads so
    /// that a keystroke's echo does not allocate.
    viewer_scratch: Vec<(ConnId, terminal::Viewer)>,
}

/// How many reclaimed send buffers are kept, and the largest capacity worth keeping: enough
/// for a terminal's output fanned out to a handful of viewers without an allocation (and a
/// page fault) per frame, bounded so a burst does not pin memory.
const SPARE_BUFFERS: usize = 32;
const SPARE_CAPACITY: usize = 256 * 1024;

/// The protocol version we speak.
pub const PROTOCOL_VERSION: ProtocolVersion = ProtocolVersion::CURRENT;

/// The largest bootstrap chunk we offer (negotiated down to the client's).
const SERVER_MAX_CHUNK: u32 = 256 * 1024;
/// The largest history page we offer (negotiated down to the client's).
const SERVER_MAX_HISTORY_PAGE: u32 = 1024 * 1024;

impl ServerEngine {
    /// A server with no connections and no terminals.
    pub fn new(config: ServerConfig) -> Self {
        Self {
            config,
            conns: BTreeMap::new(),
            terminals: BTreeMap::new(),
            ledger: OperationLedger::default(),
            leases: LeaseTable::default(),
            lane: AckLane::default(),
            actions: VecDeque::new(),
            next_client: 1,
            next_terminal: 1,
            next_stream: 1,
            next_job: 1,
            shutting_down: false,
            spare: Vec::new(),
            spare_heads: Vec::new(),
            viewer_scratch: Vec::new(),
        }
    }

    /// Gives back the buffer of a `Send` action once its bytes are written, so that the
    /// next sends reuse it instead of allocating. Optional: a driver that drops its buffers
    /// loses only the reuse.
    pub fn reclaim(&mut self, mut buffer: Vec<u8>) {
        if self.spare.len() < SPARE_BUFFERS && buffer.capacity() <= SPARE_CAPACITY {
            buffer.clear();
            self.spare.push(buffer);
        }
    }

    /// Gives back the head of a `SendShared` frame once written. The last connection to give
    /// a head back returns it to the pool its successors are encoded into; the others just
    /// let go of their share. Optional, like [`Self::reclaim`].
    pub fn reclaim_shared(&mut self, mut head: Arc<Vec<u8>>) {
        if self.spare_heads.len() < SPARE_BUFFERS
            && Arc::get_mut(&mut head).is_some_and(|b| b.capacity() <= SPARE_CAPACITY)
        {
            self.spare_heads.push(head);
        }
    }

    /// A head for a frame fanned out to several connections, encoded by `encode` into a
    /// reclaimed buffer when there is one.
    fn shared_head(&mut self, encode: impl FnOnce(&mut Vec<u8>)) -> Arc<Vec<u8>> {
        let mut head = self.spare_heads.pop().unwrap_or_default();
        if let Some(buf) = Arc::get_mut(&mut head) {
            buf.clear();
            encode(buf);
            head
        } else {
            let mut buf = Vec::new();
            encode(&mut buf);
            Arc::new(buf)
        }
    }

    /// Queues a frame whose head other connections share, counted against the output budget.
    fn send_shared(&mut self, id: ConnId, frame: SharedFrame) {
        let Some(conn) = self.conns.get_mut(&id) else {
            return;
        };
        if conn.phase == Phase::Closed {
            return;
        }
        conn.outbound.push(Budget::Output, frame.len());
        self.actions
            .push_back(ServerAction::SendShared { conn: id, frame });
    }

    /// This incarnation's id.
    pub fn server_id(&self) -> &[u8] {
        &self.config.server_id
    }

    /// Open connections.
    pub fn connection_count(&self) -> usize {
        self.conns.len()
    }

    /// Live terminals (exited ones included until killed).
    pub fn terminal_count(&self) -> usize {
        self.terminals.len()
    }

    /// Bytes queued for a connection and not yet reported `Sent`.
    pub fn queued_bytes(&self, conn: ConnId) -> Option<usize> {
        self.conns.get(&conn).map(|c| c.outbound.total())
    }

    /// Reports one event. Drain [`ServerEngine::poll_action`] afterwards.
    pub fn handle(&mut self, now: Instant, event: ServerEvent<'_>) {
        // A lease that lapsed is released (and broadcast) before anything else sees it.
        if self.leases.poll_timeout().is_some_and(|at| at <= now) {
            for change in self.leases.handle_timeout(now) {
                self.broadcast_lease_change(&change);
            }
        }
        match event {
            ServerEvent::Connected { conn, peer } => self.on_connected(conn, peer),
            ServerEvent::Received { conn, bytes } => self.on_received(now, conn, bytes),
            ServerEvent::Sent { conn, bytes } => self.on_sent(conn, bytes),
            ServerEvent::Disconnected { conn } => self.on_disconnected(now, conn),
            ServerEvent::Spawned { terminal, pid } => self.on_spawned(terminal, pid),
            ServerEvent::SpawnFailed { terminal, message } => {
                self.on_spawn_failed(terminal, &message);
            }
            ServerEvent::PtyOutput { terminal, bytes } => self.on_pty_output(terminal, bytes),
            ServerEvent::WriteDone {
                terminal,
                job,
                outcome,
            } => {
                self.on_write_done(terminal, job, outcome);
            }
            ServerEvent::ChildExited {
                terminal,
                exit_status,
            } => {
                self.on_child_exited(terminal, exit_status);
            }
            ServerEvent::ShutdownRequested => self.shutdown("server is shutting down"),
            ServerEvent::Timeout => self.on_timeout(now),
        }
    }

    /// The next thing to do, or `None` when there is nothing left.
    pub fn poll_action(&mut self) -> Option<ServerAction> {
        self.actions.pop_front()
    }

    /// When to call `handle(now, Timeout)` next, if ever.
    pub fn poll_timeout(&self) -> Option<Instant> {
        [self.leases.poll_timeout(), self.lane.poll_timeout()]
            .into_iter()
            .flatten()
            .min()
    }

    fn on_timeout(&mut self, now: Instant) {
        for (terminal, op) in self.lane.handle_timeout(now) {
            self.resolve_expired_job(&terminal, op);
        }
        self.ledger.handle_timeout(now);
    }

    fn on_connected(&mut self, id: ConnId, peer: PeerInfo) {
        let client = ClientId(self.next_client);
        self.next_client = self.next_client.wrapping_add(1).max(1);
        self.conns.insert(id, Conn::new(id, client, peer));
        if !peer.authorized {
            // [SERVER.PEER.1] A peer with another uid is refused before any of its frames.
            self.fail(
                id,
                ErrorCode::PERMISSION_DENIED,
                "peer credentials do not match the server's user",
            );
        } else if self.shutting_down {
            self.detach(id, DetachReason::SERVER_SHUTDOWN, "server is shutting down");
        }
    }

    fn on_received(&mut self, now: Instant, id: ConnId, bytes: &[u8]) {
        let Some(conn) = self.conns.get_mut(&id) else {
            return;
        };
        if conn.phase == Phase::Closed {
            // [ERROR.FATAL.2] A failed connection stays failed: later bytes are ignored.
            return;
        }
        conn.decoder.push(bytes);
        loop {
            let Some(conn) = self.conns.get_mut(&id) else {
                return;
            };
            if conn.phase == Phase::Closed {
                return;
            }
            match conn.decoder.poll_frame() {
                Ok(None) => return,
                Ok(Some(frame)) => self.on_frame(now, id, frame),
                Err(err) => self.on_decode_error(id, &err),
            }
        }
    }

    fn on_sent(&mut self, id: ConnId, bytes: usize) {
        let Some(conn) = self.conns.get_mut(&id) else {
            return;
        };
        conn.outbound.sent(bytes);
        // [BOOTSTRAP.TOMBSTONE.4] A tombstoned stream starts over once the queue has drained.
        if conn.phase == Phase::Ready
            && !conn.paused.is_empty()
            && conn.outbound.output <= self.config.output_budget / 2
        {
            self.resume_paused_streams(id);
        }
    }

    fn on_disconnected(&mut self, now: Instant, id: ConnId) {
        let Some(conn) = self.conns.remove(&id) else {
            return;
        };
        // [LEASE.DISCONNECT.1] A departing holder's leases are released and broadcast.
        for change in self.leases.disconnect(conn.client) {
            self.broadcast_lease_change(&change);
        }
        for terminal in self.terminals.values_mut() {
            terminal.forget_conn(id);
        }
        let _ = now;
    }

    /// Queues one frame for a connection, coalescing with an adjacent send to it.
    fn send(&mut self, id: ConnId, frame: &Frame) {
        let budget = match frame {
            Frame::TerminalOutput(_)
            | Frame::BootstrapBegin(_)
            | Frame::BootstrapChunk(_)
            | Frame::BootstrapReady(_) => Budget::Output,
            _ => Budget::Control,
        };
        self.send_encoded(id, budget, |bytes| frame.encode(bytes));
    }

    /// Queues the frame `encode` appends, counted against `budget`.
    fn send_encoded(&mut self, id: ConnId, budget: Budget, encode: impl FnOnce(&mut Vec<u8>)) {
        let Some(conn) = self.conns.get_mut(&id) else {
            return;
        };
        if conn.phase == Phase::Closed {
            return;
        }
        let bytes = match self.actions.back_mut() {
            Some(ServerAction::Send { conn: last, bytes }) if *last == id => bytes,
            _ => {
                self.actions.push_back(ServerAction::Send {
                    conn: id,
                    bytes: self.spare.pop().unwrap_or_default(),
                });
                let Some(ServerAction::Send { bytes, .. }) = self.actions.back_mut() else {
                    return;
                };
                bytes
            }
        };
        let before = bytes.len();
        let control_ahead = conn.outbound.control;
        encode(bytes);
        conn.outbound.push(budget, bytes.len() - before);
        // [QUEUE.CONTROL.2] Control frames are never dropped; a client that lets them pile
        // up past the budget is detached instead of growing server memory. A frame is judged
        // by what is queued ahead of it ([QUEUE.BOUND.1]'s "one frame"), so a reply larger
        // than the whole budget (a big screen with its scrollback) reaches a client that reads.
        if budget == Budget::Control && control_ahead > self.config.control_budget {
            self.detach(
                id,
                DetachReason::PROTOCOL_ERROR,
                "outbound control queue overflow: the client is not reading",
            );
        }
    }

    fn send_result(&mut self, id: ConnId, request_id: u32, result: CommandResult) {
        self.send(
            id,
            &Frame::CommandResult(phux_proto::frame::CommandResultFrame { request_id, result }),
        );
    }

    fn send_error_result(
        &mut self,
        id: ConnId,
        request_id: u32,
        code: ErrorCode,
        message: impl Into<String>,
    ) {
        self.send_result(
            id,
            request_id,
            CommandResult::Error {
                code,
                message: message.into(),
            },
        );
    }

    /// Sends DETACHED and closes, without an ERROR.
    fn detach(&mut self, id: ConnId, reason: DetachReason, message: &str) {
        let Some(conn) = self.conns.get(&id) else {
            return;
        };
        if conn.phase == Phase::Closed {
            return;
        }
        // Send before marking closed, so the frame is queued; then nothing more is.
        let frame = Frame::Detached(Detached {
            reason: Some(reason),
            message: message.to_owned(),
        });
        let mut bytes = Vec::new();
        frame.encode(&mut bytes);
        if let Some(conn) = self.conns.get_mut(&id) {
            conn.phase = Phase::Closed;
            conn.outbound.push(Budget::Control, bytes.len());
        }
        self.actions
            .push_back(ServerAction::Send { conn: id, bytes });
        self.actions.push_back(ServerAction::Close { conn: id });
    }

    /// [ERROR.FATAL.1] ERROR, then DETACHED{PROTOCOL_ERROR} with the same text, then close.
    fn fail(&mut self, id: ConnId, code: ErrorCode, message: &str) {
        self.send_error(id, None, code, message);
        self.detach(id, DetachReason::PROTOCOL_ERROR, message);
    }

    /// An ERROR frame (connection-level; command failures go in COMMAND_RESULT).
    fn send_error(&mut self, id: ConnId, request_id: Option<u32>, code: ErrorCode, message: &str) {
        self.send(
            id,
            &Frame::Error(ErrorFrame {
                request_id,
                code,
                message: message.to_owned(),
            }),
        );
    }

    fn hello_ok(&self, conn: &Conn) -> HelloOk {
        HelloOk {
            version: PROTOCOL_VERSION,
            // [HELLO.OK.2] We mount L1 only; features ACKNOWLEDGED_INPUT, SHUTDOWN,
            // SPAWN_INITIAL_SIZE (our rule R14).
            capabilities: ServerCapabilities {
                layers: LayerSet::L1,
                features: ServerFeatures::ACKNOWLEDGED_INPUT
                    | ServerFeatures::SHUTDOWN
                    | ServerFeatures::SPAWN_INITIAL_SIZE,
            },
            server_id: self.config.server_id.clone(),
            profile: BootstrapProfile::SynthesizedVtRaw,
            max_chunk_bytes: conn.max_chunk,
            max_history_page_bytes: conn.max_history_page,
        }
    }

    fn shutdown(&mut self, message: &str) {
        if self.shutting_down {
            return;
        }
        self.shutting_down = true;
        let ids: Vec<ConnId> = self.conns.keys().copied().collect();
        for id in ids {
            // [SERVER.SHUTDOWN.1] Every client is told, with the reason.
            self.detach(id, DetachReason::SERVER_SHUTDOWN, message);
        }
        let terminals: Vec<LocalTerminal> = self.terminals.keys().copied().collect();
        for terminal in terminals {
            if self
                .terminals
                .get(&terminal)
                .is_some_and(Terminal::is_running)
            {
                self.actions.push_back(ServerAction::Kill { terminal });
            }
        }
        self.actions.push_back(ServerAction::Shutdown);
    }

    /// The next stream or bootstrap id value (never zero; ids are never reused in practice).
    fn allocate_id(&mut self) -> u64 {
        let id = self.next_stream.max(1);
        self.next_stream = id.wrapping_add(1);
        id
    }

    fn allocate_stream(&mut self) -> StreamId {
        loop {
            if let Some(id) = StreamId::new(self.allocate_id()) {
                return id;
            }
        }
    }

    fn allocate_bootstrap(&mut self) -> BootstrapId {
        loop {
            if let Some(id) = BootstrapId::new(self.allocate_id()) {
                return id;
            }
        }
    }
}

/// How long an acknowledged job may go without a completion before it is reported unknown.
pub const COMPLETION_BOUND: Duration = crate::lane::COMPLETION_BOUND;
