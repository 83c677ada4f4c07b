//! One phuxctl session: a [`ClientEngine`] driven over a blocking connection (a Unix socket
//! or a command's stdio, see [`super::link`]), with its outbox journal on disk.
//!
//! A reader thread turns the socket into messages on a channel; the main thread waits on that
//! channel with the engine's timeout, so one loop serves the socket, the engine's timers and
//! (for `attach`) the local tty, whose events arrive on the same channel. Each drain of the
//! engine's actions is performed as the drive contract asks: its journal records appended and
//! synced before its bytes are written; its notices handed to the caller after both.

use std::collections::{HashMap, VecDeque};
use std::io::Read;
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::time::{Duration, Instant as StdInstant, SystemTime};

use phux_core::client::journal::JournalRecord;
use phux_core::client::outbox::{Input, OutboxConfig, Resolution, Scope};
use phux_core::client::{ClientAction, ClientConfig, ClientEngine, ClientEvent, ClientNotice};
use phux_core::time::Instant;
use phux_proto::frame::{HelloOk, SpawnResult, SpawnTerminal};
use phux_proto::{Command, CommandResult, Frame, OperationId, TerminalId};

use super::error::{CtlError, EXIT_BOOKKEEPING, EXIT_OK, spawn_error_text};
use super::link::{Link, ServerAddress};
use super::outbox_store::{OutboxStore, StoreError};

/// How long a command may go unanswered: the server answers at once, so this only ends the
/// wait on a server that stopped (a loaded machine gets plenty).
pub const COMMAND_TIMEOUT: Duration = Duration::from_secs(30);

/// How long to wait for acknowledged input to resolve before reporting it still pending (the
/// engine itself redials after 9 s of silence; a busy terminal can keep an operation retrying
/// for longer). What is still pending stays in the outbox for the next run.
pub const INPUT_TIMEOUT: Duration = Duration::from_mins(1);

/// How long a run waits for the server (`--timeout`, or the defaults).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Waits {
    /// The handshake and each command.
    pub(crate) command: Duration,
    /// Acknowledged input's verdict.
    pub(crate) input: Duration,
    /// Another phuxctl's journal lock (`None`: as long as it takes).
    pub(crate) lock: Option<Duration>,
}

/// How often one run redials a connection that dropped while operations were pending.
const MAX_REDIALS: u32 = 3;

/// Test-only: with this set to 1, phuxctl exits (status [`crate::EXIT_TEST_HOOK`]) right
/// after it has sent an acknowledged operation and before the answer, as if killed there.
pub const TEST_EXIT_AFTER_SEND: &str = "PHUXCTL_TEST_EXIT_AFTER_SEND";

/// What the waiting thread is woken by.
#[derive(Debug)]
pub enum Incoming {
    /// Bytes from connection number `conn`.
    Bytes {
        /// Which dial they belong to (stale ones are dropped after a redial).
        conn: u64,
        /// The bytes.
        bytes: Vec<u8>,
    },
    /// Connection number `conn` reached end of stream or failed.
    Closed {
        /// Which dial.
        conn: u64,
    },
    /// An event from the local tty (`attach`).
    Tty(crossterm::event::Event),
    /// What the local tty sent, decoded (`attach`).
    TtyInput(Vec<super::tty_input::TtyInput>),
    /// Reading the local tty failed.
    TtyFailed(String),
}

/// What [`Session::step`] found.
#[derive(Debug)]
pub enum Step {
    /// An engine notice (operation resolutions are collected for
    /// [`Session::wait_resolved`] and only named by [`Step::Resolved`]).
    Notice(ClientNotice),
    /// A tty event.
    Tty(crossterm::event::Event),
    /// What the tty sent, decoded.
    TtyInput(Vec<super::tty_input::TtyInput>),
    /// The tty could not be read.
    TtyFailed(String),
    /// An acknowledged-input operation resolved (see [`Session::wait_resolved`]).
    Resolved(OperationId),
    /// The caller's deadline passed.
    Deadline,
    /// The connection ended (and no redial was due).
    Closed,
}

