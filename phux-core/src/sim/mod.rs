//! The simulator: a [`ServerEngine`] wired to simulated PTYs and raw client connections on a
//! virtual clock, with fault injection. Deterministic: the same calls give the same wire log.
//!
//! [`Harness`] is the one non-production driver of the engine: the engine tests, the
//! `server_engine` fuzz body, the engine benchmarks and the conformance runner's in-process
//! transport all run the engine in it, and its `perform(ServerAction)` is the only one outside
//! the mio server. What differs between them is a knob or a child model, not a driver:
//!
//! - children are [`ChildModel`]s behind one [`SimPty`] (writer, canonical-line guard, kernel
//!   buffer, stalls, slow reader, lost completions, process-group signals): [`Echo`],
//!   [`Record`] and [`Cat`] here ([`ChildMode`] names them), the probe and `cat` of a cooked
//!   terminal in the conformance crate; [`Harness::set_spawner`] picks one per spawn (or fails
//!   it);
//! - clients read at once or stall ([`Harness::stall_reader`], [`Harness::read_some`]), and
//!   keep frames or raw bytes ([`Harness::set_raw_reads`]); a closed connection may linger
//!   for a bound ([`Harness::set_close_bound`], [`CLOSE_BOUND`]); writes may go through a
//!   bounded socket buffer, reported `Sent` a part at a time ([`Harness::set_socket_buffer`],
//!   [`SOCKET_BUFFER`]);
//! - a driver that decides outcomes holds spawns ([`Harness::hold_spawns`],
//!   [`Harness::release_spawn`]) and scripts write completions
//!   ([`Harness::set_scripted_writes`], [`Harness::complete_write`]).
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
//! # Driving
//!
//! The calls that change the world (`connect`, `send`, `disconnect`, `pty(..)` knobs, events
//! handed to `server` directly) only hand the engine its event; nothing is performed until
//! the harness is stepped. Stepping follows the engine's contract: after every `handle`, the
//! engine's actions are drained with `poll_action` and performed in order (a `Send` is
//! queued on the connection and, while its client reads, read at once and reported `Sent`; a
//! `Write` goes to the PTY's writer; a `Close` ends the connection and reports
//! `Disconnected`), then the PTYs are polled, and their events (completions, output, exits)
//! become the engine's next events; `poll_timeout` is read last. Performing never calls
//! the engine: what it produces (a `Sent`, a `Disconnected`, a `Spawned`) is queued and
//! reported after the drain, each event followed by its own drain, as the mio driver does.
//! A test's own call that produces such an event (a client's read, a released spawn) hands
//! it to the engine at once.
//!
//! - [`Harness::step`] runs one round at the current instant (actions, PTY polls, a due
//!   timeout); when nothing is due, it jumps the clock to the earliest wake-up (the engine's,
//!   a PTY's, a close bound's) and fires it. It returns `false` when idle: nothing due and
//!   no wake-up.
//! - [`Harness::settle`] runs rounds until nothing is due at the current instant; the clock
//!   does not move.
//! - [`Harness::drive`] steps until idle, so the clock jumps through every timer;
//!   [`Harness::drive_bounded`]`(n)` does the same in at most `n` steps and panics
//!   (livelock) otherwise.
//! - [`Harness::advance`] moves the clock by a duration, firing every wake-up on the way at
//!   its own instant.
//!
//! ```
//! use std::time::Duration;
//!
//! use phux_core::sim::{ChildMode, Harness, apply_input, paste};
//! use phux_proto::command::CommandResult;
//!
//! let mut h = Harness::new();
//! h.spawn_mode = ChildMode::Record;
//! let c = h.client();
//! let t = h.spawn(c);
//! h.pty(&t).stall();
//! // A batch larger than the kernel buffer waits for the stalled child: no answer yet.
//! let rid = h.next_request_id();
//! let big = apply_input(1, &t, vec![paste(&[b'x'; 5000])]);
//! h.send(c, &phux_core::sim::command_frame(rid, big));
//! h.settle();
//! assert_eq!(h.take_result(c, rid), None);
//! // The engine's completion bound answers it, in doubt, when the clock gets there.
//! h.drive_bounded(100);
//! assert!(matches!(h.take_result(c, rid), Some(CommandResult::Error { .. })));
//! h.advance(Duration::from_secs(1));
//! ```

