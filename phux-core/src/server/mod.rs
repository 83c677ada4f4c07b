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

mod action;
mod config;
mod connection;
mod event;
mod export;
mod handshake;
mod input;
mod input_lease;
mod lifecycle;
mod outbound;
mod output;
mod pending_upgrade;
mod pool;
mod receive;
mod remains;
mod size;
mod subscriptions;
mod summary;
mod terminal;
mod views;

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::time::Duration;

use phux_proto::command::CommandResult;
use phux_proto::frame::DetachReason;
use phux_proto::ids::{BootstrapId, StreamId};
use phux_proto::{ClientId, ErrorCode, Frame};

use crate::lane::AckLane;
use crate::lease::LeaseTable;
use crate::ledger::OperationLedger;
use crate::time::Instant;
use connection::{Connection, Queued};
use outbound::Budget;
use terminal::Terminal;

pub use crate::writer::{JobId, WriteOutcome};
pub use action::{CLOSE_BOUND, ServerAction, SharedFrame};
pub use config::{FRAMES_PER_RECEIVE, ServerConfig, SpawnSpec};
pub use event::{ConnId, LocalTerminal, PeerInfo, ServerEvent};
pub(crate) use export::BaseState;
pub use export::{EngineState, NotQuiet, StateError};
pub use handshake::PROTOCOL_VERSION;
pub use pending_upgrade::MAX_UPGRADE_BINARY_LEN;
pub use summary::StateSummary;
pub(crate) use summary::{DeclaredViewport, Parts, SummaryFault, TerminalCwd, read_summary};
pub use views::MAX_CWD_LEN;

/// The phux server protocol engine.
#[derive(Debug)]
pub struct ServerEngine {
    config: ServerConfig,
    conns: BTreeMap<ConnId, Connection>,
    /// Bytes queued for every connection together, not yet reported `Sent` ([SERVER.LIMIT.5]).
    queued: usize,
    /// A connection is being failed for the server-wide budget: the frames that says so do
    /// not start another round of shedding.
    shedding: bool,
    /// When each connection still awaiting HELLO times out ([SERVER.LIMIT.2]), soonest
    /// first: an entry leaves when its connection is admitted, closed or gone.
    handshakes: BTreeSet<(Instant, ConnId)>,
    terminals: BTreeMap<LocalTerminal, Terminal>,
    /// Exited terminals kept with their last screen ([TERMINAL.REMAIN.1]); not in `terminals`,
    /// so that everything but the reads and the dismissal treats their ids as gone.
    remains: remains::Remains,
    ledger: OperationLedger,
    leases: LeaseTable,
    lane: AckLane,
    actions: VecDeque<ServerAction>,
    next_client: u32,
    next_terminal: u32,
    next_stream: u64,
    next_job: u64,
    shutting_down: bool,
    /// An upgrade is pending ([SERVER.UPGRADE.3]): no new write job reaches a PTY.
    upgrade: Option<pending_upgrade::PendingUpgrade>,
    /// Buffers the driver gave back ([`Self::reclaim`], [`Self::reclaim_shared`]), reused
    /// for new sends.
    pool: pool::BufferPool,
    /// What the chunk being fanned out owes each viewer, kept between reads so that a
    /// keystroke's echo does not allocate.
    fanout_scratch: Vec<(ConnId, terminal::Delivery)>,
    /// The bytes the terminals' models may hold together ([SERVER.LIMIT.6]); set by the
    /// driver, not part of an upgrade's image (the new image's driver sets it again).
    models_budget: usize,
}