/// The engine's clock: microseconds since the Unix epoch, so an operation's age survives a
/// restart of phuxctl (the retry policy resends only young operations).
pub fn unix_now() -> Instant {
    let since = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap_or_default();
    Instant::from_micros(u64::try_from(since.as_micros()).unwrap_or(u64::MAX))
}

/// A source of fresh operation ids: a random 128-bit base from the OS RNG, counted up (ids
/// must be unique and unguessable by other clients, which a random base gives them).
#[derive(Debug)]
pub struct OperationIds {
    next: u128,
}

impl OperationIds {
    /// A new source, drawing its base from `getrandom(2)`.
    pub fn new() -> Result<Self, CtlError> {
        let mut bytes = [0u8; 16];
        let mut filled = 0;
        while let Some(rest) = bytes.get_mut(filled..).filter(|r| !r.is_empty()) {
            match rustix::rand::getrandom(rest, rustix::rand::GetRandomFlags::empty()) {
                Ok(0) => return Err(CtlError::Local("getrandom returned nothing".to_owned())),
                Ok(n) => filled += n,
                Err(rustix::io::Errno::INTR) => {}
                Err(e) => return Err(CtlError::Local(format!("getrandom: {e}"))),
            }
        }
        Ok(Self {
            next: u128::from_be_bytes(bytes),
        })
    }

    /// The next id (zero is not an id, so it is skipped).
    pub fn next_id(&mut self) -> OperationId {
        loop {
            let value = self.next;
            self.next = self.next.wrapping_add(1);
            if let Some(id) = OperationId::from_u128(value) {
                return id;
            }
        }
    }
}

/// A connected session.
#[derive(Debug)]
pub struct Session {
    engine: ClientEngine,
    store: Option<OutboxStore>,
    /// The journal's length after the last compaction.
    compacted_len: u64,
    address: ServerAddress,
    link: Option<Link>,
    /// How the last `--exec` command ended, for the message about a lost connection.
    exit_note: Option<String>,
    conn: u64,
    redials: u32,
    tx: Sender<Incoming>,
    rx: Receiver<Incoming>,
    notices: VecDeque<ClientNotice>,
    /// Events a command's wait passed over (output, bootstrap), for the next `step`.
    deferred: VecDeque<ClientNotice>,
    resolved: HashMap<OperationId, (TerminalId, Resolution)>,
    next_spawn_request: u32,
    detached: Option<String>,
    test_exit_after_send: bool,
    /// How long the handshake and each command may go unanswered.
    command_timeout: Duration,
    /// Journal upkeep that failed after the input it concerns was settled, reported apart
    /// from the verdicts at the end of the run ([CLIENT.VERDICT.1]); the first of each kind.
    upkeep: Vec<Upkeep>,
    /// The server's HELLO_OK on the current connection.
    hello: Option<HelloOk>,
}

/// Journal upkeep that failed without changing what became of any input: a record of a
/// verdict, or the compaction. The verdict stands; this is said apart from it.
#[derive(Debug)]
pub enum Upkeep {
    /// A record of an answer or a verdict could not be written.
    Record(StoreError),
    /// The journal could not be compacted.
    Compaction(StoreError),
}

impl std::fmt::Display for Upkeep {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Record(e) => write!(
                f,
                "the verdicts above are the server's, but the outbox journal could not record \
                 them ({e}); the next phuxctl run against this server asks it about those \
                 operations again under the same ids (it never writes one twice) or reports them"
            ),
            Self::Compaction(e) => write!(
                f,
                "the verdicts above are the server's, but the outbox journal could not be \
                 compacted ({e}); it still holds every record, and the next run compacts it"
            ),
        }
    }
}

impl Session {
    /// Rebuilds the engine from `records` (the journal; empty without a store), dials
    /// `target` (after checking whom it reaches) and completes the handshake. Restored
    /// operations in `scope` are resent or decided from here on; the others are kept.
    pub fn connect(
        address: &ServerAddress,
        store: Option<OutboxStore>,
        records: Vec<JournalRecord>,
        scope: Scope,
    ) -> Result<Self, CtlError> {
        Self::connect_within(address, store, records, scope, COMMAND_TIMEOUT)
    }

