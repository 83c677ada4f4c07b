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

use mio::{Poll, Token};
use phux_core::server::{
    ConnId, JobId, LocalTerminal, ServerAction, ServerEngine, ServerEvent,
    SpawnSpec as EngineSpawn, WriteOutcome,
};
use phux_core::time::Instant;
use tracing::{debug, error, info, trace, warn};

use crate::clock::Clock;
use crate::conn::{Chunk, Conn};
use crate::flush::Output;
use crate::reader::Reader;
use crate::signals::Signals;
use crate::socket::ServerSocket;
use crate::terminal::{PtyTerminal, group_signal};
use crate::timer::{CLOSE_BOUND, KILL_GRACE, Nearest, REAP_BOUND, Timer, TimerTable};

mod conns;
mod image;
mod terminals;

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
    /// The WebSocket listener and its handshakes (`--listen-ws`).
    pub(crate) ws: Option<crate::ws::Door>,
    pub(crate) signals: Signals,
    pub(crate) sources: Sources,
    pub(crate) conns: BTreeMap<ConnId, Conn>,
    next_conn: u64,
    pub(crate) terminals: BTreeMap<LocalTerminal, PtyTerminal>,
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
    /// The PTY reader thread, for the masters in a burst of output ([OUTPUT.READER.1]).
    pub(crate) reader: Reader,
}

/// The terminals started per turn of the loop, whoever asked for them ([SERVER.FAIR.3]):
/// each start blocks the loop for the fork and the exec (about 2.5 ms), so spawns pipelined
/// by many connections at once delay everyone else by at most this many starts a turn.
pub(crate) const SPAWNS_PER_TURN: usize = 4;

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
            ws: None,
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
            reader: Reader::default(),
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
        if let Some(mut door) = self.ws.take() {
            door.close_all(self.poll.registry());
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
                    Ok(exit) => info!(%terminal, pid, %exit, "terminal killed at exit"),
                    Err(e) => error!(%terminal, pid, error = %e, "kill at exit failed"),
                }
            }
        }
        self.listener = None;
        self.ws = None;
        let _ = self.signals.deregister(self.poll.registry());
        info!("stopped");
    }
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
