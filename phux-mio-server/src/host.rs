//! The host: everything the engine's actions are performed on (the poll and its tokens, the
//! listener, the connections, the terminals, the driver's own deadlines) and the one place
//! they are performed.
//!
//! The host never drives the engine. What it observes while performing an action or writing
//! a queue (a job's completion, a spawn's result, bytes sent, a connection gone, a child's
//! exit) it queues in [`Host::events`], in the order it happened; the driver feeds them to the
//! engine once the action in hand is done (see `Driver::feed`). Performing gets a [`Recycle`],
//! which can give written buffers back to the engine and nothing else, so an action's
//! performance cannot re-enter `ServerEngine::handle`.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::sync::Arc;

use mio::unix::SourceFd;
use mio::{Interest, Poll, Token};
use phux_core::server::{
    ConnId, JobId, LocalTerminal, PeerInfo, ServerAction, ServerEngine, ServerEvent,
    SpawnSpec as EngineSpawn, WriteOutcome,
};
use phux_core::time::Instant;
use tracing::{debug, error, info, trace, warn};

use crate::child::ChildExit;
use crate::clock::Clock;
use crate::conn::{Chunk, Conn, FlushState, HandOff, READ_INTEREST, Transport, WriteQueue};
use crate::flush::{Decision, FlushPolicy, Output};
use crate::signals::Signals;
use crate::socket::ServerSocket;
use crate::terminal::{Adopted, Term, group_signal, os_spawn_spec};
use crate::timer::{
    CLOSE_BOUND, EXIT_DRAIN_BOUND, KILL_GRACE, Nearest, REAP_BOUND, Timer, TimerTable,
};
use crate::upgrade::{Bytes, ConnImageRef, ConnTransport, HostImage, Piece, PieceRef, TermImage};

/// What the host may do with the engine: give written buffers back for reuse. It holds no way
/// to hand the engine an event.
pub(crate) struct Recycle<'a>(pub(crate) &'a mut ServerEngine);

impl Recycle<'_> {
    /// Gives a written chunk's buffer back.
    fn chunk(&mut self, chunk: Chunk) {
        match chunk {
            Chunk::Owned(buffer) => self.0.reclaim(buffer),
            Chunk::Shared(head) => self.0.reclaim_shared(head),
            Chunk::Tail(_) => {}
        }
    }
}

/// What a registered source is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Source {
    ConnRead(ConnId),
    ConnWrite(ConnId),
    /// A bridge's socket, held while the connection is served on what it handed over.
    ConnControl(ConnId),
    Master(LocalTerminal),
    Pidfd(LocalTerminal),
}

/// The tokens handed out to sources, and what each names.
#[derive(Debug)]
pub(crate) struct Sources {
    map: HashMap<Token, Source>,
    next: usize,
}

impl Sources {
    fn new(first: usize) -> Self {
        Self {
            map: HashMap::new(),
            next: first,
        }
    }

    fn add(&mut self, source: Source) -> Token {
        let token = Token(self.next);
        self.next += 1;
        self.map.insert(token, source);
        token
    }

    fn remove(&mut self, token: Token) {
        self.map.remove(&token);
    }

    /// What `token` names, if it is still registered.
    pub(crate) fn get(&self, token: Token) -> Option<Source> {
        self.map.get(&token).copied()
    }
}

/// See the module doc.
pub(crate) struct Host {
    pub(crate) poll: Poll,
    pub(crate) clock: Clock,
    pub(crate) listener: Option<ServerSocket>,
    pub(crate) signals: Signals,
    pub(crate) sources: Sources,
    pub(crate) conns: BTreeMap<ConnId, Conn>,
    next_conn: u64,
    pub(crate) terminals: BTreeMap<LocalTerminal, Term>,
    /// What the host observed, for the driver to feed to the engine, oldest first.
    pub(crate) events: VecDeque<ServerEvent<'static>>,
    /// Sources whose draining stopped at the per-wake cap; revisited before waiting again.
    pub(crate) again: Vec<Token>,
    /// Connections with queued bytes not yet offered to the kernel, for the next flush.
    pub(crate) unflushed: Vec<ConnId>,
    /// The list of the flush pass under way (empty between passes), kept for its capacity.
    flushing: Vec<ConnId>,
    /// `Shutdown`, set by the engine's `Shutdown` action and stopped once it has passed;
    /// `Reap`, set once the host is stopping.
    pub(crate) timers: TimerTable,
    /// The engine's `Shutdown` came: no listener, and the host stops once every connection
    /// is gone.
    shutdown: bool,
    /// The nearest deadline of any connection's or terminal's table.
    pub(crate) nearest: Nearest,
    /// `--stdio`: stop once the one client is gone.
    stdio: bool,
    /// The stdio client is gone: finish up.
    pub(crate) done: bool,
    /// The completions of one pump of a terminal's writes, kept for the next pump's.
    finished_jobs: Vec<(JobId, WriteOutcome)>,
    /// The engine's `Upgrade` actions (the binary each names), for the driver to act on.
    pub(crate) upgrades: VecDeque<Option<String>>,
    /// The engine's `Spawn` actions not started yet, oldest first: the driver starts at most
    /// [`SPAWNS_PER_TURN`] a turn ([SERVER.FAIR.3]).
    pub(crate) spawns: VecDeque<(LocalTerminal, EngineSpawn)>,
}

/// The terminals started per turn of the loop, whoever asked for them ([SERVER.FAIR.3]):
/// each start blocks the loop for the fork and the exec (about 2.5 ms), so spawns pipelined
/// by many connections at once delay everyone else by at most this many starts a turn.
pub(crate) const SPAWNS_PER_TURN: usize = 4;

