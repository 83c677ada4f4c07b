//! The event loop: one thread, one `mio::Poll`, driving a [`ServerEngine`].
//!
//! The driver performs the engine's actions and reports what the operating system did; it
//! never builds or parses a frame and never decides a protocol outcome. Readiness is
//! edge-triggered and drained until `WouldBlock` (with a per-wake cap so one busy source
//! cannot starve the rest; a capped source is revisited on the next turn without waiting).
//! `WRITABLE` interest is held only while a write queue is non-empty.
//!
//! # The loop
//!
//! Each turn:
//!
//! 1. **poll**: wait for readiness or the nearest deadline (the engine's `poll_timeout`, or
//!    one of the driver's own timers, `timer.rs`).
//! 2. **route readiness**: each ready token goes to what it names (the listener, the signal
//!    pipe, a connection, a terminal's master or pidfd), which is read until it would block.
//! 3. **feed events**: every event goes to the engine through one method, `Driver::feed`...
//! 4. **drain actions**: ...which drains `poll_action()` to completion, performing each action
//!    on the host (`host.rs`: the connections of `conn.rs`, the terminals of `terminal.rs`),
//!    then feeds what performing them observed (see "Re-entrancy").
//! 5. **flush**: write the connections the actions queued bytes for, as the flush policy
//!    (`flush.rs`) allows; the `Sent` events that come of it are fed in turn. A route flushes
//!    sooner where the policy says so: after each read from a socket and each short PTY read
//!    (a keystroke's echo leaves before the next read), and the ripest connection between two
//!    bulk reads.
//! 6. after the ready tokens, the **deadlines** that came (held output, closing connections,
//!    exit drains, kill graces, the engine's `Timeout`, shutdown), fed and flushed the same
//!    way; then **compute the next timeout** and poll again.
//!
//! Once no client is left to serve (shutdown, or the `--stdio` client gone), every terminal
//! still there is killed as KILL_TERMINAL kills one (SIGHUP, then SIGKILL after
//! [`KILL_GRACE`]), and the loop runs on until their exits are reported, bounded by
//! [`KILL_GRACE`] + [`REAP_BOUND`].
//!
//! # Re-entrancy
//!
//! `ServerEngine::handle` is called in one place, the loop behind `Driver::feed` (an event in
//! hand) and `Driver::feed_observed` (only what the host queued), and never while an action
//! is being performed. Performing an action may observe new events at once (a PTY write that
//! completes, a spawn that fails, a connection that closes, bytes written): the host queues
//! them, in the order they happened, and `feed` hands them to the engine only once the
//! actions the engine has queued have all been performed, each event then followed by a drain
//! of its own actions. The host cannot call the engine at all (performing gets only a
//! `Recycle`, which gives written buffers back), so the rule is kept by the types, not by
//! care. As the engine's action queue is first in, first out, actions are performed and
//! events handed over in the same order as if each event were handled the moment it was
//! observed.

use std::collections::HashMap;
use std::io;
use std::path::PathBuf;
use std::time::Duration;

use mio::{Events, Interest, Poll, Token};
use phux_core::server::{ConnId, LocalTerminal, PeerInfo, ServerEngine, ServerEvent};
use tracing::{error, info, trace, warn};

use crate::conn::{Got, READ_CHUNK, StdioFlags, Transport, stdin_unwatchable};
use crate::flush::{FlushPolicy, Output};
use crate::host::{Host, Recycle, SPAWNS_PER_TURN, Source};
use crate::pty::PtyRead;
use crate::signals::{ServerSignal, Signals};
use crate::socket::{ServerSocket, check_peer};
use crate::timer::Timer;

pub use crate::timer::{ACCEPT_RETRY, CLOSE_BOUND, EXIT_DRAIN_BOUND, KILL_GRACE, REAP_BOUND};
pub use upgrade::{AdoptArgs, AdoptError, UpgradeContext, adopt, validate};

mod upgrade;
mod ws;

/// Reads from one source per wake-up before others get a turn.
const READS_PER_WAKE: usize = 16;

/// The most time one source's reads take per turn ([SERVER.FAIR.2]) before the others get
/// theirs: ordinary output takes far less (a 4 KiB chunk is tens of microseconds), output
/// whose bytes cost many cells each is cut into slices of this.
pub const SOURCE_SLICE: Duration = Duration::from_millis(4);