mod child;
mod conn;
mod frames;
mod perform;
mod pty;
mod wirelog;

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::fmt;
use std::time::Duration;

use phux_proto::TerminalId;

use crate::server::{
    ConnId, JobId, LocalTerminal, ServerAction, ServerConfig, ServerEngine, ServerEvent, SpawnSpec,
    WriteOutcome,
};
use crate::time::Instant;

pub use child::{Cat, ChildIo, ChildMode, ChildModel, Echo, ExitKind, Received, Record};
pub use conn::SimConn;
pub use frames::{
    apply_input, command_frame, error_code, events, expect_json, hello_frame, paste, server_id_for,
    untrusted_paste,
};
pub use pty::{DEFAULT_KERNEL_BUFFER, PtyEvent, SimPty, count};
pub use wirelog::WireLog;
use wirelog::fmt_duration;

/// How many rounds [`Harness::drive`] and [`Harness::settle`] allow before calling it a
/// livelock.
pub const DEFAULT_STEP_BOUND: usize = 100_000;

/// The engine's bound on a closing connection; see [`Harness::set_close_bound`].
pub use crate::server::CLOSE_BOUND;

/// The most one read of a PTY master returns (one page, as Linux's PTY does): large output
/// reaches the engine in pieces, never as one huge event; see [`Harness::set_pty_read`].
pub const PTY_READ: usize = 4096;

/// What a Unix stream socket buffers between a writer and a reader that does not read, by
/// default on Linux (`net.core.wmem_default`).
pub const SOCKET_BUFFER: usize = 212_992;

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