/// The tokens an upgrade's image was registered under, before its descriptors are owned
/// (see [`Host::register_image`]).
#[derive(Debug, Default)]
pub(crate) struct Registered {
    /// Per connection: (read, write, a bridge's socket).
    conns: Vec<(Token, Token, Option<Token>)>,
    /// Per terminal: (master, pidfd).
    terminals: Vec<(Option<Token>, Option<Token>)>,
}

impl Host {
    pub(crate) fn new(
        poll: Poll,
        listener: Option<ServerSocket>,
        signals: Signals,
        first_token: usize,
    ) -> Self {
        let stdio = listener.is_none();
        Self {
            poll,
            clock: Clock::new(),
            listener,
            signals,
            sources: Sources::new(first_token),
            conns: BTreeMap::new(),
            next_conn: 1,
            terminals: BTreeMap::new(),
            events: VecDeque::new(),
            again: Vec::new(),
            unflushed: Vec::new(),
            flushing: Vec::new(),
            timers: TimerTable::default(),
            shutdown: false,
            nearest: Nearest::default(),
            stdio,
            done: false,
            finished_jobs: Vec::new(),
            upgrades: VecDeque::new(),
            spawns: VecDeque::new(),
        }
    }

    /// Whether the host serves the one `--stdio` client (and stops when it leaves).
    pub(crate) fn set_stdio(&mut self, on: bool) {
        self.stdio = on;
    }

    /// Queues an event for the driver to feed.
    fn report(&mut self, event: ServerEvent<'static>) {
        self.events.push_back(event);
    }

    /// Performs one action. Bytes to send are queued, marked `output`, for the next flush.
    pub(crate) fn perform(
        &mut self,
        action: ServerAction,
        output: Output,
        recycle: &mut Recycle<'_>,
    ) {
        match &action {
            ServerAction::Send { conn, bytes } => trace!(conn = conn.0, len = bytes.len(), "send"),
            ServerAction::SendShared { conn, frame } => {
                trace!(conn = conn.0, len = frame.len(), "send shared");
            }
            ServerAction::Write {
                terminal,
                job,
                bytes,
                ..
            } => debug!(%terminal, job = job.0, len = bytes.len(), "write"),
            // [SERVER.LOG.1] Never the action's `Debug`: a spawn's argv, cwd and environment
            // values may carry secrets (tokens in the env, passwords in a `-c` script).
            ServerAction::Spawn { terminal, spec } => debug!(
                %terminal,
                program = ?spec.command.first(),
                args = spec.command.len().saturating_sub(1),
                env_names = ?spec.env.as_ref().map(|vars| env_names(vars)),
                "spawn"
            ),
            ServerAction::Close { conn } => debug!(conn = conn.0, "close"),
            ServerAction::Resize {
                terminal,
                cols,
                rows,
            } => debug!(%terminal, cols, rows, "resize"),
            ServerAction::Signal { terminal, signal } => debug!(%terminal, ?signal, "signal"),
            ServerAction::Kill { terminal } => debug!(%terminal, "kill"),
            ServerAction::Shutdown => debug!("shutdown"),
            ServerAction::Upgrade { binary } => {
                debug!(own_binary = binary.is_none(), "upgrade");
            }
        }
        match action {
            ServerAction::Send { conn, bytes } => {
                self.send(conn, output, |queue| queue.push(bytes));
            }
            ServerAction::SendShared { conn, frame } => {
                self.send(conn, output, |queue| queue.push_shared(frame));
            }
            ServerAction::Close { conn } => self.close(conn, recycle),
            ServerAction::Spawn { terminal, spec } => self.spawns.push_back((terminal, spec)),
            ServerAction::Write {
                terminal,
                job,
                bytes,
            } => self.write(terminal, job, bytes),
            ServerAction::Resize {
                terminal,
                cols,
                rows,
            } => {
                if let Some(t) = self.terminals.get(&terminal)
                    && let Err(e) = t.child.resize(cols, rows)
                {
                    warn!(%terminal, cols, rows, error = %e, "resize failed");
                }
            }
            ServerAction::Signal { terminal, signal } => {
                if let Some(t) = self.terminals.get(&terminal) {
                    let sig = group_signal(signal);
                    debug!(%terminal, pid = t.child.pid(), signal = ?sig, "signal group");
                    if let Err(e) = t.child.signal_group(sig) {
                        warn!(%terminal, signal = ?sig, error = %e, "signal failed");
                    }
                }
            }
            ServerAction::Kill { terminal } => self.kill(terminal),
            ServerAction::Shutdown => self.begin_shutdown(),
            ServerAction::Upgrade { binary } => self.upgrades.push_back(binary),
        }
    }

    // ---- connections ----

    /// Registers a connection on `transport`; the caller reports it `Connected`.
    pub(crate) fn add_conn(&mut self, transport: Transport, peer: PeerInfo) -> io::Result<ConnId> {
        let id = ConnId(self.next_conn);
        self.next_conn += 1;
        let read_token = self.sources.add(Source::ConnRead(id));
        let write_token = if transport.split() {
            self.sources.add(Source::ConnWrite(id))
        } else {
            read_token
        };
        // [SERVER.BRIDGE.9] Only a socket peer that passed the uid check may hand over
        // descriptors: the same check as for any connection, made at accept.
        let may_hand_off = matches!(transport, Transport::Unix(_)) && peer.authorized;
        match Conn::open(transport, read_token, write_token, self.poll.registry()) {
            Ok(mut conn) => {
                conn.may_hand_off = may_hand_off;
                self.conns.insert(id, conn);
                info!(conn = id.0, local = peer.local_socket, "connection opened");
                Ok(id)
            }
            Err(e) => {
                self.sources.remove(read_token);
                self.sources.remove(write_token);
                Err(e)
            }
        }
    }