    /// [`Session::connect`], waiting at most `command_timeout` for the handshake and for
    /// each command's answer (`phuxctl --timeout`).
    pub fn connect_within(
        address: &ServerAddress,
        store: Option<OutboxStore>,
        records: Vec<JournalRecord>,
        scope: Scope,
        command_timeout: Duration,
    ) -> Result<Self, CtlError> {
        let config = ClientConfig {
            client_name: concat!("phuxctl/", env!("CARGO_PKG_VERSION")).to_owned(),
            outbox: OutboxConfig {
                // Without the journal's lock this run must not submit input at all.
                journal: store.is_some(),
                ..OutboxConfig::default()
            },
            ..ClientConfig::default()
        };
        let had_records = !records.is_empty();
        // Records that no longer fit (after damage was cut out) are skipped, never fatal.
        let (mut engine, skipped) = ClientEngine::restore_salvaging(config, records);
        for error in skipped {
            eprintln!("phuxctl: outbox journal: skipped a record that does not fit: {error}");
        }
        engine.set_scope(unix_now(), scope);
        let (tx, rx) = mpsc::channel();
        let mut session = Self {
            engine,
            store,
            compacted_len: 0,
            address: address.clone(),
            link: None,
            exit_note: None,
            conn: 0,
            redials: 0,
            tx,
            rx,
            notices: VecDeque::new(),
            deferred: VecDeque::new(),
            resolved: HashMap::new(),
            next_spawn_request: 1,
            detached: None,
            test_exit_after_send: std::env::var_os(TEST_EXIT_AFTER_SEND).is_some_and(|v| v == "1"),
            command_timeout,
            upkeep: Vec::new(),
            hello: None,
        };
        if had_records && let Some(store) = &mut session.store {
            // [CLIENT.OUTBOX.4] Start from the fewest records that describe what is pending
            // (the journal as it is describes the same outbox, so a failure is only upkeep).
            match store.rewrite(&session.engine.outbox().compact()) {
                Ok(()) => session.compacted_len = store.len(),
                Err(e) => session.upkeep.push(Upkeep::Compaction(e)),
            }
        }
        session.dial()?;
        session.wait_hello()?;
        Ok(session)
    }

    fn dial(&mut self) -> Result<(), CtlError> {
        let (link, mut reader) = Link::open(&self.address)?;
        self.conn += 1;
        let conn = self.conn;
        let tx = self.tx.clone();
        std::thread::spawn(move || {
            let mut buf = vec![0u8; 64 * 1024];
            loop {
                match reader.read(&mut buf) {
                    Ok(0) | Err(_) => {
                        let _ = tx.send(Incoming::Closed { conn });
                        return;
                    }
                    Ok(n) => {
                        let bytes = buf[..n].to_vec();
                        if tx.send(Incoming::Bytes { conn, bytes }).is_err() {
                            return;
                        }
                    }
                }
            }
        });
        self.link = Some(link);
        self.engine.handle(unix_now(), ClientEvent::Connected);
        Ok(())
    }

    fn wait_hello(&mut self) -> Result<(), CtlError> {
        let deadline = StdInstant::now() + self.command_timeout;
        loop {
            match self.step_live(Some(deadline))? {
                Step::Notice(ClientNotice::HelloOk(hello)) => {
                    self.hello = Some(hello);
                    return Ok(());
                }
                Step::Deadline => return Err(CtlError::Timeout("HELLO_OK")),
                Step::Closed => return Err(self.lost("during the handshake")),
                _ => {}
            }
        }
    }

    fn lost(&mut self, when: &str) -> CtlError {
        let why = self
            .detached
            .clone()
            .map(|m| format!("server: {m}"))
            .or_else(|| self.exit_note.clone())
            .map_or_else(String::new, |note| format!(" ({note})"));
        CtlError::ConnectionLost(format!(
            "the connection to {} ended {when}{why}",
            self.address.describe()
        ))
    }

    /// The server's HELLO_OK (its version, features and id) on this connection.
    pub fn hello(&self) -> Option<&HelloOk> {
        self.hello.as_ref()
    }