/// The most time one turn of the loop spends on sources cut short at their own bound in an
/// earlier turn ([SERVER.FAIR.4]); those it does not reach are served first among them in the
/// next. Each source's share is bounded (the engine's
/// [`FRAMES_PER_RECEIVE`](phux_core::server::FRAMES_PER_RECEIVE), [`SOURCE_SLICE`]), but with
/// many busy sources a turn would grow with their number.
pub const TURN_SLICE: Duration = Duration::from_millis(10);

const LISTENER: Token = Token(0);
const SIGNALS: Token = Token(1);
/// The pidfd of a running `--check-upgrade`.
const UPGRADE_CHECK: Token = Token(2);
const FIRST_DYNAMIC: usize = 3;

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
    engine: ServerEngine,
    host: Host,
    /// The read buffer of every source, lent to the engine with each `Received` and
    /// `PtyOutput`.
    buf: Vec<u8>,
    /// This turn's ready sources, kept for the next turn's.
    ready: Vec<(Token, Wake)>,
    /// The busy sources, in the order they are served ([SERVER.FAIR.4]): those a turn did not
    /// reach, then those cut short at their own bound.
    busy: Vec<(Token, Wake)>,
    /// Where each busy source is in `busy`, while a turn is planned.
    busy_at: HashMap<Token, usize>,
    /// An in-place upgrade: whether this server may, and the one under way.
    upgrade: upgrade::Upgrade,
    /// `--stdio`: stdin's and stdout's flags as we found them, restored when the driver is
    /// dropped. Last, so it is dropped after everything that uses the two fds.
    stdio_flags: Option<StdioFlags>,
}

/// What one readiness event says about its source.
#[derive(Debug, Clone, Copy)]
struct Wake {
    readable: bool,
    writable: bool,
    /// The peer hung up or the source failed (no further event will come), or a socket holds an
    /// out-of-band byte (a read ends before it): the source is read to its end. Until then a read shorter than the buffer took everything there was
    /// (see [`Got::drained`]; a PTY master in raw mode hands out all its line
    /// discipline holds) and whatever arrives later raises a new edge-triggered event, so the
    /// read that would find the source empty is skipped: it cost a syscall between a reply
    /// or an echo and the next wait.
    ended: bool,
}

/// Plans a turn ([SERVER.FAIR.4]): `busy` holds the busy sources a turn did not reach, in
/// order; the sources `again` names (cut short at their own bound) join it at the end, and a
/// ready source that is busy leaves `ready` for its place there, its wakes merged. So each
/// source has one turn a loop at most: listed once more for each turn it was cut short, a
/// REP flood took that many slices in a row and held the loop 160 ms where its slice is 4.
fn plan_turn(
    ready: &mut Vec<(Token, Wake)>,
    busy: &mut Vec<(Token, Wake)>,
    again: impl Iterator<Item = Token>,
    busy_at: &mut HashMap<Token, usize>,
) {
    busy_at.clear();
    // Listed once each, as every plan leaves them.
    for (at, &(token, _)) in busy.iter().enumerate() {
        busy_at.insert(token, at);
    }
    for token in again {
        // Stopped at the cap, not at a short read: read on, to the end this time.
        let wake = Wake {
            readable: true,
            writable: false,
            ended: true,
        };
        if let Some(&at) = busy_at.get(&token) {
            busy[at].1.merge(wake);
        } else {
            busy_at.insert(token, busy.len());
            busy.push((token, wake));
        }
    }
    ready.retain(|&(token, wake)| match busy_at.get(&token) {
        Some(&at) => {
            busy[at].1.merge(wake);
            false
        }
        None => true,
    });
}

impl Wake {
    fn merge(&mut self, other: Self) {
        self.readable |= other.readable;
        self.writable |= other.writable;
        self.ended |= other.ended;
    }
}

impl std::fmt::Debug for Driver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Driver")
            .field("conns", &self.host.conns.len())
            .field("terminals", &self.host.terminals.len())
            .finish_non_exhaustive()
    }
}