    /// A bridge offered its stdin and stdout on the connection's first read
    /// ([SERVER.BRIDGE.9]). Taken only while nothing was queued for the connection (the
    /// engine refuses an over-limit peer at once, and that refusal must reach it as bytes):
    /// then the connection is served on them and the bridge gets [`ACK`](crate::handoff::ACK).
    /// Returns whether it was taken; when not, the descriptors are closed unchanged and the
    /// offer's bytes are the caller's to handle as any others.
    pub(crate) fn hand_off(&mut self, id: ConnId, input: OwnedFd, output: OwnedFd) -> bool {
        let Some(conn) = self.conns.get_mut(&id) else {
            return false;
        };
        if !conn.queue.is_empty() || conn.is_closing() || conn.reported {
            debug!(
                conn = id.0,
                "handoff refused: the connection is already answered"
            );
            return false;
        }
        let write_token = self.sources.add(Source::ConnWrite(id));
        let control_token = self.sources.add(Source::ConnControl(id));
        match conn.hand_off(
            input,
            output,
            (write_token, control_token),
            self.poll.registry(),
        ) {
            HandOff::Taken => {}
            HandOff::Refused(e) => {
                warn!(conn = id.0, error = %e, "handoff refused");
                self.sources.remove(write_token);
                self.sources.remove(control_token);
                return false;
            }
            HandOff::Broken(e) => {
                error!(conn = id.0, error = %e, "cannot watch a handed-off connection");
                self.sources.remove(control_token);
                self.close_now(id);
                return true;
            }
        }
        // The answer before any byte is read from what was handed over: a bridge that never
        // sees it falls back to copying, and must find its stdin untouched.
        let acked = match &conn.transport {
            Transport::Handoff(h) => {
                matches!(
                    io::Write::write(&mut &h.control, &[crate::handoff::ACK]),
                    Ok(1)
                )
            }
            _ => false,
        };
        if acked {
            debug!(
                conn = id.0,
                "serving the connection on the descriptors its bridge handed over"
            );
        } else {
            debug!(
                conn = id.0,
                "the bridge went away before the handoff's answer"
            );
            self.close_now(id);
        }
        true
    }

    /// The bridge that handed the connection over ended (or wrote to) its socket: it was
    /// killed, or its transport cut. The connection ends as a cut link does
    /// ([SERVER.BRIDGE.11]).
    pub(crate) fn bridge_gone(&mut self, id: ConnId, recycle: &mut Recycle<'_>) {
        let cut = io::Error::new(
            io::ErrorKind::ConnectionReset,
            "the bridge that handed the connection over is gone",
        );
        self.peer_gone(id, Some(&cut), recycle);
    }

    /// The peer ended its stream or the transport failed. Whatever is already queued still
    /// goes out (a half-closed peer may be reading, bounded by [`CLOSE_BOUND`]), but the engine
    /// forgets the connection now.
    pub(crate) fn peer_gone(
        &mut self,
        id: ConnId,
        err: Option<&io::Error>,
        recycle: &mut Recycle<'_>,
    ) {
        let Some(conn) = self.conns.get_mut(&id) else {
            return;
        };
        conn.end_reads(self.poll.registry());
        match err {
            None => debug!(conn = id.0, "peer closed its stream"),
            Some(e) => debug!(conn = id.0, error = %e, "read failed"),
        }
        let clock = self.clock;
        let closing = conn
            .timers
            .get_or_set(Timer::Closing, || clock.now() + CLOSE_BOUND);
        if err.is_some() {
            conn.queue.clear();
        }
        let report = !conn.reported;
        conn.reported = true;
        self.nearest.note(closing);
        if report {
            self.report(ServerEvent::Disconnected { conn: id });
        }
        self.write_conn(id, recycle);
    }

    /// Queues what `push` adds on the connection's write queue, for the next flush.
    fn send(&mut self, id: ConnId, output: Output, push: impl FnOnce(&mut WriteQueue)) {
        let Some(conn) = self.conns.get_mut(&id) else {
            return;
        };
        if conn.reported {
            return;
        }
        push(&mut conn.queue);
        conn.urgent |= output == Output::Urgent;
        // Written once the engine has nothing more to say, so that the frames of one
        // wake-up leave in one vectored write per connection rather than one each.
        if !self.unflushed.contains(&id) {
            self.unflushed.push(id);
        }
    }

    /// One flush pass: writes each connection queued for it, unless the policy holds it.
    pub(crate) fn flush_pass(&mut self, now: Instant, recycle: &mut Recycle<'_>) {
        // The two lists trade places, so neither is allocated again: a flush pass allocates
        // nothing. Writing performs no action, so nothing joins `unflushed` meanwhile.
        let spare = std::mem::take(&mut self.flushing);
        let mut ids = std::mem::replace(&mut self.unflushed, spare);
        for id in ids.drain(..) {
            let Some(conn) = self.conns.get_mut(&id) else {
                continue;
            };
            match FlushPolicy::decide(conn.queued(), now) {
                Decision::Write => self.write_conn(id, recycle),
                Decision::Hold { until } => {
                    conn.timers.set(Timer::HeldOutput, until);
                    self.nearest.note(until);
                }
            }
        }
        self.flushing = ids;
    }