    /// The `server_id` of the server this session is connected to.
    pub fn server_id(&self) -> Option<&[u8]> {
        self.engine.server_id()
    }

    /// A sender for the wake-up channel, so the tty reader can join the loop.
    pub fn waker(&self) -> Sender<Incoming> {
        self.tx.clone()
    }

    /// Gives up the outbox (and its lock) when nothing is pending, so a long-running command
    /// does not hold other phuxctl processes back. Returns whether it was released.
    pub fn release_outbox(&mut self) -> bool {
        if self.engine.outbox().active_len() == 0 {
            self.store = None;
            true
        } else {
            false
        }
    }

    /// Performs what the engine asks for: collect notices, persist journal records (synced
    /// before anything is sent), write the bytes.
    fn flush(&mut self) -> Result<(), CtlError> {
        let (mut batch, mut transmit) = (Vec::new(), Vec::new());
        while let Some(action) = self.engine.poll_action() {
            match action {
                ClientAction::Journal(record) => batch.push(record),
                ClientAction::Notify(notice) => self.notices.push_back(notice),
                ClientAction::Transmit(bytes) => transmit.push(bytes),
            }
        }
        if !batch.is_empty() {
            let Some(store) = &mut self.store else {
                return Err(CtlError::Local(
                    "acknowledged input without the outbox journal".to_owned(),
                ));
            };
            let before = store.len();
            // [CLIENT.OUTBOX.1] Durable before the bytes it describes leave.
            let written = batch
                .iter()
                .try_for_each(|record| store.append(record))
                .and_then(|()| store.sync());
            if let Err(error) = written {
                // [CLIENT.JOURNAL.11] Back to the last length whose every record was durable:
                // a record written in part, or not made durable, is not left to be read.
                let cut_back = store.truncate_to(before);
                let gates_a_send = batch.iter().any(|r| {
                    matches!(
                        r,
                        JournalRecord::Enqueued { .. } | JournalRecord::Sent { .. }
                    )
                });
                if gates_a_send {
                    return Err(self.unjournaled(error, &batch, cut_back.as_ref().err()));
                }
                // [CLIENT.VERDICT.1] Answers and verdicts only: they stand, and the next run
                // asks again under the same ids.
                if !self.upkeep.iter().any(|u| matches!(u, Upkeep::Record(_))) {
                    self.upkeep.push(Upkeep::Record(error));
                }
            }
        }
        for bytes in transmit {
            let Some(link) = &mut self.link else {
                break;
            };
            if link.write_all(&bytes).is_err() {
                // The reader thread sees the same failure and reports Closed.
                link.close();
                break;
            }
        }
        if self.test_exit_after_send {
            let sent: Vec<_> = batch
                .iter()
                .filter_map(|r| match r {
                    JournalRecord::Sent { op, .. } => Some(*op),
                    _ => None,
                })
                .collect();
            for op in &sent {
                eprintln!("phuxctl: test hook: exiting after sending operation {op}");
            }
            if !sent.is_empty() {
                std::process::exit(super::EXIT_TEST_HOOK);
            }
        }
        let compaction_failed = self
            .upkeep
            .iter()
            .any(|u| matches!(u, Upkeep::Compaction(_)));
        if let Some(store) = &mut self.store
            && !compaction_failed
            && self.engine.outbox().active_len() == 0
            && store.len() != self.compacted_len
        {
            // [CLIENT.OUTBOX.4] Compacted when nothing in scope is pending (what is out of
            // scope stays, for a later run). [CLIENT.VERDICT.1] A failure is upkeep: the
            // journal as it is describes the same outbox.
            match store.rewrite(&self.engine.outbox().compact()) {
                Ok(()) => self.compacted_len = store.len(),
                Err(e) => self.upkeep.push(Upkeep::Compaction(e)),
            }
        }
        Ok(())
    }

    /// Whether the server is reached through `--exec` or `--ssh`: its host is not this one,
    /// so nothing about its terminals may be read from this host (`/proc`, paths).
    pub fn is_remote(&self) -> bool {
        matches!(self.address, ServerAddress::Exec(_))
    }

