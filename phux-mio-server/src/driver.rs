//! The event loop: one thread, one `mio::Poll`, driving a [`ServerEngine`].
//!
//! The driver performs the engine's actions and reports what the operating system did; it
//! never builds or parses a frame and never decides a protocol outcome. Readiness is
//! edge-triggered and drained until `WouldBlock` (with a per-wake cap so one busy source
//! cannot starve the rest; a capped source is revisited on the next turn without waiting).
//! `WRITABLE` interest is held only while a write queue is non-empty.
//!
//! Each turn: wait for readiness or the nearest deadline, report each event to the engine,
//! and after every report perform the actions it queued, in order.

use std::collections::{BTreeMap, HashMap};
use std::io;
use std::os::fd::{AsRawFd, RawFd};
use std::path::PathBuf;
use std::time::Duration;

use mio::unix::SourceFd;
use mio::{Events, Interest, Poll, Token};
use phux_core::server::{
    ConnId, JobId, LocalTerminal, PeerInfo, ServerAction, ServerEngine, ServerEvent,
    SpawnSpec as EngineSpawn, WriteOutcome,
};
use phux_core::time::Instant;
use phux_core::writer::{PtyWriter, Pump};
use phux_proto::command::Signal;
use tracing::{debug, error, info, trace, warn};

use crate::child::{ChildExit, GroupSignal, PtyChild, SpawnSpec};
use crate::clock::Clock;
use crate::conn::{Chunk, FlushState, READ_CHUNK, Transport, WriteQueue, set_nonblocking};
use crate::pty::PtyRead;
use crate::signals::Signals;
use crate::socket::{ServerSocket, check_peer};

/// How long a closing connection may take to drain its queue before it is dropped.
pub const CLOSE_BOUND: Duration = Duration::from_secs(5);
/// How long after a child's exit we wait for its terminal's output to end (a background job
/// may still hold the slave open) before reporting the exit anyway.
pub const EXIT_DRAIN_BOUND: Duration = Duration::from_secs(2);
/// Reads from one source per wake-up before others get a turn.
const READS_PER_WAKE: usize = 16;
/// A PTY read shorter than this is sent on at once (see `read_master`).
const INTERACTIVE_READ: usize = 512;
/// A PTY read at least this long is bulk output: more is on its way, so what it queues may
/// wait to leave with what follows (see [`Driver::drive`]). The master hands out at most
/// 4 KiB per read.
const BULK_READ: usize = 2048;
/// Bulk output waits at most this long for more to join it before it is written...
const HOLD_BULK: Duration = Duration::from_millis(1);
/// ...or until this much is queued for the connection: fewer, larger writes, so fewer syscalls
/// for the server and fewer wake-ups for each viewer of a streaming program.
const HOLD_BULK_BYTES: usize = 64 * 1024;
/// After each bulk read, the connection holding the most output is written once it holds this
/// much: one write between two reads. The PTY holds only a few KiB ahead of our reads, so
/// writing every viewer at the end of a wake-up stalled the program for all of those writes,
/// and the reads that then found the master empty waited idle inside the kernel for its refill;
/// a write between reads overlaps that refill. With N viewers each gets a write every N reads
/// (8 viewers of a stream: 32 KiB each, one write per 4 KiB read).
const RIPE_BULK_BYTES: usize = 32 * 1024;

const LISTENER: Token = Token(0);
const SIGNALS: Token = Token(1);
const FIRST_DYNAMIC: usize = 2;

/// Where clients come from.
#[derive(Debug)]
pub enum Listen {
    /// The Unix socket (peers are local; each must run as our uid).
    Socket(ServerSocket),
    /// Exactly one client on stdin/stdout; the server exits when it disconnects.
    Stdio,
}

/// The mio driver around one engine.
pub struct Driver {
    poll: Poll,
    clock: Clock,
    engine: ServerEngine,
    listener: Option<ServerSocket>,
    signals: Signals,
    sources: HashMap<Token, Source>,
    next_token: usize,
    conns: BTreeMap<ConnId, Conn>,
    next_conn: u64,
    terminals: BTreeMap<LocalTerminal, Term>,
    /// Sources whose draining stopped at the per-wake cap; revisited before waiting again.
    again: Vec<Token>,
    /// `--stdio`: stop once the one client is gone.
    stdio: bool,
    /// Set by the engine's `Shutdown` action: the deadline for flushing every connection.
    shutdown: Option<Instant>,
    /// The stdio client is gone: finish up.
    done: bool,
    /// Connections with queued bytes not yet offered to the kernel (see [`Self::drive`]).
    unflushed: Vec<ConnId>,
    /// The actions being performed came from a bulk PTY read.
    bulk: bool,
    /// This turn's ready sources, kept for the next turn's.
    ready: Vec<(Token, Wake)>,
    /// The completions of one pump of a terminal's writes, kept for the next pump's.
    finished_jobs: Vec<(JobId, WriteOutcome)>,
    /// No deadline of our own (a closing connection's, held output's, an exited child's
    /// drain) falls before this; `None` when none is set. Lowered as each is set and worked
    /// out afresh only once it comes due, so a turn scans every connection and terminal only
    /// when something is due, not on every wake-up.
    own_due: Option<Instant>,
    buf: Vec<u8>,
}