impl Driver {
    /// A driver for `engine` serving `listen`. Installs the SIGTERM/SIGINT/SIGHUP handlers; for
    /// stdio, sets stdin and stdout non-blocking and connects the one client at once.
    pub fn new(engine: ServerEngine, listen: Listen) -> io::Result<Self> {
        let poll = Poll::new()?;
        let mut signals = Signals::new()?;
        signals.register(poll.registry(), SIGNALS)?;
        let mut listener = match listen {
            Listen::Socket(s) => Some(s),
            Listen::Stdio => None,
        };
        if let Some(l) = listener.as_mut() {
            poll.registry()
                .register(l.listener_mut(), LISTENER, Interest::READABLE)?;
        }
        // [SERVER.STDIO.2] Saved before anything changes them; put back when `driver` is
        // dropped, on every way out (an error below included).
        let stdio_flags = listener.is_none().then(StdioFlags::save).transpose()?;
        let stdio = stdio_flags.is_some();
        let mut driver = Self {
            engine,
            host: Host::new(poll, listener, signals, FIRST_DYNAMIC),
            buf: vec![0; READ_CHUNK],
            ready: Vec::new(),
            busy: Vec::new(),
            busy_at: HashMap::new(),
            upgrade: upgrade::Upgrade::default(),
            stdio_flags,
        };
        if let Some(flags) = &driver.stdio_flags {
            flags.set_nonblocking()?;
        }
        if stdio {
            let peer = PeerInfo::remote();
            // [SERVER.STDIO.3] A stdin epoll refuses (/dev/null, a file) is named as the cause.
            let conn = driver
                .host
                .add_conn(Transport::Stdio, peer)
                .map_err(stdin_unwatchable)?;
            driver.feed(ServerEvent::Connected { conn, peer });
            driver.flush();
        }
        Ok(driver)
    }

    /// The socket's path, when listening on one.
    pub fn socket_path(&self) -> Option<PathBuf> {
        self.host.listener.as_ref().map(|l| l.path().to_owned())
    }

    /// Runs until shutdown (SIGTERM, SIGINT, SIGHUP, the SHUTDOWN command) or, with stdio,
    /// until the client disconnects, and then until every child has exited after its SIGHUP
    /// (bounded by [`KILL_GRACE`] + [`REAP_BOUND`]). On return every child has been killed and
    /// reaped and the socket file removed.
    pub fn run(mut self) -> io::Result<()> {
        let mut events = Events::with_capacity(256);
        loop {
            // Checked here, after everything the last turn did: any of it may have closed the
            // last connection.
            if self.host.on_stopping() {
                self.feed_observed();
            }
            if self.host.finished() {
                break;
            }
            let timeout = self.next_wait();
            match self.host.poll.poll(&mut events, timeout) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
            // Reused from turn to turn: no allocation between an event and its handling.
            let mut ready = std::mem::take(&mut self.ready);
            ready.extend(events.iter().map(|e| {
                let readable = e.is_readable() || e.is_read_closed() || e.is_error();
                let writable = e.is_writable() || e.is_write_closed() || e.is_error();
                // An out-of-band byte waiting in a socket ends a read early, and nothing new
                // announces what follows it ([`Got::drained`]): read to the end then too.
                let ended = e.is_read_closed() || e.is_error() || e.is_priority();
                (
                    e.token(),
                    Wake {
                        readable,
                        writable,
                        ended,
                    },
                )
            }));
            let mut busy = std::mem::take(&mut self.busy);
            plan_turn(
                &mut ready,
                &mut busy,
                self.host.again.drain(..),
                &mut self.busy_at,
            );
            // Sources that were not busy go first: an honest client's request or a terminal's
            // echo waits for no flood.
            for (token, wake) in ready.drain(..) {
                self.serve(token, wake);
            }
            // [SERVER.FAIR.4] Then the busy ones, in turn, for at most a slice; at least one,
            // so each gets its turn however long the others take.
            let slice_end = self.host.clock.now() + TURN_SLICE;
            let mut reached = 0;
            while let Some(&(token, wake)) = busy.get(reached) {
                reached += 1;
                self.serve(token, wake);
                if self.host.clock.now() >= slice_end {
                    break;
                }
            }
            busy.drain(..reached);
            self.busy = busy;
            self.ready = ready;
            // [SERVER.FAIR.3] After every ready source had its turn: a few of the terminals
            // asked for start, the rest next turn.
            if !self.host.spawns.is_empty() {
                self.host.start_spawns(SPAWNS_PER_TURN);
                self.feed_observed();
                self.flush();
            }
            self.on_deadlines();
            self.upgrade_step();
        }
        self.abandon_upgrade();
        self.host.finish();
        Ok(())
    }