    /// The failure of a journal write that had to come before a send ([CLIENT.JOURNAL.11]),
    /// saying for each operation it concerns what became of it: answered already, gone (its
    /// record never made it), or still queued (recorded by an earlier run or step), and how a
    /// queued one is sent or given up.
    fn unjournaled(
        &self,
        source: StoreError,
        batch: &[JournalRecord],
        not_cut_back: Option<&StoreError>,
    ) -> CtlError {
        let mut lines = Vec::new();
        for (op, (terminal, resolution)) in &self.resolved {
            lines.push(format!(
                "operation {op} to {terminal}: {}",
                crate::report::verdict(resolution)
            ));
        }
        let taken_back: Vec<OperationId> = batch
            .iter()
            .filter_map(|r| match r {
                JournalRecord::Enqueued { input, .. } => Some(input.operation_id),
                _ => None,
            })
            .collect();
        for p in self.engine.outbox().all_pending() {
            let (op, terminal) = (p.input.operation_id, &p.input.terminal);
            let fate = match (taken_back.contains(&op), &not_cut_back) {
                (true, None) => "not sent, and not queued (its record was taken back)".to_owned(),
                (true, Some(e)) => format!(
                    "not sent, but it may stay queued: the journal could not be cut back \
                     ({e}); the next send or paste to {terminal}, or `phuxctl outbox resume`, \
                     would send it, and `phuxctl outbox drop {op}` gives it up"
                ),
                (false, _) => format!(
                    "{}; it stays queued: the next send or paste to {terminal}, or `phuxctl \
                     outbox resume`, settles it (never writing it twice), and `phuxctl outbox \
                     drop {op}` gives it up",
                    if p.attempts > 0 {
                        "sent earlier, not answered yet"
                    } else {
                        "not sent"
                    }
                ),
            };
            lines.push(format!("operation {op} to {terminal}: {fate}"));
        }
        CtlError::Unjournaled {
            source,
            detail: lines.join("; "),
        }
    }

    /// The run's exit status: `code` (its verdicts'), or [`EXIT_BOOKKEEPING`] where every
    /// verdict was good but the journal's upkeep failed after them, which is said here on
    /// stderr, apart from the verdicts ([CLIENT.VERDICT.1]).
    pub fn finish(&self, code: u8) -> u8 {
        for upkeep in &self.upkeep {
            eprintln!("phuxctl: {upkeep}");
        }
        if code == EXIT_OK && !self.upkeep.is_empty() {
            EXIT_BOOKKEEPING
        } else {
            code
        }
    }

    /// Runs the loop until something for the caller happens or `deadline` passes.
    pub fn step(&mut self, deadline: Option<StdInstant>) -> Result<Step, CtlError> {
        if let Some(event) = self.deferred.pop_front() {
            return Ok(Step::Notice(event));
        }
        self.step_live(deadline)
    }