/// What one readiness event says about its source.
#[derive(Debug, Clone, Copy)]
struct Wake {
    readable: bool,
    writable: bool,
    /// The peer hung up or the source failed: no further event will come, so the source is
    /// read to its end. Until then a read shorter than the buffer took everything there was
    /// (see [`Transport::short_read_drains`]; a PTY master in raw mode hands out all its line
    /// discipline holds) and whatever arrives later raises a new edge-triggered event, so the
    /// read that would find the source empty is skipped: it cost a syscall between a reply
    /// or an echo and the next wait.
    ended: bool,
}

impl std::fmt::Debug for Driver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Driver")
            .field("conns", &self.conns.len())
            .field("terminals", &self.terminals.len())
            .finish_non_exhaustive()
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Source {
    ConnRead(ConnId),
    ConnWrite(ConnId),
    Master(LocalTerminal),
    Pidfd(LocalTerminal),
}

#[derive(Debug)]
struct Conn {
    transport: Transport,
    read_token: Token,
    /// Equal to `read_token` unless the transport is split (stdio).
    write_token: Token,
    queue: WriteQueue,
    /// Whether `WRITABLE` is part of the registration now.
    writable: bool,
    /// A `Close` action (or the peer's EOF) came: flush until this deadline, then close.
    closing: Option<Instant>,
    /// The engine has been told `Disconnected`.
    reported: bool,
    /// Something other than bulk output is queued: write it at the next flush.
    urgent: bool,
    /// Held-back bulk output must be written by then (the first of it plus [`HOLD_BULK`]).
    held_until: Option<Instant>,
    /// Reads ended (EOF or error): do not read again.
    read_done: bool,
}

#[derive(Debug)]
struct Term {
    child: PtyChild,
    master: Option<Token>,
    pidfd: Option<Token>,
    jobs: PtyWriter,
    writable: bool,
    /// Reaped; waiting for the master's EOF until the deadline.
    exited: Option<(ChildExit, Instant)>,
    eof: bool,
}

impl Driver {
    /// A driver for `engine` serving `listen`. Installs the SIGTERM/SIGINT handlers; for
    /// stdio, sets stdin and stdout non-blocking and connects the one client at once.
    pub fn new(engine: ServerEngine, listen: Listen) -> io::Result<Self> {
        let poll = Poll::new()?;
        let mut signals = Signals::new()?;
        signals.register(poll.registry(), SIGNALS)?;
        let (mut listener, stdio) = match listen {
            Listen::Socket(s) => (Some(s), false),
            Listen::Stdio => (None, true),
        };
        if let Some(l) = listener.as_mut() {
            poll.registry()
                .register(l.listener_mut(), LISTENER, Interest::READABLE)?;
        }
        let mut driver = Self {
            poll,
            clock: Clock::new(),
            engine,
            listener,
            signals,
            sources: HashMap::new(),
            next_token: FIRST_DYNAMIC,
            conns: BTreeMap::new(),
            next_conn: 1,
            terminals: BTreeMap::new(),
            again: Vec::new(),
            stdio,
            shutdown: None,
            done: false,
            unflushed: Vec::new(),
            bulk: false,
            ready: Vec::new(),
            finished_jobs: Vec::new(),
            own_due: None,
            buf: vec![0; READ_CHUNK],
        };
        if stdio {
            set_nonblocking(rustix::stdio::stdin())?;
            set_nonblocking(rustix::stdio::stdout())?;
            driver.add_conn(Transport::Stdio, PeerInfo::remote())?;
            driver.drive();
        }
        Ok(driver)
    }

    /// The socket's path, when listening on one.
    pub fn socket_path(&self) -> Option<PathBuf> {
        self.listener.as_ref().map(|l| l.path().to_owned())
    }