    /// The poll timeout: the nearest of the engine's timer and the host's.
    fn next_wait(&self) -> Option<Duration> {
        if !self.host.again.is_empty() || !self.busy.is_empty() || !self.host.spawns.is_empty() {
            return Some(Duration::ZERO);
        }
        let next = [
            self.host.nearest.get(),
            self.host.timers.next_timeout(),
            self.engine.poll_timeout(),
            self.upgrade.deadline(),
            self.host.ws.as_ref().and_then(crate::ws::Door::deadline),
        ]
        .into_iter()
        .flatten()
        .min()?;
        Some(self.host.clock.until(next))
    }

    /// One source's turn: its events, then what the engine made of them, sent.
    fn serve(&mut self, token: Token, wake: Wake) {
        self.route(token, wake);
        self.feed_observed();
        self.flush();
    }

    /// Sends one ready source's readiness to what it names.
    fn route(&mut self, token: Token, wake: Wake) {
        let Wake {
            readable,
            writable,
            ended,
        } = wake;
        match token {
            LISTENER => self.accept_all(),
            SIGNALS => {
                let signals = self.host.signals.pending();
                self.on_signals(signals);
            }
            UPGRADE_CHECK => self.on_check_exit(),
            _ if self.route_ws(token) => {}
            _ => match self.host.sources.get(token) {
                Some(Source::ConnRead(id)) => {
                    if readable {
                        self.read_conn(id, token, ended);
                    }
                    // A socket shares one token for both directions.
                    if writable
                        && self
                            .host
                            .conns
                            .get(&id)
                            .is_some_and(|c| c.write_token() == token)
                    {
                        self.host.write_conn(id, &mut Recycle(&mut self.engine));
                    }
                }
                Some(Source::ConnWrite(id)) => {
                    if writable {
                        self.host.write_conn(id, &mut Recycle(&mut self.engine));
                    }
                }
                // [SERVER.BRIDGE.11] The bridge never writes after the handoff: any readiness
                // on its socket is its end.
                Some(Source::ConnControl(id)) => {
                    self.host.bridge_gone(id, &mut Recycle(&mut self.engine));
                }
                Some(Source::Master(t)) => {
                    if readable {
                        self.read_master(t, token, ended);
                    }
                    if writable {
                        self.host.pump(t);
                    }
                }
                Some(Source::Pidfd(t)) => {
                    // [SERVER.PTY.3] Output written before the exit is reported before the exit.
                    if let Some(master) = self.host.reap(t) {
                        self.read_master(t, master, true);
                    }
                }
                None => trace!(?token, "event for a source already gone"),
            },
        }
    }

    /// The signals that arrived: shutdown, or an upgrade to our own binary.
    fn on_signals(&mut self, signals: Vec<ServerSignal>) {
        for sig in signals {
            match sig {
                ServerSignal::Shutdown(sig) => {
                    info!(signal = ?sig, "shutdown requested");
                    self.feed(ServerEvent::ShutdownRequested);
                }
                // [SERVER.UPGRADE.EXEC.1] SIGUSR2: an upgrade to our own binary, with
                // no requester to answer.
                ServerSignal::Upgrade => {
                    info!("upgrade requested by SIGUSR2");
                    self.feed(ServerEvent::UpgradeRequested { binary: None });
                }
            }
        }
    }

    /// Hands the engine `event`, then drains its actions to completion, performing each on the
    /// host, then does the same for every event the host observed meanwhile, oldest first,
    /// until neither actions nor events are left. Its loop (`feed_all`) is the one caller of
    /// `ServerEngine::handle` (see "Re-entrancy" in the module doc).
    ///
    /// The bytes the actions queue are marked with the [`Output`] the flush policy gives
    /// `event`; every event that follows from it carries the same mark. Events the host had
    /// already queued before `event` came go to the engine first, unmarked.
    fn feed(&mut self, event: ServerEvent<'_>) {
        let output = FlushPolicy::output_of(&event);
        self.feed_all(Some((event, output)));
    }

    /// Feeds the events the host observed outside of `feed` (a write on writability, a
    /// deadline, a reaped child): `feed` without an event of its own.
    fn feed_observed(&mut self) {
        if !self.host.events.is_empty() {
            self.feed_all(None);
        }
    }