impl ServerEngine {
    /// A server with no connections and no terminals.
    pub fn new(config: ServerConfig) -> Self {
        Self {
            config,
            conns: BTreeMap::new(),
            queued: 0,
            shedding: false,
            handshakes: BTreeSet::new(),
            terminals: BTreeMap::new(),
            remains: remains::Remains::default(),
            ledger: OperationLedger::default(),
            leases: LeaseTable::default(),
            lane: AckLane::default(),
            actions: VecDeque::new(),
            next_client: 1,
            next_terminal: 1,
            next_stream: 1,
            next_job: 1,
            shutting_down: false,
            upgrade: None,
            pool: pool::BufferPool::default(),
            fanout_scratch: Vec::new(),
            models_budget: usize::MAX,
        }
    }

    /// Bounds the memory the terminals' models hold together ([SERVER.LIMIT.6]): a terminal
    /// whose screens, at the most they can hold, do not fit beside the others' is not spawned
    /// or grown ([SERVER.LIMIT.7]), and past `bytes` the history of the terminal holding the
    /// most is dropped. Unbounded until set.
    pub fn set_models_budget(&mut self, bytes: usize) {
        self.models_budget = bytes;
        self.enforce_models_budget();
    }

    /// What the terminals' models hold against the budget together: their screens at the most
    /// they can hold, their history and buffers as last measured.
    pub fn models_bytes(&self) -> usize {
        self.terminals
            .values()
            .chain(self.remains.terminals())
            .map(|t| t.charge().total())
            .sum()
    }

    /// [SERVER.LIMIT.6] Over the budget, the terminal holding the most history loses it, then
    /// the next one, and so on, until the models are within it or none has history left
    /// (screens are never cut: what they may hold was reserved when they took their size).
    pub(super) fn enforce_models_budget(&mut self) {
        // [SERVER.REMAIN.3] Exited terminals give way first, the oldest first.
        while self.models_bytes() > self.models_budget && self.remains.dismiss_oldest().is_some() {}
        let mut total = self.models_bytes();
        while total > self.models_budget {
            let Some(t) = self
                .terminals
                .values_mut()
                .max_by_key(|t| t.charge().history)
            else {
                return;
            };
            let Some((before, after)) = t.drop_history() else {
                return;
            };
            total = total - before.total() + after.total();
        }
    }

    /// [SERVER.LIMIT.7] Whether screens of `cols` x `rows` fit in the budget beside what the
    /// models hold, `without` the screens of one terminal (the one being resized).
    pub(super) fn screens_fit(&self, cols: u16, rows: u16, without: Option<LocalTerminal>) -> bool {
        let freed = without
            .and_then(|t| self.terminals.get(&t))
            .map_or(0, |t| t.charge().screens);
        let held = self.models_bytes() - freed;
        held.saturating_add(terminal::Charge::screens_of(cols, rows)) <= self.models_budget
    }

    /// This incarnation's id.
    pub fn server_id(&self) -> &[u8] {
        &self.config.server_id
    }

    /// Open connections.
    pub fn connection_count(&self) -> usize {
        self.conns.len()
    }

    /// The operations the dedupe ledger holds.
    pub fn ledger_len(&self) -> usize {
        self.ledger.len()
    }

    /// Live terminals (those being spawned or killed included; exited ones kept for their
    /// screen are [`Self::remains_count`]).
    pub fn terminal_count(&self) -> usize {
        self.terminals.len()
    }

    /// Exited terminals kept with their last screen ([TERMINAL.REMAIN.1]).
    pub fn remains_count(&self) -> usize {
        self.remains.len()
    }

    /// Bytes queued for all connections together and not yet reported `Sent`.
    pub fn queued_total(&self) -> usize {
        self.queued
    }

    /// Bytes queued for a connection and not yet reported `Sent`.
    pub fn queued_bytes(&self, conn: ConnId) -> Option<usize> {
        self.conns.get(&conn).map(|c| c.outbound().total())
    }