    /// Runs until shutdown (SIGTERM, SIGINT, the SHUTDOWN command) or, with stdio, until the
    /// client disconnects. On return every child has been killed and reaped and the socket
    /// file removed.
    pub fn run(mut self) -> io::Result<()> {
        let mut events = Events::with_capacity(256);
        loop {
            if self.finished() {
                break;
            }
            let timeout = self.next_wait();
            match self.poll.poll(&mut events, timeout) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
            // Reused from turn to turn: no allocation between an event and its handling.
            let mut ready = std::mem::take(&mut self.ready);
            ready.extend(events.iter().map(|e| {
                let readable = e.is_readable() || e.is_read_closed() || e.is_error();
                let writable = e.is_writable() || e.is_write_closed() || e.is_error();
                let ended = e.is_read_closed() || e.is_error();
                (
                    e.token(),
                    Wake {
                        readable,
                        writable,
                        ended,
                    },
                )
            }));
            // Stopped at the cap, not at a short read: read on, to the end this time.
            ready.extend(self.again.drain(..).map(|t| {
                let wake = Wake {
                    readable: true,
                    writable: false,
                    ended: true,
                };
                (t, wake)
            }));
            for (token, wake) in ready.drain(..) {
                self.dispatch(token, wake);
                self.drive();
            }
            self.ready = ready;
            self.on_deadlines();
            self.drive();
        }
        self.finish();
        Ok(())
    }

    fn finished(&self) -> bool {
        if self.done {
            return true;
        }
        // After `Shutdown`: done once every connection is flushed and closed.
        self.shutdown.is_some() && self.conns.is_empty()
    }

    /// The poll timeout: the nearest of the engine's timer and our own deadlines.
    fn next_wait(&self) -> Option<Duration> {
        if !self.again.is_empty() {
            return Some(Duration::ZERO);
        }
        let next = [self.own_due, self.shutdown, self.engine.poll_timeout()]
            .into_iter()
            .flatten()
            .min()?;
        Some(self.clock.until(next))
    }

    /// A deadline of our own was set for `at` (see [`Self::own_due`]).
    fn note_deadline(&mut self, at: Instant) {
        self.own_due = Some(self.own_due.map_or(at, |due| due.min(at)));
    }

    /// The nearest of our own deadlines, worked out from every connection and terminal.
    fn nearest_own_deadline(&self) -> Option<Instant> {
        let conns = self
            .conns
            .values()
            .flat_map(|c| [c.closing, c.held_until])
            .flatten();
        let terminals = self
            .terminals
            .values()
            .filter_map(|t| t.exited.map(|e| e.1));
        conns.chain(terminals).min()
    }

    fn dispatch(&mut self, token: Token, wake: Wake) {
        let Wake {
            readable,
            writable,
            ended,
        } = wake;
        match token {
            LISTENER => self.accept_all(),
            SIGNALS => {
                for sig in self.signals.pending() {
                    info!(signal = ?sig, "shutdown requested");
                    self.report(ServerEvent::ShutdownRequested);
                }
            }
            _ => match self.sources.get(&token).copied() {
                Some(Source::ConnRead(id)) => {
                    if readable {
                        self.read_conn(id, token, ended);
                    }
                    // A socket shares one token for both directions.
                    if writable && self.conns.get(&id).is_some_and(|c| c.write_token == token) {
                        self.flush_conn(id);
                    }
                }
                Some(Source::ConnWrite(id)) => {
                    if writable {
                        self.flush_conn(id);
                    }
                }
                Some(Source::Master(t)) => {
                    if readable {
                        self.read_master(t, token, ended);
                    }
                    if writable {
                        self.pump(t);
                    }
                }
                Some(Source::Pidfd(t)) => self.on_pidfd(t),
                None => trace!(?token, "event for a source already gone"),
            },
        }
    }

    /// Performs every action the engine has queued (and those they lead to), in order, then
    /// writes what they queued.
    ///
    /// A connection whose queue holds nothing but bulk output (see [`BULK_READ`]) is written
    /// once [`HOLD_BULK_BYTES`] are queued or [`HOLD_BULK`] after the first of them, whichever
    /// comes first: a program streaming output keeps its viewers busy with a few large writes
    /// instead of many small ones. Anything else (a reply, an event, an echo, the short read
    /// that ends a burst) is written at once, with whatever bulk output is ahead of it.
    fn drive(&mut self) {
        loop {
            self.perform_queued();
            if self.unflushed.is_empty() {
                return;
            }
            // Flushing reports `Sent`, which may queue more actions: go round again.
            let now = self.clock.now();
            for id in std::mem::take(&mut self.unflushed) {
                if !self.hold(id, now) {
                    self.flush_conn(id);
                }
            }
        }
    }

    /// Writes the one connection holding the most output, once it holds [`RIPE_BULK_BYTES`].
    fn flush_ripest(&mut self) {
        let ripest = self
            .unflushed
            .iter()
            .enumerate()
            .filter_map(|(i, id)| {
                let conn = self.conns.get(id)?;
                (!conn.writable).then_some((i, conn.queue.len()))
            })
            .max_by_key(|&(_, len)| len);
        if let Some((i, len)) = ripest
            && len >= RIPE_BULK_BYTES
        {
            let id = self.unflushed.swap_remove(i);
            self.flush_conn(id);
            self.perform_queued();
        }
    }