    /// Between bulk reads: writes the connection the policy finds ripest, if any.
    pub(crate) fn flush_ripest(&mut self, recycle: &mut Recycle<'_>) {
        let candidates = self.unflushed.iter().enumerate().filter_map(|(i, id)| {
            let conn = self.conns.get(id)?;
            (!conn.awaiting_writable()).then_some((i, conn.queue.len()))
        });
        if let Some(i) = FlushPolicy::ripest(candidates) {
            let id = self.unflushed.swap_remove(i);
            self.write_conn(id, recycle);
        }
    }

    /// Writes what the connection's queue holds; keeps `WRITABLE` interest while anything is
    /// left; closes the connection when it was closing and is now empty (or failed).
    pub(crate) fn write_conn(&mut self, id: ConnId, recycle: &mut Recycle<'_>) {
        let Some(conn) = self.conns.get_mut(&id) else {
            return;
        };
        let (sent, state) = conn.write(|chunk| recycle.chunk(chunk));
        if sent > 0 {
            trace!(conn = id.0, bytes = sent, "sent");
            if !conn.reported {
                self.report(ServerEvent::Sent {
                    conn: id,
                    bytes: sent,
                });
            }
        }
        match state {
            FlushState::Drained => {
                self.set_conn_writable(id, false);
                if self.conns.get(&id).is_some_and(Conn::is_closing) {
                    self.close_now(id);
                }
            }
            FlushState::Blocked => self.set_conn_writable(id, true),
            FlushState::Failed(e) => {
                debug!(conn = id.0, error = %e, "write failed");
                if let Some(conn) = self.conns.get_mut(&id) {
                    conn.queue.clear();
                }
                self.close_now(id);
            }
        }
    }

    fn set_conn_writable(&mut self, id: ConnId, on: bool) {
        if let Some(conn) = self.conns.get_mut(&id)
            && let Err(e) = conn.set_writable(self.poll.registry(), on)
        {
            warn!(conn = id.0, error = %e, "cannot change write interest");
        }
    }

    /// The engine's `Close`: flush what is queued (bounded by [`CLOSE_BOUND`]), then close.
    fn close(&mut self, id: ConnId, recycle: &mut Recycle<'_>) {
        let Some(conn) = self.conns.get_mut(&id) else {
            return;
        };
        let clock = self.clock;
        let closing = conn
            .timers
            .get_or_set(Timer::Closing, || clock.now() + CLOSE_BOUND);
        self.nearest.note(closing);
        self.write_conn(id, recycle);
    }

    /// [SERVER.MEMORY.1] Something went away: the heap is trimmed a moment later, once for
    /// a whole burst of closes.
    fn trim_soon(&mut self) {
        if !self.timers.is_set(Timer::Trim) {
            let at = self.clock.now() + crate::memory::TRIM_DELAY;
            self.timers.set(Timer::Trim, at);
        }
    }

    /// Drops the connection now, telling the engine unless it was told already.
    pub(crate) fn close_now(&mut self, id: ConnId) {
        let Some(conn) = self.conns.remove(&id) else {
            return;
        };
        self.trim_soon();
        conn.deregister(self.poll.registry());
        self.sources.remove(conn.read_token());
        self.sources.remove(conn.write_token());
        if let Some(token) = conn.control_token() {
            self.sources.remove(token);
        }
        conn.transport.shutdown();
        let was_reported = conn.reported;
        let stdio = matches!(conn.transport, Transport::Stdio);
        drop(conn);
        info!(conn = id.0, "connection closed");
        if !was_reported {
            self.report(ServerEvent::Disconnected { conn: id });
        }
        if stdio && self.stdio {
            self.done = true;
        }
    }

    // ---- terminals ----

    /// Starts at most `limit` of the waiting spawns, oldest first: [`SPAWNS_PER_TURN`] a turn
    /// ([SERVER.FAIR.3]).
    pub(crate) fn start_spawns(&mut self, limit: usize) {
        for _ in 0..limit {
            let Some((terminal, spec)) = self.spawns.pop_front() else {
                return;
            };
            self.spawn(terminal, &spec);
        }
    }

    fn spawn(&mut self, terminal: LocalTerminal, spec: &EngineSpawn) {
        let spec = match os_spawn_spec(spec) {
            Ok(spec) => spec,
            Err(message) => {
                return self.report(ServerEvent::SpawnFailed { terminal, message });
            }
        };
        let child = match crate::child::spawn(&spec) {
            Ok(child) => child,
            Err(e) => {
                warn!(%terminal, program = ?spec.program, error = %e, "spawn failed");
                return self.report(ServerEvent::SpawnFailed {
                    terminal,
                    message: e.to_string(),
                });
            }
        };
        let pid = child.pid();
        let master_token = self.sources.add(Source::Master(terminal));
        let pidfd_token = self.sources.add(Source::Pidfd(terminal));
        let registry = self.poll.registry();
        let term = match Term::register(terminal, child, master_token, pidfd_token, registry) {
            Ok(term) => term,
            Err(e) => {
                error!(%terminal, error = %e, "cannot register a terminal");
                self.sources.remove(master_token);
                self.sources.remove(pidfd_token);
                return self.report(ServerEvent::SpawnFailed {
                    terminal,
                    message: format!("cannot watch the terminal: {e}"),
                });
            }
        };
        info!(%terminal, pid, program = ?spec.program, cols = spec.cols, rows = spec.rows, "spawned");
        self.terminals.insert(terminal, term);
        self.report(ServerEvent::Spawned { terminal, pid });
    }

    fn write(&mut self, terminal: LocalTerminal, job: JobId, bytes: Vec<u8>) {
        match self.terminals.get_mut(&terminal) {
            // Exited, hung up (or never started): nothing can be written.
            Some(t) if t.exited().is_none() && !t.killing() => t.push(job, bytes),
            _ => {
                return self.report(ServerEvent::WriteDone {
                    terminal,
                    job,
                    outcome: WriteOutcome::NotWritten,
                });
            }
        }
        self.pump(terminal);
    }