    /// How many bytes of `terminal`'s output the driver may gather, over several PTY reads,
    /// into its next [`ServerEvent::PtyOutput`] ([OUTPUT.GATHER.1]): at most the smallest
    /// `max_chunk_bytes` its live viewers negotiated. A driver gathers only reads that took all
    /// its buffer offered (the PTY had more), stops at a read shorter than that (the master is
    /// empty: what it holds is an echo or the end of a burst, and goes at once).
    pub fn output_gather_limit(&self, terminal: LocalTerminal) -> usize {
        let Some(t) = self.terminals.get(&terminal) else {
            return 0;
        };
        let conns = &self.conns;
        outbound::gather_limit(
            t.live_viewers()
                .filter_map(|id| Some(conns.get(&id)?.max_chunk().get())),
        )
    }

    /// Whether a live viewer of `terminal` holds more than half its output budget queued: a
    /// driver that reads output ahead of the engine may hold it back a while, so that a viewer
    /// that reads catches up instead of reaching the budget ([OUTPUT.READER.5]).
    pub fn output_behind(&self, terminal: LocalTerminal) -> bool {
        let Some(t) = self.terminals.get(&terminal) else {
            return false;
        };
        let budget = self.config.output_budget;
        t.live_viewers().any(|id| {
            self.conns
                .get(&id)
                .is_some_and(|c| c.outbound().bootstrap_waits(budget))
        })
    }

    /// Bytes a connection sent that are buffered and not yet framed.
    pub fn buffered_bytes(&self, conn: ConnId) -> Option<usize> {
        self.conns.get(&conn).map(Connection::buffered)
    }

    /// Whether whole frames of the connection wait past this turn's budget
    /// ([`ServerConfig::frames_per_receive`]): the driver hands the engine an empty
    /// `Received` for it when the other sources have had their turn, and reads no more from
    /// it meanwhile, so its buffer stays one read.
    pub fn is_backlogged(&self, conn: ConnId) -> bool {
        self.conns.get(&conn).is_some_and(Connection::is_backlogged)
    }

    /// The client id of an open connection.
    fn client_of(&self, id: ConnId) -> Option<ClientId> {
        self.conns.get(&id).map(Connection::client)
    }