    fn feed_all(&mut self, mut event: Option<(ServerEvent<'_>, Output)>) {
        let mut output = Output::Urgent;
        loop {
            let next = match self.host.events.pop_front() {
                Some(observed) => observed,
                None => match event.take() {
                    Some((event, mark)) => {
                        output = mark;
                        event
                    }
                    None => return,
                },
            };
            self.engine.handle(self.host.clock.now(), next);
            while let Some(action) = self.engine.poll_action() {
                self.host
                    .perform(action, output, &mut Recycle(&mut self.engine));
            }
        }
    }

    /// Writes the connections the actions queued bytes for, as the flush policy allows, and
    /// feeds the events that come of it; round again while those queue more.
    fn flush(&mut self) {
        while !self.host.unflushed.is_empty() {
            let now = self.host.clock.now();
            self.host.flush_pass(now, &mut Recycle(&mut self.engine));
            self.feed_observed();
        }
    }

    // ---- connections ----

    /// Accepts every queued peer, until the listener would block or runs out of descriptors
    /// (then [`Timer::AcceptRetry`] brings it back).
    fn accept_all(&mut self) {
        loop {
            let Some(listener) = self.host.listener.as_ref() else {
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
                    match self.host.add_conn(Transport::Unix(stream), peer) {
                        Ok(conn) => self.feed(ServerEvent::Connected { conn, peer }),
                        Err(e) => error!(error = %e, "cannot register a connection"),
                    }
                    self.flush();
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    if self.host.timers.is_set(Timer::AcceptRetry) {
                        self.host.timers.stop(Timer::AcceptRetry);
                        info!("accepting connections again");
                    }
                    return;
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    // [SERVER.LIMIT.4] EMFILE, ENFILE, ENOBUFS and the like: the peer stays
                    // queued and its readiness edge is spent, so stop accepting and come back
                    // after a rest rather than at the next connect (or spinning meanwhile).
                    let retry = &mut self.host.timers;
                    if !retry.is_set(Timer::AcceptRetry) {
                        warn!(error = %e, "cannot accept a connection; retrying");
                    }
                    retry.set(Timer::AcceptRetry, self.host.clock.now() + ACCEPT_RETRY);
                    return;
                }
            }
        }
    }

    /// Reads what the connection has; to its end when the peer is known to have hung up
    /// (see [`Wake::ended`]).
    fn read_conn(&mut self, id: ConnId, token: Token, ended: bool) {
        // Lent out while the engine reads from it; taking an empty `Vec` allocates nothing.
        let mut buf = std::mem::take(&mut self.buf);
        self.read_conn_into(&mut buf, id, token, ended);
        self.buf = buf;
    }