    /// Writes the terminal's pending jobs as far as the master takes them.
    pub(crate) fn pump(&mut self, terminal: LocalTerminal) {
        let Some(t) = self.terminals.get_mut(&terminal) else {
            return;
        };
        let mut done = std::mem::take(&mut self.finished_jobs);
        t.pump(self.poll.registry(), &mut done);
        self.report_jobs(terminal, done);
    }

    fn report_jobs(&mut self, terminal: LocalTerminal, mut done: Vec<(JobId, WriteOutcome)>) {
        for (job, outcome) in done.drain(..) {
            trace!(%terminal, job = job.0, ?outcome, "write done");
            self.report(ServerEvent::WriteDone {
                terminal,
                job,
                outcome,
            });
        }
        // Kept for the next write's completions: a keystroke's write allocates nothing here.
        if done.capacity() > self.finished_jobs.capacity() {
            self.finished_jobs = done;
        }
    }

    /// No more output will come: every holder of the slave closed it.
    pub(crate) fn master_eof(&mut self, terminal: LocalTerminal) {
        let Some(t) = self.terminals.get_mut(&terminal) else {
            return;
        };
        t.set_eof();
        debug!(%terminal, "terminal output ended");
        if t.exited().is_some() {
            self.finish_exit(terminal);
        } else if t.killing() {
            // A killed child's exit may have been held back until now (see `reap`).
            let _ = self.reap(terminal);
        }
        // Otherwise the child closed its terminal but runs on: its pidfd tells us of its exit.
    }

    /// The pidfd became readable: reaps the child. Returns the master's token when its output
    /// is to be read to the end before the exit is reported.
    pub(crate) fn reap(&mut self, terminal: LocalTerminal) -> Option<Token> {
        let t = self.terminals.get_mut(&terminal)?;
        if t.exited().is_some() {
            return None;
        }
        // [SERVER.SIGNAL.2] A killed child that exited within its grace while its terminal is
        // still open (something else in its group holds it) is left a zombie for now: the
        // zombie keeps its pid, so the SIGKILL at the grace's end reaches exactly the members
        // of its group that ignored the SIGHUP, never a group that reused the number. The end
        // of the output (`master_eof`) or of the grace (`on_deadlines`) reaps it.
        if t.killing() && t.timers.is_set(Timer::KillGrace) && !t.eof() {
            return None;
        }
        let exit = match t.child.try_wait() {
            Ok(Some(exit)) => exit,
            Ok(None) => return None,
            Err(e) => {
                error!(%terminal, error = %e, "waiting for the child failed");
                return None;
            }
        };
        debug!(%terminal, pid = t.child.pid(), ?exit, "child exited");
        let drain = self.clock.now() + EXIT_DRAIN_BOUND;
        t.set_exited(exit, drain);
        let (eof, master) = (t.eof(), t.master_token());
        self.nearest.note(drain);
        if eof {
            self.finish_exit(terminal);
            return None;
        }
        master
    }

    /// The child is reaped and its output drained (or the drain bound passed): resolve its
    /// jobs, drop its OS state and tell the engine.
    fn finish_exit(&mut self, terminal: LocalTerminal) {
        let Some(mut t) = self.terminals.remove(&terminal) else {
            return;
        };
        self.trim_soon();
        let (exit, t_killed) = (t.exited(), t.killing());
        self.deregister_terminal(&mut t);
        let mut done = Vec::new();
        t.abandon(&mut done);
        // Drop closes the master and reaps the child if that has not happened.
        drop(t);
        self.report_jobs(terminal, done);
        if t_killed {
            info!(%terminal, ?exit, "terminal killed");
        } else {
            info!(%terminal, ?exit, "terminal closed");
        }
        self.report(ServerEvent::ChildExited {
            terminal,
            exit_status: exit.and_then(ChildExit::code),
        });
    }

    /// KILL_TERMINAL (or shutdown): SIGHUP, and let the child exit on its own; SIGKILL comes
    /// only when `Timer::KillGrace` does. Never waits: the exit is reported, as any other, when
    /// the pidfd says the child is gone.
    fn kill(&mut self, terminal: LocalTerminal) {
        // Killed before it started: it never will (the engine has already answered its
        // spawner).
        if let Some(at) = self.spawns.iter().position(|(t, _)| *t == terminal) {
            self.spawns.remove(at);
            return;
        }
        let Some(t) = self.terminals.get_mut(&terminal) else {
            return;
        };
        if t.killing() {
            return;
        }
        let mut done = Vec::new();
        t.abandon(&mut done);
        if t.exited().is_some() {
            // Reaped already, its output still draining: nothing left to signal.
            self.report_jobs(terminal, done);
            return self.finish_exit(terminal);
        }
        // [SERVER.SIGNAL.2] SIGHUP first, as a closing terminal emulator does; SIGKILL only
        // after KILL_GRACE, from `on_deadlines`. The loop goes on meanwhile.
        let grace = self.clock.now() + KILL_GRACE;
        let pid = t.child.pid();
        t.hang_up(grace);
        self.nearest.note(grace);
        self.report_jobs(terminal, done);
        info!(%terminal, pid, "sent SIGHUP; SIGKILL follows unless it exits");
    }

    fn deregister_terminal(&mut self, t: &mut Term) {
        for token in t.deregister(self.poll.registry()).into_iter().flatten() {
            self.sources.remove(token);
        }
        let sources = &self.sources;
        self.again.retain(|&tok| sources.get(tok).is_some());
    }