    /// Reports one event. Drain [`ServerEngine::poll_action`] afterwards.
    pub fn handle(&mut self, now: Instant, event: ServerEvent<'_>) {
        self.remains.stamp(now);
        // A lease that lapsed is released (and broadcast) before anything else sees it.
        if self.leases.poll_timeout().is_some_and(|at| at <= now) {
            for change in self.leases.handle_timeout(now) {
                self.broadcast_lease_change(&change);
            }
        }
        match event {
            ServerEvent::Connected { conn, peer } => self.on_connected(now, conn, peer),
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
                self.on_child_exited(now, terminal, exit_status);
            }
            ServerEvent::WorkingDirectory { terminal, cwd } => {
                self.on_working_directory(terminal, cwd);
            }
            ServerEvent::ShutdownRequested => self.shutdown("server is shutting down"),
            ServerEvent::UpgradeRequested { binary } => self.begin_upgrade(None, binary),
            ServerEvent::UpgradeFailed { reason } => self.on_upgrade_failed(now, &reason),
            ServerEvent::UpgradeDone => self.on_upgrade_done(now),
            ServerEvent::Timeout => self.on_timeout(now),
        }
    }

    /// The next thing to do, or `None` when there is nothing left.
    pub fn poll_action(&mut self) -> Option<ServerAction> {
        self.actions.pop_front()
    }

    /// When to call `handle(now, Timeout)` next, if ever.
    pub fn poll_timeout(&self) -> Option<Instant> {
        let handshake = self.handshakes.first().map(|&(at, _)| at);
        [
            self.leases.poll_timeout(),
            self.lane.poll_timeout(),
            handshake,
            self.remains.poll_timeout(self.config.remain_for),
        ]
        .into_iter()
        .flatten()
        .min()
    }

    fn on_timeout(&mut self, now: Instant) {
        self.remains.handle_timeout(now, self.config.remain_for);
        for (terminal, op) in self.lane.handle_timeout(now) {
            self.resolve_expired_job(&terminal, op);
        }
        self.ledger.handle_timeout(now);
        while let Some(&(at, id)) = self.handshakes.first() {
            if at > now {
                break;
            }
            self.handshakes.pop_first();
            // [SERVER.LIMIT.2] A connection that has not completed HELLO in time is closed.
            if self.conns.get(&id).is_some_and(Connection::awaits_hello) {
                self.detach(
                    id,
                    DetachReason::PROTOCOL_ERROR,
                    "HELLO not received in time",
                );
            }
        }
    }

    fn on_connected(&mut self, now: Instant, id: ConnId, peer: PeerInfo) {
        let client = ClientId(self.next_client);
        self.next_client = self.next_client.wrapping_add(1).max(1);
        // Counted before the newcomer joins: it is the one over the bound.
        let full = self.conns.len() >= self.config.max_connections;
        self.conns.insert(id, Connection::new(id, client, peer));
        if !peer.authorized {
            // [SERVER.PEER.1] A peer with another uid is refused before any of its frames.
            self.fail(
                id,
                ErrorCode::PERMISSION_DENIED,
                "peer credentials do not match the server's user",
            );
        } else if self.shutting_down {
            self.detach(id, DetachReason::SERVER_SHUTDOWN, "server is shutting down");
        } else if full {
            // [SERVER.LIMIT.3] A connection over the bound is refused before any of its frames.
            self.fail(
                id,
                ErrorCode::RESOURCE_EXHAUSTED,
                "too many connections to this server",
            );
        } else {
            let deadline = now.saturating_add(self.config.handshake_timeout);
            if let Some(conn) = self.conns.get_mut(&id) {
                conn.set_handshake_deadline(deadline);
            }
            self.handshakes.insert((deadline, id));
        }
    }

    /// The connection no longer awaits HELLO (admitted, closed or gone): its handshake timer
    /// is stopped.
    fn stop_handshake_timer(&mut self, id: ConnId) {
        if let Some(at) = self
            .conns
            .get_mut(&id)
            .and_then(Connection::take_handshake_deadline)
        {
            self.handshakes.remove(&(at, id));
        }
    }

    fn on_sent(&mut self, id: ConnId, bytes: usize) {
        let Some(conn) = self.conns.get_mut(&id) else {
            return;
        };
        self.queued = self.queued.saturating_sub(conn.sent(bytes));
        // [BOOTSTRAP.TOMBSTONE.4] A tombstoned stream starts over once the queue has drained.
        let resumable = conn.take_resumable(self.config.output_budget);
        if !resumable.is_empty() {
            self.resume_paused_streams(id, resumable);
        }
    }

    fn on_disconnected(&mut self, now: Instant, id: ConnId) {
        self.stop_handshake_timer(id);
        let Some(conn) = self.conns.remove(&id) else {
            return;
        };
        self.queued = self.queued.saturating_sub(conn.outbound().total());
        // [LEASE.DISCONNECT.1] A departing holder's leases are released and broadcast.
        for change in self.leases.disconnect(conn.client()) {
            self.broadcast_lease_change(&change);
        }
        let mut viewed = Vec::new();
        for (&local, terminal) in &mut self.terminals {
            if terminal.has_viewer(id) {
                viewed.push(local);
            }
            terminal.forget_conn(id);
        }
        // [SERVER.SIZE.2] A departed viewer no longer holds its terminals small.
        for local in viewed {
            self.fit_to_viewports(local, None);
        }
        let _ = now;
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

/// Sending by connection id, and the server-wide shed: each connection queues its own frames
/// ([`Connection::send_encoded`]) within the budgets [`outbound`] decides.
impl ServerEngine {
    /// Queues one frame for a connection, coalescing with an adjacent send to it.
    fn send(&mut self, id: ConnId, frame: &Frame) {
        self.send_encoded(id, Budget::of(frame), |bytes| frame.encode(bytes));
    }

    /// Queues the frame `encode` appends, counted against `budget`.
    fn send_encoded(&mut self, id: ConnId, budget: Budget, encode: impl FnOnce(&mut Vec<u8>)) {
        let Some(conn) = self.conns.get_mut(&id) else {
            return;
        };
        let queued = conn.send_encoded(
            &mut self.actions,
            &mut self.pool,
            budget,
            self.config.control_budget,
            encode,
        );
        self.queued += queued.len();
        match queued {
            Queued::Closed => return,
            Queued::Bytes(_) => {}
            // [QUEUE.CONTROL.2] A client that lets control frames pile up is detached.
            Queued::ControlOverflow(_) => self.detach(
                id,
                DetachReason::PROTOCOL_ERROR,
                "outbound control queue overflow: the client is not reading",
            ),
        }
        self.shed_over_budget();
    }

    /// [SERVER.LIMIT.5] While the bytes held for all connections (queued for them, and
    /// received from them but not yet framed) pass the server-wide budget, the open connection
    /// holding the most is failed (RESOURCE_EXHAUSTED, then DETACHED): the most expensive
    /// peer goes first, and the others keep their service. Checked at once when the queued
    /// bytes alone pass it; `unframed_grew` asks for the full count, which walks the
    /// connections, after a connection's unframed bytes grew large.
    fn shed_over_budget_if(&mut self, unframed_grew: bool) {
        if self.shedding || !(unframed_grew || self.queued > self.config.queued_budget) {
            return;
        }
        self.shedding = true;
        self.shed_heaviest();
        self.shedding = false;
    }

    fn shed_over_budget(&mut self) {
        self.shed_over_budget_if(false);
    }

    fn shed_heaviest(&mut self) {
        loop {
            let open = self
                .conns
                .values()
                .filter(|c| !c.is_closed())
                .map(|c| (c.id(), c.held()));
            let Some((heaviest, _)) = outbound::heaviest_over(open, self.config.queued_budget)
            else {
                return;
            };
            self.fail(
                heaviest,
                ErrorCode::RESOURCE_EXHAUSTED,
                "the server's memory budget is spent and this client holds the most of it",
            );
        }
    }

    /// Queues a frame whose head other connections share, counted against the output budget.
    fn send_shared(&mut self, id: ConnId, frame: SharedFrame) {
        let Some(conn) = self.conns.get_mut(&id) else {
            return;
        };
        let queued = conn.send_shared(&mut self.actions, frame);
        if queued == Queued::Closed {
            return;
        }
        self.queued += queued.len();
        self.shed_over_budget();
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

    /// An ERROR frame (connection-level; command failures go in COMMAND_RESULT).
    fn send_error(&mut self, id: ConnId, request_id: Option<u32>, code: ErrorCode, message: &str) {
        self.send(
            id,
            &Frame::Error(phux_proto::frame::ErrorFrame {
                request_id,
                code,
                message: message.to_owned(),
            }),
        );
    }

    /// Sends DETACHED and closes, without an ERROR.
    fn detach(&mut self, id: ConnId, reason: DetachReason, message: &str) {
        let Some(conn) = self.conns.get_mut(&id) else {
            return;
        };
        if conn.is_closed() {
            return;
        }
        if let Some(at) = conn.take_handshake_deadline() {
            self.handshakes.remove(&(at, id));
        }
        if let Some(len) = conn.detach(&mut self.actions, reason, message) {
            self.queued += len;
        }
    }

    /// [ERROR.FATAL.1] ERROR, then DETACHED{PROTOCOL_ERROR} with the same text, then close.
    fn fail(&mut self, id: ConnId, code: ErrorCode, message: &str) {
        self.send_error(id, None, code, message);
        self.detach(id, DetachReason::PROTOCOL_ERROR, message);
    }
}

/// How long an acknowledged job may go without a completion before it is reported unknown.
pub const COMPLETION_BOUND: Duration = crate::lane::COMPLETION_BOUND;