/// Chooses a spawn's child model from its spec, or fails the spawn with a message.
pub type Spawner = dyn FnMut(&SpawnSpec) -> Result<Box<dyn ChildModel>, String>;

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
    held_spawns: Vec<(LocalTerminal, SpawnSpec)>,
    spawner: Option<Box<Spawner>>,
    /// New connections keep the raw bytes their client reads (see [`Harness::take_received`]).
    raw_reads: bool,
    /// Keep `writes`, `actions` and `shared_sends` (on by default).
    recording: bool,
    /// New PTYs script their writes ([`SimPty::script_writes`]).
    scripted_writes: bool,
    /// `Send` actions for connections the harness never had.
    stray_sends: usize,
    /// PTYs that may have something to do at `polled_at`: touched by an action or through
    /// [`Harness::pty`] since their last poll. Every PTY is when the clock has moved.
    dirty: BTreeSet<LocalTerminal>,
    polled_at: Instant,
    close_bound: Option<Duration>,
    pty_read: Option<usize>,
    /// Each connection's socket buffer ([`Harness::set_socket_buffer`]).
    socket_buffer: Option<usize>,
    shut_down: bool,
    request_counter: u32,
    /// An `Upgrade` action is not yet carried out or failed.
    upgrade_asked: bool,
    /// Events that performing actions produced (a write handed to a socket, a spawn answered,
    /// a close), reported after the drain as a driver does: performing never calls the engine.
    observed: VecDeque<ServerEvent<'static>>,
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
            spawner: None,
            raw_reads: false,
            recording: true,
            scripted_writes: false,
            stray_sends: 0,
            dirty: BTreeSet::new(),
            polled_at: Instant::ZERO,
            close_bound: None,
            pty_read: None,
            socket_buffer: None,
            shut_down: false,
            request_counter: 0,
            upgrade_asked: false,
            observed: VecDeque::new(),
        }
    }

    /// The current server incarnation (1, then +1 per [`Harness::restart_server`]).
    pub fn incarnation(&self) -> u32 {
        self.incarnation
    }

    /// Whether the engine asked for an upgrade the harness has not yet carried out or failed
    /// ([`Harness::fail_upgrade`], [`Harness::upgrade_in_place`]); the action, with its
    /// binary, is in [`Harness::actions`].
    pub fn upgrade_asked(&self) -> bool {
        self.upgrade_asked
    }

    /// Reports the pending upgrade failed with `reason`, and performs what the engine asks.
    pub fn fail_upgrade(&mut self, reason: &str) {
        self.upgrade_asked = false;
        self.server.handle(
            self.now,
            ServerEvent::UpgradeFailed {
                reason: reason.to_owned(),
            },
        );
        self.settle();
    }

    /// Carries out the pending upgrade as a real driver does, in process: waits for
    /// [`ServerEngine::upgrade_quiet`] (completing nothing itself: scripted writes must have
    /// been completed), exports the state, writes it to an image and reads it back, restores a
    /// new engine from it with the same configuration, and reports `UpgradeDone` to it.
    /// Connections, PTYs and the clock carry over untouched, as the driver's fds and clock
    /// epoch do across an exec. Returns the image's size.
    pub fn upgrade_in_place(&mut self) -> Result<usize, String> {
        if !self.upgrade_asked {
            return Err("no upgrade was asked for".to_owned());
        }
        self.settle();
        let image = self.server.export_image(&()).map_err(|e| e.to_string())?;
        let (state, ()) = crate::upgrade::decode_image(&image).map_err(|e| e.to_string())?;
        self.server =
            ServerEngine::from_state(self.config.clone(), state).map_err(|e| e.to_string())?;
        self.upgrade_asked = false;
        self.log
            .push(|| format!("# upgraded in place: image of {} bytes", image.len()));
        self.server.handle(self.now, ServerEvent::UpgradeDone);
        self.settle();
        Ok(image.len())
    }

    /// Whether the engine asked the driver to stop (`ServerAction::Shutdown`).
    pub fn is_shut_down(&self) -> bool {
        self.shut_down
    }

    // ---- PTYs -----------------------------------------------------------------------------

    /// The next `n` spawns fail (`SpawnFailed`).
    pub fn fail_next_spawns(&mut self, n: usize) {
        self.fail_next_spawns = n;
    }

    /// While set, `Spawn` actions are held and not answered until
    /// [`Harness::release_spawns`].
    pub fn hold_spawns(&mut self, hold: bool) {
        self.hold_spawns = hold;
    }

    /// Answers every held `Spawn` (with `Spawned`, or `SpawnFailed` when the spawner refuses
    /// it).
    pub fn release_spawns(&mut self) {
        let held = std::mem::take(&mut self.held_spawns);
        for (terminal, spec) in held {
            self.start_pty(terminal, &spec);
        }
        self.hand_observed();
    }

    /// Whether the harness keeps [`Harness::writes`], [`Harness::actions`] and
    /// [`Harness::shared_sends`] (on by default; off for long runs that never look).
    pub fn set_recording(&mut self, recording: bool) {
        self.recording = recording;
    }

    /// New terminals' PTYs script their writes: each job waits for
    /// [`Harness::complete_write`] instead of being written (see [`SimPty::script_writes`]).
    pub fn set_scripted_writes(&mut self, scripted: bool) {
        self.scripted_writes = scripted;
    }

    /// Reports the oldest scripted job of `terminal` complete with `outcome` (the engine hears
    /// `WriteDone`); the job, or `None` when no job waits.
    pub fn complete_write(
        &mut self,
        terminal: LocalTerminal,
        outcome: WriteOutcome,
    ) -> Option<JobId> {
        let job = self.ptys.get_mut(&terminal)?.complete_next()?;
        self.report_pty_event(terminal, PtyEvent::WriteDone { job, outcome });
        Some(job)
    }

    /// How many `Spawn` actions are held (see [`Harness::hold_spawns`]).
    pub fn held_spawns(&self) -> usize {
        self.held_spawns.len()
    }

    /// Answers the held `Spawn` at `index` (oldest first): `Spawned` on a fresh PTY, or
    /// `SpawnFailed`. Does nothing when no spawn is held there.
    pub fn release_spawn(&mut self, index: usize, ok: bool) {
        if index >= self.held_spawns.len() {
            return;
        }
        let (terminal, spec) = self.held_spawns.remove(index);
        if ok {
            self.start_pty(terminal, &spec);
            self.hand_observed();
        } else {
            self.server.handle(
                self.now,
                ServerEvent::SpawnFailed {
                    terminal,
                    message: "simulated spawn failure".into(),
                },
            );
        }
    }

    /// `Send` actions for connections the harness never had, or after they closed: both are
    /// engine bugs (a driver would write to a stale or reused socket).
    pub fn stray_sends(&self) -> usize {
        self.stray_sends
            + self
                .conns
                .values()
                .map(|c| c.sends_after_close)
                .sum::<usize>()
    }

    /// Splits each PTY read into pieces of at most `bytes` (`None`, the default: one event
    /// per poll, however large; [`PTY_READ`] is what a real master returns).
    pub fn set_pty_read(&mut self, bytes: Option<usize>) {
        self.pty_read = bytes.map(|n| n.max(1));
    }

    /// A `Write` the engine never asked for (job `u64::MAX`, whose completion the engine
    /// ignores), as a broken driver would issue: the conformance suite's rule-flip mutants.
    pub fn write_unasked(&mut self, terminal: LocalTerminal, bytes: Vec<u8>) {
        self.perform(ServerAction::Write {
            terminal,
            job: JobId(u64::MAX),
            bytes,
        });
    }

    /// Chooses the child for each spawn from its spec from now on: a model, or the message of
    /// a failed spawn. Without one, every child is [`Harness::spawn_mode`]'s.
    pub fn set_spawner(
        &mut self,
        spawner: impl FnMut(&SpawnSpec) -> Result<Box<dyn ChildModel>, String> + 'static,
    ) {
        self.spawner = Some(Box::new(spawner));
    }

    /// The current incarnation's PTY for a terminal id (panics if none).
    pub fn pty(&mut self, terminal: &TerminalId) -> &mut SimPty {
        let t = LocalTerminal(terminal.local().unwrap_or(0));
        self.dirty.insert(t);
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
            conn.closing_at = None;
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
        let closes = self.conns.values().filter_map(|c| c.closing_at);
        self.server
            .poll_timeout()
            .into_iter()
            .chain(ptys)
            .chain(closes)
            .min()
    }

    /// Runs one round at the current instant (actions, PTY polls, a due timeout); when
    /// nothing is due, jumps the clock to the earliest wake-up and fires it. `false` when
    /// idle (nothing due and no wake-up). See the module doc's "Driving".
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

    /// Queues an event that performing an action (or a client's read) produced; the engine
    /// hears it after the current drain ([`Harness::drain`]).
    pub(super) fn observe(&mut self, event: ServerEvent<'static>) {
        self.observed.push_back(event);
    }

    /// Hands the engine what a call of the test's (a client's read, a released spawn)
    /// produced, at once and in order; nothing is performed until the harness is stepped.
    pub(super) fn hand_observed(&mut self) {
        while let Some(event) = self.observed.pop_front() {
            self.server.handle(self.now, event);
        }
    }

    /// Performs every queued action, then reports each observed event and performs what it
    /// queues, as the driver's loop does: report, drain, report the next. `true` if anything
    /// happened.
    fn drain(&mut self) -> bool {
        let mut progressed = false;
        loop {
            while let Some(action) = self.server.poll_action() {
                progressed = true;
                self.perform(action);
            }
            let Some(event) = self.observed.pop_front() else {
                return progressed;
            };
            progressed = true;
            self.server.handle(self.now, event);
        }
    }

    /// One round at the current instant; `true` if anything happened.
    fn step_now(&mut self) -> bool {
        let mut progressed = self.drain();
        // [SERVER.FAIR.1] As a driver does: a connection whose frames wait past its turn's
        // budget is handed an empty `Received` for the next budget's worth.
        let backlogged: Vec<ConnId> = self
            .conns
            .iter()
            .filter(|(c, conn)| conn.open && self.server.is_backlogged(**c))
            .map(|(c, _)| *c)
            .collect();
        for conn in backlogged {
            progressed = true;
            self.server
                .handle(self.now, ServerEvent::Received { conn, bytes: &[] });
        }
        if self.polled_at != self.now {
            self.polled_at = self.now;
            self.dirty.extend(self.ptys.keys().copied());
        }
        // A PTY that nothing touched since it was polled at this instant has nothing to do.
        let terminals = std::mem::take(&mut self.dirty);
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
        progressed | (self.close_bound.is_some() && self.drop_lapsed_closes())
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
        let mut rounds = 0;
        while let Some(at) = self.next_wakeup().filter(|at| *at <= target) {
            rounds += 1;
            assert!(
                rounds <= DEFAULT_STEP_BOUND,
                "livelock: a wake-up at {at:?} does not move"
            );
            self.jump_to(at);
            self.server.handle(self.now, ServerEvent::Timeout);
            self.settle();
        }
        self.jump_to(target);
        self.settle();
    }
}