    // ---- time and shutdown ----

    /// Writes held output, drops connections that did not drain in time and finishes exits
    /// whose output never ended, as each comes due; then works out the next such deadline.
    pub(crate) fn on_deadlines(&mut self, now: Instant, recycle: &mut Recycle<'_>) {
        if !self.nearest.is_due(now) {
            return;
        }
        let held = due_keys(&self.conns, |c| c.timers.is_expired(Timer::HeldOutput, now));
        for id in held {
            self.write_conn(id, recycle);
        }
        let overdue = due_keys(&self.conns, |c| c.timers.is_expired(Timer::Closing, now));
        for id in overdue {
            warn!(
                conn = id.0,
                "peer did not read its last bytes in time; closing"
            );
            self.close_now(id);
        }
        let drained = due_keys(&self.terminals, |t| {
            t.timers.is_expired(Timer::ExitDrain, now)
        });
        for terminal in drained {
            debug!(
                %terminal,
                "terminal output still open after the child's exit"
            );
            self.finish_exit(terminal);
        }
        let graceless = due_keys(&self.terminals, |t| {
            t.timers.is_expired(Timer::KillGrace, now)
        });
        for terminal in graceless {
            let Some(t) = self.terminals.get_mut(&terminal) else {
                continue;
            };
            t.timers.stop(Timer::KillGrace);
            // [SERVER.SIGNAL.2] Still there after its grace: SIGKILL to the group. The pidfd
            // reports the exit.
            let pid = t.child.pid();
            warn!(%terminal, pid, "still running after the SIGHUP grace; sending SIGKILL");
            if let Err(e) = t.child.kill_group() {
                error!(%terminal, error = %e, "kill failed");
            }
            // A leader that exited during the grace was left unreaped (see `reap`): now it is.
            // Its output drains as after any exit: the SIGKILL ends what still held it.
            let _ = self.reap(terminal);
        }
        let conns = self.conns.values().map(|c| &c.timers);
        let terminals = self.terminals.values().map(|t| &t.timers);
        self.nearest.recompute(conns.chain(terminals));
    }

    /// After the engine's `Shutdown`: once its deadline passes, drops every connection still
    /// open.
    pub(crate) fn on_shutdown_deadline(&mut self, now: Instant) {
        if self.timers.is_expired(Timer::Shutdown, now) {
            // Stopped, so that an expired deadline does not make every later poll return at once
            // while the children finish.
            self.timers.stop(Timer::Shutdown);
            let ids: Vec<ConnId> = self.conns.keys().copied().collect();
            for id in ids {
                self.close_now(id);
            }
        }
    }

    /// Once the host is stopping (see [`Self::stopping`]), the first time: hangs up every
    /// terminal still there and bounds the wait for their exits. The engine killed the
    /// terminals it knew running on shutdown; the stdio client's departure killed none. Either
    /// way every child gets its SIGHUP and its grace. Returns whether it did anything (events
    /// may then wait to be fed).
    pub(crate) fn on_stopping(&mut self) -> bool {
        if !self.stopping() || self.timers.is_set(Timer::Reap) {
            return false;
        }
        let left: Vec<LocalTerminal> = self.terminals.keys().copied().collect();
        for terminal in left {
            self.kill(terminal);
        }
        self.timers
            .set(Timer::Reap, self.clock.now() + KILL_GRACE + REAP_BOUND);
        true
    }

    /// The engine's `Shutdown`: stop accepting, remove the socket, and stop once every
    /// connection has been flushed (bounded by [`CLOSE_BOUND`]).
    fn begin_shutdown(&mut self) {
        if self.shutdown {
            return;
        }
        self.shutdown = true;
        info!("shutting down");
        // Nothing new starts once the server is stopping.
        self.spawns.clear();
        self.timers
            .set(Timer::Shutdown, self.clock.now() + CLOSE_BOUND);
        if let Some(mut l) = self.listener.take() {
            let _ = self.poll.registry().deregister(l.listener_mut());
            // Dropping the socket removes its file, so no new client finds a dead server.
            drop(l);
        }
    }

    /// Whether the host has no client left to serve: the stdio client is gone, or shutdown
    /// has flushed and closed every connection.
    fn stopping(&self) -> bool {
        self.done || (self.shutdown && self.conns.is_empty())
    }

    /// Whether the host is done: it is stopping, and every child has been reaped or the
    /// wait for them ([`KILL_GRACE`] + [`REAP_BOUND`]) is over.
    pub(crate) fn finished(&self) -> bool {
        self.stopping()
            && (self.terminals.is_empty() || self.timers.is_expired(Timer::Reap, self.clock.now()))
    }

    /// Kills and reaps whatever still runs, and removes the socket.
    pub(crate) fn finish(&mut self) {
        let terminals: Vec<LocalTerminal> = self.terminals.keys().copied().collect();
        for terminal in terminals {
            if let Some(mut t) = self.terminals.remove(&terminal) {
                self.deregister_terminal(&mut t);
                let pid = t.child.pid();
                match t.child.kill_and_reap() {
                    Ok(exit) => info!(%terminal, pid, ?exit, "terminal killed at exit"),
                    Err(e) => error!(%terminal, pid, error = %e, "kill at exit failed"),
                }
            }
        }
        self.listener = None;
        let _ = self.signals.deregister(self.poll.registry());
        info!("stopped");
    }
}