    /// [`Session::step`] without the deferred notices (for waits that defer what they skip).
    fn step_live(&mut self, deadline: Option<StdInstant>) -> Result<Step, CtlError> {
        loop {
            self.flush()?;
            if let Some(event) = self.notices.pop_front() {
                match event {
                    ClientNotice::OperationResolved {
                        op,
                        terminal,
                        resolution,
                    } => {
                        self.resolved.insert(op, (terminal, resolution));
                        return Ok(Step::Resolved(op));
                    }
                    ClientNotice::Redial { .. } => self.redial()?,
                    ClientNotice::ConnectionFailed(why) => return Err(CtlError::Protocol(why)),
                    ClientNotice::Detached { ref message, .. } => {
                        self.detached = Some(message.clone());
                        return Ok(Step::Notice(event));
                    }
                    other => return Ok(Step::Notice(other)),
                }
                continue;
            }
            let engine_wait = self.engine.poll_timeout().map(|at| {
                let wait = at.saturating_duration_since(unix_now());
                // Whole milliseconds, rounded up, so a wake-up never lands just short.
                Duration::from_millis(
                    u64::try_from(wait.as_micros().div_ceil(1000)).unwrap_or(u64::MAX),
                )
            });
            let caller_wait = match deadline {
                Some(d) => {
                    let now = StdInstant::now();
                    if d <= now {
                        return Ok(Step::Deadline);
                    }
                    Some(d - now)
                }
                None => None,
            };
            let wait = match (engine_wait, caller_wait) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
            let message = match wait {
                Some(wait) => self.rx.recv_timeout(wait),
                None => self.rx.recv().map_err(|_| RecvTimeoutError::Disconnected),
            };
            match message {
                Ok(Incoming::Bytes { conn, bytes }) if conn == self.conn => {
                    self.engine
                        .handle(unix_now(), ClientEvent::Received { bytes: &bytes });
                }
                Ok(Incoming::Closed { conn }) if conn == self.conn => {
                    if !self.on_closed()? {
                        self.flush()?;
                        return Ok(Step::Closed);
                    }
                }
                Ok(Incoming::Tty(event)) => return Ok(Step::Tty(event)),
                Ok(Incoming::TtyInput(inputs)) => return Ok(Step::TtyInput(inputs)),
                Ok(Incoming::TtyFailed(e)) => return Ok(Step::TtyFailed(e)),
                // A stale connection's leftovers.
                Ok(_) => {}
                Err(RecvTimeoutError::Timeout) => {
                    self.engine.handle(unix_now(), ClientEvent::Timeout);
                }
                // We hold a sender ourselves, so this cannot happen; treat it as an end.
                Err(RecvTimeoutError::Disconnected) => return Ok(Step::Closed),
            }
        }
    }

    /// The connection ended. Redials when operations are pending (they are decided after
    /// the new HELLO_OK); returns whether it did.
    fn on_closed(&mut self) -> Result<bool, CtlError> {
        if let Some(mut link) = self.link.take() {
            link.close();
            self.exit_note = link.exit_note();
        }
        self.engine.handle(unix_now(), ClientEvent::Disconnected);
        if self.engine.outbox().active_len() == 0 || self.redials >= MAX_REDIALS {
            return Ok(false);
        }
        self.redials += 1;
        self.dial().map_err(|e| {
            CtlError::ConnectionLost(format!(
                "{e}; pending input stays in the outbox for the next phuxctl run"
            ))
        })?;
        Ok(true)
    }

    fn redial(&mut self) -> Result<(), CtlError> {
        if let Some(mut link) = self.link.take() {
            link.close();
        }
        if !self.on_closed()? {
            return Err(CtlError::ConnectionLost(
                "the server stopped answering; pending input stays in the outbox for the next \
                 phuxctl run"
                    .to_owned(),
            ));
        }
        Ok(())
    }

    /// Sends a command and waits for its answer.
    pub fn command(&mut self, command: Command) -> Result<CommandResult, CtlError> {
        let request_id = self
            .engine
            .command(command)
            .map_err(|e| CtlError::Local(e.to_string()))?;
        let deadline = StdInstant::now() + self.command_timeout;
        loop {
            match self.step_live(Some(deadline))? {
                Step::Notice(ClientNotice::CommandResult {
                    request_id: id,
                    result,
                }) if id == request_id => return Ok(result),
                Step::Notice(ClientNotice::CommandAbandoned { request_id: id })
                    if id == request_id =>
                {
                    return Err(self.lost("before the answer"));
                }
                Step::Deadline => return Err(CtlError::Timeout("the command's answer")),
                Step::Closed => return Err(self.lost("before the answer")),
                // Output and bootstrap frames may come before the answer (ATTACH_TERMINAL).
                Step::Notice(other) => self.deferred.push_back(other),
                _ => {}
            }
        }
    }

    /// Sends a command without waiting for its answer, which [`Session::step`] returns later
    /// as a `ClientNotice::CommandResult` with this request id (or `CommandAbandoned` if the
    /// connection ends first): for `attach`, which must go on reading the tty and the output.
    pub fn start_command(&mut self, command: Command) -> Result<u32, CtlError> {
        let request_id = self
            .engine
            .command(command)
            .map_err(|e| CtlError::Local(e.to_string()))?;
        self.flush()?;
        Ok(request_id)
    }

    /// How long each later command waits for its answer.
    pub fn set_command_timeout(&mut self, timeout: Duration) {
        self.command_timeout = timeout;
    }