    fn read_conn_into(&mut self, buf: &mut [u8], id: ConnId, token: Token, ended: bool) {
        // [SERVER.FAIR.1] Frames an earlier read left past the engine's per-turn budget come
        // first, one budget a turn, and the socket is not read meanwhile (the decoder holds at
        // most one read). The token comes back next turn either way: the socket's edge was
        // spent while it waited, and whatever it holds is read then.
        if self.engine.is_backlogged(id) {
            if self
                .host
                .conns
                .get(&id)
                .is_none_or(crate::conn::Conn::is_closing)
            {
                // After Close the engine is done with it: nothing to come back for.
                return;
            }
            self.feed(ServerEvent::Received {
                conn: id,
                bytes: &[],
            });
            self.flush();
            self.host.again.push(token);
            return;
        }
        for _ in 0..READS_PER_WAKE {
            let Some(conn) = self.host.conns.get_mut(&id) else {
                return;
            };
            if conn.read_done() {
                return;
            }
            let read = if conn.may_hand_off {
                let first = conn.transport.read_first(buf);
                // Only a read that found something (bytes or the end) was the first.
                conn.may_hand_off = first.as_ref().is_err_and(|e| {
                    matches!(
                        e.kind(),
                        io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted
                    )
                });
                match first {
                    Ok((got, Some((input, output)))) => {
                        if self.host.hand_off(id, input, output) {
                            // The handed input is registered under this token: its readiness
                            // (a HELLO already waiting included) comes with the next poll.
                            return;
                        }
                        // Refused: the offer is bytes like any others (a framing violation).
                        Ok(got)
                    }
                    Ok((got, None)) => Ok(got),
                    Err(e) => Err(e),
                }
            } else {
                conn.transport.read(buf)
            };
            // A WebSocket's pong, if the read found a ping, goes with the next flush.
            self.host.transport_output(id);
            let Some(conn) = self.host.conns.get_mut(&id) else {
                return;
            };
            // The engine's answers to earlier reads (an ERROR for a bad frame, say) were
            // performed and flushed as each was fed, so a peer that half-closes after writing
            // still sees them when the read below finds its end.
            match read {
                Ok(Got { n: 0, .. }) => {
                    return self
                        .host
                        .peer_gone(id, None, &mut Recycle(&mut self.engine));
                }
                Ok(Got { n, drained }) => {
                    trace!(conn = id.0, bytes = n, "received");
                    // After Close the engine is done with the connection; drop what arrives.
                    if !conn.is_closing() {
                        let bytes = buf.get(..n).unwrap_or_default();
                        self.feed(ServerEvent::Received { conn: id, bytes });
                        // What these bytes asked for (a keystroke's PTY write, a reply) goes
                        // out before any further read of the socket.
                        self.flush();
                        if self.engine.is_backlogged(id) {
                            // Its turn is over; the rest of what it sent waits for the next.
                            self.host.again.push(token);
                            return;
                        }
                    }
                    if drained && !ended {
                        return;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    return self
                        .host
                        .peer_gone(id, Some(&e), &mut Recycle(&mut self.engine));
                }
            }
        }
        self.host.again.push(token);
    }

    // ---- terminals ----

    /// Reads the terminal's output; to its end when the slave is known to have hung up (see
    /// [`Wake::ended`]).
    fn read_master(&mut self, terminal: LocalTerminal, token: Token, ended: bool) {
        let mut buf = std::mem::take(&mut self.buf);
        self.read_master_into(&mut buf, terminal, token, ended);
        self.buf = buf;
    }

    fn read_master_into(
        &mut self,
        buf: &mut [u8],
        terminal: LocalTerminal,
        token: Token,
        ended: bool,
    ) {
        // Each read goes to the engine at once while a viewer waits for output: a PTY master
        // hands out at most its line discipline's few KiB per read, and the time spent on one
        // chunk is what lets the kernel refill it for the next read. While every viewer is
        // behind, the engine lets bulk reads be gathered into one chunk
        // ([OUTPUT.GATHER.1]): one frame for several reads, no later for anyone. The frames
        // of bulk reads still leave in large writes, as the flush policy says: one between
        // two reads, the rest when the wake-up's reads are done.
        let slice_end = self.host.clock.now() + SOURCE_SLICE;
        let mut limit = self.engine.output_gather_limit(terminal).min(buf.len());
        // Bytes read into `buf` and not yet handed to the engine.
        let mut gathered = 0;
        for _ in 0..READS_PER_WAKE {
            // [SERVER.FAIR.2] A few bytes may cost many cells (REP, combining marks on a wide
            // screen): a terminal's turn ends after a slice of time, not only of reads.
            if self.host.clock.now() >= slice_end {
                break;
            }
            let Some(t) = self.host.terminals.get_mut(&terminal) else {
                return;
            };
            if t.eof() {
                return;
            }
            let read = t.child.read(buf.get_mut(gathered..).unwrap_or_default());
            match read {
                Ok(PtyRead::Data(n)) => {
                    gathered += n;
                    // A bulk read says more is on its way: read on while another fits.
                    if FlushPolicy::pty_read(n) == Output::Bulk
                        && gathered + FlushPolicy::MASTER_READ <= limit
                    {
                        continue;
                    }
                    let bytes = buf.get(..gathered).unwrap_or_default();
                    gathered = 0;
                    if self.feed_output(terminal, bytes, n) && !ended {
                        return;
                    }
                    limit = self.engine.output_gather_limit(terminal).min(buf.len());
                }
                Ok(PtyRead::WouldBlock) => {
                    let bytes = buf.get(..gathered).unwrap_or_default();
                    if !bytes.is_empty() {
                        self.feed_output(terminal, bytes, FlushPolicy::BULK_READ);
                    }
                    return;
                }
                Ok(PtyRead::Eof) => {
                    self.feed_output_rest(terminal, buf.get(..gathered).unwrap_or_default());
                    return self.host.master_eof(terminal);
                }
                Err(e) => {
                    warn!(%terminal, error = %e, "reading the terminal failed");
                    self.feed_output_rest(terminal, buf.get(..gathered).unwrap_or_default());
                    return self.host.master_eof(terminal);
                }
            }
        }
        let bytes = buf.get(..gathered).unwrap_or_default();
        if !bytes.is_empty() {
            self.feed_output(terminal, bytes, FlushPolicy::BULK_READ);
        }
        // The cap stopped us with more to read: come back before waiting.
        self.host.again.push(token);
    }

    /// Hands the engine one chunk of `terminal`'s output, `last_read` the size of the read
    /// that ended it, and flushes as the policy says for that read. Returns whether that read
    /// was short: it took all the line discipline held.
    fn feed_output(&mut self, terminal: LocalTerminal, bytes: &[u8], last_read: usize) -> bool {
        // This chunk's frames are queued now, marked as bulk output or not by the last read's
        // size: a gathered chunk ended by a short read is the end of a burst, sent at once.
        let output = FlushPolicy::pty_read(last_read);
        self.feed_all(Some((ServerEvent::PtyOutput { terminal, bytes }, output)));
        if output == Output::Bulk {
            self.host.flush_ripest(&mut Recycle(&mut self.engine));
            self.feed_observed();
        }
        // A few bytes are an echo or a prompt someone is waiting for: send them at once. Bulk
        // output, read in KiB chunks, leaves in large writes.
        if FlushPolicy::flush_after_read(last_read) {
            self.flush();
            // A short read took all the line discipline held, and more output raises a new
            // event: the read that would find the master empty is skipped, as for a socket.
            // Not after a bulk read: there the master is refilled as we go, and the next read
            // waits for the refill inside the kernel more cheaply than a trip through the poll.
            return true;
        }
        false
    }

    /// The output gathered before the master's end, if any, sent at once.
    fn feed_output_rest(&mut self, terminal: LocalTerminal, bytes: &[u8]) {
        if !bytes.is_empty() {
            self.feed_output(terminal, bytes, 0);
        }
    }

    // ---- time ----

    /// The deadlines that came: the host's own, then the engine's `Timeout`, then shutdown's.
    fn on_deadlines(&mut self) {
        let now = self.host.clock.now();
        self.host.on_deadlines(now, &mut Recycle(&mut self.engine));
        self.feed_observed();
        if self.host.timers.is_expired(Timer::Trim, now) {
            self.host.timers.stop(Timer::Trim);
            // [SERVER.MEMORY.1]
            crate::memory::trim();
        }
        if self.host.timers.is_expired(Timer::AcceptRetry, now) {
            // Stopped first: a listener gone since (shutdown) must not leave it expired.
            self.host.timers.stop(Timer::AcceptRetry);
            self.accept_all();
            self.accept_ws();
        }
        self.expire_ws();
        if self.engine.poll_timeout().is_some_and(|t| t <= now) {
            self.feed(ServerEvent::Timeout);
        }
        self.host.on_shutdown_deadline(now);
        self.feed_observed();
        self.flush();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wake(readable: bool, writable: bool, ended: bool) -> Wake {
        Wake {
            readable,
            writable,
            ended,
        }
    }

    fn turns(list: &[(Token, Wake)]) -> Vec<(usize, bool, bool, bool)> {
        list.iter()
            .map(|(t, w)| (t.0, w.readable, w.writable, w.ended))
            .collect()
    }

    // [SERVER.FAIR.4]
    #[test]
    fn a_busy_source_keeps_its_place_and_gets_one_turn_with_every_wake() {
        // Last turn did not reach 7 and 5; 9 and 7 were cut short at their bound.
        let mut busy = vec![
            (Token(7), wake(false, true, false)),
            (Token(5), wake(true, false, false)),
        ];
        // The poll: 3 (an honest client), 5 and 8.
        let mut ready = vec![
            (Token(3), wake(true, false, false)),
            (Token(5), wake(true, true, true)),
            (Token(8), wake(false, true, false)),
        ];
        let mut at = HashMap::new();
        plan_turn(
            &mut ready,
            &mut busy,
            [9, 7].map(Token).into_iter(),
            &mut at,
        );
        assert_eq!(
            turns(&ready),
            [(3, true, false, false), (8, false, true, false)]
        );
        assert_eq!(
            turns(&busy),
            [
                (7, true, true, true),
                (5, true, true, true),
                (9, true, false, true)
            ]
        );
    }
}