/// The upgrade: what crosses the exec, and taking it back.
impl Host {
    /// Why the host cannot be handed over now, if it cannot: shutting down, or a terminal
    /// with a job the engine has not seen finish.
    pub(crate) fn not_ready_for_upgrade(&self) -> Option<String> {
        if self.shutdown || self.done {
            return Some("the server is shutting down".to_owned());
        }
        if !self.spawns.is_empty() {
            return Some(format!(
                "{} terminals are waiting to start",
                self.spawns.len()
            ));
        }
        self.terminals
            .iter()
            .find(|(_, t)| !t.idle())
            .map(|(id, _)| format!("terminal {id} has input in progress"))
    }

    /// The connections and terminals as the image carries them (their unwritten bytes,
    /// deadlines and exit state), borrowed from the queues: the heads of frames several
    /// connections are sent, each once, then per connection its pieces; and the next
    /// connection id.
    pub(crate) fn image_parts(
        &self,
    ) -> (Vec<Bytes<'_>>, Vec<ConnImageRef<'_>>, Vec<TermImage>, u64) {
        let micros = |at: Option<Instant>| at.map(Instant::as_micros);
        let mut shared: Vec<Bytes<'_>> = Vec::new();
        let mut index: HashMap<*const Vec<u8>, u32> = HashMap::new();
        let mut conns = Vec::with_capacity(self.conns.len());
        for (id, c) in &self.conns {
            let mut pending = Vec::new();
            for (chunk, from) in c.queue.pieces() {
                let piece = match chunk {
                    // [SERVER.UPGRADE.EXEC.5] A head still whole is named, so that it is one
                    // buffer in the new image as it is here.
                    Chunk::Shared(head) if from == 0 => {
                        let at = *index.entry(Arc::as_ptr(head)).or_insert_with(|| {
                            shared.push(Bytes(head.as_slice()));
                            u32::try_from(shared.len() - 1).unwrap_or(u32::MAX)
                        });
                        PieceRef::Shared(at)
                    }
                    other => PieceRef::Bytes(Bytes(other.bytes().get(from..).unwrap_or_default())),
                };
                pending.push(piece);
            }
            conns.push(ConnImageRef {
                id: id.0,
                transport: match &c.transport {
                    Transport::Unix(s) => ConnTransport::Unix {
                        fd: s.as_raw_fd(),
                        may_hand_off: c.may_hand_off,
                    },
                    Transport::Stdio => ConnTransport::Stdio,
                    Transport::Handoff(h) => {
                        let (input_flags, output_flags) = h.given_flags();
                        ConnTransport::Handoff {
                            input: h.input.as_raw_fd(),
                            output: h.output.as_raw_fd(),
                            control: h.control.as_raw_fd(),
                            input_flags: input_flags.bits(),
                            output_flags: output_flags.bits(),
                        }
                    }
                },
                pending,
                read_done: c.read_done(),
                reported: c.reported,
                closing: micros(c.timers.get(Timer::Closing)),
            });
        }
        let terminals = self
            .terminals
            .iter()
            .map(|(id, t)| TermImage {
                id: id.0,
                master: t.child.master_fd().map(|fd| fd.as_raw_fd()),
                pidfd: t.child.pidfd().as_raw_fd(),
                pid: t.child.pid().cast_signed(),
                exit: t.exited().map(|exit| match exit {
                    ChildExit::Exited(code) => (false, code),
                    ChildExit::Signaled(sig) => (true, sig),
                }),
                eof: t.eof(),
                killing: t.killing(),
                exit_drain: micros(t.timers.get(Timer::ExitDrain)),
                kill_grace: micros(t.timers.get(Timer::KillGrace)),
            })
            .collect();
        (shared, conns, terminals, self.next_conn)
    }