    /// Performs every action the engine has queued, queueing their bytes without writing.
    fn perform_queued(&mut self) {
        while let Some(action) = self.engine.poll_action() {
            self.perform(action);
        }
    }

    /// Whether the connection's queued bytes may wait for more bulk output to join them.
    fn hold(&mut self, id: ConnId, now: Instant) -> bool {
        let Some(conn) = self.conns.get_mut(&id) else {
            return false;
        };
        // A connection waiting for writability is written when the kernel has room anyway.
        if conn.urgent || conn.writable || conn.queue.len() >= HOLD_BULK_BYTES {
            return false;
        }
        let until = *conn.held_until.get_or_insert(now + HOLD_BULK);
        self.note_deadline(until);
        now < until
    }

    /// Reports one event. The actions it queues are performed by the next [`Self::drive`].
    fn report(&mut self, event: ServerEvent<'_>) {
        let now = self.clock.now();
        self.engine.handle(now, event);
    }

    fn perform(&mut self, action: ServerAction) {
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
            other => debug!(action = ?other, "perform"),
        }
        match action {
            ServerAction::Send { conn, bytes } => self.send(conn, |queue| queue.push(bytes)),
            ServerAction::SendShared { conn, frame } => {
                self.send(conn, |queue| queue.push_shared(frame));
            }
            ServerAction::Close { conn } => self.close(conn),
            ServerAction::Spawn { terminal, spec } => self.spawn(terminal, &spec),
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
        }
    }

    // ---- connections ----

    fn accept_all(&mut self) {
        loop {
            let Some(listener) = self.listener.as_ref() else {
                return;
            };
            match listener.listener().accept() {
                Ok((stream, _)) => {
                    // [SERVER.PEER.1] A peer running as another user is refused by the engine
                    // (ERROR, DETACHED, close) before any of its frames is acted on.
                    let peer = match check_peer(&stream) {
                        Ok(()) => PeerInfo::local(),
                        Err(e) => {
                            warn!(error = %e, "refusing a connection");
                            PeerInfo::foreign()
                        }
                    };
                    if let Err(e) = self.add_conn(Transport::Unix(stream), peer) {
                        error!(error = %e, "cannot register a connection");
                    }
                    self.drive();
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    // EMFILE and friends: the pending peer stays queued; try again next wake.
                    error!(error = %e, "accept failed");
                    return;
                }
            }
        }
    }

    fn add_conn(&mut self, transport: Transport, peer: PeerInfo) -> io::Result<()> {
        let id = ConnId(self.next_conn);
        self.next_conn += 1;
        let read_token = self.token(Source::ConnRead(id));
        let write_token = if transport.split() {
            self.token(Source::ConnWrite(id))
        } else {
            read_token
        };
        let fd = transport.read_fd().as_raw_fd();
        if let Err(e) =
            self.poll
                .registry()
                .register(&mut SourceFd(&fd), read_token, Interest::READABLE)
        {
            self.sources.remove(&read_token);
            self.sources.remove(&write_token);
            return Err(e);
        }
        self.conns.insert(
            id,
            Conn {
                transport,
                read_token,
                write_token,
                queue: WriteQueue::new(),
                writable: false,
                closing: None,
                reported: false,
                urgent: false,
                held_until: None,
                read_done: false,
            },
        );
        info!(conn = id.0, local = peer.local_socket, "connection opened");
        self.report(ServerEvent::Connected { conn: id, peer });
        Ok(())
    }

    /// Reads what the connection has; to its end when the peer is known to have hung up
    /// (see [`Wake::ended`]).
    fn read_conn(&mut self, id: ConnId, token: Token, ended: bool) {
        for _ in 0..READS_PER_WAKE {
            let Some(conn) = self.conns.get_mut(&id) else {
                return;
            };
            if conn.read_done {
                return;
            }
            let drains = conn.transport.short_read_drains();
            match conn.transport.read(&mut self.buf) {
                Ok(0) => return self.peer_gone(id, None),
                Ok(n) => {
                    trace!(conn = id.0, bytes = n, "received");
                    // After Close the engine is done with the connection; drop what arrives.
                    if conn.closing.is_none() {
                        let now = self.clock.now();
                        let bytes = self.buf.get(..n).unwrap_or_default();
                        self.engine
                            .handle(now, ServerEvent::Received { conn: id, bytes });
                        // What these bytes asked for (a keystroke's PTY write, a reply) goes
                        // out before any further read of the socket.
                        self.drive();
                    }
                    if drains && n < self.buf.len() && !ended {
                        return;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return self.peer_gone(id, Some(&e)),
            }
        }
        self.again.push(token);
    }

    /// The peer ended its stream or the transport failed.
    fn peer_gone(&mut self, id: ConnId, err: Option<&io::Error>) {
        // The engine's answers to bytes read in this same wake-up (an ERROR for a bad frame,
        // say) are queued but not yet performed; once the connection is reported gone they
        // would be dropped, and a peer that half-closes after writing would never see them.
        self.drive();
        let Some(conn) = self.conns.get_mut(&id) else {
            return;
        };
        conn.read_done = true;
        let fd = conn.transport.read_fd().as_raw_fd();
        let _ = self.poll.registry().deregister(&mut SourceFd(&fd));
        if !conn.transport.split() {
            // That was the socket's only registration, write interest included.
            conn.writable = false;
        }
        match err {
            None => debug!(conn = id.0, "peer closed its stream"),
            Some(e) => debug!(conn = id.0, error = %e, "read failed"),
        }
        // Whatever is already queued still goes out (a half-closed peer may be reading), but
        // the engine forgets the connection now.
        let closing = *conn
            .closing
            .get_or_insert_with(|| self.clock.now() + CLOSE_BOUND);
        if err.is_some() {
            conn.queue.clear();
        }
        self.note_deadline(closing);
        self.report_disconnected(id);
        self.flush_conn(id);
    }

    /// Queues what `push` adds on the connection's write queue.
    fn send(&mut self, id: ConnId, push: impl FnOnce(&mut WriteQueue)) {
        let Some(conn) = self.conns.get_mut(&id) else {
            return;
        };
        if conn.reported {
            return;
        }
        push(&mut conn.queue);
        conn.urgent |= !self.bulk;
        // Written once the engine has nothing more to say, so that the frames of one
        // wake-up leave in one vectored write per connection rather than one each.
        if !self.unflushed.contains(&id) {
            self.unflushed.push(id);
        }
    }

    /// Writes what the connection's queue holds; keeps `WRITABLE` interest while anything is
    /// left; closes the connection when it was closing and is now empty (or failed).
    fn flush_conn(&mut self, id: ConnId) {
        let Some(conn) = self.conns.get_mut(&id) else {
            return;
        };
        conn.urgent = false;
        conn.held_until = None;
        let (sent, state) = conn.queue.flush_to(&mut conn.transport);
        for chunk in conn.queue.drain_spent() {
            match chunk {
                Chunk::Owned(buffer) => self.engine.reclaim(buffer),
                Chunk::Shared(head) => self.engine.reclaim_shared(head),
                Chunk::Tail(_) => {}
            }
        }
        let reported = conn.reported;
        if sent > 0 {
            trace!(conn = id.0, bytes = sent, "sent");
            if !reported {
                self.report(ServerEvent::Sent {
                    conn: id,
                    bytes: sent,
                });
            }
        }
        match state {
            FlushState::Drained => {
                self.set_conn_writable(id, false);
                if self.conns.get(&id).is_some_and(|c| c.closing.is_some()) {
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
        let Some(conn) = self.conns.get_mut(&id) else {
            return;
        };
        if conn.writable == on {
            return;
        }
        let registry = self.poll.registry();
        let result = if conn.transport.split() {
            let fd = conn.transport.write_fd().as_raw_fd();
            if on {
                registry.register(&mut SourceFd(&fd), conn.write_token, Interest::WRITABLE)
            } else {
                registry.deregister(&mut SourceFd(&fd))
            }
        } else if conn.read_done {
            // The fd was deregistered for reading; writing is its only interest now.
            let fd = conn.transport.write_fd().as_raw_fd();
            if on {
                registry.register(&mut SourceFd(&fd), conn.write_token, Interest::WRITABLE)
            } else {
                registry.deregister(&mut SourceFd(&fd))
            }
        } else {
            let fd = conn.transport.read_fd().as_raw_fd();
            let interest = if on {
                Interest::READABLE | Interest::WRITABLE
            } else {
                Interest::READABLE
            };
            registry.reregister(&mut SourceFd(&fd), conn.read_token, interest)
        };
        match result {
            Ok(()) => conn.writable = on,
            Err(e) => warn!(conn = id.0, error = %e, "cannot change write interest"),
        }
    }

    /// The engine's `Close`: flush what is queued (bounded by [`CLOSE_BOUND`]), then close.
    fn close(&mut self, id: ConnId) {
        let Some(conn) = self.conns.get_mut(&id) else {
            return;
        };
        let closing = *conn
            .closing
            .get_or_insert_with(|| self.clock.now() + CLOSE_BOUND);
        self.note_deadline(closing);
        self.flush_conn(id);
    }

    fn close_now(&mut self, id: ConnId) {
        let Some(conn) = self.conns.remove(&id) else {
            return;
        };
        let registry = self.poll.registry();
        if !conn.read_done {
            let fd = conn.transport.read_fd().as_raw_fd();
            let _ = registry.deregister(&mut SourceFd(&fd));
        }
        if conn.writable && (conn.transport.split() || conn.read_done) {
            let fd = conn.transport.write_fd().as_raw_fd();
            let _ = registry.deregister(&mut SourceFd(&fd));
        }
        self.sources.remove(&conn.read_token);
        self.sources.remove(&conn.write_token);
        conn.transport.shutdown();
        let was_reported = conn.reported;
        let stdio = conn.transport.split();
        drop(conn);
        info!(conn = id.0, "connection closed");
        if !was_reported {
            self.engine
                .handle(self.clock.now(), ServerEvent::Disconnected { conn: id });
        }
        if stdio && self.stdio {
            self.done = true;
        }
    }

    fn report_disconnected(&mut self, id: ConnId) {
        let Some(conn) = self.conns.get_mut(&id) else {
            return;
        };
        if !conn.reported {
            conn.reported = true;
            self.report(ServerEvent::Disconnected { conn: id });
        }
    }

    // ---- terminals ----

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
        let master_token = self.token(Source::Master(terminal));
        let pidfd_token = self.token(Source::Pidfd(terminal));
        let registry = self.poll.registry();
        let master_fd: Option<RawFd> = child.master_fd().map(|fd| fd.as_raw_fd());
        let pidfd = child.pidfd().as_raw_fd();
        let registered = master_fd
            .ok_or_else(|| io::Error::other("no master"))
            .and_then(|fd| registry.register(&mut SourceFd(&fd), master_token, Interest::READABLE))
            .and_then(|()| {
                registry.register(&mut SourceFd(&pidfd), pidfd_token, Interest::READABLE)
            });
        if let Err(e) = registered {
            error!(%terminal, error = %e, "cannot register a terminal");
            if let Some(fd) = master_fd {
                let _ = registry.deregister(&mut SourceFd(&fd));
            }
            self.sources.remove(&master_token);
            self.sources.remove(&pidfd_token);
            // Dropping the child kills and reaps it.
            drop(child);
            return self.report(ServerEvent::SpawnFailed {
                terminal,
                message: format!("cannot watch the terminal: {e}"),
            });
        }
        info!(%terminal, pid, program = ?spec.program, cols = spec.cols, rows = spec.rows, "spawned");
        self.terminals.insert(
            terminal,
            Term {
                child,
                master: Some(master_token),
                pidfd: Some(pidfd_token),
                jobs: PtyWriter::new(),
                writable: false,
                exited: None,
                eof: false,
            },
        );
        self.report(ServerEvent::Spawned { terminal, pid });
    }

    fn write(&mut self, terminal: LocalTerminal, job: JobId, bytes: Vec<u8>) {
        match self.terminals.get_mut(&terminal) {
            // Exited (or never started): nothing can be written.
            Some(t) if t.exited.is_none() => t.jobs.push(job, bytes),
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
    fn pump(&mut self, terminal: LocalTerminal) {
        let Some(t) = self.terminals.get_mut(&terminal) else {
            return;
        };
        let mut done = std::mem::take(&mut self.finished_jobs);
        let state = t.jobs.pump(&mut t.child, &mut done);
        let want_writable = state == Pump::Blocked;
        if want_writable != t.writable
            && let (Some(token), Some(fd)) = (t.master, t.child.master_fd())
        {
            let interest = if want_writable {
                Interest::READABLE | Interest::WRITABLE
            } else {
                Interest::READABLE
            };
            let fd = fd.as_raw_fd();
            match self
                .poll
                .registry()
                .reregister(&mut SourceFd(&fd), token, interest)
            {
                Ok(()) => t.writable = want_writable,
                Err(e) => warn!(%terminal, error = %e, "cannot change write interest"),
            }
        }
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

    /// Reads the terminal's output; to its end when the slave is known to have hung up (see
    /// [`Wake::ended`]).
    fn read_master(&mut self, terminal: LocalTerminal, token: Token, ended: bool) {
        // Each read goes to the engine at once: a PTY master hands out at most its line
        // discipline's few KiB per read, and the time spent on one chunk is what lets the
        // kernel refill it for the next read. The frames of bulk reads still leave in large
        // writes: one between two reads (see `flush_ripest`), the rest when the wake-up's
        // reads are done (see `drive`).
        for _ in 0..READS_PER_WAKE {
            let Some(t) = self.terminals.get_mut(&terminal) else {
                return;
            };
            if t.eof {
                return;
            }
            match t.child.read(&mut self.buf) {
                Ok(PtyRead::Data(n)) => {
                    let now = self.clock.now();
                    let bytes = self.buf.get(..n).unwrap_or_default();
                    self.engine
                        .handle(now, ServerEvent::PtyOutput { terminal, bytes });
                    // This read's frames are queued now, marked as bulk output or not by the
                    // read's size (see `drive`).
                    let bulk = n >= BULK_READ;
                    self.bulk = bulk;
                    self.perform_queued();
                    self.bulk = false;
                    if bulk {
                        self.flush_ripest();
                    }
                    // A few bytes are an echo or a prompt someone is waiting for: send them
                    // at once. Bulk output, read in KiB chunks, leaves in large writes.
                    if n < INTERACTIVE_READ {
                        self.drive();
                        // A short read took all the line discipline held, and more output
                        // raises a new event: the read that would find the master empty is
                        // skipped, as for a socket. Not after a bulk read: there the master
                        // is refilled as we go, and the next read waits for the refill
                        // inside the kernel more cheaply than a trip through the poll.
                        if !ended {
                            return;
                        }
                    }
                }
                Ok(PtyRead::WouldBlock) => return,
                Ok(PtyRead::Eof) => return self.master_eof(terminal),
                Err(e) => {
                    warn!(%terminal, error = %e, "reading the terminal failed");
                    return self.master_eof(terminal);
                }
            }
        }
        // The cap stopped us with more to read: come back before waiting.
        self.again.push(token);
    }

    /// No more output will come: every holder of the slave closed it.
    fn master_eof(&mut self, terminal: LocalTerminal) {
        let Some(t) = self.terminals.get_mut(&terminal) else {
            return;
        };
        t.eof = true;
        debug!(%terminal, "terminal output ended");
        if t.exited.is_some() {
            self.finish_exit(terminal);
        }
        // Otherwise the child closed its terminal but runs on: its pidfd tells us of its exit.
    }

    fn on_pidfd(&mut self, terminal: LocalTerminal) {
        let Some(t) = self.terminals.get_mut(&terminal) else {
            return;
        };
        if t.exited.is_some() {
            return;
        }
        let exit = match t.child.try_wait() {
            Ok(Some(exit)) => exit,
            Ok(None) => return,
            Err(e) => {
                error!(%terminal, error = %e, "waiting for the child failed");
                return;
            }
        };
        debug!(%terminal, pid = t.child.pid(), ?exit, "child exited");
        let drain = self.clock.now() + EXIT_DRAIN_BOUND;
        t.exited = Some((exit, drain));
        let (eof, master) = (t.eof, t.master);
        self.note_deadline(drain);
        if eof {
            return self.finish_exit(terminal);
        }
        // [SERVER.PTY.3] Output written before the exit is reported before the exit.
        if let Some(token) = master {
            self.read_master(terminal, token, true);
        }
    }

    /// The child is reaped and its output drained (or the drain bound passed): resolve its
    /// jobs, drop its OS state and tell the engine.
    fn finish_exit(&mut self, terminal: LocalTerminal) {
        let Some(t) = self.terminals.remove(&terminal) else {
            return;
        };
        let exit = t.exited.map(|e| e.0);
        self.drop_terminal(terminal, t);
        info!(%terminal, ?exit, "terminal closed");
        self.report(ServerEvent::ChildExited {
            terminal,
            exit_status: exit.and_then(ChildExit::code),
        });
    }

    /// KILL_TERMINAL (or shutdown): SIGKILL the group, close the master, reap, report.
    fn kill(&mut self, terminal: LocalTerminal) {
        let Some(mut t) = self.terminals.remove(&terminal) else {
            return;
        };
        self.deregister_terminal(&mut t);
        let mut done = Vec::new();
        t.jobs.abandon(&mut done);
        self.report_jobs(terminal, done);
        let pid = t.child.pid();
        let exit = match t.child.kill_and_reap() {
            Ok(exit) => Some(exit),
            Err(e) => {
                error!(%terminal, pid, error = %e, "kill failed");
                None
            }
        };
        info!(%terminal, pid, ?exit, "terminal killed");
        self.report(ServerEvent::ChildExited {
            terminal,
            exit_status: exit.and_then(ChildExit::code),
        });
    }

    fn drop_terminal(&mut self, terminal: LocalTerminal, mut t: Term) {
        self.deregister_terminal(&mut t);
        let mut done = Vec::new();
        t.jobs.abandon(&mut done);
        // Drop closes the master and reaps the child if that has not happened.
        drop(t);
        self.report_jobs(terminal, done);
    }

    fn deregister_terminal(&mut self, t: &mut Term) {
        let registry = self.poll.registry();
        if let Some(token) = t.master.take() {
            if let Some(fd) = t.child.master_fd() {
                let _ = registry.deregister(&mut SourceFd(&fd.as_raw_fd()));
            }
            self.sources.remove(&token);
        }
        if let Some(token) = t.pidfd.take() {
            let _ = registry.deregister(&mut SourceFd(&t.child.pidfd().as_raw_fd()));
            self.sources.remove(&token);
        }
        self.again.retain(|tok| self.sources.contains_key(tok));
    }

    // ---- time and shutdown ----

    fn on_deadlines(&mut self) {
        let now = self.clock.now();
        if self.own_due.is_some_and(|due| due <= now) {
            self.on_own_deadlines(now);
        }
        if self.engine.poll_timeout().is_some_and(|t| t <= now) {
            self.engine.handle(now, ServerEvent::Timeout);
        }
        if self.shutdown.is_some_and(|d| d <= now) {
            let ids: Vec<ConnId> = self.conns.keys().copied().collect();
            for id in ids {
                self.close_now(id);
            }
        }
    }

    /// Flushes held output, drops connections that did not drain in time and finishes exits
    /// whose output never ended, as each comes due; then works out the next such deadline.
    fn on_own_deadlines(&mut self, now: Instant) {
        let held = due_keys(&self.conns, |c| c.held_until.is_some_and(|u| u <= now));
        for id in held {
            self.flush_conn(id);
        }
        let overdue = due_keys(&self.conns, |c| c.closing.is_some_and(|d| d <= now));
        for id in overdue {
            warn!(
                conn = id.0,
                "peer did not read its last bytes in time; closing"
            );
            self.close_now(id);
        }
        let drained = due_keys(&self.terminals, |t| t.exited.is_some_and(|(_, d)| d <= now));
        for terminal in drained {
            debug!(
                %terminal,
                "terminal output still open after the child's exit"
            );
            self.finish_exit(terminal);
        }
        self.own_due = self.nearest_own_deadline();
    }

    /// The engine's `Shutdown`: stop accepting, remove the socket, and stop once every
    /// connection has been flushed (bounded by [`CLOSE_BOUND`]).
    fn begin_shutdown(&mut self) {
        if self.shutdown.is_some() {
            return;
        }
        info!("shutting down");
        self.shutdown = Some(self.clock.now() + CLOSE_BOUND);
        if let Some(mut l) = self.listener.take() {
            let _ = self.poll.registry().deregister(l.listener_mut());
            // Dropping the socket removes its file, so no new client finds a dead server.
            drop(l);
        }
    }

    /// Kills and reaps whatever still runs, and removes the socket.
    fn finish(&mut self) {
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

    fn token(&mut self, source: Source) -> Token {
        let token = Token(self.next_token);
        self.next_token += 1;
        self.sources.insert(token, source);
        token
    }
}

/// The keys of the entries `due` picks.
fn due_keys<K: Copy, V>(map: &BTreeMap<K, V>, due: impl Fn(&V) -> bool) -> Vec<K> {
    map.iter()
        .filter(|(_, v)| due(v))
        .map(|(k, _)| *k)
        .collect()
}

/// The engine's spawn request as the OS layer takes it.
fn os_spawn_spec(spec: &EngineSpawn) -> Result<SpawnSpec, String> {
    let (program, args) = spec
        .command
        .split_first()
        .ok_or_else(|| "empty command".to_owned())?;
    Ok(SpawnSpec {
        program: program.into(),
        args: args.iter().map(Into::into).collect(),
        env: spec.env.clone(),
        cwd: spec.cwd.as_ref().map(PathBuf::from),
        term: spec.term.clone(),
        // The engine has already replaced a 0 with its default size.
        cols: spec.cols,
        rows: spec.rows,
    })
}

fn group_signal(signal: Signal) -> GroupSignal {
    match signal {
        Signal::Interrupt => GroupSignal::Interrupt,
        Signal::Freeze => GroupSignal::Freeze,
        Signal::Resume => GroupSignal::Resume,
        Signal::Terminate => GroupSignal::Terminate,
        Signal::Kill => GroupSignal::Kill,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spawn_spec_maps_program_args_and_size() {
        let spec = EngineSpawn {
            command: vec!["sh".into(), "-c".into(), "true".into()],
            cwd: Some("/tmp".into()),
            env: Some(vec![("A".into(), "1".into())]),
            term: "xterm".into(),
            cols: 100,
            rows: 30,
        };
        let os = os_spawn_spec(&spec).expect("spec");
        assert_eq!(os.program, "sh");
        assert_eq!(os.args, ["-c", "true"]);
        assert_eq!(os.cwd.as_deref(), Some(std::path::Path::new("/tmp")));
        assert_eq!(os.env, spec.env);
        assert_eq!((os.term.as_str(), os.cols, os.rows), ("xterm", 100, 30));
        let empty = EngineSpawn {
            command: Vec::new(),
            ..spec
        };
        assert!(os_spawn_spec(&empty).is_err());
    }

    #[test]
    fn signals_map_to_their_group_signals() {
        assert_eq!(group_signal(Signal::Interrupt).number(), 2);
        assert_eq!(group_signal(Signal::Freeze).number(), 19);
        assert_eq!(group_signal(Signal::Resume).number(), 18);
        assert_eq!(group_signal(Signal::Terminate).number(), 15);
        assert_eq!(group_signal(Signal::Kill).number(), 9);
    }
}