#[cfg(test)]
mod tests {
    use phux_proto::Frame;
    use phux_proto::command::{Command, CommandResult};

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

    #[test]
    fn the_spawner_picks_the_child_or_fails_the_spawn() {
        let mut h = Harness::new();
        h.set_spawner(|spec| match spec.command.first().map(String::as_str) {
            Some("/nonexistent") => Err("no such file".into()),
            _ => Ok(ChildMode::Record.model()),
        });
        let c = h.client();
        let t = h.spawn(c);
        assert!(h.pty(&t).read_log().is_empty());
        let mut bad = phux_proto::frame::SpawnTerminal::new(0, phux_proto::GroupId(1));
        bad.command = Some(vec!["/nonexistent".into()]);
        let rid = h.next_request_id();
        bad.request_id = rid;
        h.send(c, &Frame::SpawnTerminal(bad));
        let got = h.settle_recv(c);
        assert!(
            got.iter().any(|f| matches!(
                f,
                Frame::TerminalSpawned(s)
                    if s.request_id == rid
                        && matches!(s.result, phux_proto::frame::SpawnResult::Err(_))
            )),
            "{got:?}"
        );
        assert!(
            h.log
                .lines()
                .any(|l| l.contains("spawn failed: no such file"))
        );
    }

    /// A closed connection whose client does not read lingers for the close bound, then goes
    /// with its backlog; one whose client reads in time gets everything, then ends.
    /// A connection that said HELLO, read as raw bytes, its HELLO_OK taken.
    fn raw_after_hello(h: &mut Harness) -> ConnId {
        h.set_raw_reads(true);
        let c = h.connect();
        h.send(c, &hello_frame());
        h.settle();
        assert!(!h.take_received(c).is_empty(), "HELLO_OK, raw");
        c
    }