    /// Every descriptor that crosses the exec: the listener, the connections' sockets, the
    /// terminals' masters and pidfds (the order of [`HostImage::fds`]).
    pub(crate) fn inherited_fds(&self) -> Vec<BorrowedFd<'_>> {
        let mut fds: Vec<BorrowedFd<'_>> =
            self.listener.iter().map(|l| l.listener().as_fd()).collect();
        for c in self.conns.values() {
            match &c.transport {
                Transport::Unix(s) => fds.push(s.as_fd()),
                Transport::Stdio => {}
                Transport::Handoff(h) => {
                    fds.extend([h.input.as_fd(), h.output.as_fd(), h.control.as_fd()]);
                }
            }
        }
        for t in self.terminals.values() {
            fds.extend(t.child.master_fd());
            fds.push(t.child.pidfd());
        }
        fds
    }

    /// Registers the image's connections and terminals with the poll by number, before any
    /// descriptor is owned: a failure here leaves every descriptor open for the previous
    /// image to take back ([SERVER.UPGRADE.EXEC.6]).
    pub(crate) fn register_image(&mut self, image: &HostImage) -> io::Result<Registered> {
        let registry = self.poll.registry();
        let mut out = Registered::default();
        for c in &image.conns {
            let id = ConnId(c.id);
            let read = self.sources.add(Source::ConnRead(id));
            let (read_fd, write) = match c.transport {
                ConnTransport::Unix { fd, .. } => (fd, read),
                ConnTransport::Stdio => (
                    rustix::stdio::stdin().as_raw_fd(),
                    self.sources.add(Source::ConnWrite(id)),
                ),
                ConnTransport::Handoff { input, .. } => {
                    (input, self.sources.add(Source::ConnWrite(id)))
                }
            };
            if !c.read_done {
                registry.register(&mut SourceFd(&read_fd), read, READ_INTEREST)?;
            }
            // [SERVER.BRIDGE.11] The bridge's socket is watched in the new image too.
            let control = match c.transport {
                ConnTransport::Handoff { control, .. } => {
                    let token = self.sources.add(Source::ConnControl(id));
                    registry.register(&mut SourceFd(&control), token, Interest::READABLE)?;
                    Some(token)
                }
                _ => None,
            };
            out.conns.push((read, write, control));
        }
        for t in &image.terminals {
            let id = LocalTerminal(t.id);
            if rustix::process::Pid::from_raw(t.pid).is_none() {
                return Err(io::Error::other(format!(
                    "terminal {id}: invalid pid {}",
                    t.pid
                )));
            }
            let master = match t.master {
                Some(fd) => {
                    let token = self.sources.add(Source::Master(id));
                    registry.register(&mut SourceFd(&fd), token, Interest::READABLE)?;
                    Some(token)
                }
                None => None,
            };
            // A reaped child's pidfd has nothing more to say.
            let pidfd = if t.exit.is_none() {
                let token = self.sources.add(Source::Pidfd(id));
                registry.register(&mut SourceFd(&t.pidfd), token, Interest::READABLE)?;
                Some(token)
            } else {
                None
            };
            out.terminals.push((master, pidfd));
        }
        Ok(out)
    }

    /// Takes the image's connections and terminals back, each with the descriptors `fds`
    /// gives in [`HostImage::fds`] order (the listener's taken already), registered by
    /// [`Self::register_image`]. Every connection is read again before the next wait: frames
    /// the engine decoded but had not handled yet wait for no new byte.
    pub(crate) fn adopt_image(
        &mut self,
        image: HostImage,
        registered: Registered,
        fds: &mut impl Iterator<Item = OwnedFd>,
    ) -> io::Result<()> {
        self.next_conn = image.next_conn;
        let heads: Vec<Arc<Vec<u8>>> = image.shared.into_iter().map(Arc::new).collect();
        let at = |micros: Option<u64>| micros.map(Instant::from_micros);
        let socket = |fds: &mut dyn Iterator<Item = OwnedFd>| {
            let fd = fds.next().ok_or_else(missing_fd)?;
            let std = std::os::unix::net::UnixStream::from(fd);
            Ok::<_, io::Error>(mio::net::UnixStream::from_std(std))
        };
        for (c, tokens) in image.conns.into_iter().zip(registered.conns) {
            let (transport, may_hand_off) = match c.transport {
                ConnTransport::Unix { may_hand_off, .. } => {
                    (Transport::Unix(socket(fds)?), may_hand_off)
                }
                ConnTransport::Stdio => (Transport::Stdio, false),
                ConnTransport::Handoff {
                    input_flags,
                    output_flags,
                    ..
                } => {
                    let input = fds.next().ok_or_else(missing_fd)?;
                    let output = fds.next().ok_or_else(missing_fd)?;
                    let control = socket(fds)?;
                    let flags = (
                        rustix::fs::OFlags::from_bits_retain(input_flags),
                        rustix::fs::OFlags::from_bits_retain(output_flags),
                    );
                    let handed = crate::handoff::Handed::adopted(input, output, control, flags);
                    (Transport::Handoff(handed), false)
                }
            };
            let id = ConnId(c.id);
            let mut queue = WriteQueue::new();
            for piece in c.pending {
                match piece {
                    Piece::Bytes(bytes) => queue.push(bytes),
                    Piece::Shared(i) => {
                        let head = heads.get(i as usize).ok_or_else(|| {
                            io::Error::other(format!("no shared frame {i} in the image"))
                        })?;
                        queue.push_head(Arc::clone(head));
                    }
                }
            }
            let mut conn = Conn::adopted(
                transport,
                tokens,
                may_hand_off,
                queue,
                c.read_done,
                c.reported,
            );
            if let Some(closing) = at(c.closing) {
                conn.timers.set(Timer::Closing, closing);
                self.nearest.note(closing);
            }
            if !c.read_done {
                self.again.push(tokens.0);
            }
            self.conns.insert(id, conn);
            self.unflushed.push(id);
        }
        for (t, (master, pidfd)) in image.terminals.into_iter().zip(registered.terminals) {
            let master_fd = match t.master {
                Some(_) => Some(fds.next().ok_or_else(missing_fd)?),
                None => None,
            };
            let pidfd_fd = fds.next().ok_or_else(missing_fd)?;
            let exit = t.exit.map(|(signal, n)| {
                if signal {
                    ChildExit::Signaled(n)
                } else {
                    ChildExit::Exited(n)
                }
            });
            let child = crate::child::PtyChild::adopt(master_fd, t.pid, pidfd_fd, exit)?;
            let adopted = Adopted {
                master,
                pidfd,
                eof: t.eof,
                killing: t.killing,
                exit_drain: at(t.exit_drain),
                kill_grace: at(t.kill_grace),
            };
            for deadline in [adopted.exit_drain, adopted.kill_grace]
                .into_iter()
                .flatten()
            {
                self.nearest.note(deadline);
            }
            let id = LocalTerminal(t.id);
            self.terminals.insert(id, Term::adopted(id, child, adopted));
        }
        Ok(())
    }
}

fn missing_fd() -> io::Error {
    io::Error::other("the image names fewer descriptors than it holds")
}

/// The names of a spawn's environment variables, for the log: never their values
/// ([SERVER.LOG.1]).
fn env_names(vars: &[(String, String)]) -> Vec<&str> {
    vars.iter().map(|(name, _)| name.as_str()).collect()
}

/// The keys of the entries `due` picks.
fn due_keys<K: Copy, V>(map: &BTreeMap<K, V>, due: impl Fn(&V) -> bool) -> Vec<K> {
    map.iter()
        .filter(|(_, v)| due(v))
        .map(|(k, _)| *k)
        .collect()
}