    /// Sends a command and requires OK (a refusal is an error).
    pub fn command_ok(
        &mut self,
        command: Command,
    ) -> Result<Option<phux_proto::CommandValue>, CtlError> {
        match self.command(command)? {
            CommandResult::Ok => Ok(None),
            CommandResult::OkWith(value) => Ok(Some(value)),
            CommandResult::Error { code, message } => Err(CtlError::Refused { code, message }),
        }
    }

    /// Sends a frame that needs no answer.
    pub fn send(&mut self, frame: &Frame) -> Result<(), CtlError> {
        self.engine
            .send(frame)
            .map_err(|e| CtlError::Local(e.to_string()))?;
        self.flush()
    }

    /// SPAWN_TERMINAL; the new terminal.
    pub fn spawn(&mut self, mut spawn: SpawnTerminal) -> Result<TerminalId, CtlError> {
        let request_id = self.next_spawn_request;
        self.next_spawn_request = self.next_spawn_request.wrapping_add(1).max(1);
        spawn.request_id = request_id;
        self.send(&Frame::SpawnTerminal(spawn))?;
        let deadline = StdInstant::now() + self.command_timeout;
        loop {
            match self.step_live(Some(deadline))? {
                Step::Notice(ClientNotice::Frame(Frame::TerminalSpawned(s)))
                    if s.request_id == request_id =>
                {
                    return match s.result {
                        SpawnResult::Ok(id) => Ok(id),
                        SpawnResult::Err(e) => Err(CtlError::SpawnFailed(spawn_error_text(&e))),
                    };
                }
                Step::Notice(ClientNotice::Frame(Frame::Error(e))) => {
                    return Err(CtlError::Refused {
                        code: e.code,
                        message: e.message,
                    });
                }
                Step::Deadline => return Err(CtlError::Timeout("TERMINAL_SPAWNED")),
                Step::Closed => return Err(self.lost("before TERMINAL_SPAWNED")),
                Step::Notice(other) => self.deferred.push_back(other),
                _ => {}
            }
        }
    }

    /// Puts acknowledged input in the outbox (journaled before it is sent); its operations.
    pub fn submit(
        &mut self,
        terminal: TerminalId,
        input: Input,
    ) -> Result<Vec<OperationId>, CtlError> {
        if self.store.is_none() {
            return Err(CtlError::Local(
                "acknowledged input needs the outbox journal".to_owned(),
            ));
        }
        let now = unix_now();
        let mut ids = OperationIds::new()?;
        let new_id = || ids.next_id();
        let ops = match input {
            Input::Events(events) => self.engine.apply_input(now, terminal, events, new_id),
            Input::Paste { data, trust } => self.engine.paste(now, terminal, data, trust, new_id),
        }
        .map_err(|e| CtlError::Input(e.to_string()))?;
        self.flush()?;
        Ok(ops)
    }

    /// Waits until every one of `ops` resolved, or `deadline`; the resolutions found, in the
    /// order of `ops` (`None`: still pending).
    pub fn wait_resolved(
        &mut self,
        ops: &[OperationId],
        deadline: StdInstant,
    ) -> Result<Vec<Option<(TerminalId, Resolution)>>, CtlError> {
        loop {
            if ops.iter().all(|op| self.resolved.contains_key(op)) {
                break;
            }
            // A resolution may still sit in the event queue (one decided at HELLO_OK is queued
            // behind it); only an operation neither queued nor pending is gone for good.
            self.flush()?;
            let gone = ops.iter().all(|op| {
                self.resolved.contains_key(op) || self.engine.outbox().pending(*op).is_none()
            });
            if gone && self.notices.is_empty() {
                break;
            }
            match self.step_live(Some(deadline))? {
                Step::Deadline => break,
                Step::Closed => {
                    return Err(self.lost(
                        "with input pending; it stays in the outbox for the next phuxctl run",
                    ));
                }
                Step::Notice(other) => self.deferred.push_back(other),
                _ => {}
            }
        }
        Ok(ops.iter().map(|op| self.resolved.remove(op)).collect())
    }
}
