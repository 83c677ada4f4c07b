//! The event loop: one thread, one `mio::Poll`, driving a [`ServerEngine`]. Beside it one PTY
//! reader thread (`crate::reader`) reads the masters of the terminals in a burst of output;
//! `burst.rs` hands masters to it and feeds the engine what it read, in order.
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
//!    one of the driver's own timers, `timer.rs`); after a client's request, first poll
//!    without blocking for `--busy-poll-us` if set (`spin.rs`, off by default).
//! 2. **route readiness**: each ready token goes to what it names (the listener, the signal
//!    pipe, a connection, a terminal's master or pidfd), which is read until it would block
//!    or its share is spent (`read.rs`); sources not busy go first, then those cut short
//!    earlier, in the order `turn.rs` plans.
//! 3. **feed events**: every event goes to the engine through one method, `Driver::feed`...
//! 4. **drain actions**: ...which drains `poll_action()` to completion, performing each action
//!    on the host (`host.rs`: the connections of `conn.rs`, the terminals of `terminal.rs`),
//!    then feeds what performing them observed (see "Re-entrancy").
//! 5. **flush**: write the connections the actions queued bytes for, as the flush policy
//!    (`flush.rs`) allows; the `Sent` events that come of it are fed in turn. A route flushes
//!    sooner where the policy says so: after each read from a socket and each chunk of PTY output
//!    whose last read was short (a keystroke's echo leaves once the master is found empty),
//!    and the ripest connection between two bulk reads.
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
use phux_core::server::{PeerInfo, ServerEngine, ServerEvent};
use tracing::{info, trace};

use crate::conn::{READ_CHUNK, StdioFlags, Transport, stdin_unwatchable};
use crate::flush::{FlushPolicy, Output};
use crate::host::{Host, Recycle, SPAWNS_PER_TURN, Source};
use crate::signals::{ServerSignal, Signals};
use crate::socket::ServerSocket;
use crate::timer::Timer;

pub use crate::timer::{ACCEPT_RETRY, CLOSE_BOUND, EXIT_DRAIN_BOUND, KILL_GRACE, REAP_BOUND};
pub use handover::{AdoptArgs, AdoptError, UpgradeContext, Validated, adopt, validate};
pub use read::SOURCE_SLICE;
pub use spin::DEFAULT_BUSY_POLL;
pub use trial::check_image;
pub use turn::TURN_SLICE;

use spin::BusyPoll;
use turn::{Wake, plan_turn};

mod burst;
mod handover;
mod read;
mod spin;
mod trial;
mod turn;
mod ws;

const LISTENER: Token = Token(0);
const SIGNALS: Token = Token(1);
/// The pidfd of a running `--check-upgrade`.
const UPGRADE_CHECK: Token = Token(2);
/// The PTY reader thread: output it read is waiting (`burst.rs`).
const READER: Token = Token(3);
const FIRST_DYNAMIC: usize = 4;

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
    upgrade: handover::Upgrade,
    /// Output held back for a viewer that is behind ([OUTPUT.READER.5]).
    paces: burst::Paces,
    /// The wait's busy-poll after a client's request ([SERVER.LOOP.3]).
    spin: BusyPoll,
    /// `--stdio`: stdin's and stdout's flags as we found them, restored when the driver is
    /// dropped. Last, so it is dropped after everything that uses the two fds.
    stdio_flags: Option<StdioFlags>,
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
            upgrade: handover::Upgrade::default(),
            paces: burst::Paces::default(),
            spin: BusyPoll::new(DEFAULT_BUSY_POLL),
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

    /// How long the loop polls without blocking after a client's request (`--busy-poll-us`;
    /// zero: never). [`DEFAULT_BUSY_POLL`] until set.
    pub fn set_busy_poll(&mut self, budget: Duration) {
        self.spin = BusyPoll::new(budget);
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
            match self
                .spin
                .wait(&mut self.host.poll, &mut events, timeout, self.host.clock)
            {
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
            self.pace_check();
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
            self.paces.deadline(),
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
            READER => self.on_reader(),
            _ if self.route_ws(token) => {}
            _ => match self.host.sources.get(token) {
                Some(Source::ConnRead(id)) => {
                    if readable {
                        // [SERVER.LOOP.3] A client's request: its next one, or the echo of
                        // what it wrote, is likely close behind.
                        self.spin.arm(self.host.clock);
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
                        self.read_master(t, token);
                    }
                    if writable {
                        self.host.pump(t);
                    }
                }
                Some(Source::Pidfd(t)) => {
                    // [SERVER.PTY.3] Output written before the exit is reported before the exit.
                    if let Some(master) = self.host.reap(t) {
                        self.read_master(t, master);
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