    #[test]
    fn the_close_bound_keeps_a_closed_connection_readable_until_it_lapses() {
        for reads_in_time in [false, true] {
            let mut h = Harness::new();
            h.set_close_bound(Some(CLOSE_BOUND));
            let c = raw_after_hello(&mut h);
            h.stall_reader(c);
            // A frame that does not decode is fatal: ERROR, DETACHED, close.
            h.send_raw(c, &[0xff; 16]);
            h.settle();
            assert!(h.conn(c).closed_by_server());
            assert!(h.conn(c).is_open(), "lingers while bytes are unread");
            assert!(h.conn(c).unread_bytes() > 0);
            if reads_in_time {
                h.advance(CLOSE_BOUND / 2);
                h.resume_reader(c);
                assert!(!h.take_received(c).is_empty());
            } else {
                h.advance(CLOSE_BOUND);
                assert_eq!(h.conn(c).unread_bytes(), 0, "dropped at the bound");
                assert!(h.take_received(c).is_empty());
            }
            assert!(!h.conn(c).is_open());
            assert_eq!(h.server.connection_count(), 0);
        }
    }

    /// With a socket buffer, a client that does not read leaves the engine's queue written
    /// a bufferful at a time: the engine hears `Sent` for what fits and holds the rest.
    #[test]
    fn a_socket_buffer_reports_the_part_of_the_queue_that_fits() {
        const BUFFER: usize = 1000;
        let mut h = Harness::new();
        h.set_socket_buffer(Some(BUFFER));
        let c = raw_after_hello(&mut h);
        assert_eq!(h.server.queued_bytes(c), Some(0));
        h.stall_reader(c);
        for nonce in 0..200 {
            h.send(c, &Frame::Ping(phux_proto::frame::Ping { nonce }));
        }
        h.settle();
        let unread = h.conn(c).unread_bytes();
        assert!(unread > 2 * BUFFER, "{unread}");
        assert_eq!(h.server.queued_bytes(c), Some(unread - BUFFER));
        // Reading a little makes room for as much more.
        h.read_some(c, 300);
        assert_eq!(h.conn(c).unread_bytes(), unread - 300);
        assert_eq!(h.server.queued_bytes(c), Some(unread - 300 - BUFFER));
        h.resume_reader(c);
        assert_eq!(h.conn(c).unread_bytes(), 0);
        assert_eq!(h.server.queued_bytes(c), Some(0));
        assert_eq!(h.take_received(c).len(), unread);
    }
}
